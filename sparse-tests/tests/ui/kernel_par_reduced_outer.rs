// `par: Par` splits the rows of the output: a statement whose outermost loop is not over them
// (here CSR's rows are reduced into `y(j)`) is an error naming the parameter.
sparse::sparse_format! {
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
    pub kernel spmv_t(par: sparse::Par, y: &mut [f64], a: &Csr<f64>, x: &[f64]) { y(j) = a(i, j) * x(i) }
}

fn main() {}
