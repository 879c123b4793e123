sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = (x y) -> (x : dense) }>;
}

fn main() {}
