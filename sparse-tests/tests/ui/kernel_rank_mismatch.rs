// A kernel statement indexing a matrix with one index: an error at the access.
sparse::sparse_format! {
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
    pub kernel spmv(y: &mut [f64], a: &Csr<f64>, x: &[f64]) { y(i) = a(i) * x(i) }
}

fn main() {}
