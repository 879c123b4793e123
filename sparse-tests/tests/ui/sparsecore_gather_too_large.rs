// v4: 8192 samples per SparseCore over 16 tiles = 512 output rows of 512 bytes = 262144 bytes,
// more than the 163840 bytes of TileSpmem.
sparse::sparse_format! {
    pub Lookup = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>
        sparsecore(chip = v4, max_ids_per_partition = 256, max_unique_ids_per_partition = 64,
                   feature_width = 128, batch = 8192);
}

fn main() {}
