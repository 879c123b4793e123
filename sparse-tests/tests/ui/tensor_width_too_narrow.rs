sparse::sparse_format! {
    pub X = tensor<300x300xf32, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), crdWidth = 8 }>>;
}

fn main() {}
