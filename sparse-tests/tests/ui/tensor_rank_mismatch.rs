sparse::sparse_format! {
    pub X = tensor<8xf32, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>;
}

fn main() {}
