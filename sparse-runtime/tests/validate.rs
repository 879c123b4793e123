//! `validate` on corrupted raw parts: every invariant named with its level and position;
//! loose_compressed with gaps and out-of-order segments; nonordered/nonunique raw parts kept as
//! given; no panic on any raw input.

use proptest::prelude::*;
use sparse_runtime::{CooTensor, CrdBuffer, DynamicStorage, IndexBuffer, RawParts, StorageError};

fn enc(text: &str) -> sparse_dsl::ir::VerifiedEncoding {
    sparse_dsl::parse::parse_encoding(text)
        .unwrap_or_else(|e| panic!("{e:?}"))
        .encoding
}
const CSR: &str = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>";

fn n(v: &[usize]) -> IndexBuffer {
    IndexBuffer::Native(v.to_vec())
}

fn build(
    e: &str,
    shape: &[usize],
    pos: Vec<Option<Vec<usize>>>,
    crd: Vec<Option<Vec<usize>>>,
    vals: usize,
) -> Result<DynamicStorage<f64>, StorageError> {
    DynamicStorage::from_raw_parts(
        &enc(e),
        shape,
        pos.into_iter().map(|p| p.map(|p| n(&p))).collect(),
        crd.into_iter()
            .map(|c| c.map(|c| CrdBuffer::Plain(n(&c))))
            .collect(),
        (0..vals).map(|v| v as f64 + 1.0).collect(),
    )
}

fn assert_inv(
    r: Result<DynamicStorage<f64>, StorageError>,
    level: usize,
    invariant: &str,
    position: usize,
) {
    match r {
        Err(StorageError::Invariant {
            level: l,
            invariant: i,
            position: p,
            ..
        }) => {
            assert_eq!((l, i, p), (level, invariant, position));
        }
        other => panic!("expected invariant '{invariant}', got {other:?}"),
    }
}

#[test]
fn csr_invariants_5_1_to_5_6() {
    // 3 x 4 CSR: rows [1, 3], [], [0]
    let ok = build(
        CSR,
        &[3, 4],
        vec![None, Some(vec![0, 2, 2, 3])],
        vec![None, Some(vec![1, 3, 0])],
        3,
    )
    .unwrap();
    assert_eq!(ok.get(&[0, 3]), Some(&2.0));
    assert_inv(
        build(
            CSR,
            &[3, 4],
            vec![None, Some(vec![1, 2, 2, 3])],
            vec![None, Some(vec![1, 3, 0])],
            3,
        ),
        1,
        "5.1 positions start at 0",
        0,
    );
    assert_inv(
        build(
            CSR,
            &[3, 4],
            vec![None, Some(vec![0, 2, 2, 2])],
            vec![None, Some(vec![1, 3, 0])],
            3,
        ),
        1,
        "5.2 last position equals the number of coordinates",
        3,
    );
    assert_inv(
        build(
            CSR,
            &[3, 4],
            vec![None, Some(vec![0, 2, 1, 3])],
            vec![None, Some(vec![1, 3, 0])],
            3,
        ),
        1,
        "5.3 positions non-decreasing",
        2,
    );
    assert_inv(
        build(
            CSR,
            &[2, 2],
            vec![None, Some(vec![0, 3, 3])],
            vec![None, Some(vec![0, 1, 1])],
            3,
        ),
        1,
        "5.3 segment length at most the level size",
        1,
    );
    assert_inv(
        build(
            CSR,
            &[3, 4],
            vec![None, Some(vec![0, 2, 2, 3])],
            vec![None, Some(vec![1, 4, 0])],
            3,
        ),
        1,
        "5.5 coordinates below the level size",
        1,
    );
    assert_inv(
        build(
            CSR,
            &[3, 4],
            vec![None, Some(vec![0, 2, 2, 3])],
            vec![None, Some(vec![3, 1, 0])],
            3,
        ),
        1,
        "5.6 coordinates sorted and distinct in a segment",
        1,
    );
    assert_inv(
        build(
            CSR,
            &[3, 4],
            vec![None, Some(vec![0, 2, 2, 3])],
            vec![None, Some(vec![3, 3, 0])],
            3,
        ),
        1,
        "5.6 coordinates sorted and distinct in a segment",
        1,
    );
    assert_inv(
        build(
            CSR,
            &[3, 4],
            vec![None, Some(vec![0, 2, 3])],
            vec![None, Some(vec![1, 3, 0])],
            3,
        ),
        1,
        "3.8 positions length is parent size + 1",
        3,
    );
    assert_inv(
        build(
            CSR,
            &[3, 4],
            vec![None, Some(vec![0, 2, 2, 3])],
            vec![None, Some(vec![1, 3, 0])],
            2,
        ),
        1,
        "one value per stored position",
        2,
    );
}

