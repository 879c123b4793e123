// Formats for this crate, generated at build time by sparse_dsl::build (see build.rs).

// Compressed sparse row, 32-bit positions and 16-bit coordinates.
#Csr16 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 16 }>

// Block sparse row with 2x2 blocks.
#Bsr = #sparse_tensor.encoding<{
  map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense)
}>

// A tensor type fixes the shape and the value type.
#Small = tensor<4x6xf32, #sparse_tensor.encoding<{ map = (i, j) -> (j : compressed, i : compressed) }>>
