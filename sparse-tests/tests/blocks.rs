//! The blocks of blocked formats as dense views (issue 11): `block(p)` is the `p`-th stored
//! block's run of `values`, in the order of the block levels (row-major for BSR, column-major
//! when the block levels are swapped), and `blocks()` pairs each with its origin; the views
//! borrow the values, and a transposed view reads the same buffer.

use proptest::prelude::*;
use sparse::sparse_format;

sparse_format! {
    Bsr23 = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 3 : compressed, i mod 2 : dense, j mod 3 : dense) }>;
    // the same blocks stored column-major
    BsrCm = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 3 : compressed, j mod 3 : dense, i mod 2 : dense) }>;
    // 2x3 blocks by block column
    Bsc23 = #sparse_tensor.encoding<{ map = (i, j) -> (j floordiv 3 : dense, i floordiv 2 : compressed, i mod 2 : dense, j mod 3 : dense) }>;
    // Bsr23 with its dimensions swapped: `Bsr23::transpose` moves its arrays here
    Bsc32 = #sparse_tensor.encoding<{ map = (i, j) -> (j floordiv 2 : dense, i floordiv 3 : compressed, j mod 2 : dense, i mod 3 : dense) }>;
    // rows cut into blocks of 4 columns (a block is 1 x 4)
    Rows4 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : compressed, j mod 4 : dense) }>;
    // a blocked sparse vector
    Vec4 = #sparse_tensor.encoding<{ map = (i) -> (i floordiv 4 : compressed, i mod 4 : dense) }>;
}

/// A = [[1, 2, 0, 0, 0, 0], [3, 0, 4, 0, 0, 0], [0, 0, 0, 5, 0, 6], [0, 0, 0, 0, 7, 0]]: two
/// 2x3 blocks stored, at (0, 0) and (2, 3).
const A: [f64; 24] = [
    1.0, 2.0, 0.0, 0.0, 0.0, 0.0, //
    3.0, 0.0, 4.0, 0.0, 0.0, 0.0, //
    0.0, 0.0, 0.0, 5.0, 0.0, 6.0, //
    0.0, 0.0, 0.0, 0.0, 7.0, 0.0,
];

#[test]
fn bsr_blocks_are_row_major_views_of_the_values() {
    let a = Bsr23::from_dense([4, 6], &A).unwrap();
    let b0 = a.block(0).unwrap();
    assert_eq!(
        (b0.shape(), b0.minor_to_major(), b0.strides()),
        ([2, 3], [1, 0], [3, 1])
    );
    assert_eq!(b0.to_row_major(), vec![1.0, 2.0, 0.0, 3.0, 0.0, 4.0]);
    assert_eq!(b0.get([1, 2]), Some(&4.0));
    assert_eq!(b0.get([2, 0]), None);
    let b1 = a.block(1).unwrap();
    assert_eq!(b1.to_row_major(), vec![5.0, 0.0, 6.0, 0.0, 7.0, 0.0]);
    assert!(a.block(2).is_none());
    // the views borrow the values array, block after block
    assert!(std::ptr::eq(b0.values().as_ptr(), a.values().as_ptr()));
    assert!(std::ptr::eq(b1.values().as_ptr(), a.values()[6..].as_ptr()));
    let origins: Vec<[usize; 2]> = a.blocks().map(|(o, _)| o).collect();
    assert_eq!(origins, vec![[0, 0], [2, 3]]);
}

#[test]
fn swapped_block_levels_give_column_major_views() {
    let a = BsrCm::from_dense([4, 6], &A).unwrap();
    let b0 = a.block(0).unwrap();
    assert_eq!(
        (b0.shape(), b0.minor_to_major(), b0.strides()),
        ([2, 3], [0, 1], [1, 2])
    );
    // stored column after column, read as the same block
    assert_eq!(b0.values(), &[1.0, 3.0, 2.0, 0.0, 0.0, 4.0]);
    assert_eq!(b0.to_row_major(), vec![1.0, 2.0, 0.0, 3.0, 0.0, 4.0]);
    let bsc = Bsc23::from_dense([4, 6], &A).unwrap();
    let got: Vec<([usize; 2], Vec<f64>)> =
        bsc.blocks().map(|(o, v)| (o, v.to_row_major())).collect();
    assert_eq!(
        got,
        vec![
            ([0, 0], vec![1.0, 2.0, 0.0, 3.0, 0.0, 4.0]),
            ([2, 3], vec![5.0, 0.0, 6.0, 0.0, 7.0, 0.0]),
        ]
    );
}

