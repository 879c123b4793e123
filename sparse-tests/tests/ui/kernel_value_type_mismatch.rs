// Operands of different value types in one kernel: an error at the operand that differs.
sparse::sparse_format! {
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
    pub kernel spmv(y: &mut [f64], a: &Csr<f32>, x: &[f64]) { y(i) = a(i, j) * x(j) }
}

fn main() {}
