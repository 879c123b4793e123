// v5p, 4096 samples per SparseCore of 128 f32: the output rows and two staged rows take
// 132096 of the 524288 bytes of TileSpmem, but the limits' partition buffers do not fit in the
// rest: 2^20 ids over 16 tiles = 65536 entries of 12 bytes, 2^16 unique ids = 4096 of 4 bytes,
// 802816 bytes per tile.
sparse::sparse_format! {
    pub Lookup = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>
        sparsecore(chip = v5p, max_ids_per_partition = 1048576,
                   max_unique_ids_per_partition = 65536, feature_width = 128, batch = 4096);
}

fn main() {}
