// Two tensor types fix index `j` at different sizes: an error at the second access.
sparse::sparse_format! {
    pub Wide = tensor<4x8xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>;
    pub Narrow = tensor<4x6xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>;
    pub kernel add(c: &mut Narrow<f64>, a: &Wide<f64>, b: &Narrow<f64>) { c(i, j) = a(i, j) + b(i, j) }
}

fn main() {}
