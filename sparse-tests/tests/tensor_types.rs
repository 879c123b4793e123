//! Declarations written as MLIR tensor types fix the static shape and the value type.

use sparse::runtime::StorageError;

sparse::sparse_format! {
    /// 2x3 blocks of a 20x30 f32 matrix.
    pub Bsr = tensor<20x30xf32, #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 3 : compressed, i mod 2 : dense, j mod 3 : dense) }>>;
    /// Dynamic sizes, f64 values.
    pub Dyn = tensor<?x?xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>>;
    /// Integer values, one dynamic dimension.
    pub Counts = tensor<4x?xi32, #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>>;
    /// The string form takes a tensor type too.
    pub Vector = "tensor<100xf32, #sparse_tensor.encoding<{ map = (i) -> (i : compressed) }>>";
}

#[test]
fn static_shape_and_value_type() {
    let a: Bsr = Bsr::from_coo([20, 30], [([19, 29], 1.5f32), ([0, 0], 2.0)]).unwrap();
    assert_eq!(a.values().len(), 12);
    assert_eq!(Bsr::<f32>::STATIC_SHAPE, Some([Some(20), Some(30)]));
    assert_eq!(
        Bsr::<f32>::from_coo([20, 31], []).unwrap_err(),
        StorageError::ShapeMismatch {
            dim: 1,
            expected: 30,
            got: 31
        }
    );
    let d: Dyn = Dyn::from_coo([7, 9], [([6, 8], 1.0f64)]).unwrap();
    assert_eq!(d.get([6, 8]), Some(&1.0));
    assert_eq!(Dyn::<f64>::STATIC_SHAPE, Some([None, None]));
    let c: Counts = Counts::from_coo([4, 1000], [([3, 999], 7i32), ([3, 999], 1)]).unwrap();
    assert_eq!(c.values(), &[8]);
    assert_eq!(
        Counts::<i32>::from_coo([5, 1], []).unwrap_err(),
        StorageError::ShapeMismatch {
            dim: 0,
            expected: 4,
            got: 5
        }
    );
    let v: Vector = Vector::from_coo([100], [([42], 0.5f32)]).unwrap();
    assert_eq!(v.coordinates(0), Some(&[42usize][..]));
}
