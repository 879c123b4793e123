sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = (i : #sparse_tensor<slice(0, 4, 0)>, j) -> (i : dense, j : compressed) }>;
}

fn main() {}
