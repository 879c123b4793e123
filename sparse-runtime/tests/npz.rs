//! SciPy `.npz` files (feature `npz`): files written by SciPy 1.17 (`data/scipy/make_npz.py`)
//! read to the known matrix in every format, and every format written and read back.

use sparse_runtime::npz::{read_npz, write_npz, ScipyFormat};
use sparse_runtime::CooTensor;

/// The matrix of `make_npz.py`: 4 x 6, entry k + 1 at the k-th position of the pattern.
fn dense() -> Vec<f64> {
    let mut d = vec![0.0; 24];
    for (k, (i, j)) in [(0, 0), (0, 4), (1, 1), (1, 5), (2, 2), (3, 0), (3, 3)]
        .iter()
        .enumerate()
    {
        d[i * 6 + j] = k as f64 + 1.0;
    }
    d
}

fn to_dense(c: &CooTensor<f64>) -> Vec<f64> {
    assert_eq!(c.shape, vec![4, 6]);
    let mut d = vec![0.0; 24];
    for (e, v) in c.values.iter().enumerate() {
        d[c.coords[2 * e] * 6 + c.coords[2 * e + 1]] += v;
    }
    d
}

/// A fresh directory `sparse-npz-*` for one test's files, removed when dropped.
fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("sparse-npz-")
        .tempdir()
        .unwrap()
}

fn data(name: &str) -> String {
    format!("{}/../data/scipy/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn scipy_written_files_read_in_every_format() {
    for (file, format) in [
        ("csr.npz", ScipyFormat::Csr),
        ("csc.npz", ScipyFormat::Csc),
        ("coo.npz", ScipyFormat::Coo),
        ("bsr.npz", ScipyFormat::Bsr([2, 3])),
    ] {
        let (f, coo) = read_npz(data(file)).unwrap();
        assert_eq!(f, format, "{file}");
        assert_eq!(to_dense(&coo), dense(), "{file}");
    }
}

#[test]
fn every_format_round_trips() {
    let (_, coo) = read_npz(data("coo.npz")).unwrap();
    let dir = temp_dir();
    for format in [
        ScipyFormat::Csr,
        ScipyFormat::Csc,
        ScipyFormat::Coo,
        ScipyFormat::Bsr([2, 3]),
        ScipyFormat::Bsr([1, 2]),
    ] {
        let p = dir.path().join("m.npz");
        write_npz(&p, &coo, format).unwrap();
        let (f, back) = read_npz(&p).unwrap();
        assert_eq!(f, format);
        assert_eq!(to_dense(&back), dense(), "{format:?}");
    }
    let err = write_npz(dir.path().join("x.npz"), &coo, ScipyFormat::Bsr([3, 3])).unwrap_err();
    assert!(
        err.to_string()
            .contains("blocksize [3, 3] does not divide the shape [4, 6]"),
        "{err}"
    );
    let err = read_npz(dir.path().join("missing.npz")).unwrap_err();
    assert!(err.to_string().contains("missing.npz"), "{err}");
}
