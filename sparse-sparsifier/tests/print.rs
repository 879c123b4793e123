//! Snapshots of the loop IR printer (`sparse eval --emit loops`): the loop programs the
//! sparsifier chooses for a few kernels, exactly.

use sparse_dsl::parse::{parse_declaration, Declared};
use sparse_sparsifier::{compile, print::print, TensorDecl, ValueType};

fn decl(name: &str, shape: &[usize], map: Option<&str>) -> TensorDecl {
    TensorDecl {
        name: name.into(),
        shape: shape.iter().map(|&n| Some(n)).collect(),
        value: ValueType::F64,
        encoding: map.map(|m| {
            let text = format!("#sparse_tensor.encoding<{{ map = {m} }}>");
            match parse_declaration(&text).unwrap().declared {
                Declared::Encoding(e) => e,
                Declared::Tensor(_) => unreachable!(),
            }
        }),
    }
}

fn loops(stmt: &str, decls: &[TensorDecl]) -> String {
    print(&compile(stmt, decls).unwrap())
}

const CSR: &str = "(i, j) -> (i : dense, j : compressed)";
const DCSR: &str = "(i, j) -> (i : compressed, j : compressed)";
const COO: &str = "(i, j) -> (i : compressed(nonunique), j : singleton)";
const SV: &str = "(i) -> (i : compressed)";
const BSR: &str =
    "(i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense)";

#[test]
fn csr_spmv() {
    let d = [
        decl("A", &[2, 3], Some(CSR)),
        decl("x", &[3], None),
        decl("y", &[2], None),
    ];
    assert_eq!(
        loops("y(i) = A(i,j) * x(j)", &d),
        "# y(i) = sum(j, A(i,j) * x(j))\n# order: i, j; output y: in place, every element assigned once\nfor i in 0..2:\n  locate A.0 at i\n  t0 = none\n  for j in A.1:  # in 4 interleaved partial sums\n    t0 += A(i,j) * x(j)\n  y(i) = t0\n"
    );
}

/// A DCSR operand's stored rows are iterated, not every row visited: the output is cleared
/// and added into, not assigned once (the same for `+=`, which keeps the output's values).
#[test]
fn dcsr_spmv_adds_into_the_output() {
    let d = [
        decl("A", &[2, 3], Some(DCSR)),
        decl("x", &[3], None),
        decl("y", &[2], None),
    ];
    assert_eq!(
        loops("y(i) = A(i,j) * x(j)", &d),
        "# y(i) = sum(j, A(i,j) * x(j))\n# order: i, j; output y: in place\nfor i in A.0:\n  t0 = none\n  for j in A.1:  # in 4 interleaved partial sums\n    t0 += A(i,j) * x(j)\n  y(i) += t0\n"
    );
    let d = [
        decl("A", &[2, 3], Some(CSR)),
        decl("x", &[3], None),
        decl("y", &[2], None),
    ];
    assert!(loops("y(i) += A(i,j) * x(j)", &d).ends_with("  y(i) += t0\n"));
}

#[test]
fn union_of_dcsr_and_coo_appends() {
    let d = [
        decl("A", &[4, 4], Some(DCSR)),
        decl("B", &[4, 4], Some(COO)),
        decl("C", &[4, 4], Some(DCSR)),
    ];
    assert_eq!(
        loops("C(i,j) = A(i,j) + B(i,j)", &d),
        "# C(i,j) = A(i,j) + B(i,j)
# order: i, j; output C: appended in level order
merge i over A.0, B.0:
  case A.0 & B.0:
    merge j over A.1, B.1:
      case A.1 & B.1:
        append C(i,j) = A(i,j) + B(i,j)
      case A.1:
        append C(i,j) = A(i,j)
      case B.1:
        append C(i,j) = B(i,j)
  case A.0:
    for j in A.1:
      append C(i,j) = A(i,j)
  case B.0:
    for j in B.1:
      append C(i,j) = B(i,j)
"
    );
}

#[test]
fn sparse_dot_intersects() {
    let d = [
        decl("a", &[8], Some(SV)),
        decl("b", &[8], Some(SV)),
        decl("s", &[], None),
    ];
    assert_eq!(
        loops("s = a(i) * b(i)", &d),
        "# s = sum(i, a(i) * b(i))\n# order: i; output s: in place\nt0 = none\nmerge i over a.0, b.0:\n  case a.0 & b.0:\n    t0 += a(i) * b(i)\ns += t0\n"
    );
}

