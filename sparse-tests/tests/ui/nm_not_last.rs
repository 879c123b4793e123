sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = (i, j) -> (i : structured[2, 4], j : dense) }>;
}

fn main() {}
