//! Exact arrays of the dynamic storage for the level-format families of issue 4: n:m (with packed
//! `crdWidth = 2`), batch, ELL counting, plus raw parts, conversion and the conformance case
//! `nv_24_seed`.

use sparse_runtime::mmio::read_matrix_market;
use sparse_runtime::{
    BufferKind, CooTensor, CrdBuffer, DynamicStorage, IndexBuffer, PackedBuffer, StorageError,
};

fn enc(text: &str) -> sparse_dsl::ir::VerifiedEncoding {
    match sparse_dsl::parse::parse_encoding(text) {
        Ok(p) => p.encoding,
        Err(e) => panic!("{text}: {e:?}"),
    }
}

fn coo2(shape: &[usize], entries: &[(usize, usize, f64)]) -> CooTensor<f64> {
    let mut t = CooTensor::new(shape.to_vec());
    for &(i, j, v) in entries {
        t.push(&[i, j], v);
    }
    t
}

fn pos(s: &DynamicStorage<f64>, l: usize) -> Vec<usize> {
    s.positions(l).unwrap().to_vec()
}
fn crd(s: &DynamicStorage<f64>, l: usize) -> Vec<usize> {
    s.coordinate_view(l).unwrap().to_vec()
}

/// The `sparse_tensor.print` lines of `text` as `key -> numbers`.
fn print_lines(text: &str) -> Vec<(String, Vec<f64>)> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        let Some((key, rest)) = line.split_once([':', '=']) else {
            continue;
        };
        let key = key.trim().to_string();
        if !(["nse", "dim", "lvl", "values"].contains(&key.as_str())
            || key.starts_with("pos[")
            || key.starts_with("crd["))
        {
            continue;
        }
        let nums = rest
            .split(|c: char| c == ',' || c == '(' || c == ')' || c.is_whitespace())
            .filter(|w| !w.is_empty())
            .map(|w| w.parse::<f64>().unwrap())
            .collect();
        out.push((key, nums));
    }
    out
}

fn assert_print(got: &str, expected: &str) {
    let (g, e) = (print_lines(got), print_lines(expected));
    let gk: Vec<_> = g.iter().map(|(k, _)| k.clone()).collect();
    let ek: Vec<_> = e.iter().map(|(k, _)| k.clone()).collect();
    assert_eq!(gk, ek, "printed lines\n{got}");
    for ((k, a), (_, b)) in g.iter().zip(&e) {
        assert_eq!(a.len(), b.len(), "{k} length");
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            let tol = if k == "values" {
                1e-12 * y.abs().max(1.0)
            } else {
                0.0
            };
            assert!((x - y).abs() <= tol, "{k}[{i}] = {x}, expected {y}");
        }
    }
}

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/");

#[test]
fn nv_24_seed_conformance() {
    let dir = format!("{SHARED}conformance/storage/nv_24_seed/");
    let e = enc(&std::fs::read_to_string(format!("{dir}encoding.mlir")).unwrap());
    let m = read_matrix_market(format!("{dir}matrix.mtx")).unwrap();
    let s = DynamicStorage::from_coo(&e, &m.tensor).unwrap();
    assert_print(
        &s.to_string(),
        &std::fs::read_to_string(format!("{dir}expected.txt")).unwrap(),
    );
    s.validate().unwrap();
    // packed four per byte: 128 two-bit coordinates in 32 bytes
    assert!(s.coordinates(2).is_none());
    assert_eq!(s.coordinate_view(2).unwrap().bytes(), 32);
    assert_eq!(s.memory_bytes(), 32 + 128 * 8);
    assert_eq!(s.get(&[0, 2]), Some(&2.0));
    assert_eq!(s.get(&[0, 1]), None);
    let dense = s.to_dense().unwrap();
    let mut want = vec![0.0; 256];
    for (c, v) in m.tensor.iter() {
        want[c[0] * 16 + c[1]] += *v;
    }
    assert_eq!(dense, want);
}

#[test]
fn n_out_of_m_pads_lowest_free_coordinates() {
    let e = enc("#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : structured[2, 4]) }>");
    // row 0: block 0 has one entry at 3, block 1 empty; row 1: block 0 has 1 and 2, block 1 has 0
    let a = coo2(&[2, 8], &[(0, 3, 5.), (1, 2, 7.), (1, 1, 6.), (1, 4, 8.)]);
    let s = DynamicStorage::from_coo(&e, &a).unwrap();
    assert_eq!(s.to_string().lines().nth(3).unwrap(), "lvl = ( 2, 2, 4 )");
    assert_eq!(crd(&s, 2), vec![0, 3, 0, 1, 1, 2, 0, 1]);
    assert_eq!(s.values(), &[0., 5., 0., 0., 6., 7., 8., 0.]);
    assert_eq!(s.coordinates(2).unwrap().width(), 0);
    s.validate().unwrap();
    assert_eq!(s.get(&[0, 3]), Some(&5.0));
    assert_eq!(s.get(&[0, 0]), Some(&0.0));
    assert_eq!(s.get(&[0, 2]), None);
    let mut y = vec![0.0; 2];
    s.spmv(&[1., 2., 3., 4., 5., 6., 7., 8.], &mut y).unwrap();
    assert_eq!(y, vec![20., 6. * 2. + 7. * 3. + 8. * 5.]);
}

