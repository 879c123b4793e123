// A kernel writing into a format with `explicitVal` (a pattern): refused at the output.
sparse::sparse_format! {
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
    pub Pattern = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), explicitVal = 1.0 : f64 }>;
    pub kernel add(c: &mut Pattern<f64>, a: &Csr<f64>, b: &Csr<f64>) { c(i, j) = a(i, j) + b(i, j) }
}

fn main() {}
