//! Kernels of `sparse_format!` across level formats (issue 9): for every format, and for every
//! pairing of formats in a binary kernel, the generated Rust against the sparsifier's
//! interpreter (the same loop program over `DynamicStorage`) and against a dense reference.
//! Values are small integers, so every sum is exact and results compare exactly; the
//! generated loops add in the interpreter's order in any case.
//!
//! Formats: CSR, CSC, DCSR, DCSC, COO (AoS and SoA singleton), BSR 2x2, 2:4, loose_compressed,
//! ELL (8 slots) and all-dense; a slice and a batch in their own kernels. Pairs the sparsifier
//! cannot co-iterate directly (CSR with CSC, BSR with anything unblocked, ELL under a union)
//! run through the conversion it inserts.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use sparse::runtime::generated::{to_dense, DenseOrder, Entries};
use sparse::runtime::storage::FromCoo;
use sparse::runtime::{CooTensor, DynamicStorage};
use sparse::sparse_format;
use sparse_sparsifier::interp::{run, Operand, Output};
use sparse_sparsifier::{compile, TensorDecl, ValueType};

sparse_format! {
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
    pub Csc = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed) }>;
    pub Dcsr = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed) }>;
    pub Dcsc = #sparse_tensor.encoding<{ map = (i, j) -> (j : compressed, i : compressed) }>;
    pub Coo = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>;
    pub CooSoa = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton(soa)) }>;
    pub Bsr = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense) }>;
    pub Nv24 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4) }>;
    pub Loose = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : loose_compressed) }>;
    pub Ell = #sparse_tensor.encoding<{ map = [c](i, j) -> (c * 8 * i : dense, i : dense, j : compressed) }>;
    pub Dense = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : dense) }>;
    pub Batched = #sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : dense, j : compressed) }>;
    pub Dense3 = #sparse_tensor.encoding<{ map = (b, i, j) -> (b : dense, i : dense, j : dense) }>;
    pub CsrSlice = #sparse_tensor.encoding<{ map = (i : #sparse_tensor<slice(1, 4, 1)>, j : #sparse_tensor<slice(0, 4, 2)>) -> (i : dense, j : compressed) }>;
    pub DcsrSlice = #sparse_tensor.encoding<{ map = (i : #sparse_tensor<slice(0, 4, 2)>, j : #sparse_tensor<slice(2, 4, 1)>) -> (i : compressed, j : compressed) }>;
    pub Csf = #sparse_tensor.encoding<{ map = (i, j, k) -> (i : compressed, j : compressed, k : compressed) }>;
    pub SpVec = #sparse_tensor.encoding<{ map = (i) -> (i : compressed) }>;

    // one operand per format
    pub kernel spmv_csr(y: &mut [f64], a: &Csr<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel rowmin_csr(m: &mut [f64], a: &Csr<f64>) { m(i) = min(j, a(i, j)) }
    pub kernel colmax_csr(m: &mut [f64], a: &Csr<f64>) { m(j) = max(i, a(i, j)) }
    pub kernel transpose_csr(c: &mut Dcsr<f64>, a: &Csr<f64>) { c(j, i) = a(i, j) }
    pub kernel scale_csr(a: &mut Csr<f64>) { a(i, j) = a(i, j) * 2.0 }
    pub kernel total_csr(s: &mut f64, a: &Csr<f64>) { s = sum(i j, a(i, j)) }
    pub kernel spmv_csc(y: &mut [f64], a: &Csc<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel rowmin_csc(m: &mut [f64], a: &Csc<f64>) { m(i) = min(j, a(i, j)) }
    pub kernel colmax_csc(m: &mut [f64], a: &Csc<f64>) { m(j) = max(i, a(i, j)) }
    pub kernel transpose_csc(c: &mut Dcsr<f64>, a: &Csc<f64>) { c(j, i) = a(i, j) }
    pub kernel scale_csc(a: &mut Csc<f64>) { a(i, j) = a(i, j) * 2.0 }
    pub kernel total_csc(s: &mut f64, a: &Csc<f64>) { s = sum(i j, a(i, j)) }
    pub kernel spmv_dcsr(y: &mut [f64], a: &Dcsr<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel rowmin_dcsr(m: &mut [f64], a: &Dcsr<f64>) { m(i) = min(j, a(i, j)) }
    pub kernel colmax_dcsr(m: &mut [f64], a: &Dcsr<f64>) { m(j) = max(i, a(i, j)) }
    pub kernel transpose_dcsr(c: &mut Dcsr<f64>, a: &Dcsr<f64>) { c(j, i) = a(i, j) }
    pub kernel scale_dcsr(a: &mut Dcsr<f64>) { a(i, j) = a(i, j) * 2.0 }
    pub kernel total_dcsr(s: &mut f64, a: &Dcsr<f64>) { s = sum(i j, a(i, j)) }
    pub kernel spmv_dcsc(y: &mut [f64], a: &Dcsc<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel rowmin_dcsc(m: &mut [f64], a: &Dcsc<f64>) { m(i) = min(j, a(i, j)) }
    pub kernel colmax_dcsc(m: &mut [f64], a: &Dcsc<f64>) { m(j) = max(i, a(i, j)) }
    pub kernel transpose_dcsc(c: &mut Dcsr<f64>, a: &Dcsc<f64>) { c(j, i) = a(i, j) }
    pub kernel scale_dcsc(a: &mut Dcsc<f64>) { a(i, j) = a(i, j) * 2.0 }
    pub kernel total_dcsc(s: &mut f64, a: &Dcsc<f64>) { s = sum(i j, a(i, j)) }
    pub kernel spmv_coo(y: &mut [f64], a: &Coo<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel rowmin_coo(m: &mut [f64], a: &Coo<f64>) { m(i) = min(j, a(i, j)) }
    pub kernel colmax_coo(m: &mut [f64], a: &Coo<f64>) { m(j) = max(i, a(i, j)) }
    pub kernel transpose_coo(c: &mut Dcsr<f64>, a: &Coo<f64>) { c(j, i) = a(i, j) }
    pub kernel scale_coo(a: &mut Coo<f64>) { a(i, j) = a(i, j) * 2.0 }
    pub kernel total_coo(s: &mut f64, a: &Coo<f64>) { s = sum(i j, a(i, j)) }
    pub kernel spmv_coo_soa(y: &mut [f64], a: &CooSoa<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel rowmin_coo_soa(m: &mut [f64], a: &CooSoa<f64>) { m(i) = min(j, a(i, j)) }
    pub kernel colmax_coo_soa(m: &mut [f64], a: &CooSoa<f64>) { m(j) = max(i, a(i, j)) }
    pub kernel transpose_coo_soa(c: &mut Dcsr<f64>, a: &CooSoa<f64>) { c(j, i) = a(i, j) }
    pub kernel scale_coo_soa(a: &mut CooSoa<f64>) { a(i, j) = a(i, j) * 2.0 }
    pub kernel total_coo_soa(s: &mut f64, a: &CooSoa<f64>) { s = sum(i j, a(i, j)) }
    pub kernel spmv_bsr(y: &mut [f64], a: &Bsr<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel rowmin_bsr(m: &mut [f64], a: &Bsr<f64>) { m(i) = min(j, a(i, j)) }
    pub kernel colmax_bsr(m: &mut [f64], a: &Bsr<f64>) { m(j) = max(i, a(i, j)) }
    pub kernel transpose_bsr(c: &mut Dcsr<f64>, a: &Bsr<f64>) { c(j, i) = a(i, j) }
    pub kernel scale_bsr(a: &mut Bsr<f64>) { a(i, j) = a(i, j) * 2.0 }
    pub kernel total_bsr(s: &mut f64, a: &Bsr<f64>) { s = sum(i j, a(i, j)) }
    pub kernel spmv_nv24(y: &mut [f64], a: &Nv24<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel rowmin_nv24(m: &mut [f64], a: &Nv24<f64>) { m(i) = min(j, a(i, j)) }
    pub kernel colmax_nv24(m: &mut [f64], a: &Nv24<f64>) { m(j) = max(i, a(i, j)) }
    pub kernel transpose_nv24(c: &mut Dcsr<f64>, a: &Nv24<f64>) { c(j, i) = a(i, j) }
    pub kernel scale_nv24(a: &mut Nv24<f64>) { a(i, j) = a(i, j) * 2.0 }
    pub kernel total_nv24(s: &mut f64, a: &Nv24<f64>) { s = sum(i j, a(i, j)) }
    pub kernel spmv_loose(y: &mut [f64], a: &Loose<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel rowmin_loose(m: &mut [f64], a: &Loose<f64>) { m(i) = min(j, a(i, j)) }
    pub kernel colmax_loose(m: &mut [f64], a: &Loose<f64>) { m(j) = max(i, a(i, j)) }
    pub kernel transpose_loose(c: &mut Dcsr<f64>, a: &Loose<f64>) { c(j, i) = a(i, j) }
    pub kernel scale_loose(a: &mut Loose<f64>) { a(i, j) = a(i, j) * 2.0 }
    pub kernel total_loose(s: &mut f64, a: &Loose<f64>) { s = sum(i j, a(i, j)) }
    pub kernel spmv_ell(y: &mut [f64], a: &Ell<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel rowmin_ell(m: &mut [f64], a: &Ell<f64>) { m(i) = min(j, a(i, j)) }
    pub kernel colmax_ell(m: &mut [f64], a: &Ell<f64>) { m(j) = max(i, a(i, j)) }
    pub kernel transpose_ell(c: &mut Dcsr<f64>, a: &Ell<f64>) { c(j, i) = a(i, j) }
    pub kernel scale_ell(a: &mut Ell<f64>) { a(i, j) = a(i, j) * 2.0 }
    pub kernel total_ell(s: &mut f64, a: &Ell<f64>) { s = sum(i j, a(i, j)) }
    pub kernel spmv_dense(y: &mut [f64], a: &Dense<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel rowmin_dense(m: &mut [f64], a: &Dense<f64>) { m(i) = min(j, a(i, j)) }
    pub kernel colmax_dense(m: &mut [f64], a: &Dense<f64>) { m(j) = max(i, a(i, j)) }
    pub kernel transpose_dense(c: &mut Dcsr<f64>, a: &Dense<f64>) { c(j, i) = a(i, j) }
    pub kernel scale_dense(a: &mut Dense<f64>) { a(i, j) = a(i, j) * 2.0 }
    pub kernel total_dense(s: &mut f64, a: &Dense<f64>) { s = sum(i j, a(i, j)) }

    // every pairing: a union into a sparse output, an intersection into a dense one
    pub kernel add_csr_csr(c: &mut Dcsr<f64>, a: &Csr<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csr_csr(c: &mut Dense<f64>, a: &Csr<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csr_csc(c: &mut Dcsr<f64>, a: &Csr<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csr_csc(c: &mut Dense<f64>, a: &Csr<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csr_dcsr(c: &mut Dcsr<f64>, a: &Csr<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csr_dcsr(c: &mut Dense<f64>, a: &Csr<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csr_dcsc(c: &mut Dcsr<f64>, a: &Csr<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csr_dcsc(c: &mut Dense<f64>, a: &Csr<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csr_coo(c: &mut Dcsr<f64>, a: &Csr<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csr_coo(c: &mut Dense<f64>, a: &Csr<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csr_coo_soa(c: &mut Dcsr<f64>, a: &Csr<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csr_coo_soa(c: &mut Dense<f64>, a: &Csr<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csr_bsr(c: &mut Dcsr<f64>, a: &Csr<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csr_bsr(c: &mut Dense<f64>, a: &Csr<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csr_nv24(c: &mut Dcsr<f64>, a: &Csr<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csr_nv24(c: &mut Dense<f64>, a: &Csr<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csr_loose(c: &mut Dcsr<f64>, a: &Csr<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csr_loose(c: &mut Dense<f64>, a: &Csr<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csr_ell(c: &mut Dcsr<f64>, a: &Csr<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csr_ell(c: &mut Dense<f64>, a: &Csr<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csr_dense(c: &mut Dcsr<f64>, a: &Csr<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csr_dense(c: &mut Dense<f64>, a: &Csr<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csc_csr(c: &mut Dcsr<f64>, a: &Csc<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csc_csr(c: &mut Dense<f64>, a: &Csc<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csc_csc(c: &mut Dcsr<f64>, a: &Csc<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csc_csc(c: &mut Dense<f64>, a: &Csc<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csc_dcsr(c: &mut Dcsr<f64>, a: &Csc<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csc_dcsr(c: &mut Dense<f64>, a: &Csc<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csc_dcsc(c: &mut Dcsr<f64>, a: &Csc<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csc_dcsc(c: &mut Dense<f64>, a: &Csc<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csc_coo(c: &mut Dcsr<f64>, a: &Csc<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csc_coo(c: &mut Dense<f64>, a: &Csc<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csc_coo_soa(c: &mut Dcsr<f64>, a: &Csc<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csc_coo_soa(c: &mut Dense<f64>, a: &Csc<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csc_bsr(c: &mut Dcsr<f64>, a: &Csc<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csc_bsr(c: &mut Dense<f64>, a: &Csc<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csc_nv24(c: &mut Dcsr<f64>, a: &Csc<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csc_nv24(c: &mut Dense<f64>, a: &Csc<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csc_loose(c: &mut Dcsr<f64>, a: &Csc<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csc_loose(c: &mut Dense<f64>, a: &Csc<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csc_ell(c: &mut Dcsr<f64>, a: &Csc<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csc_ell(c: &mut Dense<f64>, a: &Csc<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_csc_dense(c: &mut Dcsr<f64>, a: &Csc<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_csc_dense(c: &mut Dense<f64>, a: &Csc<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsr_csr(c: &mut Dcsr<f64>, a: &Dcsr<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsr_csr(c: &mut Dense<f64>, a: &Dcsr<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsr_csc(c: &mut Dcsr<f64>, a: &Dcsr<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsr_csc(c: &mut Dense<f64>, a: &Dcsr<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsr_dcsr(c: &mut Dcsr<f64>, a: &Dcsr<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsr_dcsr(c: &mut Dense<f64>, a: &Dcsr<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsr_dcsc(c: &mut Dcsr<f64>, a: &Dcsr<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsr_dcsc(c: &mut Dense<f64>, a: &Dcsr<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsr_coo(c: &mut Dcsr<f64>, a: &Dcsr<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsr_coo(c: &mut Dense<f64>, a: &Dcsr<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsr_coo_soa(c: &mut Dcsr<f64>, a: &Dcsr<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsr_coo_soa(c: &mut Dense<f64>, a: &Dcsr<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsr_bsr(c: &mut Dcsr<f64>, a: &Dcsr<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsr_bsr(c: &mut Dense<f64>, a: &Dcsr<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsr_nv24(c: &mut Dcsr<f64>, a: &Dcsr<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsr_nv24(c: &mut Dense<f64>, a: &Dcsr<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsr_loose(c: &mut Dcsr<f64>, a: &Dcsr<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsr_loose(c: &mut Dense<f64>, a: &Dcsr<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsr_ell(c: &mut Dcsr<f64>, a: &Dcsr<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsr_ell(c: &mut Dense<f64>, a: &Dcsr<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsr_dense(c: &mut Dcsr<f64>, a: &Dcsr<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsr_dense(c: &mut Dense<f64>, a: &Dcsr<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsc_csr(c: &mut Dcsr<f64>, a: &Dcsc<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsc_csr(c: &mut Dense<f64>, a: &Dcsc<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsc_csc(c: &mut Dcsr<f64>, a: &Dcsc<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsc_csc(c: &mut Dense<f64>, a: &Dcsc<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsc_dcsr(c: &mut Dcsr<f64>, a: &Dcsc<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsc_dcsr(c: &mut Dense<f64>, a: &Dcsc<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsc_dcsc(c: &mut Dcsr<f64>, a: &Dcsc<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsc_dcsc(c: &mut Dense<f64>, a: &Dcsc<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsc_coo(c: &mut Dcsr<f64>, a: &Dcsc<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsc_coo(c: &mut Dense<f64>, a: &Dcsc<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsc_coo_soa(c: &mut Dcsr<f64>, a: &Dcsc<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsc_coo_soa(c: &mut Dense<f64>, a: &Dcsc<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsc_bsr(c: &mut Dcsr<f64>, a: &Dcsc<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsc_bsr(c: &mut Dense<f64>, a: &Dcsc<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsc_nv24(c: &mut Dcsr<f64>, a: &Dcsc<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsc_nv24(c: &mut Dense<f64>, a: &Dcsc<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsc_loose(c: &mut Dcsr<f64>, a: &Dcsc<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsc_loose(c: &mut Dense<f64>, a: &Dcsc<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsc_ell(c: &mut Dcsr<f64>, a: &Dcsc<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsc_ell(c: &mut Dense<f64>, a: &Dcsc<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dcsc_dense(c: &mut Dcsr<f64>, a: &Dcsc<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dcsc_dense(c: &mut Dense<f64>, a: &Dcsc<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_csr(c: &mut Dcsr<f64>, a: &Coo<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_csr(c: &mut Dense<f64>, a: &Coo<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_csc(c: &mut Dcsr<f64>, a: &Coo<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_csc(c: &mut Dense<f64>, a: &Coo<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_dcsr(c: &mut Dcsr<f64>, a: &Coo<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_dcsr(c: &mut Dense<f64>, a: &Coo<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_dcsc(c: &mut Dcsr<f64>, a: &Coo<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_dcsc(c: &mut Dense<f64>, a: &Coo<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_coo(c: &mut Dcsr<f64>, a: &Coo<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_coo(c: &mut Dense<f64>, a: &Coo<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_coo_soa(c: &mut Dcsr<f64>, a: &Coo<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_coo_soa(c: &mut Dense<f64>, a: &Coo<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_bsr(c: &mut Dcsr<f64>, a: &Coo<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_bsr(c: &mut Dense<f64>, a: &Coo<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_nv24(c: &mut Dcsr<f64>, a: &Coo<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_nv24(c: &mut Dense<f64>, a: &Coo<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_loose(c: &mut Dcsr<f64>, a: &Coo<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_loose(c: &mut Dense<f64>, a: &Coo<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_ell(c: &mut Dcsr<f64>, a: &Coo<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_ell(c: &mut Dense<f64>, a: &Coo<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_dense(c: &mut Dcsr<f64>, a: &Coo<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_dense(c: &mut Dense<f64>, a: &Coo<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_soa_csr(c: &mut Dcsr<f64>, a: &CooSoa<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_soa_csr(c: &mut Dense<f64>, a: &CooSoa<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_soa_csc(c: &mut Dcsr<f64>, a: &CooSoa<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_soa_csc(c: &mut Dense<f64>, a: &CooSoa<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_soa_dcsr(c: &mut Dcsr<f64>, a: &CooSoa<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_soa_dcsr(c: &mut Dense<f64>, a: &CooSoa<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_soa_dcsc(c: &mut Dcsr<f64>, a: &CooSoa<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_soa_dcsc(c: &mut Dense<f64>, a: &CooSoa<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_soa_coo(c: &mut Dcsr<f64>, a: &CooSoa<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_soa_coo(c: &mut Dense<f64>, a: &CooSoa<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_soa_coo_soa(c: &mut Dcsr<f64>, a: &CooSoa<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_soa_coo_soa(c: &mut Dense<f64>, a: &CooSoa<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_soa_bsr(c: &mut Dcsr<f64>, a: &CooSoa<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_soa_bsr(c: &mut Dense<f64>, a: &CooSoa<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_soa_nv24(c: &mut Dcsr<f64>, a: &CooSoa<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_soa_nv24(c: &mut Dense<f64>, a: &CooSoa<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_soa_loose(c: &mut Dcsr<f64>, a: &CooSoa<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_soa_loose(c: &mut Dense<f64>, a: &CooSoa<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_soa_ell(c: &mut Dcsr<f64>, a: &CooSoa<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_soa_ell(c: &mut Dense<f64>, a: &CooSoa<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_coo_soa_dense(c: &mut Dcsr<f64>, a: &CooSoa<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_coo_soa_dense(c: &mut Dense<f64>, a: &CooSoa<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_bsr_csr(c: &mut Dcsr<f64>, a: &Bsr<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_bsr_csr(c: &mut Dense<f64>, a: &Bsr<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_bsr_csc(c: &mut Dcsr<f64>, a: &Bsr<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_bsr_csc(c: &mut Dense<f64>, a: &Bsr<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_bsr_dcsr(c: &mut Dcsr<f64>, a: &Bsr<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_bsr_dcsr(c: &mut Dense<f64>, a: &Bsr<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_bsr_dcsc(c: &mut Dcsr<f64>, a: &Bsr<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_bsr_dcsc(c: &mut Dense<f64>, a: &Bsr<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_bsr_coo(c: &mut Dcsr<f64>, a: &Bsr<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_bsr_coo(c: &mut Dense<f64>, a: &Bsr<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_bsr_coo_soa(c: &mut Dcsr<f64>, a: &Bsr<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_bsr_coo_soa(c: &mut Dense<f64>, a: &Bsr<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_bsr_bsr(c: &mut Dcsr<f64>, a: &Bsr<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_bsr_bsr(c: &mut Dense<f64>, a: &Bsr<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_bsr_nv24(c: &mut Dcsr<f64>, a: &Bsr<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_bsr_nv24(c: &mut Dense<f64>, a: &Bsr<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_bsr_loose(c: &mut Dcsr<f64>, a: &Bsr<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_bsr_loose(c: &mut Dense<f64>, a: &Bsr<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_bsr_ell(c: &mut Dcsr<f64>, a: &Bsr<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_bsr_ell(c: &mut Dense<f64>, a: &Bsr<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_bsr_dense(c: &mut Dcsr<f64>, a: &Bsr<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_bsr_dense(c: &mut Dense<f64>, a: &Bsr<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_nv24_csr(c: &mut Dcsr<f64>, a: &Nv24<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_nv24_csr(c: &mut Dense<f64>, a: &Nv24<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_nv24_csc(c: &mut Dcsr<f64>, a: &Nv24<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_nv24_csc(c: &mut Dense<f64>, a: &Nv24<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_nv24_dcsr(c: &mut Dcsr<f64>, a: &Nv24<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_nv24_dcsr(c: &mut Dense<f64>, a: &Nv24<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_nv24_dcsc(c: &mut Dcsr<f64>, a: &Nv24<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_nv24_dcsc(c: &mut Dense<f64>, a: &Nv24<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_nv24_coo(c: &mut Dcsr<f64>, a: &Nv24<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_nv24_coo(c: &mut Dense<f64>, a: &Nv24<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_nv24_coo_soa(c: &mut Dcsr<f64>, a: &Nv24<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_nv24_coo_soa(c: &mut Dense<f64>, a: &Nv24<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_nv24_bsr(c: &mut Dcsr<f64>, a: &Nv24<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_nv24_bsr(c: &mut Dense<f64>, a: &Nv24<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_nv24_nv24(c: &mut Dcsr<f64>, a: &Nv24<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_nv24_nv24(c: &mut Dense<f64>, a: &Nv24<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_nv24_loose(c: &mut Dcsr<f64>, a: &Nv24<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_nv24_loose(c: &mut Dense<f64>, a: &Nv24<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_nv24_ell(c: &mut Dcsr<f64>, a: &Nv24<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_nv24_ell(c: &mut Dense<f64>, a: &Nv24<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_nv24_dense(c: &mut Dcsr<f64>, a: &Nv24<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_nv24_dense(c: &mut Dense<f64>, a: &Nv24<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_loose_csr(c: &mut Dcsr<f64>, a: &Loose<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_loose_csr(c: &mut Dense<f64>, a: &Loose<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_loose_csc(c: &mut Dcsr<f64>, a: &Loose<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_loose_csc(c: &mut Dense<f64>, a: &Loose<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_loose_dcsr(c: &mut Dcsr<f64>, a: &Loose<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_loose_dcsr(c: &mut Dense<f64>, a: &Loose<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_loose_dcsc(c: &mut Dcsr<f64>, a: &Loose<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_loose_dcsc(c: &mut Dense<f64>, a: &Loose<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_loose_coo(c: &mut Dcsr<f64>, a: &Loose<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_loose_coo(c: &mut Dense<f64>, a: &Loose<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_loose_coo_soa(c: &mut Dcsr<f64>, a: &Loose<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_loose_coo_soa(c: &mut Dense<f64>, a: &Loose<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_loose_bsr(c: &mut Dcsr<f64>, a: &Loose<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_loose_bsr(c: &mut Dense<f64>, a: &Loose<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_loose_nv24(c: &mut Dcsr<f64>, a: &Loose<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_loose_nv24(c: &mut Dense<f64>, a: &Loose<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_loose_loose(c: &mut Dcsr<f64>, a: &Loose<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_loose_loose(c: &mut Dense<f64>, a: &Loose<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_loose_ell(c: &mut Dcsr<f64>, a: &Loose<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_loose_ell(c: &mut Dense<f64>, a: &Loose<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_loose_dense(c: &mut Dcsr<f64>, a: &Loose<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_loose_dense(c: &mut Dense<f64>, a: &Loose<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_ell_csr(c: &mut Dcsr<f64>, a: &Ell<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_ell_csr(c: &mut Dense<f64>, a: &Ell<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_ell_csc(c: &mut Dcsr<f64>, a: &Ell<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_ell_csc(c: &mut Dense<f64>, a: &Ell<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_ell_dcsr(c: &mut Dcsr<f64>, a: &Ell<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_ell_dcsr(c: &mut Dense<f64>, a: &Ell<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_ell_dcsc(c: &mut Dcsr<f64>, a: &Ell<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_ell_dcsc(c: &mut Dense<f64>, a: &Ell<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_ell_coo(c: &mut Dcsr<f64>, a: &Ell<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_ell_coo(c: &mut Dense<f64>, a: &Ell<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_ell_coo_soa(c: &mut Dcsr<f64>, a: &Ell<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_ell_coo_soa(c: &mut Dense<f64>, a: &Ell<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_ell_bsr(c: &mut Dcsr<f64>, a: &Ell<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_ell_bsr(c: &mut Dense<f64>, a: &Ell<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_ell_nv24(c: &mut Dcsr<f64>, a: &Ell<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_ell_nv24(c: &mut Dense<f64>, a: &Ell<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_ell_loose(c: &mut Dcsr<f64>, a: &Ell<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_ell_loose(c: &mut Dense<f64>, a: &Ell<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_ell_ell(c: &mut Dcsr<f64>, a: &Ell<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_ell_ell(c: &mut Dense<f64>, a: &Ell<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_ell_dense(c: &mut Dcsr<f64>, a: &Ell<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_ell_dense(c: &mut Dense<f64>, a: &Ell<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dense_csr(c: &mut Dcsr<f64>, a: &Dense<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dense_csr(c: &mut Dense<f64>, a: &Dense<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dense_csc(c: &mut Dcsr<f64>, a: &Dense<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dense_csc(c: &mut Dense<f64>, a: &Dense<f64>, b: &Csc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dense_dcsr(c: &mut Dcsr<f64>, a: &Dense<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dense_dcsr(c: &mut Dense<f64>, a: &Dense<f64>, b: &Dcsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dense_dcsc(c: &mut Dcsr<f64>, a: &Dense<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dense_dcsc(c: &mut Dense<f64>, a: &Dense<f64>, b: &Dcsc<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dense_coo(c: &mut Dcsr<f64>, a: &Dense<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dense_coo(c: &mut Dense<f64>, a: &Dense<f64>, b: &Coo<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dense_coo_soa(c: &mut Dcsr<f64>, a: &Dense<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dense_coo_soa(c: &mut Dense<f64>, a: &Dense<f64>, b: &CooSoa<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dense_bsr(c: &mut Dcsr<f64>, a: &Dense<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dense_bsr(c: &mut Dense<f64>, a: &Dense<f64>, b: &Bsr<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dense_nv24(c: &mut Dcsr<f64>, a: &Dense<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dense_nv24(c: &mut Dense<f64>, a: &Dense<f64>, b: &Nv24<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dense_loose(c: &mut Dcsr<f64>, a: &Dense<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dense_loose(c: &mut Dense<f64>, a: &Dense<f64>, b: &Loose<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dense_ell(c: &mut Dcsr<f64>, a: &Dense<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dense_ell(c: &mut Dense<f64>, a: &Dense<f64>, b: &Ell<f64>) { c(i, j) = a(i, j) * b(i, j) }
    pub kernel add_dense_dense(c: &mut Dcsr<f64>, a: &Dense<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel mul_dense_dense(c: &mut Dense<f64>, a: &Dense<f64>, b: &Dense<f64>) { c(i, j) = a(i, j) * b(i, j) }

    // the other kernels of the issue
    pub kernel spgemm_csr_csc(c: &mut Csr<f64>, a: &Csr<f64>, b: &Csc<f64>) { c(i, j) = a(i, k) * b(k, j) }
    pub kernel spgemm_bsr_bsr(c: &mut Dense<f64>, a: &Bsr<f64>, b: &Bsr<f64>) { c(i, j) = a(i, k) * b(k, j) }
    pub kernel bsr_times_dense(c: &mut Dense<f64>, a: &Bsr<f64>, b: &Dense<f64>) { c(i, j) = a(i, k) * b(k, j) }
    pub kernel sddmm_coo(c: &mut Coo<f64>, s: &Coo<f64>, a: &Dense<f64>, b: &Dense<f64>) { c(i, j) = s(i, j) * a(i, k) * b(j, k) }
    pub kernel dot(s: &mut f64, a: &SpVec<f64>, b: &SpVec<f64>) { s = a(i) * b(i) }
    pub kernel ttv(c: &mut Dcsr<f64>, a: &Csf<f64>, x: &[f64]) { c(i, j) = a(i, j, k) * x(k) }
    pub kernel mttkrp(c: &mut Dense<f64>, a: &Csf<f64>, b: &Dense<f64>, d: &Dense<f64>) { c(i, l) = a(i, j, k) * b(j, l) * d(k, l) }
    pub kernel scaled_add_spmv(y: &mut [f64], alpha: f64, a: &Csr<f64>, b: &Csc<f64>, x: &[f64]) { y(i) = (alpha * a(i, j) + b(i, j)) * x(j) }
    pub kernel spmv_batched(y: &mut Dense<f64>, a: &Batched<f64>, x: &Dense<f64>) { y(b, i) = a(b, i, j) * x(b, j) }
    pub kernel spmv_csr_slice(y: &mut [f64], a: &CsrSlice<f64>, x: &[f64]) { y(i) = a(i, j) * x(j) }
    pub kernel add_slices(c: &mut Dcsr<f64>, a: &CsrSlice<f64>, b: &DcsrSlice<f64>) { c(i, j) = a(i, j) + b(i, j) }
    pub kernel prod_rows(m: &mut SpVec<f64>, a: &Csr<f64>) { m(i) = prod(j, a(i, j)) }
}

macro_rules! per_format {
    ($f:ident) => {
        $f!(spmv_csr rowmin_csr colmax_csr transpose_csr scale_csr total_csr: Csr, spmv_csc rowmin_csc colmax_csc transpose_csc scale_csc total_csc: Csc, spmv_dcsr rowmin_dcsr colmax_dcsr transpose_dcsr scale_dcsr total_dcsr: Dcsr, spmv_dcsc rowmin_dcsc colmax_dcsc transpose_dcsc scale_dcsc total_dcsc: Dcsc, spmv_coo rowmin_coo colmax_coo transpose_coo scale_coo total_coo: Coo, spmv_coo_soa rowmin_coo_soa colmax_coo_soa transpose_coo_soa scale_coo_soa total_coo_soa: CooSoa, spmv_bsr rowmin_bsr colmax_bsr transpose_bsr scale_bsr total_bsr: Bsr, spmv_nv24 rowmin_nv24 colmax_nv24 transpose_nv24 scale_nv24 total_nv24: Nv24, spmv_loose rowmin_loose colmax_loose transpose_loose scale_loose total_loose: Loose, spmv_ell rowmin_ell colmax_ell transpose_ell scale_ell total_ell: Ell, spmv_dense rowmin_dense colmax_dense transpose_dense scale_dense total_dense: Dense);
    };
}

macro_rules! per_pair {
    ($f:ident) => {
        $f!(add_csr_csr mul_csr_csr: Csr Csr, add_csr_csc mul_csr_csc: Csr Csc, add_csr_dcsr mul_csr_dcsr: Csr Dcsr, add_csr_dcsc mul_csr_dcsc: Csr Dcsc, add_csr_coo mul_csr_coo: Csr Coo, add_csr_coo_soa mul_csr_coo_soa: Csr CooSoa, add_csr_bsr mul_csr_bsr: Csr Bsr, add_csr_nv24 mul_csr_nv24: Csr Nv24, add_csr_loose mul_csr_loose: Csr Loose, add_csr_ell mul_csr_ell: Csr Ell, add_csr_dense mul_csr_dense: Csr Dense, add_csc_csr mul_csc_csr: Csc Csr, add_csc_csc mul_csc_csc: Csc Csc, add_csc_dcsr mul_csc_dcsr: Csc Dcsr, add_csc_dcsc mul_csc_dcsc: Csc Dcsc, add_csc_coo mul_csc_coo: Csc Coo, add_csc_coo_soa mul_csc_coo_soa: Csc CooSoa, add_csc_bsr mul_csc_bsr: Csc Bsr, add_csc_nv24 mul_csc_nv24: Csc Nv24, add_csc_loose mul_csc_loose: Csc Loose, add_csc_ell mul_csc_ell: Csc Ell, add_csc_dense mul_csc_dense: Csc Dense, add_dcsr_csr mul_dcsr_csr: Dcsr Csr, add_dcsr_csc mul_dcsr_csc: Dcsr Csc, add_dcsr_dcsr mul_dcsr_dcsr: Dcsr Dcsr, add_dcsr_dcsc mul_dcsr_dcsc: Dcsr Dcsc, add_dcsr_coo mul_dcsr_coo: Dcsr Coo, add_dcsr_coo_soa mul_dcsr_coo_soa: Dcsr CooSoa, add_dcsr_bsr mul_dcsr_bsr: Dcsr Bsr, add_dcsr_nv24 mul_dcsr_nv24: Dcsr Nv24, add_dcsr_loose mul_dcsr_loose: Dcsr Loose, add_dcsr_ell mul_dcsr_ell: Dcsr Ell, add_dcsr_dense mul_dcsr_dense: Dcsr Dense, add_dcsc_csr mul_dcsc_csr: Dcsc Csr, add_dcsc_csc mul_dcsc_csc: Dcsc Csc, add_dcsc_dcsr mul_dcsc_dcsr: Dcsc Dcsr, add_dcsc_dcsc mul_dcsc_dcsc: Dcsc Dcsc, add_dcsc_coo mul_dcsc_coo: Dcsc Coo, add_dcsc_coo_soa mul_dcsc_coo_soa: Dcsc CooSoa, add_dcsc_bsr mul_dcsc_bsr: Dcsc Bsr, add_dcsc_nv24 mul_dcsc_nv24: Dcsc Nv24, add_dcsc_loose mul_dcsc_loose: Dcsc Loose, add_dcsc_ell mul_dcsc_ell: Dcsc Ell, add_dcsc_dense mul_dcsc_dense: Dcsc Dense, add_coo_csr mul_coo_csr: Coo Csr, add_coo_csc mul_coo_csc: Coo Csc, add_coo_dcsr mul_coo_dcsr: Coo Dcsr, add_coo_dcsc mul_coo_dcsc: Coo Dcsc, add_coo_coo mul_coo_coo: Coo Coo, add_coo_coo_soa mul_coo_coo_soa: Coo CooSoa, add_coo_bsr mul_coo_bsr: Coo Bsr, add_coo_nv24 mul_coo_nv24: Coo Nv24, add_coo_loose mul_coo_loose: Coo Loose, add_coo_ell mul_coo_ell: Coo Ell, add_coo_dense mul_coo_dense: Coo Dense, add_coo_soa_csr mul_coo_soa_csr: CooSoa Csr, add_coo_soa_csc mul_coo_soa_csc: CooSoa Csc, add_coo_soa_dcsr mul_coo_soa_dcsr: CooSoa Dcsr, add_coo_soa_dcsc mul_coo_soa_dcsc: CooSoa Dcsc, add_coo_soa_coo mul_coo_soa_coo: CooSoa Coo, add_coo_soa_coo_soa mul_coo_soa_coo_soa: CooSoa CooSoa, add_coo_soa_bsr mul_coo_soa_bsr: CooSoa Bsr, add_coo_soa_nv24 mul_coo_soa_nv24: CooSoa Nv24, add_coo_soa_loose mul_coo_soa_loose: CooSoa Loose, add_coo_soa_ell mul_coo_soa_ell: CooSoa Ell, add_coo_soa_dense mul_coo_soa_dense: CooSoa Dense, add_bsr_csr mul_bsr_csr: Bsr Csr, add_bsr_csc mul_bsr_csc: Bsr Csc, add_bsr_dcsr mul_bsr_dcsr: Bsr Dcsr, add_bsr_dcsc mul_bsr_dcsc: Bsr Dcsc, add_bsr_coo mul_bsr_coo: Bsr Coo, add_bsr_coo_soa mul_bsr_coo_soa: Bsr CooSoa, add_bsr_bsr mul_bsr_bsr: Bsr Bsr, add_bsr_nv24 mul_bsr_nv24: Bsr Nv24, add_bsr_loose mul_bsr_loose: Bsr Loose, add_bsr_ell mul_bsr_ell: Bsr Ell, add_bsr_dense mul_bsr_dense: Bsr Dense, add_nv24_csr mul_nv24_csr: Nv24 Csr, add_nv24_csc mul_nv24_csc: Nv24 Csc, add_nv24_dcsr mul_nv24_dcsr: Nv24 Dcsr, add_nv24_dcsc mul_nv24_dcsc: Nv24 Dcsc, add_nv24_coo mul_nv24_coo: Nv24 Coo, add_nv24_coo_soa mul_nv24_coo_soa: Nv24 CooSoa, add_nv24_bsr mul_nv24_bsr: Nv24 Bsr, add_nv24_nv24 mul_nv24_nv24: Nv24 Nv24, add_nv24_loose mul_nv24_loose: Nv24 Loose, add_nv24_ell mul_nv24_ell: Nv24 Ell, add_nv24_dense mul_nv24_dense: Nv24 Dense, add_loose_csr mul_loose_csr: Loose Csr, add_loose_csc mul_loose_csc: Loose Csc, add_loose_dcsr mul_loose_dcsr: Loose Dcsr, add_loose_dcsc mul_loose_dcsc: Loose Dcsc, add_loose_coo mul_loose_coo: Loose Coo, add_loose_coo_soa mul_loose_coo_soa: Loose CooSoa, add_loose_bsr mul_loose_bsr: Loose Bsr, add_loose_nv24 mul_loose_nv24: Loose Nv24, add_loose_loose mul_loose_loose: Loose Loose, add_loose_ell mul_loose_ell: Loose Ell, add_loose_dense mul_loose_dense: Loose Dense, add_ell_csr mul_ell_csr: Ell Csr, add_ell_csc mul_ell_csc: Ell Csc, add_ell_dcsr mul_ell_dcsr: Ell Dcsr, add_ell_dcsc mul_ell_dcsc: Ell Dcsc, add_ell_coo mul_ell_coo: Ell Coo, add_ell_coo_soa mul_ell_coo_soa: Ell CooSoa, add_ell_bsr mul_ell_bsr: Ell Bsr, add_ell_nv24 mul_ell_nv24: Ell Nv24, add_ell_loose mul_ell_loose: Ell Loose, add_ell_ell mul_ell_ell: Ell Ell, add_ell_dense mul_ell_dense: Ell Dense, add_dense_csr mul_dense_csr: Dense Csr, add_dense_csc mul_dense_csc: Dense Csc, add_dense_dcsr mul_dense_dcsr: Dense Dcsr, add_dense_dcsc mul_dense_dcsc: Dense Dcsc, add_dense_coo mul_dense_coo: Dense Coo, add_dense_coo_soa mul_dense_coo_soa: Dense CooSoa, add_dense_bsr mul_dense_bsr: Dense Bsr, add_dense_nv24 mul_dense_nv24: Dense Nv24, add_dense_loose mul_dense_loose: Dense Loose, add_dense_ell mul_dense_ell: Dense Ell, add_dense_dense mul_dense_dense: Dense Dense);
    };
}

const M: usize = 4;
const K: usize = 8;

fn encoding(text: &str) -> sparse::runtime::sparse_ir::ir::VerifiedEncoding {
    match sparse_dsl::parse::parse_declaration(text).unwrap().declared {
        sparse_dsl::parse::Declared::Encoding(e) => e,
        sparse_dsl::parse::Declared::Tensor(_) => unreachable!("an encoding"),
    }
}

/// Keeps at most 2 nonzeros per block of 4 along the last dimension when `text` is a 2:4
/// encoding (what it can store).
fn storable(text: &str, shape: &[usize], v: &[f64]) -> Vec<f64> {
    let mut v = v.to_vec();
    if text.contains("block2_4") || text.contains("structured[2, 4]") {
        let n = *shape.last().unwrap();
        for row in v.chunks_mut(n) {
            for block in row.chunks_mut(4) {
                let mut kept = 0;
                for x in block.iter_mut().filter(|x| **x != 0.0) {
                    kept += 1;
                    if kept > 2 {
                        *x = 0.0;
                    }
                }
            }
        }
    }
    v
}

fn coo(shape: &[usize], v: &[f64]) -> CooTensor<f64> {
    let mut t = CooTensor::new(shape.to_vec());
    let mut idx = vec![0; shape.len()];
    for (f, &x) in v.iter().enumerate() {
        if x != 0.0 {
            sparse::runtime::dynamic::unflatten(f, shape, &mut idx);
            t.push(&idx, x);
        }
    }
    t
}

fn build<S: FromCoo<f64>>(shape: &[usize], v: &[f64]) -> S {
    S::from_coo_tensor(&coo(shape, v)).unwrap()
}

/// The dense form of `s`, after checking that its arrays satisfy every invariant of its format
/// (kernels fill sparse outputs straight into them).
fn dense<const D: usize, S: Entries<D, Value = f64> + sparse::runtime::SparseStorage>(
    s: &S,
) -> Vec<f64> {
    sparse::runtime::storage::validate(s).unwrap();
    to_dense(s).unwrap()
}

/// One tensor of an interpreted kernel: name, shape, encoding text (`None`: dense) and dense
/// row-major values (a slice: `(parent shape, parent values)` in `parent`).
struct Arg<'a> {
    name: &'a str,
    shape: &'a [usize],
    enc: Option<&'a str>,
    values: &'a [f64],
    parent: Option<(&'a [usize], &'a [f64])>,
}

fn arg<'a>(name: &'a str, shape: &'a [usize], enc: Option<&'a str>, values: &'a [f64]) -> Arg<'a> {
    Arg {
        name,
        shape,
        enc,
        values,
        parent: None,
    }
}

/// The interpreter's result of `stmt` over `args` (the output first), densely.
fn interp(stmt: &str, args: &[Arg]) -> Vec<f64> {
    let decls: Vec<TensorDecl> = args
        .iter()
        .map(|a| TensorDecl {
            name: a.name.into(),
            shape: a.shape.iter().map(|&n| Some(n)).collect(),
            value: ValueType::F64,
            encoding: a.enc.map(encoding),
        })
        .collect();
    let p = compile(stmt, &decls).unwrap_or_else(|e| panic!("{stmt}: {e}"));
    let ops: Vec<Operand<f64>> = p.kernel.tensors[..p.inputs()]
        .iter()
        .map(|d| {
            let a = args.iter().find(|a| a.name == d.name).unwrap();
            match (a.enc, a.parent) {
                (None, _) => Operand::Dense {
                    shape: a.shape.to_vec(),
                    values: a.values.to_vec(),
                },
                (Some(text), None) => Operand::Storage(Box::new(
                    DynamicStorage::from_coo(&encoding(text), &coo(a.shape, a.values)).unwrap(),
                )),
                (Some(text), Some((shape, values))) => {
                    let sliced = encoding(text);
                    let mut whole = sliced.clone().into_inner();
                    whole.dim_slices = None;
                    let parent =
                        DynamicStorage::from_coo(&whole.verify().unwrap(), &coo(shape, values))
                            .unwrap();
                    Operand::slice(parent, &sliced).unwrap()
                }
            }
        })
        .collect();
    match run(&p, &ops).unwrap_or_else(|e| panic!("{stmt}: {e}")) {
        Output::Sparse(s) => s.to_dense().unwrap(),
        Output::Dense { values, .. } => values,
    }
}

/// A dense `rows x cols` matrix of small integers, about half of them zero.
fn mat(rows: usize, cols: usize) -> impl Strategy<Value = Vec<f64>> {
    proptest::collection::vec(
        prop_oneof![1 => Just(0.0), 1 => (-4i32..5).prop_map(f64::from)],
        rows * cols,
    )
}

/// Per row (`rows`) or column (`!rows`) of the stored entries of `s` (explicit zeros
/// included): the minimum or maximum, 0 where none is stored.
fn stored_extreme<S: Entries<2, Value = f64>>(s: &S, n: usize, rows: bool, min: bool) -> Vec<f64> {
    let mut out: Vec<Option<f64>> = vec![None; n];
    s.visit(|[i, j], &v| {
        let slot = &mut out[if rows { i } else { j }];
        *slot = Some(match *slot {
            None => v,
            Some(x) if min => x.min(v),
            Some(x) => x.max(v),
        });
    });
    out.into_iter().map(|x| x.unwrap_or(0.0)).collect()
}

/// The per-format kernels: spmv, rowmin, colmax, transpose, scale, total.
type FormatKernels<S> = (
    fn(&mut [f64], &S, &[f64]) -> Result<(), sparse::Error>,
    fn(&mut [f64], &S) -> Result<(), sparse::Error>,
    fn(&mut [f64], &S) -> Result<(), sparse::Error>,
    fn(&mut Dcsr<f64>, &S) -> Result<(), sparse::Error>,
    fn(&mut S) -> Result<(), sparse::Error>,
    fn(&mut f64, &S) -> Result<(), sparse::Error>,
);

fn check_format<S>(
    text: &str,
    a: &[f64],
    x: &[f64],
    kernels: FormatKernels<S>,
) -> Result<(), TestCaseError>
where
    S: FromCoo<f64> + Entries<2, Value = f64> + sparse::runtime::SparseStorage,
{
    let (spmv, rowmin, colmax, transpose, scale, total) = kernels;
    let a = storable(text, &[M, K], a);
    let s: S = build(&[M, K], &a);
    let shape = [M, K];
    let enc = Some(text);

    let mut y = vec![0.0; M];
    spmv(&mut y, &s, x).unwrap();
    let want: Vec<f64> = (0..M)
        .map(|i| (0..K).map(|j| a[i * K + j] * x[j]).sum())
        .collect();
    prop_assert_eq!(&y, &want, "spmv {}", text);
    let y0 = vec![0.0; M];
    let got = interp(
        "y(i) = a(i,j) * x(j)",
        &[
            arg("y", &[M], None, &y0),
            arg("a", &shape, enc, &a),
            arg("x", &[K], None, x),
        ],
    );
    prop_assert_eq!(&y, &got, "spmv {} vs interpreter", text);

    let mut m = vec![0.0; M];
    rowmin(&mut m, &s).unwrap();
    prop_assert_eq!(&m, &stored_extreme(&s, M, true, true), "rowmin {}", text);
    let got = interp(
        "m(i) = min(j, a(i,j))",
        &[arg("m", &[M], None, &y0), arg("a", &shape, enc, &a)],
    );
    prop_assert_eq!(&m, &got, "rowmin {} vs interpreter", text);

    let mut m = vec![0.0; K];
    colmax(&mut m, &s).unwrap();
    prop_assert_eq!(&m, &stored_extreme(&s, K, false, false), "colmax {}", text);
    let k0 = vec![0.0; K];
    let got = interp(
        "m(j) = max(i, a(i,j))",
        &[arg("m", &[K], None, &k0), arg("a", &shape, enc, &a)],
    );
    prop_assert_eq!(&m, &got, "colmax {} vs interpreter", text);

    let mut t = Dcsr::from_coo([K, M], []).unwrap();
    transpose(&mut t, &s).unwrap();
    let want: Vec<f64> = (0..K * M).map(|f| a[(f % M) * K + f / M]).collect();
    prop_assert_eq!(&dense(&t), &want, "transpose {}", text);
    let t0 = vec![0.0; K * M];
    let got = interp(
        "c(j,i) = a(i,j)",
        &[
            arg("c", &[K, M], Some(Dcsr::<f64>::ENCODING), &t0),
            arg("a", &shape, enc, &a),
        ],
    );
    prop_assert_eq!(&dense(&t), &got, "transpose {} vs interpreter", text);

    let mut scaled: S = build(&[M, K], &a);
    scale(&mut scaled).unwrap();
    let want: Vec<f64> = a.iter().map(|v| v * 2.0).collect();
    prop_assert_eq!(&dense(&scaled), &want, "scale {}", text);

    let mut sum = f64::NAN;
    total(&mut sum, &s).unwrap();
    prop_assert_eq!(sum, a.iter().sum::<f64>(), "total {}", text);
    let got = interp(
        "s = sum(i j, a(i,j))",
        &[arg("s", &[], None, &[0.0]), arg("a", &shape, enc, &a)],
    );
    prop_assert_eq!(vec![sum], got, "total {} vs interpreter", text);
    Ok(())
}

type Spmv<S> = fn(&S, &[f64], &mut [f64]) -> Result<(), sparse::Error>;
type Spmm<S> = fn(&S, &[f64], &mut [f64], usize, DenseOrder) -> Result<(), sparse::Error>;
/// `spmv`, `spmv_par`, `spmv_transpose`, `spmv_transpose_par`, `spmm`, `spmm_par` of one
/// format.
type Builtins<S> = (Spmv<S>, Spmv<S>, Spmv<S>, Spmv<S>, Spmm<S>, Spmm<S>);

/// The built-in methods (`spmv`, `spmv_par`, `spmv_transpose`, `spmv_transpose_par`, `spmm`
/// and `spmm_par` in both orders), which the sparsifier generates for every format, against
/// dense references.
fn check_builtins<S: FromCoo<f64>>(
    text: &str,
    a: &[f64],
    x: &[f64],
    (spmv, spmv_par, spmv_transpose, spmv_transpose_par, spmm, spmm_par): Builtins<S>,
) -> Result<(), TestCaseError> {
    let a = storable(text, &[M, K], a);
    let s: S = build(&[M, K], &a);
    let want: Vec<f64> = (0..M)
        .map(|i| (0..K).map(|j| a[i * K + j] * x[j]).sum())
        .collect();
    for (name, f) in [("spmv", spmv), ("spmv_par", spmv_par)] {
        let mut y = vec![f64::NAN; M];
        f(&s, x, &mut y).unwrap();
        prop_assert_eq!(&y, &want, "{} {}", name, text);
    }
    let xt: Vec<f64> = x[..M].to_vec();
    let mut y = vec![f64::NAN; K];
    spmv_transpose(&s, &xt, &mut y).unwrap();
    let want: Vec<f64> = (0..K)
        .map(|j| (0..M).map(|i| a[i * K + j] * xt[i]).sum())
        .collect();
    prop_assert_eq!(&y, &want, "spmv_transpose {}", text);
    prop_assert!(
        spmv_transpose(&s, x, &mut y).is_err(),
        "x of the wrong length"
    );
    let mut yp = vec![f64::NAN; K];
    spmv_transpose_par(&s, &xt, &mut yp).unwrap();
    prop_assert_eq!(&yp, &want, "spmv_transpose_par {}", text);
    prop_assert!(
        spmv_transpose_par(&s, x, &mut yp).is_err(),
        "x of the wrong length (parallel)"
    );
    // B: K x 3 from x; C: M x 3
    let n = 3;
    let b: Vec<f64> = (0..K * n).map(|f| x[f % K] - (f / K) as f64).collect();
    let want: Vec<f64> = (0..M * n)
        .map(|f| (0..K).map(|j| a[(f / n) * K + j] * b[j * n + f % n]).sum())
        .collect();
    let bt: Vec<f64> = (0..K * n).map(|f| b[(f % K) * n + f / K]).collect();
    let want_t: Vec<f64> = (0..M * n).map(|f| want[(f % M) * n + f / M]).collect();
    for (name, f) in [("spmm", spmm), ("spmm_par", spmm_par)] {
        let mut c = vec![f64::NAN; M * n];
        f(&s, &b, &mut c, n, DenseOrder::RowMajor).unwrap();
        prop_assert_eq!(&c, &want, "{} row-major {}", name, text);
        let mut ct = vec![f64::NAN; M * n];
        f(&s, &bt, &mut ct, n, DenseOrder::ColMajor).unwrap();
        prop_assert_eq!(&ct, &want_t, "{} column-major {}", name, text);
        prop_assert!(
            f(&s, &b, &mut c, n + 1, DenseOrder::RowMajor).is_err(),
            "{} n too large",
            name
        );
    }
    Ok(())
}

macro_rules! check_formats {
    ($($spmv:ident $rowmin:ident $colmax:ident $transpose:ident $scale:ident $total:ident: $F:ident),*) => {
        fn check_formats(a: &[f64], x: &[f64]) -> Result<(), TestCaseError> {
            $(
                check_format::<$F<f64>>(
                    $F::<f64>::ENCODING,
                    a,
                    x,
                    ($spmv, $rowmin, $colmax, $transpose, $scale, $total),
                )?;
                check_builtins::<$F<f64>>(
                    $F::<f64>::ENCODING,
                    a,
                    x,
                    (
                        |s, x, y| s.spmv(x, y),
                        |s, x, y| s.spmv_par(x, y),
                        |s, x, y| s.spmv_transpose(x, y),
                        |s, x, y| s.spmv_transpose_par(x, y),
                        |s, b, c, n, o| s.spmm(b, c, n, o),
                        |s, b, c, n, o| s.spmm_par(b, c, n, o),
                    ),
                )?;
            )*
            Ok(())
        }
    };
}
per_format!(check_formats);

type Binary<A, B, C> = fn(&mut C, &A, &B) -> Result<(), sparse::Error>;

fn check_pair<A, B>(
    texts: (&str, &str),
    a: &[f64],
    b: &[f64],
    add: Binary<A, B, Dcsr<f64>>,
    mul: Binary<A, B, Dense<f64>>,
) -> Result<(), TestCaseError>
where
    A: FromCoo<f64>,
    B: FromCoo<f64>,
{
    let a = storable(texts.0, &[M, K], a);
    let b = storable(texts.1, &[M, K], b);
    let (sa, sb): (A, B) = (build(&[M, K], &a), build(&[M, K], &b));
    let shape = [M, K];
    let zeros = vec![0.0; M * K];

    let mut c = Dcsr::from_coo([M, K], []).unwrap();
    add(&mut c, &sa, &sb).unwrap();
    let want: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    prop_assert_eq!(&dense(&c), &want, "add {:?}", texts);
    let got = interp(
        "c(i,j) = a(i,j) + b(i,j)",
        &[
            arg("c", &shape, Some(Dcsr::<f64>::ENCODING), &zeros),
            arg("a", &shape, Some(texts.0), &a),
            arg("b", &shape, Some(texts.1), &b),
        ],
    );
    prop_assert_eq!(&dense(&c), &got, "add {:?} vs interpreter", texts);

    let mut c = Dense::from_coo([M, K], []).unwrap();
    mul(&mut c, &sa, &sb).unwrap();
    let want: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
    prop_assert_eq!(&dense(&c), &want, "mul {:?}", texts);
    let got = interp(
        "c(i,j) = a(i,j) * b(i,j)",
        &[
            arg("c", &shape, None, &zeros),
            arg("a", &shape, Some(texts.0), &a),
            arg("b", &shape, Some(texts.1), &b),
        ],
    );
    prop_assert_eq!(&dense(&c), &got, "mul {:?} vs interpreter", texts);
    Ok(())
}

macro_rules! check_pairs {
    ($($add:ident $mul:ident: $A:ident $B:ident),*) => {
        fn check_pairs(a: &[f64], b: &[f64]) -> Result<(), TestCaseError> {
            $(
                check_pair::<$A<f64>, $B<f64>>(
                    ($A::<f64>::ENCODING, $B::<f64>::ENCODING),
                    a,
                    b,
                    $add,
                    $mul,
                )?;
            )*
            Ok(())
        }
    };
}
per_pair!(check_pairs);

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn every_format(a in mat(M, K), x in mat(1, K)) {
        check_formats(&a, &x)?;
    }

    #[test]
    fn every_pairing(a in mat(M, K), b in mat(M, K)) {
        check_pairs(&a, &b)?;
    }
}

/// `a (m x k) * b (k x n)`, row-major.
fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    (0..m * n)
        .map(|f| (0..k).map(|l| a[(f / n) * k + l] * b[l * n + f % n]).sum())
        .collect()
}

#[test]
fn mlir_bsr_matmul() {
    // MLIR's BSR check: the 4x4 matrix stored 2x2-BSR, times itself as a dense matrix
    let a = [
        1., 2., 3., 4., 1., 2., 3., 4., 5., 6., 7., 8., 5., 6., 7., 8.,
    ];
    let bsr: Bsr<f64> = build(&[4, 4], &a);
    let dense_a: Dense<f64> = build(&[4, 4], &a);
    let mut c = Dense::from_coo([4, 4], []).unwrap();
    bsr_times_dense(&mut c, &bsr, &dense_a).unwrap();
    let want = [
        38., 48., 58., 68., 38., 48., 58., 68., 86., 112., 138., 164., 86., 112., 138., 164.,
    ];
    assert_eq!(dense(&c), want);
    let mut c2 = Dense::from_coo([4, 4], []).unwrap();
    spgemm_bsr_bsr(&mut c2, &bsr, &bsr).unwrap();
    assert_eq!(dense(&c2), want);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn spgemm_sddmm_and_scaled_add(a in mat(M, K), b in mat(K, M), s in mat(M, K), d1 in mat(M, 3), d2 in mat(K, 3), x in mat(1, K), alpha in -3i32..4) {
        let (ca, cb): (Csr<f64>, Csc<f64>) = (build(&[M, K], &a), build(&[K, M], &b));
        let mut c = Csr::from_coo([M, M], []).unwrap();
        spgemm_csr_csc(&mut c, &ca, &cb).unwrap();
        prop_assert_eq!(dense(&c), matmul(&a, &b, M, K, M));
        let got = interp("c(i,j) = a(i,k) * b(k,j)", &[
            arg("c", &[M, M], Some(Csr::<f64>::ENCODING), &[0.0; M * M]),
            arg("a", &[M, K], Some(Csr::<f64>::ENCODING), &a),
            arg("b", &[K, M], Some(Csc::<f64>::ENCODING), &b),
        ]);
        prop_assert_eq!(dense(&c), got);

        let (ba, bb): (Bsr<f64>, Bsr<f64>) = (build(&[M, K], &a), build(&[K, M], &b));
        let mut c = Dense::from_coo([M, M], []).unwrap();
        spgemm_bsr_bsr(&mut c, &ba, &bb).unwrap();
        prop_assert_eq!(dense(&c), matmul(&a, &b, M, K, M));

        let coo_s: Coo<f64> = build(&[M, K], &s);
        let (da, db): (Dense<f64>, Dense<f64>) = (build(&[M, 3], &d1), build(&[K, 3], &d2));
        let mut c = Coo::from_coo([M, K], []).unwrap();
        sddmm_coo(&mut c, &coo_s, &da, &db).unwrap();
        let want: Vec<f64> = (0..M * K)
            .map(|f| s[f] * (0..3).map(|l| d1[(f / K) * 3 + l] * d2[(f % K) * 3 + l]).sum::<f64>())
            .collect();
        prop_assert_eq!(dense(&c), want);

        let alpha = f64::from(alpha);
        let cs: Csc<f64> = build(&[M, K], &s);
        let mut y = vec![f64::NAN; M];
        scaled_add_spmv(&mut y, alpha, &ca_rows(&a), &cs, &x).unwrap();
        let want: Vec<f64> = (0..M)
            .map(|i| (0..K).map(|j| (alpha * a[i * K + j] + s[i * K + j]) * x[j]).sum())
            .collect();
        prop_assert_eq!(&y, &want);
        let got = interp("y(i) = (alpha * a(i,j) + b(i,j)) * x(j)", &[
            arg("y", &[M], None, &[0.0; M]),
            arg("alpha", &[], None, &[alpha]),
            arg("a", &[M, K], Some(Csr::<f64>::ENCODING), &a),
            arg("b", &[M, K], Some(Csc::<f64>::ENCODING), &s),
            arg("x", &[K], None, &x),
        ]);
        prop_assert_eq!(y, got);

        let mut m = SpVec::from_coo([M], []).unwrap();
        prod_rows(&mut m, &ca_rows(&a)).unwrap();
        let want: Vec<f64> = (0..M)
            .map(|i| {
                let row: Vec<f64> = a[i * K..(i + 1) * K].iter().copied().filter(|v| *v != 0.0).collect();
                if row.is_empty() { 0.0 } else { row.iter().product() }
            })
            .collect();
        prop_assert_eq!(dense(&m), want);
    }

    #[test]
    fn tensor_kernels(a in mat(3 * 4, 5), u in mat(1, 8), v in mat(1, 8), b in mat(4, 2), d in mat(5, 2), x in mat(1, 5)) {
        let (sa, sb): (SpVec<f64>, SpVec<f64>) = (build(&[8], &u), build(&[8], &v));
        let mut s = f64::NAN;
        dot(&mut s, &sa, &sb).unwrap();
        prop_assert_eq!(s, u.iter().zip(&v).map(|(p, q)| p * q).sum::<f64>());

        let csf: Csf<f64> = build(&[3, 4, 5], &a);
        let mut c = Dcsr::from_coo([3, 4], []).unwrap();
        ttv(&mut c, &csf, &x).unwrap();
        let want: Vec<f64> = (0..12).map(|f| (0..5).map(|k| a[f * 5 + k] * x[k]).sum()).collect();
        prop_assert_eq!(dense(&c), want);

        let (db, dd): (Dense<f64>, Dense<f64>) = (build(&[4, 2], &b), build(&[5, 2], &d));
        let mut c = Dense::from_coo([3, 2], []).unwrap();
        mttkrp(&mut c, &csf, &db, &dd).unwrap();
        let want: Vec<f64> = (0..6)
            .map(|f| {
                let (i, l) = (f / 2, f % 2);
                (0..4)
                    .flat_map(|j| (0..5).map(move |k| (j, k)))
                    .map(|(j, k)| a[(i * 4 + j) * 5 + k] * b[j * 2 + l] * d[k * 2 + l])
                    .sum()
            })
            .collect();
        prop_assert_eq!(dense(&c), want);
        let got = interp("c(i,l) = a(i,j,k) * b(j,l) * d(k,l)", &[
            arg("c", &[3, 2], None, &[0.0; 6]),
            arg("a", &[3, 4, 5], Some(Csf::<f64>::ENCODING), &a),
            arg("b", &[4, 2], None, &b),
            arg("d", &[5, 2], None, &d),
        ]);
        prop_assert_eq!(dense(&c), got);
    }

    #[test]
    fn batch_and_slices(a0 in mat(4, 8), x in mat(2, 8), p in mat(8, 8), q in mat(8, 8), xs in mat(1, 4)) {
        // batches store equal numbers of entries (MLIR's batch rule): batch 1 has batch 0's
        // pattern with other values
        let a: Vec<f64> = a0.iter().copied().chain(a0.iter().map(|v| -2.0 * v)).collect();
        let batched: Batched<f64> = build(&[2, 4, 8], &a);
        let dx: Dense<f64> = build(&[2, 8], &x);
        let mut y = Dense::from_coo([2, 4], []).unwrap();
        spmv_batched(&mut y, &batched, &dx).unwrap();
        let want: Vec<f64> = (0..8)
            .map(|f| (0..8).map(|j| a[f * 8 + j] * x[(f / 4) * 8 + j]).sum())
            .collect();
        prop_assert_eq!(dense(&y), want);

        // CsrSlice: rows 1..5, columns 0, 2, 4, 6 of an 8x8 parent
        let (rows, cols) = ([1, 2, 3, 4], [0, 2, 4, 6]);
        let sliced_a: Vec<f64> = rows.iter().flat_map(|&i| cols.iter().map(move |&j| (i, j))).map(|(i, j)| p[i * 8 + j]).collect();
        let sa: CsrSlice<f64> = build(&[8, 8], &p);
        let mut y = vec![f64::NAN; 4];
        spmv_csr_slice(&mut y, &sa, &xs).unwrap();
        let want: Vec<f64> = (0..4).map(|i| (0..4).map(|j| sliced_a[i * 4 + j] * xs[j]).sum()).collect();
        prop_assert_eq!(&y, &want);
        let mut slice_arg = arg("a", &[4, 4], Some(CsrSlice::<f64>::ENCODING), &[]);
        slice_arg.parent = Some((&[8, 8], &p));
        let got = interp("y(i) = a(i,j) * x(j)", &[arg("y", &[4], None, &[0.0; 4]), slice_arg, arg("x", &[4], None, &xs)]);
        prop_assert_eq!(y, got);

        // DcsrSlice: rows 0, 2, 4, 6, columns 2..6 of an 8x8 parent
        let sliced_b: Vec<f64> = [0, 2, 4, 6].iter().flat_map(|&i| (2..6).map(move |j| (i, j))).map(|(i, j)| q[i * 8 + j]).collect();
        let sb: DcsrSlice<f64> = build(&[8, 8], &q);
        let mut c = Dcsr::from_coo([4, 4], []).unwrap();
        add_slices(&mut c, &sa, &sb).unwrap();
        let want: Vec<f64> = sliced_a.iter().zip(&sliced_b).map(|(s, t)| s + t).collect();
        prop_assert_eq!(dense(&c), want);
    }
}

fn ca_rows(a: &[f64]) -> Csr<f64> {
    build(&[M, K], a)
}
