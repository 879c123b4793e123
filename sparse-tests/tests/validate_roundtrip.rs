//! Property: whatever raw arrays `from_raw_parts` accepts are a tensor every reader agrees on.
//!
//! For each format family (CSR, CSC, DCSR, COO AoS and SoA, loose CSR, BSR, n:m 2:4, ELL,
//! batched CSR) the arrays are those of a random small tensor, then mutated a few times (an
//! element set, two swapped, one duplicated, removed or appended, an array cut short), so that
//! many still validate and many do not. Then:
//! - the generated struct and `DynamicStorage` accept the same arrays, or reject them with the
//!   same error;
//! - for accepted arrays, `get` (every coordinate), `spmv` (rank 2) and `to_dense` agree, on
//!   both;
//! - accepted arrays rebuild to the same arrays from their own `to_coo()` (generated and
//!   dynamic). Two legal layouts are not canonical and are compared by their entries instead: a
//!   loose_compressed level whose segments are not back to back in order, and a DCSR row stored
//!   with no column (an empty segment below a compressed level).

use proptest::prelude::*;
use sparse::runtime::{
    CooTensor, CrdBuffer, DynamicStorage, Index, IndexBuffer, PackedBuffer, SparseStorage,
};

sparse::sparse_format! {
    Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    Csc = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), posWidth = 16, crdWidth = 16 }>;
    Dcsr = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed), crdWidth = 8 }>;
    Coo = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>;
    CooSoa = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton(soa)), posWidth = 32 }>;
    LooseCsr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : loose_compressed) }>;
    Bsr22 = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense) }>;
    Nv24 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4), crdWidth = 2 }>;
    Ell = #sparse_tensor.encoding<{ map = [c](i, j) -> (c * 3 * i : dense, i : dense, j : compressed) }>;
    BatchCsr = #sparse_tensor.encoding<{ map = (b, i, j) -> (b : batch, i : dense, j : compressed), posWidth = 16 }>;
}

/// Arrays widened to `usize`, per level: the positions and the owned coordinate buffer.
#[derive(Clone, Debug, PartialEq)]
struct Raw {
    shape: Vec<usize>,
    pos: Vec<Option<Vec<usize>>>,
    crd: Vec<Option<Vec<usize>>>,
    values: Vec<f64>,
}

fn raw_of<S: SparseStorage<Value = f64>>(s: &S) -> Raw {
    let levels = 0..s.lvl_types().len();
    Raw {
        shape: s.dim_shape().to_vec(),
        pos: levels
            .clone()
            .map(|l| s.position_buffer(l).map(|b| b.to_vec()))
            .collect(),
        crd: levels
            .map(|l| s.coordinate_view(l).map(|b| b.to_vec()))
            .collect(),
        values: s.value_slice().to_vec(),
    }
}

/// A buffer of the encoding's width from widened numbers; `None` if one does not fit.
trait FromRaw: Sized {
    fn from_raw(v: &[usize]) -> Option<Self>;
}
impl<T: Index> FromRaw for Vec<T> {
    fn from_raw(v: &[usize]) -> Option<Self> {
        v.iter().map(|&x| T::from_usize(x)).collect()
    }
}
impl FromRaw for PackedBuffer {
    fn from_raw(v: &[usize]) -> Option<Self> {
        PackedBuffer::from_values(2, v)?.ok()
    }
}

/// The dynamic storage's raw parts for `raw`; `None` if a number does not fit a width.
#[allow(clippy::type_complexity)]
fn dynamic_parts(
    enc: &sparse_dsl::ir::Encoding,
    raw: &Raw,
) -> Option<(Vec<Option<IndexBuffer>>, Vec<Option<CrdBuffer>>)> {
    let mut pos = Vec::new();
    for p in &raw.pos {
        pos.push(match p {
            None => None,
            Some(p) => {
                let mut b = IndexBuffer::new(enc.pos_width)?;
                for &x in p {
                    b.push(x).ok()?;
                }
                Some(b)
            }
        });
    }
    let mut crd = Vec::new();
    for c in &raw.crd {
        crd.push(match c {
            None => None,
            Some(c) => {
                let mut b = CrdBuffer::new(enc.crd_width)?;
                for &x in c {
                    b.push(x).ok()?;
                }
                Some(b)
            }
        });
    }
    Some((pos, crd))
}

