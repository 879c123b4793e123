// v4: 5120 samples per SparseCore over 16 tiles = 320 output rows of 128 f32 (512 bytes) fill
// the 163840 bytes of TileSpmem exactly; the two staging rows and the limits' partition share
// (224 bytes) do not fit.
sparse::sparse_format! {
    pub Lookup = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>
        sparsecore(chip = v4, max_ids_per_partition = 256, max_unique_ids_per_partition = 64,
                   feature_width = 128, batch = 5120);
}

fn main() {}
