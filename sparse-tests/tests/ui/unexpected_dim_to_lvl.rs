sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = [s](x, y) -> (x : dense) }>;
}

fn main() {}
