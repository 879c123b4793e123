//! Kernels over MLIR's `i1` (issue 11): the runtime's `value::I1`, computed modulo 2 (`+` and
//! `-` exclusive or, `*` and, `min` and, `max` or), against known answers and against the
//! sparsifier's interpreter on random boolean matrices (explicit `0` entries stored too).

use proptest::prelude::*;
use sparse::runtime::value::I1;
use sparse::runtime::{CooTensor, DynamicStorage, StorageError};
use sparse::sparse_format;
use sparse_sparsifier::interp::{run, Operand, Output};
use sparse_sparsifier::{compile, TensorDecl, ValueType};

sparse_format! {
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
    pub kernel parity(y: &mut [I1], a: &Csr<I1>, x: &[I1]) { y(i) = a(i, j) * x(j) }
    pub kernel or_and(y: &mut [I1], a: &Csr<I1>, x: &[I1]) { y(i) = or(j, a(i, j) & x(j)) }
    pub kernel rowmin(y: &mut [I1], a: &Csr<I1>) { y(i) = min(j, a(i, j)) }
    pub kernel rowmax(y: &mut [I1], a: &Csr<I1>) { y(i) = max(j, a(i, j)) }
    pub kernel flip(y: &mut [I1], a: &Csr<I1>, x: &[I1]) { y(i) = a(i, j) * x(j) + 1 }
    pub kernel ratio(y: &mut [I1], a: &Csr<I1>, x: &[I1]) { y(i) = a(i, j) / x(j) }
    pub kernel spgemm(c: &mut Csr<I1>, a: &Csr<I1>, b: &Csr<I1>) { c(i, j) = a(i, k) * b(k, j) }
    pub kernel sub(c: &mut Csr<I1>, a: &Csr<I1>, b: &Csr<I1>) { c(i, j) = a(i, j) - b(i, j) }
}

/// A random `rows x cols` boolean matrix, about a third of the entries stored (a stored entry
/// may be 0), as `(row, col, value)` in row-major order.
fn matrix(rows: usize, cols: usize) -> impl Strategy<Value = Vec<(usize, usize, bool)>> {
    proptest::collection::vec((0..3u8, any::<bool>()), rows * cols).prop_map(move |cells| {
        cells
            .into_iter()
            .enumerate()
            .filter(|(_, (keep, _))| *keep == 0)
            .map(|(f, (_, v))| (f / cols, f % cols, v))
            .collect()
    })
}

fn bools(n: usize) -> impl Strategy<Value = Vec<I1>> {
    proptest::collection::vec(any::<bool>().prop_map(I1), n)
}

fn csr(shape: [usize; 2], entries: &[(usize, usize, bool)]) -> Csr<I1> {
    Csr::from_coo(shape, entries.iter().map(|&(i, j, v)| ([i, j], I1(v)))).unwrap()
}

fn csr_encoding() -> sparse::runtime::sparse_ir::ir::VerifiedEncoding {
    Csr::<I1>::encoding().verify().unwrap()
}

fn storage(shape: [usize; 2], entries: &[(usize, usize, bool)]) -> Operand<I1> {
    let mut coo = CooTensor::new(shape.to_vec());
    for &(i, j, v) in entries {
        coo.push(&[i, j], I1(v));
    }
    Operand::Storage(Box::new(
        DynamicStorage::from_coo(&csr_encoding(), &coo).unwrap(),
    ))
}

fn decl(name: &str, shape: &[usize], sparse: bool) -> TensorDecl {
    TensorDecl {
        name: name.into(),
        shape: shape.iter().map(|&n| Some(n)).collect(),
        value: ValueType::I1,
        encoding: sparse.then(csr_encoding),
    }
}

/// The interpreter's result of `statement` over `y` (rank 1, `rows`), `a` (sparse) and, if
/// given, `x` (dense, `cols`).
fn interpret_vector(
    statement: &str,
    a: Operand<I1>,
    shape: [usize; 2],
    x: Option<&[I1]>,
) -> Result<Vec<I1>, String> {
    let [rows, cols] = shape;
    let mut decls = vec![decl("y", &[rows], false), decl("a", &[rows, cols], true)];
    let mut ops = vec![
        Operand::Dense {
            shape: vec![rows],
            values: vec![I1(false); rows],
        },
        a,
    ];
    if let Some(x) = x {
        decls.push(decl("x", &[cols], false));
        ops.push(Operand::Dense {
            shape: vec![cols],
            values: x.to_vec(),
        });
    }
    let p = compile(statement, &decls).map_err(|e| e.to_string())?;
    match run(&p, &ops).map_err(|e| e.to_string())? {
        Output::Dense { values, .. } => Ok(values),
        Output::Sparse(_) => Err("a dense output was expected".into()),
    }
}

/// The interpreter's sparse result of `statement` over `c`, `a` and `b` (all sparse).
fn interpret_matrix(
    statement: &str,
    shapes: [[usize; 2]; 3],
    a: Operand<I1>,
    b: Operand<I1>,
) -> Vec<(Vec<usize>, I1)> {
    let p = compile(
        statement,
        &[
            decl("c", &shapes[0], true),
            decl("a", &shapes[1], true),
            decl("b", &shapes[2], true),
        ],
    )
    .unwrap();
    let empty = storage(shapes[0], &[]);
    match run(&p, &[empty, a, b]).unwrap() {
        Output::Sparse(s) => s.iter().map(|(c, v)| (c, *v)).collect(),
        Output::Dense { .. } => panic!("a sparse output was expected"),
    }
}

