sparse::sparse_format! {
    /// Per axis: one scale:zero_point pair per coordinate of the quantized dimension (here 2).
    pub Q = tensor<4x2x2x!quant.uniform<i8:f32:1, {0.2:20, 0.1:10, 0.3:30}>, #sparse_tensor.encoding<{ map = (i, j, k) -> (i : dense, j : compressed, k : compressed) }>>;
}

fn main() {}
