sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j : compressed) }>;
}

fn main() {}
