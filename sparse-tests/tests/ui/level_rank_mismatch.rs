sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = { l0, l1 } (i = l0) -> (l0 = i : dense) }>;
}

fn main() {}
