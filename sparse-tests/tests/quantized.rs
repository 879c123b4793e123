//! Uniform quantized element types in `sparse_format!` (issue 11): the struct stores the
//! storage integers, quantizes real values as StableHLO's `uniform_quantize` does (half to
//! even, clamped to the storage range), dequantizes them, and refuses stored integers outside
//! the storage range. Exact answers, the same as `sparse eval` (`sparse-cli/tests/eval.rs`,
//! `quantized_values`).

use sparse::runtime::{SparseStorage, StorageError};
use sparse::sparse_format;

sparse_format! {
    pub Q = tensor<?x?x!quant.uniform<i8:f32, 0.5:10>, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>;
    pub QRange = tensor<?x?x!quant.uniform<i8<-100:100>:f32, 0.5:10>, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>;
    pub QAxis = tensor<2x3x!quant.uniform<i8:f32:1, {0.2:20, 0.1:10, 0.3:30}>, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>;
    pub QAxisDyn = tensor<?x?x!quant.uniform<u8:f32:0, {0.5:3, 0.25:7}>, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>;
    pub QDense = tensor<?x?x!quant.uniform<i8:f32, 0.5:10>, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : dense) }>>;
}

/// A = [[0.25, 0, 1.3], [0, 0.75, 100]], the eval test's matrix.
fn a_entries() -> Vec<([usize; 2], f32)> {
    vec![
        ([0, 0], 0.25),
        ([0, 2], 1.3),
        ([1, 1], 0.75),
        ([1, 2], 100.0),
    ]
}

#[test]
fn per_tensor_storage_rounds_half_to_even_and_clamps() {
    let q = Q::from_coo_real([2, 3], a_entries()).unwrap();
    // 0.25/0.5 + 10 = 10.5 -> 10, 12.6 -> 13, 11.5 -> 12, 210 -> 127
    assert_eq!(q.values(), &[10i8, 13, 12, 127]);
    assert_eq!(
        q.to_string(),
        "---- Sparse Tensor ----\nnse = 4\ndim = ( 2, 3 )\nlvl = ( 2, 3 )\npos[1] : ( 0, 2, 4 )\ncrd[1] : ( 0, 2, 1, 2 )\nvalues : ( 10, 13, 12, 127 )\n----\n"
    );
    assert_eq!(Q::<i8>::STORAGE_MIN, -128);
    assert_eq!(Q::<i8>::STORAGE_MAX, 127);
    assert_eq!(Q::<i8>::QUANTIZED_AXIS, None);
    assert_eq!(Q::<i8>::QUANT_PARAMS, [(0.5f32, 10i64)]);
    // read back: 0, 1.5, 1, 58.5 (a real 0 where nothing is stored)
    assert_eq!(
        q.to_dense_real().unwrap(),
        vec![0.0, 0.0, 1.5, 0.0, 1.0, 58.5]
    );
    assert_eq!(q.dequantized().values(), &[0.0f32, 1.5, 1.0, 58.5]);
    // from a dense real array: the same storage
    let d = Q::from_dense_real([2, 3], &[0.25, 0.0, 1.3, 0.0, 0.75, 100.0]).unwrap();
    assert_eq!(d, q);
    // the runtime's quantization agrees element by element
    let qz = q.quantization();
    assert_eq!(
        qz.quantize(&[0.25, 1.3, 0.75, 100.0]),
        vec![10, 13, 12, 127]
    );
}

#[test]
fn storage_range_clamps_and_is_checked() {
    // a storage range clamps 210 to 100
    let q = QRange::from_coo_real([2, 3], a_entries()).unwrap();
    assert_eq!(q.values(), &[10i8, 13, 12, 100]);
    assert_eq!(q.to_dense_real().unwrap()[5], 45.0);
    // integers given directly are checked against it
    let e = QRange::from_coo([2, 3], vec![([0, 0], 10i8), ([1, 2], 120)]).unwrap_err();
    assert_eq!(
        e,
        StorageError::StorageRange {
            coords: vec![1, 2],
            value: 120,
            min: -100,
            max: 100
        }
    );
    assert_eq!(
        e.to_string(),
        "entry at [1, 2]: stored integer 120 is outside the storage range [-100, 100]"
    );
    let e = QRange::from_dense([1, 2], &[0i8, -101]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "entry at [0, 1]: stored integer -101 is outside the storage range [-100, 100]"
    );
    let mut parts = q.clone().into_raw_parts();
    parts.values[0] = 101;
    assert_eq!(
        QRange::from_raw_parts(parts).unwrap_err().to_string(),
        "entry at [0, 0]: stored integer 101 is outside the storage range [-100, 100]"
    );
    // a conversion into the quantized format is checked too
    let q8 = Q::from_coo_real([2, 3], a_entries()).unwrap();
    assert_eq!(
        q8.convert::<QRange>().unwrap_err().to_string(),
        "entry at [1, 2]: stored integer 127 is outside the storage range [-100, 100]"
    );
    // the same struct over real values is not checked
    assert!(QRange::<f32>::from_coo([1, 1], vec![([0, 0], 1000.0)]).is_ok());
}