#[test]
fn dcsc_level_0_and_raw_part_shapes() {
    let dcsc = "#sparse_tensor.encoding<{ map = (i, j) -> (j : compressed, i : compressed) }>";
    let ok = build(
        dcsc,
        &[3, 3],
        vec![Some(vec![0, 2]), Some(vec![0, 1, 2])],
        vec![Some(vec![0, 2]), Some(vec![1, 0])],
        2,
    )
    .unwrap();
    assert_eq!(ok.get(&[0, 2]), Some(&2.0));
    assert_inv(
        build(
            dcsc,
            &[3, 3],
            vec![Some(vec![0, 2]), Some(vec![0, 1, 2])],
            vec![Some(vec![2, 0]), Some(vec![1, 0])],
            2,
        ),
        0,
        "5.6 coordinates sorted and distinct in a segment",
        1,
    );
    let e = build(
        dcsc,
        &[3, 3],
        vec![None, Some(vec![0, 1, 2])],
        vec![Some(vec![0, 2]), Some(vec![1, 0])],
        2,
    )
    .unwrap_err();
    assert!(matches!(e, StorageError::RawParts { level: 0, .. }), "{e}");
    let e = DynamicStorage::<f64>::from_raw_parts(
        &enc(CSR),
        &[1, 1],
        vec![None, Some(IndexBuffer::U8(vec![0, 0]))],
        vec![None, Some(CrdBuffer::Plain(n(&[])))],
        vec![],
    )
    .unwrap_err();
    assert!(matches!(e, StorageError::RawParts { level: 1, .. }), "{e}");
}

#[test]
fn loose_with_gaps_and_out_of_order_segments() {
    let loose = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : loose_compressed) }>";
    // row 0 at 4..6, row 1 empty, row 2 at 0..1; positions 1..4 and 6 are unused room
    let crd = vec![2, 9, 9, 9, 0, 3, 9];
    let s = build(
        loose,
        &[3, 4],
        vec![None, Some(vec![4, 6, 2, 2, 0, 1])],
        vec![None, Some(crd.clone())],
        7,
    )
    .unwrap();
    let got: Vec<(Vec<usize>, f64)> = s.iter().map(|(c, v)| (c, *v)).collect();
    assert_eq!(
        got,
        vec![(vec![0, 0], 5.), (vec![0, 3], 6.), (vec![2, 2], 1.)]
    );
    assert_eq!(s.get(&[0, 3]), Some(&6.0));
    assert_eq!(s.get(&[1, 0]), None);
    assert_eq!(
        s.to_dense().unwrap(),
        vec![5., 0., 0., 6., 0., 0., 0., 0., 0., 0., 1., 0.]
    );
    let c = s.convert(&enc(CSR)).unwrap();
    assert_eq!(c.positions(1).unwrap().to_vec(), vec![0, 2, 2, 3]);
    // a segment past the coordinates and an inverted pair
    assert_inv(
        build(
            loose,
            &[3, 4],
            vec![None, Some(vec![4, 8, 2, 2, 0, 1])],
            vec![None, Some(crd.clone())],
            7,
        ),
        1,
        "5.2 segments within the coordinates",
        1,
    );
    assert_inv(
        build(
            loose,
            &[3, 4],
            vec![None, Some(vec![4, 6, 2, 1, 0, 1])],
            vec![None, Some(crd)],
            7,
        ),
        1,
        "5.3 segment lo <= hi",
        2,
    );
}