/// Row-major coordinates of flat index `flat` in `shape`.
fn unflatten(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut c = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        c[d] = flat % shape[d];
        flat /= shape[d];
    }
    c
}

/// The entries of a COO tensor as `(coordinates, value)` pairs.
fn entries(coo: &CooTensor<f64>) -> Vec<(Vec<usize>, f64)> {
    let r = coo.shape.len();
    (0..coo.len())
        .map(|e| (coo.coords[e * r..(e + 1) * r].to_vec(), coo.values[e]))
        .collect()
}

/// Applies mutation `(kind, array, index, value)` to the arrays of `raw` (every present
/// positions and coordinate array, then the values).
fn mutate(raw: &mut Raw, (kind, array, idx, val): (u8, usize, usize, usize)) {
    let mut arrays: Vec<&mut Vec<usize>> = raw
        .pos
        .iter_mut()
        .chain(raw.crd.iter_mut())
        .flatten()
        .collect();
    let n = arrays.len() + 1;
    let a = array % n;
    if a == n - 1 {
        let v = &mut raw.values;
        match kind % 4 {
            0 | 1 if !v.is_empty() => {
                let i = idx % v.len();
                v[i] = val as f64 - 2.0;
            }
            2 => v.push(val as f64),
            _ => {
                v.pop();
            }
        }
        return;
    }
    let v = &mut arrays[a];
    let len = v.len();
    match kind % 7 {
        0 if len > 0 => v[idx % len] = val,
        1 if len > 1 => v.swap(idx % (len - 1), idx % (len - 1) + 1),
        2 if len > 0 => {
            let i = idx % len;
            let x = v[i];
            v.insert(i, x);
        }
        3 if len > 0 => {
            v.remove(idx % len);
        }
        4 => v.push(val),
        5 if len > 1 => {
            // copy the neighbour: a repeated coordinate (or a COO tuple half)
            let i = idx % (len - 1);
            v[i + 1] = v[i];
        }
        6 => v.truncate(idx % (len + 1)),
        _ => {}
    }
}

/// Loose positions `(lo, hi)` back to back from 0, in order, ending at the coordinate count.
fn loose_packed(raw: &Raw) -> bool {
    let (Some(pos), Some(crd)) = (&raw.pos[1], &raw.crd[1]) else {
        return false;
    };
    pos.first().is_none_or(|&p| p == 0)
        && pos
            .chunks(2)
            .zip(pos.chunks(2).skip(1))
            .all(|(a, b)| a[1] == b[0])
        && pos.last().is_none_or(|&p| p == crd.len())
}

/// DCSR without a stored row whose column segment is empty.
fn dcsr_no_empty_rows(raw: &Raw) -> bool {
    raw.pos[1]
        .as_ref()
        .is_some_and(|p| p.windows(2).all(|w| w[0] < w[1]))
}

fn always(_: &Raw) -> bool {
    true
}

/// One test case: the format, its shape seed, the tensor's entries and the mutations.
type Case = (
    usize,
    Vec<usize>,
    Vec<(Vec<usize>, i8)>,
    Vec<(u8, usize, usize, usize)>,
);

fn cases() -> impl Strategy<Value = Case> {
    (
        0usize..10,
        proptest::collection::vec(1usize..5, 3),
        proptest::collection::vec((proptest::collection::vec(0usize..64, 3), -2i8..4), 0..10),
        proptest::collection::vec((0u8..7, 0usize..8, 0usize..40, 0usize..7), 0..3),
    )
}

/// Shape of format `f` from the seed dimensions.
fn shape_of(f: usize, d: &[usize]) -> Vec<usize> {
    match f {
        6 => vec![2 * d[0], 2 * d[1]],
        7 => vec![d[0], 4 * d[1]],
        9 => vec![d[0].min(3), d[1], d[2]],
        _ => vec![d[0], d[1]],
    }
}

