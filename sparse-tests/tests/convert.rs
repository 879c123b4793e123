//! Conversions between generated formats (`convert`): a `dense, compressed` source is read from
//! its own arrays (`Entries::compressed`, the counting transposition or a copy at the target's
//! widths), any other source is visited; either way the result is the target built from the
//! source's entries that are not zero, array for array.

use proptest::prelude::*;
use sparse::runtime::storage::SparseStorage;

sparse::sparse_format! {
    Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
    Csr32 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 32, crdWidth = 32 }>;
    Csr8 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 16, crdWidth = 8 }>;
    Csc = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed) }>;
    Csc16 = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), posWidth = 32, crdWidth = 16 }>;
    Dcsr = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed, j : compressed) }>;
}

/// Per level: positions and coordinates, widened.
type LevelArrays = Vec<(Option<Vec<usize>>, Option<Vec<usize>>)>;

fn arrays<S: SparseStorage<Value = f64>>(s: &S) -> (LevelArrays, Vec<u64>) {
    let levels = (0..s.lvl_types().len())
        .map(|l| {
            (
                s.position_buffer(l).map(|b| b.to_vec()),
                s.coordinate_buffer(l).map(|b| b.to_vec()),
            )
        })
        .collect();
    (
        levels,
        s.value_slice().iter().map(|v| v.to_bits()).collect(),
    )
}

/// A random matrix of up to 40 x 40 (so 8-bit coordinates hold it), a third of its stored
/// values explicit zeros of either sign.
fn matrix() -> impl Strategy<Value = ([usize; 2], Vec<([usize; 2], f64)>)> {
    (1usize..40, 1usize..40).prop_flat_map(|(m, n)| {
        let entry = (0..m, 0..n, -3i32..6, any::<bool>());
        (
            Just([m, n]),
            proptest::collection::vec(entry, 0..120).prop_map(|v| {
                v.into_iter()
                    .map(|(i, j, x, neg)| {
                        let x = if x < 0 { 0.0 } else { f64::from(x) + 0.25 };
                        ([i, j], if neg { -x } else { x })
                    })
                    .collect()
            }),
        )
    })
}

macro_rules! check_into {
    ($src:expr, $nonzero:expr, $shape:expr, $($target:ty),*) => {$(
        let got: $target = $src.convert().unwrap();
        let want = <$target>::from_coo($shape, $nonzero.iter().copied()).unwrap();
        prop_assert_eq!(arrays(&got), arrays(&want), "{} into {}", stringify!($src), stringify!($target));
    )*};
}

proptest! {
    #[test]
    fn conversions_equal_building_from_the_nonzero_entries((shape, entries) in matrix()) {
        let csr = Csr::<f64>::from_coo(shape, entries.iter().copied()).unwrap();
        let csr32 = Csr32::<f64>::from_coo(shape, entries.iter().copied()).unwrap();
        let csr8 = Csr8::<f64>::from_coo(shape, entries.iter().copied()).unwrap();
        let csc = Csc::<f64>::from_coo(shape, entries.iter().copied()).unwrap();
        let dcsr = Dcsr::<f64>::from_coo(shape, entries.iter().copied()).unwrap();
        // the entries a conversion keeps: summed duplicates that are not zero
        let mut summed = std::collections::BTreeMap::new();
        for &(c, v) in &entries {
            *summed.entry(c).or_insert(0.0) += v;
        }
        let nonzero: Vec<([usize; 2], f64)> =
            summed.into_iter().filter(|&(_, v)| v != 0.0).collect();
        check_into!(csr, nonzero, shape, Csc<f64>, Csc16<f64>, Csr32<f64>, Csr8<f64>, Dcsr<f64>);
        check_into!(csr32, nonzero, shape, Csc<f64>, Csc16<f64>, Csr<f64>, Csr8<f64>);
        check_into!(csr8, nonzero, shape, Csc<f64>, Csc16<f64>, Csr<f64>, Csr32<f64>);
        check_into!(csc, nonzero, shape, Csr<f64>, Csr32<f64>, Csc16<f64>, Dcsr<f64>);
        check_into!(dcsr, nonzero, shape, Csr<f64>, Csc16<f64>);
    }
}

/// A conversion whose output outgrows the threshold at which the transposition fills its
/// arrays before scattering (more than 1 MiB of coordinates and values): 150,000 entries of a
/// 3,000 x 2,000 matrix, every seventh an explicit zero, each target array for array the
/// one built from the entries that are not zero (and the small matrices above cover the
/// unfilled path).
#[test]
fn large_conversions_equal_building_from_the_nonzero_entries() {
    let shape = [3000, 2000];
    let mut s = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut summed = std::collections::BTreeMap::new();
    for k in 0..150_000u64 {
        let c = [
            (next() % shape[0] as u64) as usize,
            (next() % shape[1] as u64) as usize,
        ];
        let v = if k % 7 == 0 {
            0.0
        } else {
            (next() % 1000) as f64 + 0.5
        };
        summed.insert(c, v);
    }
    let entries: Vec<([usize; 2], f64)> = summed.into_iter().collect();
    let nonzero: Vec<([usize; 2], f64)> =
        entries.iter().copied().filter(|&(_, v)| v != 0.0).collect();
    assert!(nonzero.len() * 12 > 1 << 20, "the output outgrows 1 MiB");
    let csr = Csr32::<f64>::from_coo(shape, entries.iter().copied()).unwrap();
    let csc = Csc::<f64>::from_coo(shape, entries.iter().copied()).unwrap();
    let got: Csc16<f64> = csr.convert().unwrap();
    let want = Csc16::<f64>::from_coo(shape, nonzero.iter().copied()).unwrap();
    assert_eq!(arrays(&got), arrays(&want), "Csr32 into Csc16");
    let got: Csr<f64> = csc.convert().unwrap();
    let want = Csr::<f64>::from_coo(shape, nonzero.iter().copied()).unwrap();
    assert_eq!(arrays(&got), arrays(&want), "Csc into Csr");
    let ones = Csr32::<f64>::from_coo(shape, nonzero.iter().copied()).unwrap();
    let got: Csc<f64> = ones.convert().unwrap();
    let want = Csc::<f64>::from_coo(shape, nonzero.iter().copied()).unwrap();
    assert_eq!(arrays(&got), arrays(&want), "Csr32 (no zeros) into Csc");
}
