sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = (i, i) -> (i : dense, i : compressed) }>;
}

fn main() {}
