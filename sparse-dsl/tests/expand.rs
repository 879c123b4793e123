//! What `sparse expand` prints: every `unsafe` block carries its `// SAFETY:` comment, and the
//! generated code stays within its size budget (issue 8: CSR in at most half of the 780 lines
//! it once took; measured as `sparse expand` prints it).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use sparse_dsl::codegen::{expand_to_string, Declaration};
use sparse_dsl::parse::parse_declaration;

fn expand(name: &str, text: &str) -> String {
    let parsed = parse_declaration(text).unwrap_or_else(|d| panic!("{text}: {d:?}"));
    let decl = Declaration::from_declared(quote!(pub), format_ident!("{name}"), parsed.declared)
        .expect("declaration");
    let rt: TokenStream = quote!(::sparse::runtime);
    expand_to_string(&decl, &rt).expect("expands")
}

const FORMATS: [(&str, &str); 6] = [
    (
        "CSR",
        "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>",
    ),
    (
        "CSC",
        "#sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed) }>",
    ),
    (
        "COO",
        "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>",
    ),
    (
        "BSR",
        "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : \
         compressed, i mod 2 : dense, j mod 2 : dense) }>",
    ),
    (
        "NV24",
        "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : \
         structured[2, 4]), crdWidth = 2 }>",
    ),
    (
        "BatchCsr",
        "#sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : dense, j : compressed) }>",
    ),
];

#[test]
fn every_unsafe_block_has_a_safety_comment_above_it() {
    let mut blocks = 0;
    for (name, text) in FORMATS {
        let code = expand(name, text);
        let lines: Vec<&str> = code.lines().collect();
        for (k, line) in lines.iter().enumerate() {
            if !line.contains("unsafe {") {
                continue;
            }
            blocks += 1;
            // the comment block right above the statement holding the `unsafe` block
            let comment: Vec<&str> = lines[..k]
                .iter()
                .rev()
                .take_while(|l| l.trim_start().starts_with("//"))
                .copied()
                .collect();
            assert!(
                comment
                    .iter()
                    .any(|l| l.trim_start().starts_with("// SAFETY: ")),
                "{name}: line {} has no SAFETY comment above it:\n{line}",
                k + 1
            );
            assert!(
                comment.iter().all(|l| l.len() <= 100),
                "{name}: {comment:?}"
            );
        }
        assert!(
            !code.contains("safety!"),
            "{name}: a marker was left unprinted"
        );
    }
    // exactly one, around the loops of each built-in kernel the sparsifier generated (`spmv`,
    // its row-range form, `spmv_transpose` and its row-range form (CSC's), `spmm` in both
    // orders); none elsewhere
    let kernels: usize = FORMATS
        .iter()
        .map(|(name, text)| {
            expand(name, text)
                .lines()
                .filter(|l| {
                    [
                        "fn spmv(",
                        "fn spmv_rows(",
                        "fn spmm_rows(",
                        "fn spmv_transpose(",
                        "fn spmv_transpose_rows(",
                        "fn spmm_row_major(",
                        "fn spmm_col_major(",
                        "fn spmm_array<",
                    ]
                    .iter()
                    .any(|f| l.contains(f))
                })
                .count()
        })
        .sum();
    assert!(kernels > 0);
    assert_eq!(blocks, kernels);
}

/// `(lines of the storage code, lines of each built-in kernel)`: the kernels are the methods of
/// the `impl` block that starts with `spmv` (up to the `Display` impl).
fn sizes(code: &str) -> (usize, Vec<(String, usize)>) {
    let lines: Vec<&str> = code.lines().collect();
    let spmv = lines
        .iter()
        .position(|l| l.contains("pub fn spmv("))
        .expect("spmv");
    let start = (0..spmv)
        .rev()
        .find(|&k| lines[k].trim_start().starts_with("impl<"))
        .expect("impl");
    let end = (spmv..lines.len())
        .find(|&k| lines[k].contains("::core::fmt::Display for"))
        .expect("Display");
    let mut kernels = Vec::new();
    for k in start..end {
        let l = lines[k].trim_start();
        if let Some(f) = l.strip_prefix("pub fn ").or_else(|| l.strip_prefix("fn ")) {
            let indent = lines[k].len() - l.len();
            let close = (k..end)
                .find(|&e| {
                    lines[e].len() - lines[e].trim_start().len() == indent && lines[e].trim() == "}"
                })
                .expect("end of fn");
            kernels.push((f.split('(').next().unwrap_or(f).to_string(), close - k + 1));
        }
    }
    (lines.len() - (end - start), kernels)
}

