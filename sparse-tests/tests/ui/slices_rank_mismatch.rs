sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map = [s](x : #sparse_tensor<slice(0, 4, 1)>, y) -> (x : dense, y : dense, s * x : dense) }>;
}

fn main() {}
