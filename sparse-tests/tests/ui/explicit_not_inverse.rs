sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = { l0, l1 } (i = l1, j = l0) -> (l0 = i : dense, l1 = j : compressed) }>;
}

fn main() {}