#[test]
fn csr_expands_to_at_most_half_of_its_former_size() {
    // the storage code (issue 8's budget: CSR in at most half of its former 783 lines), then
    // each built-in kernel generated by the sparsifier: its checks and loops, readable
    // BSR's storage code includes `block` and `blocks` (the blocks as dense views); both have
    // `spmm_rows` (`spmm_par`'s ranges; CSR's SparseCore tiles too)
    for (name, budget, methods) in [("CSR", 391, 16), ("BSR", 440, 16)] {
        let text = FORMATS.iter().find(|f| f.0 == name).unwrap().1;
        let (storage, kernels) = sizes(&expand(name, text));
        assert!(storage <= budget, "{name}: storage code of {storage} lines");
        assert_eq!(kernels.len(), methods, "{name}: {kernels:?}");
        for (f, n) in kernels {
            assert!(n <= 90, "{name}: `{f}` takes {n} lines");
        }
    }
}

#[test]
fn the_transposed_product_runs_in_parallel_over_the_columns_of_a_column_format() {
    // CSC's `y = Aᵀ·x` sums each column as `spmv` sums a row: its row-range form splits the
    // columns over rayon; CSR's scatters into `y`, so its parallel form is the serial kernel
    for (name, split) in [("CSC", true), ("CSR", false), ("BSR", false)] {
        let code = expand(name, FORMATS.iter().find(|f| f.0 == name).unwrap().1);
        let par = method(&code, "spmv_transpose_par");
        assert_eq!(
            par.contains("self.spmv_transpose_rows(x, chunk, row0)"),
            split,
            "{name}: {par}"
        );
        assert_eq!(code.contains("fn spmv_transpose_rows("), split, "{name}");
        assert!(par.contains("return self.spmv_transpose(x, y);") || !split);
        assert!(par.contains("self.spmv_transpose(x, y)?;") || split);
    }
}

#[test]
fn spmm_runs_in_parallel_over_the_rows_of_a_row_major_output() {
    // CSR's rows are the rows of `C` one by one and BSR's block rows hold several: `spmm_par`
    // splits them (`spmm_rows`, in units of 2 rows for BSR 2x2); CSC's columns hold none: the
    // serial `spmm`
    for (name, split) in [("CSR", true), ("BSR", true), ("CSC", false)] {
        let code = expand(name, FORMATS.iter().find(|f| f.0 == name).unwrap().1);
        let par = method(&code, "spmm_par");
        assert_eq!(
            par.contains("self.spmm_rows(b, chunk, n, row0)"),
            split,
            "{name}: {par}"
        );
        assert!(par.contains("self.spmm(b, c, n, order)"), "{name}: {par}");
        if name == "BSR" {
            // units of 2 rows of `n` elements each (spaces aside: the formatter may break lines)
            let flat: String = par.split_whitespace().collect();
            assert!(flat.contains("par_rows(c,2*n,work,"), "{par}");
        }
    }
}

#[test]
fn a_format_named_like_an_import_of_the_generated_code_is_refused() {
    let parsed = parse_declaration(FORMATS[0].1).expect("parses");
    for name in ["Result", "Option", "StorageError"] {
        let decl = Declaration::from_declared(
            quote!(pub),
            format_ident!("{name}"),
            parsed.declared.clone(),
        )
        .expect("declaration");
        let err = expand_to_string(&decl, &quote!(::sparse::runtime)).expect_err(name);
        assert_eq!(
            err.0,
            format!(
                "the format name `{name}` would be shadowed by `{name}`, which the generated code \
                 imports; choose another name"
            )
        );
    }
}

