sparse::sparse_format! {
    pub Lookup = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>
        sparsecore(chip = v5, max_ids_per_partition = 256, max_unique_ids_per_partition = 64,
                   feature_width = 128, batch = 4096);
}

fn main() {}
