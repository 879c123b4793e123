sparse::sparse_format! {
    pub Q = tensor<?x?x!quant.uniform<i8:f32, 0.5:10>, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>;
    pub QY = tensor<3x!quant.uniform<i8:f32:0, {0.2:20, 0.1:10, 0.3:30}>, #sparse_tensor.encoding<{ map = (i) -> (i : dense) }>>;
    /// A per-axis quantized output written in place and read by the statement (`+=`) is not generated.
    pub kernel spmv(y: &mut QY<i8>, a: &Q<i8>, x: &[f32]) { y(i) += a(i, j) * x(j) }
}

fn main() {}
