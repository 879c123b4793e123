sparse::sparse_format! {
    pub X = #sparse_tensor.encoding<{ map =  i -> (i : dense) }>;
}

fn main() {}
