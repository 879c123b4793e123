//! Slices on generated formats: a declared `#sparse_tensor<slice(o, s, t)>` encoding stores its
//! parent's arrays and gives a view without copying; any format can be sliced at run time.
//! Checked against the dynamic storage's views and a dense computation.

use proptest::prelude::*;
use sparse::runtime::{CooTensor, DynamicStorage, StorageError};
use sparse_dsl::ir::DimSlice;

sparse::sparse_format! {
    /// The conformance vector `csr_slice`: rows 0..4, 8 columns with a dynamic stride.
    CsrSlice = #sparse_tensor.encoding<{ map = (i : #sparse_tensor<slice(0, 4, 1)>, j : #sparse_tensor<slice(0, 8, ?)>) -> (i : dense, j : compressed) }>;
    Dcsc = #sparse_tensor.encoding<{ map = (i, j) -> (j : compressed, i : compressed) }>;
}

fn entries(m: usize, n: usize) -> Vec<([usize; 2], f64)> {
    (0..m)
        .flat_map(|i| {
            (0..n)
                .filter(move |j| (i + 2 * j) % 3 == 0)
                .map(move |j| ([i, j], (10 * i + j) as f64))
        })
        .collect()
}

#[test]
fn declared_slice_is_a_view() {
    let a = CsrSlice::<f64>::from_coo([6, 20], entries(6, 20)).unwrap();
    let v = a.view(&[2]).unwrap();
    assert_eq!(v.shape(), &[4, 8]);
    assert_eq!(v.strides(), &[1, 2]);
    assert!(std::ptr::eq(v.parent(), &a));
    let dense = v.to_dense().unwrap();
    for i in 0..4 {
        for j in 0..8 {
            let (pi, pj) = (i, 2 * j);
            let want = if (pi + 2 * pj) % 3 == 0 {
                (10 * pi + pj) as f64
            } else {
                0.0
            };
            assert_eq!(dense[i * 8 + j], want, "({i}, {j})");
            assert_eq!(v.get(&[i, j]).copied().unwrap_or(0.0), want);
        }
    }
    assert_eq!(
        CsrSlice::<f64>::SLICES[1],
        DimSlice {
            offset: Some(0),
            size: Some(8),
            stride: None
        }
    );
    assert!(matches!(
        a.view(&[]).unwrap_err(),
        StorageError::Slice { dim: 1, .. }
    ));
    assert!(
        matches!(
            a.view(&[3]).unwrap_err(),
            StorageError::Slice { dim: 1, .. }
        ),
        "0 + 7 * 3 = 21 is past 20 columns"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn runtime_slices_match_dynamic(
        (m, n, raw) in (1usize..10, 1usize..10).prop_flat_map(|(m, n)| (Just(m), Just(n), proptest::collection::vec(((0..m), (0..n), 1i32..9), 0..40))),
        o in 0usize..3, t in 1usize..3, o2 in 0usize..3, t2 in 1usize..3,
    ) {
        let ents: Vec<([usize; 2], f64)> = raw.iter().map(|&(i, j, v)| ([i, j], v as f64)).collect();
        let g = Dcsc::<f64>::from_coo([m, n], ents.iter().cloned()).unwrap();
        let mut coo = CooTensor::new(vec![m, n]);
        for (c, v) in &ents {
            coo.push(c, *v);
        }
        let d = DynamicStorage::from_coo(&Dcsc::<f64>::encoding().verify().unwrap(), &coo).unwrap();
        let slices = [
            DimSlice { offset: Some(o as u64), size: None, stride: Some(t as u64) },
            DimSlice { offset: None, size: None, stride: Some(t2 as u64) },
        ];
        let size0 = if o < m { (m - o).div_ceil(t) } else { 0 };
        let size1 = if o2 < n { (n - o2).div_ceil(t2) } else { 0 };
        let dynamic = [size0, o2, size1];
        match (g.slice_dims(&slices, &dynamic), d.slice_dims(&slices, &dynamic)) {
            (Ok(gv), Ok(dv)) => {
                prop_assert_eq!(gv.shape(), dv.shape());
                prop_assert_eq!(gv.to_dense().unwrap(), dv.to_dense().unwrap());
                prop_assert_eq!(gv.to_coo(), dv.to_coo());
                let x: Vec<f64> = (0..size1).map(|j| 1.0 + j as f64).collect();
                let (mut y1, mut y2) = (vec![0.0; size0], vec![0.0; size0]);
                gv.spmv(&x, &mut y1).unwrap();
                dv.spmv(&x, &mut y2).unwrap();
                prop_assert_eq!(y1, y2);
            }
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert!(false, "generated {:?} vs dynamic {:?}", a.map(|v| v.shape().to_vec()), b.map(|v| v.shape().to_vec())),
        }
    }
}