#[test]
fn known_answers() {
    // A = [[1, 1, 0], [0, 1, 1]] with an explicit 0 at (1, 0); x = [1, 1, 0]
    let a = csr(
        [2, 3],
        &[
            (0, 0, true),
            (0, 1, true),
            (1, 0, false),
            (1, 1, true),
            (1, 2, true),
        ],
    );
    let x = [I1(true), I1(true), I1(false)];
    let mut y = [I1(true); 2];
    // parity of the ands: row 0 has two (1 + 1 = 0), row 1 one
    parity(&mut y, &a, &x).unwrap();
    assert_eq!(y, [I1(false), I1(true)]);
    flip(&mut y, &a, &x).unwrap();
    assert_eq!(y, [I1(true), I1(false)]);
    or_and(&mut y, &a, &x).unwrap();
    assert_eq!(y, [I1(true), I1(true)]);
    // min is and over the stored entries: row 1 stores a 0
    rowmin(&mut y, &a).unwrap();
    assert_eq!(y, [I1(true), I1(false)]);
    rowmax(&mut y, &a).unwrap();
    assert_eq!(y, [I1(true), I1(true)]);
    // dividing by x(2) = 0 where row 1 stores an entry: an error, never a panic
    assert_eq!(ratio(&mut y, &a, &x), Err(StorageError::DivisionByZero));
    let ones = [I1(true); 3];
    ratio(&mut y, &a, &ones).unwrap();
    assert_eq!(y, [I1(false), I1(false)]);
    // A·Aᵀ-like product over GF(2): [[1, 1, 0], [0, 1, 1]] · [[1, 0], [1, 1], [0, 1]]
    let b = csr(
        [3, 2],
        &[(0, 0, true), (1, 0, true), (1, 1, true), (2, 1, true)],
    );
    let mut c = Csr::from_coo([2, 2], []).unwrap();
    spgemm(&mut c, &a, &b).unwrap();
    let got: Vec<([usize; 2], bool)> = c.iter().map(|(c, v)| (c, v.0)).collect();
    // (0, 0): 1 + 1 = 0, (0, 1): 1, (1, 0): 0·1 + 1·1 = 1, (1, 1): 1 + 1 = 0
    assert_eq!(
        got,
        vec![
            ([0, 0], false),
            ([0, 1], true),
            ([1, 0], true),
            ([1, 1], false)
        ]
    );
}

/// A generated kernel of `y`, `a` and `x`.
type Kernel = fn(&mut [I1], &Csr<I1>, &[I1]) -> Result<(), StorageError>;
/// A generated kernel of `y` and `a`.
type Reduction = fn(&mut [I1], &Csr<I1>) -> Result<(), StorageError>;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn vector_kernels_match_the_interpreter(
        (rows, cols, a, x) in (1usize..7, 1usize..7).prop_flat_map(|(r, c)| {
            (Just(r), Just(c), matrix(r, c), bools(c))
        })
    ) {
        let shape = [rows, cols];
        let s = csr(shape, &a);
        let with_x: [(&str, Kernel); 4] = [
            ("y(i) = a(i, j) * x(j)", parity),
            ("y(i) = or(j, a(i, j) & x(j))", or_and),
            ("y(i) = a(i, j) * x(j) + 1", flip),
            ("y(i) = a(i, j) / x(j)", ratio),
        ];
        for (statement, kernel) in with_x {
            let mut y = vec![I1(true); rows];
            let got = kernel(&mut y, &s, &x).map(|()| y).map_err(|e| e.to_string());
            let want = interpret_vector(statement, storage(shape, &a), shape, Some(&x));
            prop_assert_eq!(got.is_ok(), want.is_ok(), "{}", statement);
            if let (Ok(got), Ok(want)) = (got, want) {
                prop_assert_eq!(got, want, "{}", statement);
            }
        }
        let reductions: [(&str, Reduction); 2] = [
            ("y(i) = min(j, a(i, j))", rowmin),
            ("y(i) = max(j, a(i, j))", rowmax),
        ];
        for (statement, kernel) in reductions {
            let mut y = vec![I1(true); rows];
            kernel(&mut y, &s).unwrap();
            let want = interpret_vector(statement, storage(shape, &a), shape, None).unwrap();
            prop_assert_eq!(y, want, "{}", statement);
        }
    }

    #[test]
    fn sparse_outputs_match_the_interpreter(
        (m, k, n, a, b, b2) in (1usize..6, 1usize..6, 1usize..6).prop_flat_map(|(m, k, n)| {
            (Just(m), Just(k), Just(n), matrix(m, k), matrix(k, n), matrix(m, k))
        })
    ) {
        let mut c = Csr::from_coo([m, n], []).unwrap();
        spgemm(&mut c, &csr([m, k], &a), &csr([k, n], &b)).unwrap();
        let got: Vec<(Vec<usize>, I1)> = c.iter().map(|(c, v)| (c.to_vec(), *v)).collect();
        let want = interpret_matrix(
            "c(i, j) = a(i, k) * b(k, j)",
            [[m, n], [m, k], [k, n]],
            storage([m, k], &a),
            storage([k, n], &b),
        );
        prop_assert_eq!(got, want);
        let mut d = Csr::from_coo([m, k], []).unwrap();
        sub(&mut d, &csr([m, k], &a), &csr([m, k], &b2)).unwrap();
        let got: Vec<(Vec<usize>, I1)> = d.iter().map(|(c, v)| (c.to_vec(), *v)).collect();
        let want = interpret_matrix(
            "c(i, j) = a(i, j) - b(i, j)",
            [[m, k], [m, k], [m, k]],
            storage([m, k], &a),
            storage([m, k], &b2),
        );
        prop_assert_eq!(got, want);
    }
}
