sparse::sparse_format! {
    pub X = tensor<20x30xf32, #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 3 : dense, j floordiv 3 : compressed, i mod 3 : dense, j mod 3 : dense) }>>;
}

fn main() {}