/// The tensor's entries for format `f` on `shape`: distinct coordinates; for ELL at most 3 per
/// row, for n:m at most 2 per block of 4; for the batched format the same pattern in every
/// batch (every batch must store as many entries).
fn coo_of(f: usize, shape: &[usize], raw: &[(Vec<usize>, i8)]) -> CooTensor<f64> {
    let mut coo = CooTensor::new(shape.to_vec());
    let mut seen: Vec<Vec<usize>> = Vec::new();
    let two = &shape[shape.len() - 2..];
    for (c, v) in raw {
        let c2 = vec![c[0] % two[0], c[1] % two[1]];
        if seen.contains(&c2)
            || (f == 8 && seen.iter().filter(|s| s[0] == c2[0]).count() >= 3)
            || (f == 7
                && seen
                    .iter()
                    .filter(|s| s[0] == c2[0] && s[1] / 4 == c2[1] / 4)
                    .count()
                    >= 2)
        {
            continue;
        }
        seen.push(c2.clone());
        if f == 9 {
            for b in 0..shape[0] {
                coo.push(&[b, c2[0], c2[1]], f64::from(*v) + b as f64);
            }
        } else {
            coo.push(&c2, f64::from(*v));
        }
    }
    coo
}

/// Runs the property for one generated format.
macro_rules! roundtrip {
    ($ty:ident, $parts:ident { $($field:ident: $arr:ident[$l:expr]),* }, $canonical:expr, $case:expr) => {{
        let (f, dims, raw_entries, mutations): &Case = $case;
        let enc = $ty::<f64>::encoding().verify().unwrap();
        let shape = shape_of(*f, dims);
        let coo = coo_of(*f, &shape, raw_entries);
        let base = DynamicStorage::from_coo(&enc, &coo).unwrap();
        let mut raw = raw_of(&base);
        for &m in mutations {
            mutate(&mut raw, m);
        }
        let parts = (|| {
            Some($parts {
                dim_shape: raw.shape.clone().try_into().ok()?,
                $($field: FromRaw::from_raw(raw.$arr[$l].as_ref()?)?,)*
                values: raw.values.clone(),
            })
        })();
        let (Some(parts), Some((dpos, dcrd))) = (parts, dynamic_parts(&enc, &raw)) else {
            // a number that does not fit the format's width: not a raw array of this format
            return Ok(Outcome::Skipped);
        };
        let g = $ty::<f64>::from_raw_parts(parts);
        let d = DynamicStorage::from_raw_parts(&enc, &raw.shape, dpos, dcrd, raw.values.clone());
        prop_assert_eq!(g.as_ref().err(), d.as_ref().err(), "generated and dynamic disagree on {:?}", raw);
        let (Ok(g), Ok(d)) = (g, d) else {
            return Ok(Outcome::Rejected);
        };
        // every reader agrees
        let dense = g.to_dense().unwrap();
        prop_assert_eq!(&d.to_dense().unwrap(), &dense);
        for (flat, want) in dense.iter().enumerate() {
            let c = unflatten(flat, &shape);
            let cg: [usize; $ty::<f64>::DIM_RANK] = c.clone().try_into().unwrap();
            prop_assert_eq!(g.get(cg).copied().unwrap_or(0.0), *want, "get {:?} of {:?}", c, raw);
            prop_assert_eq!(d.get(&c).copied().unwrap_or(0.0), *want, "dynamic get {:?}", c);
        }
        if shape.len() == 2 {
            let x: Vec<f64> = (0..shape[1]).map(|j| (j + 1) as f64).collect();
            let want: Vec<f64> = (0..shape[0])
                .map(|i| (0..shape[1]).map(|j| dense[i * shape[1] + j] * x[j]).sum())
                .collect();
            let (mut yg, mut yd) = (vec![0.0; shape[0]], vec![0.0; shape[0]]);
            d.spmv(&x, &mut yd).unwrap();
            prop_assert_eq!(&yd, &want, "dynamic spmv of {:?}", raw);
            spmv_generated(&g, &x, &mut yg);
            prop_assert_eq!(&yg, &want, "spmv of {:?}", raw);
        }
        // the arrays rebuild from their own entries
        let rebuilt = $ty::<f64>::from_coo_tensor(&g.to_coo()).unwrap();
        let drebuilt = DynamicStorage::from_coo(&enc, &d.to_coo()).unwrap();
        prop_assert_eq!(raw_of(&drebuilt), raw_of(&rebuilt));
        if $canonical(&raw) {
            prop_assert_eq!(raw_of(&rebuilt), raw.clone(), "rebuilt arrays");
        } else {
            prop_assert_eq!(entries(&rebuilt.to_coo()), entries(&g.to_coo()), "rebuilt entries");
        }
        Ok(Outcome::Accepted)
    }};
}

