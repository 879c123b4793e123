sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j floordiv 4 : dense, j mod 4 : structured[2, 4]) }>;
}

fn main() {}
