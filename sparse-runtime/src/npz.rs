//! SciPy's sparse `.npz` files (`scipy.sparse.save_npz` / `load_npz`), read and written through
//! the npyz crate: CSR, CSC, COO and BSR with `f64` values. Behind the cargo feature `npz`.
//!
//! Reading gives the entries as a [`CooTensor`] (every index checked: a malformed file is an
//! error, never a panic), which any format can then store ([`crate::DynamicStorage::from_coo`]);
//! writing takes entries and a SciPy format, duplicates summed for CSR, CSC and BSR (SciPy's
//! canonical form: indices sorted within each row or column), kept for COO.

use std::path::Path;

use npyz::npz::{NpzArchive, NpzWriter};
use npyz::sparse;

use crate::CooTensor;

/// A SciPy sparse format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScipyFormat {
    /// `coo`: `row`, `col`, `data`.
    Coo,
    /// `csr`: `indptr` (rows + 1), `indices` (columns), `data`.
    Csr,
    /// `csc`: `indptr` (columns + 1), `indices` (rows), `data`.
    Csc,
    /// `bsr` with a block size `[r, c]`: `indptr` (block rows + 1), `indices` (block columns),
    /// `data` (`nnz x r x c`, blocks row-major).
    Bsr([usize; 2]),
}

