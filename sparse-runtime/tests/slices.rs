//! Slices: views over a parent storage, with static and dynamic (`?`) offset, size and stride.

use sparse_runtime::{CooTensor, DynamicStorage, StorageError};

fn enc(text: &str) -> sparse_dsl::ir::VerifiedEncoding {
    sparse_dsl::parse::parse_encoding(text)
        .unwrap_or_else(|e| panic!("{e:?}"))
        .encoding
}

fn parent() -> DynamicStorage<f64> {
    let csr = enc("#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>");
    // 6 x 8, a[i][j] = 10 i + j where (i + j) % 3 == 0
    let mut a = CooTensor::new(vec![6, 8]);
    for i in 0..6 {
        for j in 0..8 {
            if (i + j) % 3 == 0 {
                a.push(&[i, j], (10 * i + j) as f64);
            }
        }
    }
    DynamicStorage::from_coo(&csr, &a).unwrap()
}

#[test]
fn static_and_dynamic_slices() {
    let p = parent();
    let sliced = enc("#sparse_tensor.encoding<{ map = (i : #sparse_tensor<slice(1, 3, 2)>, j : #sparse_tensor<slice(?, 4, ?)>) -> (i : dense, j : compressed) }>");
    // rows 1, 3, 5; columns 1, 3, 5, 7 (offset 1, stride 2)
    let v = p.slice(&sliced, &[1, 2]).unwrap();
    assert_eq!(v.shape(), &[3, 4]);
    assert_eq!(v.offsets(), &[1, 1]);
    assert_eq!(v.strides(), &[2, 2]);
    assert!(std::ptr::eq(v.parent(), &p));
    let dense = v.to_dense().unwrap();
    let mut want = vec![0.0; 12];
    for (vi, i) in [1usize, 3, 5].into_iter().enumerate() {
        for (vj, j) in [1usize, 3, 5, 7].into_iter().enumerate() {
            if (i + j) % 3 == 0 {
                want[vi * 4 + vj] = (10 * i + j) as f64;
            }
        }
    }
    assert_eq!(dense, want);
    assert_eq!(v.get(&[0, 0]), None); // (1, 1)
    assert_eq!(v.get(&[0, 2]), Some(&15.0)); // (1, 5)
    assert_eq!(v.get(&[2, 3]), Some(&57.0)); // (5, 7)
    assert_eq!(v.get(&[3, 0]), None);
    let entries: Vec<(Vec<usize>, f64)> = v.iter().map(|(c, x)| (c, *x)).collect();
    assert_eq!(
        entries,
        vec![
            (vec![0, 2], 15.),
            (vec![1, 1], 33.),
            (vec![2, 0], 51.),
            (vec![2, 3], 57.)
        ]
    );
    let mut y = vec![0.0; 3];
    v.spmv(&[1., 1., 1., 1.], &mut y).unwrap();
    assert_eq!(y, vec![15., 33., 108.]);
    assert_eq!(v.to_coo().values, vec![15., 33., 51., 57.]);
}

#[test]
fn slice_errors_name_the_dimension() {
    let p = parent();
    let sliced = enc("#sparse_tensor.encoding<{ map = (i : #sparse_tensor<slice(1, 3, 2)>, j : #sparse_tensor<slice(?, 4, ?)>) -> (i : dense, j : compressed) }>");
    assert!(matches!(
        p.slice(&sliced, &[1]),
        Err(StorageError::Slice { dim: 1, .. })
    ));
    assert!(matches!(
        p.slice(&sliced, &[1, 2, 3]),
        Err(StorageError::Slice { dim: 2, .. })
    ));
    // columns 2, 4, 6, 8: 8 is past the parent's 8 columns
    let e = p.slice(&sliced, &[2, 2]).unwrap_err();
    assert!(matches!(e, StorageError::Slice { dim: 1, .. }), "{e}");
    assert!(e.to_string().contains("slice(2, 4, 2)"), "{e}");
    assert!(matches!(
        p.slice(&sliced, &[0, 0]),
        Err(StorageError::Slice { dim: 1, .. })
    ));
    let other = enc("#sparse_tensor.encoding<{ map = (i : #sparse_tensor<slice(0, 2, 1)>, j) -> (i : compressed, j : compressed) }>");
    assert!(matches!(
        p.slice(&other, &[]),
        Err(StorageError::Unsupported { .. })
    ));
    // building storage directly from a sliced encoding says to slice a parent
    let e = DynamicStorage::from_coo(&sliced, &CooTensor::<f64>::new(vec![3, 4])).unwrap_err();
    assert!(e.to_string().contains("slice"), "{e}");
}
