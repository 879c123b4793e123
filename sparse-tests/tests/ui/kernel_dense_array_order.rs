// The order of a `DenseArray` operand must be an all-dense format: an error at the format.
sparse::sparse_format! {
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
    pub kernel spmv(y: &mut [f64], a: &Csr<f64>, x: &sparse::runtime::layout::DenseArray<f64, Csr>) { y(i) = a(i, j) * x(j) }
}

fn main() {}
