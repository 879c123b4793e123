sparse::sparse_format! {
    /// Quantized values are parsed in full but stored by a later issue.
    pub Q = tensor<4x3x2x!quant.uniform<i8:f32:1, {0.2:20, 0.1:10, 0.3:30}>, #sparse_tensor.encoding<{ map = (i, j, k) -> (i : dense, j : compressed, k : compressed) }>>;
}

fn main() {}