#[test]
fn n_out_of_m_overflow_names_row_and_block() {
    let e = enc("#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4) }>");
    let a = coo2(&[3, 8], &[(2, 4, 1.), (2, 5, 1.), (2, 7, 1.)]);
    let err = DynamicStorage::from_coo(&e, &a).unwrap_err();
    assert_eq!(
        err,
        StorageError::NOutOfMOverflow {
            level: 2,
            row: 2,
            block: 1,
            count: 3,
            n: 2,
            m: 4
        }
    );
    assert!(err.to_string().contains("row 2, block 1"), "{err}");
}

#[test]
fn packed_width_overflow_names_level_value_width() {
    // an 8-wide block cannot hold its coordinates in 2 bits
    let e = enc("#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 8 : dense, j mod 8 : structured[2, 8]), crdWidth = 2 }>");
    let err = DynamicStorage::from_coo(&e, &coo2(&[1, 8], &[(0, 6, 1.)])).unwrap_err();
    assert_eq!(
        err,
        StorageError::WidthOverflow {
            level: 2,
            kind: BufferKind::Coordinate,
            value: 6,
            width: 2
        }
    );
}

#[test]
fn batch_csr_layout() {
    let e = enc(
        "#sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : dense, j : compressed) }>",
    );
    let mut a = CooTensor::new(vec![2, 3, 4]);
    for (c, v) in [
        ([0, 0, 1], 1.),
        ([0, 2, 3], 2.),
        ([1, 1, 0], 3.),
        ([1, 1, 2], 4.),
    ] {
        a.push(&c, v);
    }
    let s = DynamicStorage::from_coo(&e, &a).unwrap();
    assert_eq!(s.batches(), 2);
    // pos: [B, rows + 1], local to each batch
    assert_eq!(pos(&s, 2), vec![0, 1, 1, 2, 0, 0, 2, 2]);
    assert_eq!(crd(&s, 2), vec![1, 3, 0, 2]);
    assert_eq!(s.values(), &[1., 2., 3., 4.]);
    s.validate().unwrap();
    let got: Vec<(Vec<usize>, f64)> = s.iter().map(|(c, v)| (c, *v)).collect();
    assert_eq!(
        got,
        vec![
            (vec![0, 0, 1], 1.),
            (vec![0, 2, 3], 2.),
            (vec![1, 1, 0], 3.),
            (vec![1, 1, 2], 4.)
        ]
    );
    assert_eq!(s.get(&[1, 1, 2]), Some(&4.0));
    assert_eq!(s.get(&[1, 0, 1]), None);
    // different nse per batch is an error naming the level and the batch
    a.push(&[1, 2, 2], 5.);
    let err = DynamicStorage::from_coo(&e, &a).unwrap_err();
    assert_eq!(
        err,
        StorageError::BatchNse {
            level: 2,
            batch: 1,
            expected: 2,
            got: 3
        }
    );
    // corrupted: batch 1's positions not starting at 0
    let p = s.clone().into_raw_parts();
    let mut bad = p.positions.clone();
    bad[2] = Some(IndexBuffer::Native(vec![0, 1, 1, 2, 1, 1, 2, 2]));
    let err = DynamicStorage::from_raw_parts(
        &p.encoding,
        &p.dim_shape,
        bad,
        p.coordinates.clone(),
        p.values.clone(),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            StorageError::Invariant {
                level: 2,
                invariant: "5.1 positions start at 0",
                position: 4,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn batch_coo_layout() {
    let e = enc("#sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : compressed(nonunique), j : singleton) }>");
    let mut a = CooTensor::new(vec![2, 3, 3]);
    for (c, v) in [
        ([1, 2, 2], 4.),
        ([0, 0, 1], 1.),
        ([1, 0, 0], 3.),
        ([0, 2, 0], 2.),
    ] {
        a.push(&c, v);
    }
    let s = DynamicStorage::from_coo(&e, &a).unwrap();
    assert_eq!(pos(&s, 1), vec![0, 2, 0, 2]);
    assert_eq!(crd(&s, 1), vec![0, 1, 2, 0, 0, 0, 2, 2]);
    assert_eq!(s.values(), &[1., 2., 3., 4.]);
    s.validate().unwrap();
    assert_eq!(s.to_dense().unwrap()[9 + 2 * 3 + 2], 4.0);
}

#[test]
fn ell_counting_layout() {
    let e = enc("#sparse_tensor.encoding<{ map = [c](i, j) -> (c * 2 * i : dense, i : dense, j : compressed) }>");
    // row 0: cols 1, 3; row 1: none; row 2: col 0 (given twice: summed)
    let a = coo2(&[3, 4], &[(0, 3, 2.), (2, 0, 3.), (0, 1, 1.), (2, 0, 0.5)]);
    let s = DynamicStorage::from_coo(&e, &a).unwrap();
    assert_eq!(s.to_string().lines().nth(3).unwrap(), "lvl = ( 2, 3, 4 )");
    // slice 0: rows 0, 1, 2 -> segments 0..3; slice 1: rows 0, 1, 2 -> segments 3..6
    assert_eq!(pos(&s, 2), vec![0, 1, 1, 2, 3, 3, 3]);
    assert_eq!(crd(&s, 2), vec![1, 0, 3]);
    assert_eq!(s.values(), &[1., 3.5, 2.]);
    s.validate().unwrap();
    assert_eq!(s.get(&[0, 3]), Some(&2.0));
    assert_eq!(s.get(&[2, 0]), Some(&3.5));
    assert_eq!(s.get(&[1, 0]), None);
    assert_eq!(
        s.to_dense().unwrap(),
        vec![0., 1., 0., 2., 0., 0., 0., 0., 3.5, 0., 0., 0.]
    );
    let mut y = vec![0.0; 3];
    s.spmv(&[1., 10., 100., 1000.], &mut y).unwrap();
    assert_eq!(y, vec![2010., 0., 3.5]);
    let err = DynamicStorage::from_coo(&e, &coo2(&[3, 4], &[(1, 0, 1.), (1, 1, 1.), (1, 2, 1.)]))
        .unwrap_err();
    assert_eq!(
        err,
        StorageError::EllRowOverflow {
            row: 1,
            count: 3,
            slices: 2
        }
    );
}

#[test]
fn raw_parts_round_trip_and_packed() {
    let e = enc("#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4), crdWidth = 2 }>");
    let s = DynamicStorage::from_coo(&e, &coo2(&[1, 8], &[(0, 1, 1.), (0, 2, 2.), (0, 7, 3.)]))
        .unwrap();
    let parts = s.clone().into_raw_parts();
    let back = DynamicStorage::from_raw_parts(
        &parts.encoding,
        &parts.dim_shape,
        parts.positions.clone(),
        parts.coordinates.clone(),
        parts.values.clone(),
    )
    .unwrap();
    assert_eq!(back, s);
    // a coordinate repeated in a block
    let mut c = parts.coordinates.clone();
    c[2] = Some(CrdBuffer::Packed(
        PackedBuffer::from_values(2, &[1, 1, 0, 3])
            .unwrap()
            .unwrap(),
    ));
    let err = DynamicStorage::from_raw_parts(
        &parts.encoding,
        &parts.dim_shape,
        parts.positions.clone(),
        c,
        parts.values.clone(),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            StorageError::Invariant {
                level: 2,
                invariant: "5.6 coordinates sorted and distinct in a segment",
                position: 1,
                ..
            }
        ),
        "{err}"
    );
    // three coordinates for two blocks of two
    let mut c = parts.coordinates.clone();
    c[2] = Some(CrdBuffer::Packed(
        PackedBuffer::from_values(2, &[1, 2, 0]).unwrap().unwrap(),
    ));
    let err = DynamicStorage::from_raw_parts(
        &parts.encoding,
        &parts.dim_shape,
        parts.positions.clone(),
        c,
        parts.values.clone(),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            StorageError::Invariant {
                level: 2,
                invariant: "n:m: n coordinates per block",
                ..
            }
        ),
        "{err}"
    );
    // plain buffer where crdWidth = 2 wants a packed one
    let mut c = parts.coordinates;
    c[2] = Some(CrdBuffer::Plain(IndexBuffer::U8(vec![1, 2, 0, 3])));
    let err = DynamicStorage::from_raw_parts(
        &parts.encoding,
        &parts.dim_shape,
        parts.positions,
        c,
        parts.values,
    )
    .unwrap_err();
    assert!(
        matches!(err, StorageError::RawParts { level: 2, .. }),
        "{err}"
    );
}

#[test]
fn convert_between_families() {
    let csr = enc("#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>");
    let nv = enc("#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4), crdWidth = 2 }>");
    let bsr = enc("#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense) }>");
    let a = coo2(&[2, 8], &[(0, 1, 1.), (0, 2, 2.), (0, 7, 3.), (1, 4, 4.)]);
    let s = DynamicStorage::from_coo(&csr, &a).unwrap();
    let n = s.convert(&nv).unwrap();
    assert_eq!(n.to_dense().unwrap(), s.to_dense().unwrap());
    let b = n.convert(&bsr).unwrap();
    assert_eq!(b.to_dense().unwrap(), s.to_dense().unwrap());
    let back = b.convert(&csr).unwrap();
    assert_eq!(back.to_dense().unwrap(), s.to_dense().unwrap());
    // explicit zeros (n:m padding, BSR blocks) are not carried over: the same CSR comes back
    assert_eq!(back, s);
    let coo = s.to_coo();
    assert_eq!(coo.coords, vec![0, 1, 0, 2, 0, 7, 1, 4]);
    assert_eq!(coo.values, vec![1., 2., 3., 4.]);
}
