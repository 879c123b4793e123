sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : 42) }>;
}

fn main() {}
