sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = (i, j, k) -> (i : compressed(nonunique), j : singleton(soa), k : singleton) }>;
}

fn main() {}
