sparse::sparse_format! {
    // Reported once, at the shape (not at both the floordiv and the mod level).
    pub X = tensor<5x?xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j : dense, i mod 2 : dense) }>>;
}

fn main() {}