#[test]
fn spgemm_uses_a_workspace_and_transpose_a_buffer() {
    let d = [
        decl("A", &[2, 3], Some(CSR)),
        decl("B", &[3, 2], Some(CSR)),
        decl("C", &[2, 2], Some(CSR)),
    ];
    assert_eq!(
        loops("C(i,j) = A(i,k) * B(k,j)", &d),
        "# C(i,j) = sum(k, A(i,k) * B(k,j))
# order: i, k, j; output C: workspace over j (expand/compress)
# rows i with equal coordinates in A.1 may run together, a workspace lane each
# rows i whose segments of B.1 lie within 64 columns may be summed in a window, unsorted
for i in 0..2:
  locate A.0 at i
  expand workspace
  for k in A.1:
    locate B.0 at k
    for j in B.1:
      workspace[j] += A(i,k) * B(k,j)
  compress workspace into C(i,j)
"
    );
    let d = [
        decl("A", &[2, 3], Some(DCSR)),
        decl("O", &[3, 2], Some(DCSR)),
    ];
    assert_eq!(
        loops("O(j,i) = A(i,j)", &d),
        "# O(j,i) = A(i,j)\n# order: i, j; output O: coordinate buffer, sorted once\nfor i in A.0:\n  for j in A.1:\n    buffer O(j,i) += A(i,j)\n"
    );
}

/// Only a Gustavson kernel whose rows reach the operands through one CSR matrix, summing `f64`
/// values, may run rows together.
#[test]
fn shared_rows_need_csr_rows_and_f64_sums() {
    let shares = |stmt: &str, d: &[TensorDecl]| {
        let p = compile(stmt, d).unwrap();
        let line = print(&p).lines().any(|l| l.contains("may run together"));
        assert_eq!(line, p.shared_rows.is_some(), "{stmt}");
        line
    };
    let mut d = vec![
        decl("A", &[4, 4], Some(CSR)),
        decl("B", &[4, 4], Some(CSR)),
        decl("C", &[4, 4], Some(CSR)),
        decl("D", &[4, 4], Some(DCSR)),
        decl("alpha", &[], None),
        decl("x", &[4], None),
    ];
    assert!(shares("C(i,j) = A(i,k) * B(k,j)", &d));
    assert!(shares("C(i,j) = alpha * A(i,k) * B(k,j)", &d));
    assert!(shares("C(i,j) = A(i,k) * D(k,j)", &d));
    // rows of a compressed level 0, a second operand indexed by i, a min, `+=` reading C
    assert!(!shares("C(i,j) = D(i,k) * B(k,j)", &d));
    assert!(!shares("C(i,j) = A(i,k) * B(k,j) * x(i)", &d));
    assert!(!shares("C(i,j) = min(k, A(i,k) * B(k,j))", &d));
    assert!(!shares("C(i,j) = A(i,k) * B(k,j) + C(i,j)", &d));
    // a random-access output is written in place, not through a workspace
    d[2] = decl("C", &[4, 4], None);
    assert!(!shares("C(i,j) = A(i,k) * B(k,j)", &d));
    // integer sums
    let mut d: Vec<TensorDecl> = d[..2].to_vec();
    d.push(decl("C", &[4, 4], Some(CSR)));
    for t in &mut d {
        t.value = ValueType::I64;
    }
    assert!(!shares("C(i,j) = A(i,k) * B(k,j)", &d));
}