#[test]
fn per_axis_pairs_follow_the_dimension_coordinate() {
    // column j has pair j: (0.2, 20), (0.1, 10), (0.3, 30)
    let entries = vec![
        ([0, 0], 1.0f32),
        ([0, 1], 1.0),
        ([0, 2], 1.0),
        ([1, 1], -0.25),
        ([1, 2], 0.45),
    ];
    let q = QAxis::from_coo_real([2, 3], entries).unwrap();
    // 1/0.2 + 20 = 25, 1/0.1 + 10 = 20, 1/0.3 + 30 = 33.33 -> 33; -2.5 + 10 = 7.5 -> 8;
    // 0.45/0.3 + 30 = 31.5 in f32 -> 32
    assert_eq!(q.values(), &[25i8, 20, 33, 8, 32]);
    assert_eq!(QAxis::<i8>::QUANTIZED_AXIS, Some(1));
    let back = q.to_dense_real().unwrap();
    let expect = [
        (25 - 20) as f32 * 0.2,
        (20 - 10) as f32 * 0.1,
        (33 - 30) as f32 * 0.3,
        0.0,
        (8 - 10) as f32 * 0.1,
        (32 - 30) as f32 * 0.3,
    ];
    assert_eq!(back, expect);
    // the runtime's quantization over the same shape agrees
    let dense = [1.0, 1.0, 1.0, 0.0, -0.25, 0.45];
    let qz = q.quantization();
    let all = qz.quantize(&dense);
    assert_eq!(
        [all[0], all[1], all[2], all[4], all[5]],
        [25, 20, 33, 8, 32]
    );
    // rows pick the pair on axis 0, and the pair count must match a dynamic axis
    let r = QAxisDyn::from_coo_real([2, 2], vec![([0, 1], 1.0), ([1, 0], 1.0)]).unwrap();
    assert_eq!(r.values(), &[5u8, 11]);
    assert_eq!(
        QAxisDyn::from_coo_real([3, 2], vec![]).unwrap_err(),
        StorageError::ShapeMismatch {
            dim: 0,
            expected: 2,
            got: 3
        }
    );
}

#[test]
fn dense_levels_store_the_zero_point_for_a_real_zero() {
    let q = QDense::from_dense_real([2, 2], &[0.0, 1.0, -1.0, 0.0]).unwrap();
    assert_eq!(q.values(), &[10i8, 12, 8, 10]);
    assert_eq!(q.to_dense_real().unwrap(), vec![0.0, 1.0, -1.0, 0.0]);
    // explicit NaN quantizes to 0 (StableHLO's reference interpreter), infinities clamp
    let q = QDense::from_dense_real([1, 3], &[f32::NAN, f32::INFINITY, f32::NEG_INFINITY]).unwrap();
    assert_eq!(q.values(), &[0i8, 127, -128]);
    assert_eq!(q.dim_shape(), &[1, 3]);
}

#[test]
fn requantize_dequantizes_then_quantizes() {
    let q = Q::from_coo_real([2, 3], a_entries()).unwrap();
    // 58.5 in [-100, 100] at scale 0.5, zero point 10: 127 -> 100; A(0, 0) stores 10, a real
    // 0, which the target does not store
    let r: QRange = q.requantize().unwrap();
    assert_eq!(r.values(), &[13i8, 12, 100]);
    // the reals 1.5 (column 2), 1 (column 1), 58.5 (column 2) into per-axis columns:
    // 1.5/0.3 + 30 = 35, 1/0.1 + 10 = 20, 58.5/0.3 + 30 = 225 -> 127
    let a: QAxis = q.requantize().unwrap();
    assert_eq!(a.values(), &[35i8, 20, 127]);
    // into a dense format, the real 0s hold its zero point
    let d: QDense = q.requantize().unwrap();
    assert_eq!(d.values(), &[10i8, 10, 13, 10, 12, 127]);
    // `convert` copies the integers as they are
    assert_eq!(q.convert::<Q>().unwrap(), q);
}
