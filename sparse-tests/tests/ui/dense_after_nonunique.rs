sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : dense) }>;
}

fn main() {}