#[test]
fn nonordered_and_nonunique_raw_parts_kept_as_given() {
    let e = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed(nonordered)) }>";
    let s = build(
        e,
        &[1, 4],
        vec![None, Some(vec![0, 3])],
        vec![None, Some(vec![3, 0, 2])],
        3,
    )
    .unwrap();
    let cols: Vec<usize> = s.iter().map(|(c, _)| c[1]).collect();
    assert_eq!(cols, vec![3, 0, 2]);
    assert_inv(
        build(
            e,
            &[1, 4],
            vec![None, Some(vec![0, 3])],
            vec![None, Some(vec![3, 0, 3])],
            3,
        ),
        1,
        "5.6 coordinates distinct in a segment",
        2,
    );
    let coo = "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton(nonunique)) }>";
    let s = build(
        coo,
        &[2, 2],
        vec![Some(vec![0, 2]), None],
        vec![Some(vec![1, 1, 1, 1]), None],
        2,
    )
    .unwrap();
    assert_eq!(s.to_dense().unwrap(), vec![0., 0., 0., 3.]);
    assert_eq!(s.to_coo().len(), 2);
    assert_inv(
        build(
            coo,
            &[2, 2],
            vec![Some(vec![0, 2]), None],
            vec![Some(vec![1, 1, 0, 1]), None],
            2,
        ),
        0,
        "coordinates non-decreasing in a segment",
        1,
    );
    assert_inv(
        build(
            coo,
            &[2, 2],
            vec![Some(vec![0, 2]), None],
            vec![Some(vec![1, 1, 1]), None],
            2,
        ),
        0,
        "coordinate buffer holds whole COO tuples",
        3,
    );
}

const ENCODINGS: &[&str] = &[
    CSR,
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed), posWidth = 8, crdWidth = 8 }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : loose_compressed(nonordered)) }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense) }>",
    "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 2 : dense, j mod 2 : structured[1, 2]) }>",
    "#sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : dense, j : compressed) }>",
    "#sparse_tensor.encoding<{ map = [c](i, j) -> (c * 2 * i : dense, i : dense, j : compressed) }>",
];

fn shape_for(e: &sparse_dsl::ir::Encoding) -> Vec<usize> {
    vec![2; e.dim_rank()]
}

proptest! {
    /// Mutating any array of a valid tensor never panics: `from_raw_parts` accepts (and then
    /// reading works) or names an error.
    #[test]
    fn no_panic_on_any_raw_parts(which in 0..ENCODINGS.len(), level in 0usize..4, idx in 0usize..16, val in 0usize..20, grow in 0usize..3, vals in 0usize..20) {
        let e = enc(ENCODINGS[which]);
        let shape = shape_for(&e);
        let mut coo = CooTensor::new(shape.clone());
        if e.dim_rank() == 2 { coo.push(&[0, 1], 1.0); coo.push(&[1, 0], 2.0); } else { coo.push(&[0, 0, 1], 1.0); coo.push(&[1, 1, 0], 2.0); }
        let s = DynamicStorage::from_coo(&e, &coo).unwrap();
        let RawParts { encoding, dim_shape, mut positions, mut coordinates, .. } = s.into_raw_parts();
        let l = level % encoding.lvl_rank();
        if let Some(Some(IndexBuffer::Native(p))) = positions.get_mut(l) {
            for _ in 0..grow { p.push(val); }
            let k = idx % p.len().max(1);
            if let Some(x) = p.get_mut(k) { *x = val; }
        }
        if let Some(Some(c)) = coordinates.get_mut(l) {
            let mut v = c.view().to_vec();
            for _ in 0..grow { v.push(val); }
            if let Some(x) = v.get_mut(idx) { *x = val; }
            let w = c.width();
            let mut b = CrdBuffer::new(w).unwrap();
            for x in v { let _ = b.push(x); }
            *c = b;
        }
        if let Ok(t) = DynamicStorage::from_raw_parts(&encoding, &dim_shape, positions, coordinates, vec![1.0f64; vals]) {
            let _ = t.to_dense();
            let _ = t.to_coo();
            let _ = t.to_string();
            let zero = vec![0usize; t.shape().len()];
            let _ = t.get(&zero);
        }
    }
}

/// `Invariant { level, "array lengths fit usize", position, detail }`.
fn overflow(level: usize, position: usize, detail: &str) -> StorageError {
    StorageError::Invariant {
        level,
        invariant: "array lengths fit usize",
        position,
        detail: detail.into(),
    }
}

/// Empty arrays (of the right kinds) for `e` on `shape`, through `from_raw_parts`.
fn empty_parts(e: &str, shape: &[usize]) -> Result<DynamicStorage<f64>, StorageError> {
    let enc = enc(e);
    let positions = (0..enc.lvl_rank())
        .map(|l| enc.lvl_types[l].has_positions().then(|| n(&[])))
        .collect();
    let coordinates = (0..enc.lvl_rank())
        .map(|l| {
            enc.owns_crd_buffer(l)
                .then(|| CrdBuffer::new(enc.crd_width).unwrap())
        })
        .collect();
    DynamicStorage::from_raw_parts(&enc, shape, positions, coordinates, vec![])
}