#[test]
fn a_transposed_block_is_the_transposed_formats_block() {
    let a = Bsr23::from_dense([4, 6], &A).unwrap();
    let want: Vec<Vec<f64>> = a
        .blocks()
        .map(|(_, v)| v.transpose().to_row_major())
        .collect();
    let ptr = a.values().as_ptr();
    // the same arrays as Aᵀ in 3x2 blocks: each block read column-major
    let t: Bsc32<f64> = a.transpose();
    assert!(std::ptr::eq(t.values().as_ptr(), ptr));
    let b0 = t.block(0).unwrap();
    assert_eq!((b0.shape(), b0.minor_to_major()), ([3, 2], [0, 1]));
    let got: Vec<Vec<f64>> = t.blocks().map(|(_, v)| v.to_row_major()).collect();
    assert_eq!(got, want);
    assert_eq!(got[0], vec![1.0, 3.0, 2.0, 0.0, 0.0, 4.0]);
    let origins: Vec<[usize; 2]> = t.blocks().map(|(o, _)| o).collect();
    assert_eq!(origins, vec![[0, 0], [3, 2]]);
}

#[test]
fn blocks_with_an_unblocked_dimension_and_of_a_vector() {
    let mut dense = vec![0.0; 2 * 8];
    dense[5] = 1.0; // (0, 5)
    dense[8 + 1] = 2.0; // (1, 1)
    dense[8 + 7] = 3.0; // (1, 7)
    let r = Rows4::from_dense([2, 8], &dense).unwrap();
    let got: Vec<([usize; 2], [usize; 2], Vec<f64>)> = r
        .blocks()
        .map(|(o, v)| (o, v.shape(), v.to_row_major()))
        .collect();
    assert_eq!(
        got,
        vec![
            ([0, 4], [1, 4], vec![0.0, 1.0, 0.0, 0.0]),
            ([1, 0], [1, 4], vec![0.0, 2.0, 0.0, 0.0]),
            ([1, 4], [1, 4], vec![0.0, 0.0, 0.0, 3.0]),
        ]
    );
    let v = Vec4::from_dense(
        [12],
        &[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 9.0, 0.0, 0.0, 1.0],
    )
    .unwrap();
    let got: Vec<([usize; 1], Vec<f64>)> = v.blocks().map(|(o, b)| (o, b.to_row_major())).collect();
    assert_eq!(got, vec![([8], vec![9.0, 0.0, 0.0, 1.0])]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Writing every block's elements at its origin gives back the dense matrix.
    #[test]
    fn the_blocks_cover_the_matrix(
        (bm, bn, cells) in (1usize..4, 1usize..4).prop_flat_map(|(bm, bn)| {
            (Just(bm), Just(bn), proptest::collection::vec((0..4u8, -9i8..=9), 2 * bm * 3 * bn))
        })
    ) {
        let (m, n) = (2 * bm, 3 * bn);
        let dense: Vec<f64> = cells
            .iter()
            .map(|&(keep, v)| if keep == 0 { f64::from(v) } else { 0.0 })
            .collect();
        for (name, blocks) in [
            ("Bsr23", Bsr23::from_dense([m, n], &dense).unwrap().blocks().map(|(o, v)| (o, v.shape(), v.to_row_major())).collect::<Vec<_>>()),
            ("BsrCm", BsrCm::from_dense([m, n], &dense).unwrap().blocks().map(|(o, v)| (o, v.shape(), v.to_row_major())).collect()),
            ("Bsc23", Bsc23::from_dense([m, n], &dense).unwrap().blocks().map(|(o, v)| (o, v.shape(), v.to_row_major())).collect()),
        ] {
            let mut got = vec![0.0; m * n];
            for ([r0, c0], [h, w], elements) in blocks {
                for (k, x) in elements.into_iter().enumerate() {
                    got[(r0 + k / w) * n + c0 + k % w] = x;
                }
                prop_assert_eq!((h, w), (2, 3), "{}", name);
            }
            prop_assert_eq!(&got, &dense, "{}", name);
        }
    }
}
