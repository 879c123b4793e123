// Every option error at its token, all reported: a misspelt option (and so a missing one), a
// duplicate, a non-integer value, a zero.
sparse::sparse_format! {
    pub Lookup = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>
        sparsecore(chip = v5p, max_id_per_partition = 256, max_unique_ids_per_partition = 64,
                   feature_width = 128.0, batch = 4096, batch = 8);
    pub Zero = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>
        sparsecore(chip = v5p, max_ids_per_partition = 0, max_unique_ids_per_partition = 64,
                   feature_width = 128, batch = 4096);
}

fn main() {}
