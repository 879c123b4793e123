// A parameter named like a variable of the generated loops (here the loop bound `lo`) would be
// shadowed inside them: an error naming it.
sparse::sparse_format! {
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
    pub kernel spmv(y: &mut [f64], a: &Csr<f64>, lo: &[f64]) { y(i) = a(i, j) * lo(j) }
}

fn main() {}
