//! Uses the formats `build.rs` generated from `formats.mlir`.

include!(concat!(env!("OUT_DIR"), "/formats.rs"));

fn main() {
    let entries = [
        ([0, 0], 1.0),
        ([0, 1], 2.0),
        ([1, 1], 3.0),
        ([0, 4], 4.0),
        ([1, 5], 5.0),
        ([2, 2], 6.0),
        ([2, 3], 7.0),
        ([3, 2], 8.0),
    ];
    let bsr = Bsr::<f64>::from_coo([4, 6], entries).expect("valid entries");
    print!("{bsr}");
    let csr = Csr16::<f64>::from_coo([4, 6], entries).expect("valid entries");
    let small =
        Small::from_coo([4, 6], entries.map(|(c, v)| (c, v as f32))).expect("valid entries");
    println!(
        "Csr16 holds {} bytes, Small holds {} f32 values",
        csr.memory_bytes(),
        small.nse()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_formats_store_the_reference_bsr() {
        let entries = [
            ([0, 0], 1.0),
            ([0, 1], 2.0),
            ([1, 1], 3.0),
            ([0, 4], 4.0),
            ([1, 5], 5.0),
            ([2, 2], 6.0),
            ([2, 3], 7.0),
            ([3, 2], 8.0),
        ];
        let bsr = Bsr::<f64>::from_coo([4, 6], entries).unwrap();
        assert_eq!(bsr.positions(1), Some(&[0usize, 2, 3][..]));
        assert_eq!(bsr.coordinates(1), Some(&[0usize, 2, 1][..]));
        assert_eq!(
            bsr.values(),
            &[1., 2., 0., 3., 4., 0., 0., 5., 6., 7., 8., 0.]
        );
        let csr = Csr16::<f64>::from_coo([4, 6], entries).unwrap();
        assert_eq!(csr.coordinates(1), Some(&[0u16, 1, 4, 1, 5, 2, 3, 2][..]));
        // The tensor type fixes V = f32 and the shape 4x6.
        let small: Small = Small::from_coo([4, 6], [([3, 5], 1.5f32)]).unwrap();
        assert_eq!(small.values(), &[1.5f32]);
        assert_eq!(Small::<f32>::STATIC_SHAPE, Some([Some(4), Some(6)]));
        let err = Small::<f32>::from_coo([4, 7], []).unwrap_err();
        assert_eq!(
            err,
            sparse::runtime::StorageError::ShapeMismatch {
                dim: 1,
                expected: 6,
                got: 7
            }
        );
    }
}
