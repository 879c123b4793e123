sparse::sparse_format! {
    /// Two declarations, each with its own problem: both are reported.
    pub A = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 12 }>;
    pub B = #sparse_tensor.encoding<{ map = (i, j) -> (i : singleton, j : compressed) }>;
    pub Good = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
}

fn main() {
    // The valid declaration is still generated.
    let _ = Good::<f64>::from_coo([1, 1], []);
}
