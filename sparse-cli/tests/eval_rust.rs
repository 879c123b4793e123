//! `sparse eval --emit rust`: the function `sparse_format!` generates for the statement, printed
//! as `sparse expand` prints generated code.

mod run;
use run::sparse;

const CSR: &str = "A=tensor<4x5xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>>";

/// `sparse eval 'OUT(i) = A(i,j) * x(j)' --emit rust` with the output named `out`.
fn spmv_named(out: &str) -> (i32, String, String) {
    sparse(&[
        "eval",
        &format!("{out}(i) = A(i,j) * x(j)"),
        "--tensor",
        &format!("{out}=tensor<4xf64>"),
        "--tensor",
        CSR,
        "--tensor",
        "x=tensor<5xf64>",
        "--emit",
        "rust",
    ])
}

#[test]
fn spmv_prints_the_generated_function() {
    let (code, out, err) = spmv_named("y");
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(out, SPMV);
}

#[test]
fn a_conversion_is_generated_in_the_function() {
    let (code, out, err) = sparse(&[
        "eval",
        "C(i,j) = A(i,j) + B(i,j)",
        "--tensor",
        "C=tensor<4x5xf64>",
        "--tensor",
        CSR,
        "--tensor",
        "B=tensor<4x5xf64, #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed) }>>",
        "--emit",
        "rust",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    // `B` (column-major) is converted to the row-major order of `A` first, into a private
    // struct generated inside the function, then merged with `A` row by row
    assert!(out.contains("    struct BConverted<V = f64> {\n"), "{out}");
    assert!(
        out.contains(
            "\"#sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed) }>\""
        ),
        "{out}"
    );
    assert!(
        out.contains("    let B_converted: BConverted<f64> = B.convert()?;\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "            while a_p1 < a_p1_end || b_converted_p1 < b_converted_p1_end {\n"
        ),
        "{out}"
    );
    // the dense output is written in place, through a slice of its values
    assert!(
        out.contains("    let c_values = &mut C.values[..];\n    c_values.fill(0.0);\n"),
        "{out}"
    );
}

/// Gustavson's `A·A` with rows run together and spanned rows: those rarer rows run in functions
/// of their own, taking what their loops read (the operands, the output's arrays, the
/// workspace's) and nothing else (not the output `C`, whose arrays are built apart).
#[test]
fn the_rarer_rows_of_a_product_run_in_functions_of_their_own() {
    let csr = |name: &str| {
        format!("{name}=tensor<?x?xf64, #sparse_tensor.encoding<{{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }}>>")
    };
    let (code, out, err) = sparse(&[
        "eval",
        "C(i,j) = A(i,k) * B(k,j)",
        "--tensor",
        &csr("A"),
        "--tensor",
        &csr("B"),
        "--tensor",
        &csr("C"),
        "--emit",
        "rust",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    let signature = |name: &str| {
        let at = out
            .find(&format!("unsafe fn {name}(\n"))
            .unwrap_or_else(|| panic!("no `{name}`: {out}"));
        let end = at + out[at..].find(") {\n").expect("the signature's end");
        out[at..end]
            .lines()
            .skip(1)
            .map(|l| l.trim().trim_end_matches(',').to_string())
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
    };
    let rt = "::sparse::runtime::generated";
    assert_eq!(
        signature("spanned_row"),
        [
            "i: usize".to_string(),
            format!("span: {rt}::RowSpan"),
            "A: &AFormat<f64>".into(),
            "B: &BFormat<f64>".into(),
            "c_pos_1: &mut ::std::vec::Vec<u32>".into(),
            "c_crd_1: &mut ::std::vec::Vec<u32>".into(),
            "c_values: &mut ::std::vec::Vec<f64>".into(),
            "window_sums: &mut ::std::vec::Vec<f64>".into(),
            format!("spans: &mut {rt}::RowSpans"),
        ]
    );
    assert_eq!(
        signature("rows_together"),
        [
            "i: usize".to_string(),
            "rows: usize".into(),
            format!("shift: [usize; {rt}::SHARED_ROWS]"),
            "A: &AFormat<f64>".into(),
            "B: &BFormat<f64>".into(),
            "c_pos_1: &mut ::std::vec::Vec<u32>".into(),
            "c_crd_1: &mut ::std::vec::Vec<u32>".into(),
            "c_values: &mut ::std::vec::Vec<f64>".into(),
            "workspace_rows: &mut ::std::vec::Vec<".into(),
            format!("[f64; {rt}::SHARED_ROWS]"),
            ">".into(),
            "untouched: f64".into(),
            format!("touched: &mut {rt}::Touched"),
        ]
    );
    assert!(out.contains("unsafe fn spanned_rows_together(\n"), "{out}");
    // called in their place; the rows of the marker and the windowed rows stay inline
    assert!(
        out.contains("spanned_row(\n                        i,\n                        span,\n"),
        "{out}"
    );
    assert_eq!(out.matches("unsafe fn ").count(), 3, "{out}");
}

const SPMV: &str = r#"// AFormat = #sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed), posWidth = 32, crdWidth = 32 }>
/// `y(i) = A(i,j) * x(j)`, compiled by the sparsifier.
///
/// Errors: `StorageError::LengthMismatch` naming the operand (and dimension) whose
/// size differs from the extent of its index.
pub fn kernel(
    y: &mut [f64],
    A: &AFormat<f64>,
    x: &[f64],
) -> ::core::result::Result<(), ::sparse::runtime::StorageError> {
    use ::sparse::runtime::Index as _;
    let n_i = y.len();
    let n_j = A.dim_shape[1];
    if A.dim_shape[0] != n_i {
        return ::core::result::Result::Err(::sparse::runtime::StorageError::LengthMismatch {
            operand: "A (dimension 0)",
            expected: n_i,
            got: A.dim_shape[0],
        });
    }
    if x.len() != n_j {
        return ::core::result::Result::Err(::sparse::runtime::StorageError::LengthMismatch {
            operand: "x",
            expected: n_j,
            got: x.len(),
        });
    }
    let prefetch = ::sparse::runtime::prefetch::enabled(&A.values);
    let locality = ::sparse::runtime::prefetch::locality(&A.values);
    // SAFETY: every position read lies in a segment of its level's positions and every stored
    // coordinate is below its level size (`from_coo` builds such arrays, `from_raw_parts` validates
    // them, `from_raw_parts_unchecked` makes it the caller's promise); every dense operand's size
    // was checked against its indices' extents above.
    unsafe {
        for i in 0..n_i {
            let a_p0 = i;
            let mut t0 = 0.0;
            let (lo, hi) = (
                A.pos_1.get_unchecked(a_p0).index(),
                A.pos_1.get_unchecked(a_p0 + 1).index(),
            );
            if prefetch {
                ::sparse::runtime::prefetch::row_unchecked(&A.crd_1, lo, hi, locality);
                ::sparse::runtime::prefetch::row_unchecked(&A.values, lo, hi, locality);
            }
            let mut t0_1 = 0.0;
            let mut t0_2 = 0.0;
            let mut t0_3 = 0.0;
            let mut a_p1 = lo;
            while a_p1 + 4 <= hi {
                let (j, j_1) = ::sparse::runtime::Index::pair_unchecked(&A.crd_1, a_p1);
                let (j_2, j_3) = ::sparse::runtime::Index::pair_unchecked(
                    &A.crd_1,
                    a_p1 + 2,
                );
                t0 += *A.values.get_unchecked(a_p1) * *x.get_unchecked(j);
                {
                    let a_p1 = a_p1 + 1;
                    let j = j_1;
                    t0_1 += *A.values.get_unchecked(a_p1) * *x.get_unchecked(j);
                }
                {
                    let a_p1 = a_p1 + 2;
                    let j = j_2;
                    t0_2 += *A.values.get_unchecked(a_p1) * *x.get_unchecked(j);
                }
                {
                    let a_p1 = a_p1 + 3;
                    let j = j_3;
                    t0_3 += *A.values.get_unchecked(a_p1) * *x.get_unchecked(j);
                }
                a_p1 += 4;
            }
            while a_p1 < hi {
                let j = A.crd_1.get_unchecked(a_p1).index();
                t0 += *A.values.get_unchecked(a_p1) * *x.get_unchecked(j);
                a_p1 += 1;
            }
            t0 += t0_1 + t0_2 + t0_3;
            *y.get_unchecked_mut(i) = t0;
        }
    }
    ::core::result::Result::Ok(())
}
"#;

#[test]
fn a_parameter_named_as_the_split_unit_is_refused() {
    // `unit` is the generated code's own (the closure that gives a parallel split the entries
    // before each unit): a tensor so named would be shadowed
    let (code, out, err) = spmv_named("unit");
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "error: --emit rust: the parameter `unit` has the name of a variable of the generated loops (an index, a position, an extent or a buffer); rename it\n"
    );
}
