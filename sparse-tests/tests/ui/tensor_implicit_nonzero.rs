sparse::sparse_format! {
    pub X = tensor<8x8xf32, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), implicitVal = 1.0 : f32 }>>;
}

fn main() {}
