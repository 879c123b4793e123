sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = (x) -> (x : compressed("x")) }>;
}

fn main() {}
