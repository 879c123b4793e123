//! `Name::encoding()` is the verified encoding built as data by the generated code: it must equal
//! what the parser makes of the canonical text, for every part of the IR (level properties, n:m,
//! symbols, block maps and their inverses, slices with `?`, widths, explicit and implicit values).

use sparse_dsl::parse::parse_encoding;

sparse::sparse_format! {
    Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 16 }>;
    CooSoa = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton(soa)) }>;
    Unordered = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed(nonunique, nonordered)) }>;
    Bsr = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 3 : compressed, i mod 2 : dense, j mod 3 : dense) }>;
    Nv24 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[2, 4]), crdWidth = 8 }>;
    Ell = #sparse_tensor.encoding<{ map = [c](i, j) -> (c * 3 * i : dense, i : dense, j : compressed) }>;
    Sliced = #sparse_tensor.encoding<{ map = (i : #sparse_tensor<slice(1, 4, 1)>, j : #sparse_tensor<slice(0, 8, ?)>) -> (i : dense, j : compressed) }>;
    Pattern = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), explicitVal = 1.0 : f32, implicitVal = 0.0 : f32 }>;
    Batched = #sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : dense, j : compressed), posWidth = 64 }>;
}

macro_rules! same {
    ($($t:ident),*) => {$(
        let parsed = parse_encoding($t::<f64>::ENCODING).expect("canonical text parses").encoding;
        assert_eq!($t::<f64>::encoding(), parsed, "{}", stringify!($t));
        assert_eq!($t::<f64>::encoding().to_string(), $t::<f64>::ENCODING, "{}", stringify!($t));
    )*};
}

#[test]
fn generated_encoding_equals_parsed() {
    same!(Csr, CooSoa, Unordered, Bsr, Nv24, Ell, Sliced, Pattern, Batched);
}
