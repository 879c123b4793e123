sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = (i : #sparse_tensor<slice(-1, 4, 1)>, j) -> (i : dense, j : compressed) }>;
}

fn main() {}