/// Only a kernel whose rows may run together, whose loop over `A`'s level locates a row of a
/// CSR `B` and sums a product over it alone, may sum rows in a window.
#[test]
fn windowed_rows_need_a_csr_b_and_a_product() {
    let windows = |stmt: &str, d: &[TensorDecl]| {
        let p = compile(stmt, d).unwrap();
        let line = print(&p).lines().any(|l| l.contains("in a window"));
        assert_eq!(line, p.windowed_rows.is_some(), "{stmt}");
        line
    };
    let d = vec![
        decl("A", &[4, 4], Some(CSR)),
        decl("B", &[4, 4], Some(CSR)),
        decl("C", &[4, 4], Some(CSR)),
        decl("D", &[4, 4], Some(DCSR)),
        decl("alpha", &[], None),
    ];
    assert!(windows("C(i,j) = A(i,k) * B(k,j)", &d));
    assert!(windows("C(i,j) = alpha * A(i,k) * B(k,j)", &d));
    assert!(windows("C(i,j) = A(i,k) / B(k,j)", &d));
    // `D`'s rows are found by a merge, not located; `B` alone (no row of `A` selects its
    // rows, so its rows may not run together either); rows of a DCSR `D` may not run together
    assert!(!windows("C(i,j) = A(i,k) * D(k,j)", &d));
    assert!(!windows("C(i,j) = B(k,j)", &d));
    assert!(!windows("C(i,j) = D(i,k) * B(k,j)", &d));
}

#[test]
fn bsr_loops_run_over_levels() {
    let d = [
        decl("A", &[4, 4], Some(BSR)),
        decl("B", &[4, 4], None),
        decl("C", &[4, 4], None),
    ];
    assert_eq!(
        loops("C(i,j) = A(i,k) * B(k,j)", &d),
        "# C(i,j) = sum(k, A(i,k) * B(k,j))
# order: i/2, k/2, i%2, k%2, j; output C: in place
for i/2 in 0..2:
  locate A.0 at i/2
  for k/2 in A.1:
    for i%2 in 0..2:
      locate A.2 at i%2
      for k%2 in 0..2:
        locate A.3 at k%2
        for j in 0..4:
          C(i,j) += A(i,k) * B(k,j)
"
    );
}

#[test]
fn nested_reduction_and_conflict_conversion() {
    let d = [
        decl("A", &[2, 3], Some(CSR)),
        decl("x", &[3], None),
        decl("b", &[2], Some(SV)),
        decl("r", &[2], None),
    ];
    assert_eq!(
        loops("r(i) = b(i) - A(i,k) * x(k)", &d),
        "# r(i) = b(i) - sum(k, A(i,k) * x(k))
# order: i, k; output r: in place
for i in 0..2 with b.0:
  if b.0 at i:
    locate A.0 at i
    t0 = none
    for k in A.1:  # in 4 interleaved partial sums
      t0 += A(i,k) * x(k)
    r(i) = b(i) - t0
  else:
    locate A.0 at i
    t1 = none
    for k in A.1:  # in 4 interleaved partial sums
      t1 += A(i,k) * x(k)
    r(i) = -t1
"
    );
    // CSR + CSC: the CSC operand is converted to the other's level order
    let d = [
        decl("A", &[2, 3], Some(DCSR)),
        decl("B", &[2, 3], Some("(i, j) -> (j : dense, i : compressed)")),
        decl("C", &[2, 3], None),
    ];
    let text = loops("C(i,j) = A(i,j) * B(i,j)", &d);
    assert!(text.contains(
        "B' = convert B to #sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed) }>\n"
    ), "{text}");
}

#[test]
fn errors_name_the_place() {
    let d = [decl("A", &[2, 3], Some(CSR)), decl("y", &[2], None)];
    let e = compile("y(i) = A(i,j) * z(j)", &d).unwrap_err();
    assert_eq!(e.message, "unknown tensor `z`: it is not declared");
    assert_eq!(e.span.map(|s| (s.start, s.end)), Some((16, 17)));
    let e = compile("y(i) = sum(i, A(i,j))", &d).unwrap_err();
    assert_eq!(
        e.message,
        "reduction index `i` of `sum` also indexes the output"
    );
    let e = compile("y(i) = max(k, A(i,j))", &d).unwrap_err();
    assert_eq!(
        e.message,
        "reduction index `k` is not used in the expression of `max`"
    );
    let e = compile("y(i) = sum(j, max(j, A(i,j)))", &d).unwrap_err();
    assert_eq!(
        e.message,
        "index `j` is already reduced by an enclosing reduction"
    );
    let e = compile("y(i) = A(i,j) ^ 2", &d).unwrap_err();
    assert_eq!(
        e.message,
        "the operator `^` needs integer values, but `y` holds f64"
    );
}
