sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = (i, j, k) -> (i floordiv 2 : dense, i mod 2 : dense, j : dense, k floordiv 4 : dense, k mod 4 : structured[2, 4]) }>;
}

fn main() {}
