// A union over a level whose coordinates are not ordered: no two-pointer merge can follow
// it, so the kernel is an error at the access, naming the operand and what to do.
sparse::sparse_format! {
    pub Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
    pub Unordered = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed(nonordered)) }>;
    pub kernel add(c: &mut Csr<f64>, a: &Csr<f64>, b: &Unordered<f64>) { c(i, j) = a(i, j) + b(i, j) }
}

fn main() {}
