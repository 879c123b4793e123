sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = (i, j) -> (i + j : dense, j : compressed) }>;
}

fn main() {}