/// Why a `.npz` file cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum NpzError {
    /// The file could not be opened, read or written, or is not a SciPy sparse archive.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        source: std::io::Error,
    },
    /// The arrays disagree with each other or the shape (names the array and the index).
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// Reads a SciPy sparse matrix saved by `scipy.sparse.save_npz`: its format and its entries
/// (rank 2, `f64` values, duplicates as stored).
///
/// # Errors
/// [`NpzError::Io`] for an unreadable file, a missing array, another dtype or format (DIA is
/// not read); [`NpzError::Invalid`] for arrays that disagree (an `indptr` that decreases or
/// passes the data, an index outside the shape, a data length that is not `nnz * r * c`).
pub fn read_npz(path: impl AsRef<Path>) -> Result<(ScipyFormat, CooTensor<f64>), NpzError> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let io = |source| NpzError::Io {
        path: name.clone(),
        source,
    };
    let invalid = |message: String| NpzError::Invalid {
        path: name.clone(),
        message,
    };
    let mut npz = NpzArchive::open(path).map_err(io)?;
    let m = sparse::Sparse::<f64>::from_npz(&mut npz).map_err(io)?;
    let is_csr = matches!(m, sparse::Sparse::Csr(_));
    let dims = |shape: [u64; 2]| -> Result<[usize; 2], NpzError> {
        let r = usize::try_from(shape[0]).map_err(|_| invalid(format!("shape {shape:?}")))?;
        let c = usize::try_from(shape[1]).map_err(|_| invalid(format!("shape {shape:?}")))?;
        Ok([r, c])
    };
    let idx = |x: u64, bound: usize, what: &str, at: usize| -> Result<usize, NpzError> {
        usize::try_from(x)
            .ok()
            .filter(|&v| v < bound)
            .ok_or_else(|| invalid(format!("{what}[{at}] = {x} is not below {bound}")))
    };
    // (outer count, indptr, indices, data len per entry) checked, visiting (outer, inner, k)
    let compressed = |indptr: &[usize],
                      indices: &[u64],
                      outer: usize,
                      inner: usize,
                      per: usize,
                      data: usize,
                      f: &mut dyn FnMut(usize, usize, usize)|
     -> Result<(), NpzError> {
        if indptr.len() != outer + 1 || indptr.first() != Some(&0) {
            return Err(invalid(format!(
                "indptr has {} entries starting at {:?}, expected {} starting at 0",
                indptr.len(),
                indptr.first(),
                outer + 1
            )));
        }
        let nnz = indices.len();
        if Some(data) != nnz.checked_mul(per) {
            return Err(invalid(format!(
                "data has {data} values for {nnz} indices x {per}"
            )));
        }
        for o in 0..outer {
            let (a, b) = (indptr[o], indptr[o + 1]);
            if a > b || b > nnz {
                return Err(invalid(format!(
                    "indptr[{o}..={}] = {a}, {b} is not within 0..={nnz} and nondecreasing",
                    o + 1
                )));
            }
            for (k, &x) in indices.iter().enumerate().take(b).skip(a) {
                f(o, idx(x, inner, "indices", k)?, k);
            }
        }
        Ok(())
    };
    let mut coo;
    let format;
    match m {
        sparse::Sparse::Coo(c) => {
            format = ScipyFormat::Coo;
            let [r, n] = dims(c.shape)?;
            if c.row.len() != c.data.len() || c.col.len() != c.data.len() {
                return Err(invalid(format!(
                    "row, col and data have {}, {} and {} entries",
                    c.row.len(),
                    c.col.len(),
                    c.data.len()
                )));
            }
            coo = CooTensor::new(vec![r, n]);
            for k in 0..c.data.len() {
                coo.push(
                    &[idx(c.row[k], r, "row", k)?, idx(c.col[k], n, "col", k)?],
                    c.data[k],
                );
            }
        }
        sparse::Sparse::Csr(sparse::Csr {
            shape,
            indices,
            indptr,
            data,
        })
        | sparse::Sparse::Csc(sparse::Csc {
            shape,
            indices,
            indptr,
            data,
        }) => {
            // CSR's outer index is the row, CSC's the column
            let csr = is_csr;
            format = if csr {
                ScipyFormat::Csr
            } else {
                ScipyFormat::Csc
            };
            let [r, n] = dims(shape)?;
            let (outer, inner) = if csr { (r, n) } else { (n, r) };
            coo = CooTensor::new(vec![r, n]);
            compressed(
                &indptr,
                &indices,
                outer,
                inner,
                1,
                data.len(),
                &mut |o, i, k| {
                    let at = if csr { [o, i] } else { [i, o] };
                    coo.push(&at, data[k]);
                },
            )?;
        }
        sparse::Sparse::Bsr(b) => {
            let [br, bc] = b.blocksize;
            format = ScipyFormat::Bsr([br, bc]);
            let [r, n] = dims(b.shape)?;
            if br == 0 || bc == 0 || r % br != 0 || n % bc != 0 {
                return Err(invalid(format!(
                    "blocksize {:?} does not divide the shape [{r}, {n}]",
                    b.blocksize
                )));
            }
            coo = CooTensor::new(vec![r, n]);
            let per = br * bc;
            compressed(
                &b.indptr,
                &b.indices,
                r / br,
                n / bc,
                per,
                b.data.len(),
                &mut |bi, bj, k| {
                    for x in 0..br {
                        for y in 0..bc {
                            coo.push(&[bi * br + x, bj * bc + y], b.data[k * per + x * bc + y]);
                        }
                    }
                },
            )?;
        }
        sparse::Sparse::Dia(_) => {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "DIA matrices are not read: convert them to CSR in SciPy first",
            )))
        }
    }
    Ok((format, coo))
}

/// The sort key of an entry `(row, col, value)`: `(outer, inner)` coordinates.
type Key<'a> = dyn Fn(&(usize, usize, f64)) -> (usize, usize) + 'a;

