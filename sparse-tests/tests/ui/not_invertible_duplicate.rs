sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, i : compressed) }>;
}

fn main() {}
