sparse::sparse_format! {
    pub Q = tensor<?x?x!quant.uniform<i8:f32, 0.5:10>, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>;
    pub QAxis = tensor<?x3x!quant.uniform<i8:f32:1, {0.2:20, 0.1:10, 0.3:30}>, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>;
    /// A per-axis quantized output is not generated: its narrowing would need each value's coordinates.
    pub kernel copy(c: &mut QAxis<i8>, a: &Q<i8>) { c(i, j) = a(i, j) }
}

fn main() {}