/// Writes rank-2 entries as `scipy.sparse.save_npz` does in `format` (CSR/CSC/BSR: duplicates
/// summed, indices sorted; BSR: every block holding an entry stored whole, zeros filled).
///
/// # Errors
/// [`NpzError::Invalid`] if `coo` is not rank 2, has a coordinate outside its shape, or a BSR
/// block size does not divide the shape; [`NpzError::Io`] for the writer's errors.
pub fn write_npz(
    path: impl AsRef<Path>,
    coo: &CooTensor<f64>,
    format: ScipyFormat,
) -> Result<(), NpzError> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let invalid = |message: String| NpzError::Invalid {
        path: name.clone(),
        message,
    };
    if coo.shape.len() != 2 || coo.coords.len() != 2 * coo.values.len() {
        return Err(invalid(format!(
            "SciPy sparse matrices have rank 2, not {}",
            coo.shape.len()
        )));
    }
    let [r, n] = [coo.shape[0], coo.shape[1]];
    let mut entries: Vec<(usize, usize, f64)> = Vec::with_capacity(coo.values.len());
    for (e, &v) in coo.values.iter().enumerate() {
        let (i, j) = (coo.coords[2 * e], coo.coords[2 * e + 1]);
        if i >= r || j >= n {
            return Err(invalid(format!(
                "entry {e} at ({i}, {j}) is outside [{r}, {n}]"
            )));
        }
        entries.push((i, j, v));
    }
    let shape = [r as u64, n as u64];
    // (outer, inner) keys, sorted, duplicates summed; indptr over `outer` slices
    let compress = |key: &Key<'_>, outer: usize| {
        let mut e: Vec<((usize, usize), f64)> = entries.iter().map(|t| (key(t), t.2)).collect();
        e.sort_by_key(|t| t.0);
        let mut merged: Vec<((usize, usize), f64)> = Vec::with_capacity(e.len());
        for (k, v) in e {
            match merged.last_mut() {
                Some((last, acc)) if *last == k => *acc += v,
                _ => merged.push((k, v)),
            }
        }
        let mut indptr = vec![0usize; outer + 1];
        for ((o, _), _) in &merged {
            indptr[o + 1] += 1;
        }
        crate::index::running_sum(&mut indptr);
        (merged, indptr)
    };
    let matrix: sparse::Sparse<f64> = match format {
        ScipyFormat::Coo => sparse::Sparse::Coo(sparse::Coo {
            shape,
            row: entries.iter().map(|t| t.0 as u64).collect(),
            col: entries.iter().map(|t| t.1 as u64).collect(),
            data: entries.iter().map(|t| t.2).collect(),
        }),
        ScipyFormat::Csr | ScipyFormat::Csc => {
            let csr = format == ScipyFormat::Csr;
            let key = |t: &(usize, usize, f64)| if csr { (t.0, t.1) } else { (t.1, t.0) };
            let (merged, indptr) = compress(&key, if csr { r } else { n });
            let indices = merged.iter().map(|((_, i), _)| *i as u64).collect();
            let data = merged.iter().map(|(_, v)| *v).collect();
            if csr {
                sparse::Sparse::Csr(sparse::Csr {
                    shape,
                    indices,
                    indptr,
                    data,
                })
            } else {
                sparse::Sparse::Csc(sparse::Csc {
                    shape,
                    indices,
                    indptr,
                    data,
                })
            }
        }
        ScipyFormat::Bsr([br, bc]) => {
            if br == 0 || bc == 0 || r % br != 0 || n % bc != 0 {
                return Err(invalid(format!(
                    "blocksize [{br}, {bc}] does not divide the shape [{r}, {n}]"
                )));
            }
            let (merged, _) = compress(&|t| (t.0, t.1), r);
            let mut blocks: Vec<((usize, usize), Vec<f64>)> = Vec::new();
            let mut keyed: Vec<((usize, usize), usize, f64)> = merged
                .iter()
                .map(|((i, j), v)| ((i / br, j / bc), (i % br) * bc + j % bc, *v))
                .collect();
            keyed.sort_by_key(|t| t.0);
            for (b, at, v) in keyed {
                if blocks.last().is_none_or(|(last, _)| *last != b) {
                    blocks.push((b, vec![0.0; br * bc]));
                }
                if let Some((_, data)) = blocks.last_mut() {
                    data[at] = v;
                }
            }
            let mut indptr = vec![0usize; r / br + 1];
            for ((bi, _), _) in &blocks {
                indptr[bi + 1] += 1;
            }
            crate::index::running_sum(&mut indptr);
            sparse::Sparse::Bsr(sparse::Bsr {
                shape,
                blocksize: [br, bc],
                indices: blocks.iter().map(|((_, bj), _)| *bj as u64).collect(),
                indptr,
                data: blocks.into_iter().flat_map(|(_, d)| d).collect(),
            })
        }
    };
    let io = |source| NpzError::Io {
        path: name.clone(),
        source,
    };
    let file = std::fs::File::create(path).map_err(io)?;
    let mut w = NpzWriter::new(std::io::BufWriter::new(file));
    matrix.write_npz(&mut w).map_err(io)?;
    Ok(())
}