/// Huge shapes: every size computation of validation is checked arithmetic, so a shape whose
/// arrays cannot be addressed is a named error (before: "attempt to add with overflow" in
/// compressed `check`, or, with wrapping arithmetic, a 2^64-step loop).
#[test]
fn huge_shapes_are_named_errors_not_overflows() {
    const MAX: usize = usize::MAX;
    let e = empty_parts(CSR, &[MAX, 4]).unwrap_err();
    assert_eq!(
        e,
        overflow(
            1,
            0,
            "positions length (18446744073709551615 parents + 1) x 1 batch(es) overflows usize"
        )
    );
    assert_eq!(
        e.to_string(),
        "level 1: invariant 'array lengths fit usize' violated at position 0: positions length \
         (18446744073709551615 parents + 1) x 1 batch(es) overflows usize"
    );
    // one row fewer: the lengths fit, the arrays are simply too short
    assert_inv(
        empty_parts(CSR, &[MAX - 1, 4]),
        1,
        "3.8 positions length is parent size + 1",
        0,
    );
    // dense levels over usize::MAX
    let dense = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : dense) }>";
    assert_eq!(
        empty_parts(dense, &[MAX, 2]).unwrap_err(),
        overflow(
            1,
            0,
            "18446744073709551615 parent positions x level size 2 overflows usize"
        )
    );
    assert_inv(
        empty_parts(dense, &[MAX, 1]),
        1,
        "one value per stored position",
        0,
    );
    // BSR: block rows (MAX - 1) / 2 fit; a shape that is not a multiple of the block is refused
    let bsr = "#sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : \
               compressed, i mod 2 : dense, j mod 2 : dense) }>";
    assert_inv(
        empty_parts(bsr, &[MAX - 1, 4]),
        1,
        "3.8 positions length is parent size + 1",
        0,
    );
    assert_eq!(
        empty_parts(bsr, &[MAX, 4]).unwrap_err(),
        StorageError::BlockShape {
            dim: 0,
            size: MAX,
            block: 2
        }
    );
    let loose = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : loose_compressed) }>";
    assert_eq!(
        empty_parts(loose, &[MAX, 4]).unwrap_err(),
        overflow(
            1,
            0,
            "positions length 2 x 18446744073709551615 parents overflows usize"
        )
    );
    let nm = "#sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod \
              4 : block2_4) }>";
    assert_eq!(
        empty_parts(nm, &[MAX, 4]).unwrap_err(),
        overflow(
            2,
            0,
            "coordinates length 18446744073709551615 blocks x n = 2 overflows usize"
        )
    );
    // ELL with 3 slices: 3 x (MAX / 3) rows = MAX parents of the compressed level
    let ell = "#sparse_tensor.encoding<{ map = [c](i, j) -> (c * 3 * i : dense, i : dense, j : \
               compressed) }>";
    assert_eq!(
        empty_parts(ell, &[MAX / 3, 4]).unwrap_err(),
        overflow(
            2,
            0,
            "positions length (18446744073709551615 parents + 1) x 1 batch(es) overflows usize"
        )
    );
    assert_eq!(
        empty_parts(ell, &[MAX, 4]).unwrap_err(),
        overflow(
            1,
            0,
            "3 parent positions x level size 18446744073709551615 overflows usize"
        )
    );
    // batches
    let batch = "#sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : dense, j : \
                 compressed) }>";
    assert_eq!(
        empty_parts(batch, &[1, MAX, 4]).unwrap_err(),
        overflow(
            2,
            0,
            "positions length (18446744073709551615 parents + 1) x 1 batch(es) overflows usize"
        )
    );
    let batch2 = "#sparse_tensor.encoding<{ map = (a, b, i, j) -> (a : batch, b : batch, i : \
                  dense, j : compressed) }>";
    assert_eq!(
        empty_parts(batch2, &[1 << 33, 1 << 33, 1, 4]).unwrap_err(),
        StorageError::ShapeOverflow {
            shape: vec![1 << 33, 1 << 33, 1, 4]
        }
    );
}