/// Generated SpMV where the format has one (rank 2).
trait Spmv {
    fn spmv_checked(&self, x: &[f64], y: &mut [f64]);
}
macro_rules! spmv_impl {
    ($($ty:ident),*) => {$(
        impl Spmv for $ty<f64> {
            fn spmv_checked(&self, x: &[f64], y: &mut [f64]) {
                self.spmv(x, y).unwrap();
            }
        }
    )*};
}
spmv_impl!(Csr, Csc, Dcsr, Coo, CooSoa, LooseCsr, Bsr22, Nv24, Ell);
impl Spmv for BatchCsr<f64> {
    fn spmv_checked(&self, _: &[f64], _: &mut [f64]) {
        unreachable!("rank 3")
    }
}
fn spmv_generated<S: Spmv>(s: &S, x: &[f64], y: &mut [f64]) {
    s.spmv_checked(x, y)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Accepted,
    Rejected,
    Skipped,
}

fn run(case: &Case) -> Result<Outcome, TestCaseError> {
    match case.0 {
        0 => roundtrip!(
            Csr,
            CsrParts {
                pos_1: pos[1],
                crd_1: crd[1]
            },
            always,
            case
        ),
        1 => roundtrip!(
            Csc,
            CscParts {
                pos_1: pos[1],
                crd_1: crd[1]
            },
            always,
            case
        ),
        2 => roundtrip!(
            Dcsr,
            DcsrParts {
                pos_0: pos[0],
                crd_0: crd[0],
                pos_1: pos[1],
                crd_1: crd[1]
            },
            dcsr_no_empty_rows,
            case
        ),
        3 => roundtrip!(
            Coo,
            CooParts {
                pos_0: pos[0],
                crd_0: crd[0]
            },
            always,
            case
        ),
        4 => roundtrip!(
            CooSoa,
            CooSoaParts {
                pos_0: pos[0],
                crd_0: crd[0],
                crd_1: crd[1]
            },
            always,
            case
        ),
        5 => roundtrip!(
            LooseCsr,
            LooseCsrParts {
                pos_1: pos[1],
                crd_1: crd[1]
            },
            loose_packed,
            case
        ),
        6 => roundtrip!(
            Bsr22,
            Bsr22Parts {
                pos_1: pos[1],
                crd_1: crd[1]
            },
            always,
            case
        ),
        7 => roundtrip!(Nv24, Nv24Parts { crd_2: crd[2] }, always, case),
        8 => roundtrip!(
            Ell,
            EllParts {
                pos_2: pos[2],
                crd_2: crd[2]
            },
            always,
            case
        ),
        _ => roundtrip!(
            BatchCsr,
            BatchCsrParts {
                pos_2: pos[2],
                crd_2: crd[2]
            },
            always,
            case
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    #[test]
    fn validated_arrays_roundtrip_and_readers_agree(case in cases()) {
        run(&case)?;
    }
}

/// The generator is adversarial enough: with a fixed seed, every format both accepts and
/// rejects a good share of its mutated arrays.
#[test]
fn generator_both_accepts_and_rejects() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha),
    );
    let mut tally = [[0usize; 3]; 10];
    for _ in 0..2000 {
        let case = cases().new_tree(&mut runner).unwrap().current();
        let o = run(&case).unwrap();
        tally[case.0][o as usize] += 1;
    }
    for (f, [acc, rej, _]) in tally.iter().enumerate() {
        eprintln!(
            "format {f}: {acc} accepted, {rej} rejected, {} skipped",
            tally[f][2]
        );
        assert!(
            *acc >= 40 && *rej >= 40,
            "format {f}: {acc} accepted, {rej} rejected"
        );
    }
}
