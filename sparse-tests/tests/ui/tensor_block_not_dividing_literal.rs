sparse::sparse_format! {
    // In the string form the error is at the literal, with line:column of the offending size.
    pub X = "tensor<5x6xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : dense, i mod 2 : dense, j mod 2 : dense) }>>";
}

fn main() {}