#[test]
fn bsr_spmv_sums_each_block_row_before_the_output() {
    // the built-in `spmv` may reassociate: a block row's products go into `block_sum`, added
    // to `y` once (one carried addition per block row, not one per block column)
    for (name, blocked) in [("BSR", true), ("CSR", false)] {
        let text = FORMATS.iter().find(|f| f.0 == name).unwrap().1;
        let code = expand(name, text);
        let start = code.find("pub fn spmv(").expect("spmv");
        let end = start + code[start..].find("\n        }\n").expect("end of spmv");
        let spmv = &code[start..end];
        assert_eq!(
            spmv.contains("let mut block_sum"),
            blocked,
            "{name}: {spmv}"
        );
        // the sum starts from the block's first product, not from zero (LLVM keeps a float
        // `0.0 + x`: one addition in three of a 3-wide block row)
        assert!(!spmv.contains("block_sum = <V as rt::num_traits::Zero>::zero()"));
        if blocked {
            let first = spmv.find("let mut block_sum = {").expect("the first term");
            assert!(spmv[first..].contains("for j_mod2 in 1..2"), "{spmv}");
        }
        // the user-facing `spmm`s keep the statement's order
        let spmm = &code[code.find("fn spmm_row_major(").expect("spmm")..];
        assert!(!spmm[..spmm.find("\n        }\n").unwrap()].contains("block_sum"));
    }
}

/// The body of the generated method `name` (from its signature to its closing brace).
fn method<'a>(code: &'a str, name: &str) -> &'a str {
    let start = code
        .find(&format!("fn {name}("))
        .unwrap_or_else(|| panic!("{name}"));
    let end = start
        + code[start..]
            .find("\n        }\n")
            .expect("end of the method");
    &code[start..end]
}

#[test]
fn spmv_loops_prefetch_their_streams_behind_one_flag() {
    // CSR's row sums prefetch the row's coordinates and values ahead before the loop summing
    // it (`prefetch::row_unchecked`), BSR's block rows each block's coordinate and values in
    // the loop (`prefetch::ahead`, `prefetch::blocks_ahead` from the block's first value), when
    // `prefetch::enabled` said so once before the loops, with the `prefetch::locality` asked
    // there too
    let csr = "if prefetch {\n                        \
               rt::prefetch::row_unchecked(&self.crd_1, lo, hi, locality);\n                        \
               rt::prefetch::row_unchecked(&self.values, lo, hi, locality);\n                    }\n                    \
               let mut t0_1";
    let bsr =
        "for a_p1 in lo..hi {\n                        if prefetch {\n                            \
               rt::prefetch::ahead(&self.crd_1, a_p1, locality);\n                            \
               rt::prefetch::blocks_ahead(&self.values, a_p1 * 4, locality);\n                        }\n";
    for (name, gated) in [("CSR", csr), ("BSR", bsr)] {
        let text = FORMATS.iter().find(|f| f.0 == name).unwrap().1;
        let code = expand(name, text);
        for f in ["spmv", "spmv_rows"] {
            let body = method(&code, f);
            let flag = body
                .find(
                    "let prefetch = rt::prefetch::enabled(&self.values);\n            \
                     let locality = rt::prefetch::locality(&self.values);",
                )
                .unwrap_or_else(|| panic!("{name} {f}: {body}"));
            let loops = body.find("unsafe {").expect("the loops");
            assert!(
                flag < loops,
                "{name} {f}: the flag is asked before the loops"
            );
            assert!(body.contains(gated), "{name} {f}: {body}");
            assert_eq!(body.matches("if prefetch").count(), 1, "{name} {f}");
        }
        // SpMM's rows gather rows of `B`: its loops stay as they were; so do BSR's scattered
        // blocks (a loop over the block's columns in each)
        assert!(
            !method(&code, "spmm_row_major").contains("prefetch"),
            "{name}"
        );
        if name == "BSR" {
            assert!(!method(&code, "spmv_transpose").contains("prefetch"));
        }
        // BSR's block rows run as two streams when the kernel prefetches, all of them or a
        // range (a task of `spmv_par`); CSR's rows in order
        for (f, order) in [
            ("spmv", "in rt::prefetch::row_order(0..n_i / 2, prefetch) {"),
            (
                "spmv_rows",
                "in rt::prefetch::row_order(\n                    row0..row0 + y.len() / 2,\n                    prefetch,\n                ) {",
            ),
        ] {
            let body = method(&code, f);
            assert_eq!(body.contains(order), name == "BSR", "{name} {f}: {body}");
            assert_eq!(body.contains("row_order"), name == "BSR", "{name} {f}");
        }
    }
    // a row scattered into `y` (CSR's transposed SpMV, CSC's SpMV) is prefetched before its
    // loop into all cache levels: no `locality` asked
    let scattered = "if prefetch {\n                        \
                     let temporal = rt::prefetch::Locality::Temporal;\n                        \
                     rt::prefetch::row_unchecked(&self.crd_1, lo, hi, temporal);\n                        \
                     rt::prefetch::row_unchecked(&self.values, lo, hi, temporal);\n                    }\n                    \
                     let mut a_p1 = lo;\n                    \
                     while a_p1 + 4 <= hi {";
    for (name, f) in [("CSR", "spmv_transpose"), ("CSC", "spmv")] {
        let code = expand(name, FORMATS.iter().find(|x| x.0 == name).unwrap().1);
        let body = method(&code, f);
        assert!(body.contains(scattered), "{name} {f}: {body}");
        // unrolled by four, the rest one by one, in the segment's order
        for k in 1..4 {
            assert!(
                body.contains(&format!("let a_p1 = a_p1 + {k};")),
                "{name} {f}"
            );
        }
        assert!(body.contains("a_p1 += 4;") && body.contains("a_p1 += 1;"));
        assert!(!body.contains("in lo..hi"), "{name} {f}: {body}");
        assert!(
            body.contains("let prefetch = rt::prefetch::enabled(&self.values);")
                && !body.contains("locality("),
            "{name} {f}: {body}"
        );
    }
    // COO's pairs are not streamed by position in partial sums: no prefetch
    let coo = expand("COO", FORMATS.iter().find(|f| f.0 == "COO").unwrap().1);
    assert!(!method(&coo, "spmv").contains("prefetch"));
    // 2:4's steps prefetch their values alone, once a step (its coordinates are packed)
    let nv = expand("NV24", FORMATS.iter().find(|f| f.0 == "NV24").unwrap().1);
    for f in ["spmv", "spmv_rows"] {
        let body = method(&nv, f);
        assert!(
            body.contains("let lo = a_p1 * 2;\n                            if prefetch {\n                                rt::prefetch::ahead(&self.values, lo, locality);\n                            }"),
            "NV24 {f}: {body}"
        );
        assert_eq!(body.matches("rt::prefetch::ahead").count(), 1, "NV24 {f}");
        assert!(body.contains("let prefetch = rt::prefetch::enabled(&self.values);"));
        // a step holds two segments: the one left over is a test, not a loop (a loop of at
        // most one turn kept LLVM from unswitching the steps on the flag)
        assert!(
            body.contains("if j_div4 < (n_j / 4) {") && !body.contains("while j_div4 < "),
            "NV24 {f}: {body}"
        );
    }
}

