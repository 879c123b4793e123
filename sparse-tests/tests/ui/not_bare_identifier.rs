sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = (1, j) -> (j : dense) }>;
}

fn main() {}
