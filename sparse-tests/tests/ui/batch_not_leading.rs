sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : batch) }>;
}

fn main() {}