/// Singleton levels: the whole coordinate tuple sorted (ordered) and distinct (unique) inside a
/// nonunique parent run; `nonordered` lifts the order, `nonunique` the distinctness.
#[test]
fn singleton_level_properties() {
    let coo = |props: &str| {
        format!(
            "#sparse_tensor.encoding<{{ map = (i, j) -> (i : compressed(nonunique{}), j : \
             singleton{}) }}>",
            props.split('|').next().unwrap(),
            props.split('|').nth(1).unwrap()
        )
    };
    let b = |e: &str, crd: &[usize]| {
        build(
            e,
            &[4, 4],
            vec![Some(vec![0, crd.len() / 2]), None],
            vec![Some(crd.to_vec()), None],
            crd.len() / 2,
        )
    };
    let (ordered, nonordered, free) = (
        coo("|"),
        coo("|(nonordered)"),
        coo("|(nonunique, nonordered)"),
    );
    assert_inv(
        b(&ordered, &[1, 3, 1, 2]),
        1,
        "coordinate tuples sorted and distinct in a segment",
        1,
    );
    b(&nonordered, &[1, 3, 1, 2]).unwrap();
    assert_eq!(
        b(&nonordered, &[1, 2, 1, 0, 1, 2]).unwrap_err(),
        StorageError::Invariant {
            level: 1,
            invariant: "coordinate tuples distinct in a segment",
            position: 2,
            detail: "(1, 2) repeated (positions 0 and 2)".into(),
        }
    );
    b(&free, &[1, 3, 1, 2, 1, 3]).unwrap();
    // a nonordered first level: equal tuples need not be neighbours, and are still found
    let apart = coo(", nonordered|");
    assert_eq!(
        b(&apart, &[1, 0, 0, 0, 1, 0]).unwrap_err(),
        StorageError::Invariant {
            level: 1,
            invariant: "coordinate tuples distinct in a segment",
            position: 2,
            detail: "(1, 0) repeated (positions 0 and 2)".into(),
        }
    );
    b(&apart, &[1, 0, 0, 0, 1, 1]).unwrap();
    // three levels: the tuple (i, j, k) in order
    let coo3 = "#sparse_tensor.encoding<{ map = (i, j, k) -> (i : compressed(nonunique), j : \
                singleton(nonunique), k : singleton) }>";
    let b3 = |crd: &[usize]| {
        build(
            coo3,
            &[2, 3, 3],
            vec![Some(vec![0, crd.len() / 3]), None, None],
            vec![Some(crd.to_vec()), None, None],
            crd.len() / 3,
        )
    };
    assert_eq!(
        b3(&[0, 1, 2, 0, 1, 1]).unwrap_err(),
        StorageError::Invariant {
            level: 2,
            invariant: "coordinate tuples sorted and distinct in a segment",
            position: 1,
            detail: "(0, 1, 1) after (0, 1, 2)".into(),
        }
    );
    assert_inv(
        b3(&[0, 2, 0, 0, 1, 0]),
        1,
        "coordinate tuples non-decreasing in a segment",
        1,
    );
    assert_inv(
        b3(&[1, 1, 1, 1, 1, 1]),
        2,
        "coordinate tuples sorted and distinct in a segment",
        1,
    );
    b3(&[0, 1, 1, 0, 2, 0, 1, 0, 0]).unwrap();
    // a unique singleton in the middle of the region: as in MLIR, the COO's uniqueness is its
    // last level's, so (i, j) may repeat with different k (what `from_coo` builds)
    let coo3u = coo3.replace("singleton(nonunique)", "singleton");
    let b3u = |crd: &[usize]| {
        build(
            &coo3u,
            &[2, 3, 3],
            vec![Some(vec![0, crd.len() / 3]), None, None],
            vec![Some(crd.to_vec()), None, None],
            crd.len() / 3,
        )
    };
    b3u(&[0, 0, 1, 0, 0, 2]).unwrap();
    assert_inv(
        b3u(&[0, 0, 1, 0, 0, 1]),
        2,
        "coordinate tuples sorted and distinct in a segment",
        1,
    );
    assert_inv(
        b3u(&[0, 1, 1, 0, 0, 2]),
        1,
        "coordinate tuples non-decreasing in a segment",
        1,
    );
    // batched COO: batch 1's tuples out of order (global position 3)
    let bcoo = "#sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : \
                compressed(nonunique), j : singleton) }>";
    let s = |crd: &[usize]| {
        build(
            bcoo,
            &[2, 2, 2],
            vec![None, Some(vec![0, 2, 0, 2]), None],
            vec![None, Some(crd.to_vec()), None],
            4,
        )
    };
    s(&[0, 0, 0, 1, 0, 1, 1, 0]).unwrap();
    assert_eq!(
        s(&[0, 0, 0, 1, 1, 1, 1, 0]).unwrap_err(),
        StorageError::Invariant {
            level: 2,
            invariant: "coordinate tuples sorted and distinct in a segment",
            position: 3,
            detail: "(1, 0) after (1, 1)".into(),
        }
    );
}