#[test]
fn ell_segments_are_tested_not_looped() {
    // `validate` keeps at most one entry of a row in each ELL slice: the last level's segment
    // under a slice and a row is read with a test; CSR's segments, under a row only, stay loops
    let ell = expand(
        "ELL",
        "#sparse_tensor.encoding<{ map = [c](i, j) -> (c * 3 * i : dense, i : dense, j : compressed) }>",
    );
    for f in ["spmv", "spmv_transpose"] {
        let body = method(&ell, f);
        assert!(
            body.contains("if lo < hi {\n") && body.contains("let a_p2 = lo;"),
            "ELL {f}: {body}"
        );
        assert!(!body.contains("in lo..hi"), "ELL {f}: {body}");
    }
    let csr = expand("CSR", FORMATS[0].1);
    assert!(method(&csr, "spmv_transpose").contains("while a_p1 < hi {"));
    assert!(!method(&csr, "spmv_transpose").contains("if lo < hi {\n"));
}

#[test]
fn a_column_formats_transposed_product_sums_in_partial_sums() {
    // CSC's `spmv_transpose` sums each element of `y` over a column, as CSR's `spmv` over a
    // row: four partial sums, the row's streams prefetched; CSR's scatters (no sum to split)
    let csc = expand("CSC", FORMATS[1].1);
    let body = method(&csc, "spmv_transpose");
    for lane in [
        "let mut t0_1",
        "let mut t0_2",
        "let mut t0_3",
        "t0 += t0_1 + t0_2 + t0_3;",
    ] {
        assert!(body.contains(lane), "CSC: {body}");
    }
    assert!(body.contains("rt::prefetch::row_unchecked(&self.values, lo, hi, locality);"));
    let csr = expand("CSR", FORMATS[0].1);
    assert!(!method(&csr, "spmv_transpose").contains("t0_1"));
}
