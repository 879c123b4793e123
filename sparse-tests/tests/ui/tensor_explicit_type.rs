sparse::sparse_format! {
    pub X = tensor<8x8xf32, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), explicitVal = 1 : i64 }>>;
}

fn main() {}
