//! FROSTT `.tns` reading and writing for tensors of any order.
//!
//! The format (<http://frostt.io/tensors/file-formats.html>): one nonzero per line,
//! `i1 i2 ... iN value`, coordinates 1-based, fields separated by ASCII whitespace. There is no
//! header, so the order `N` is the number of fields of the first entry line minus one, and the
//! shape is the largest coordinate of each mode unless the caller gives it. Lines whose first
//! non-blank character is `#` are comments; blank lines are skipped. Values parse as `f64` with
//! Rust's parser (`1`, `-2.5`, `1e-3`); entries keep the file order, duplicates and explicit zeros.
//!
//! Every error names its 1-based line ([`TnsError::line`]); no input panics, and nothing is
//! allocated up front from the input.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use crate::coo::CooTensor;

/// Why reading a `.tns` file failed. Every variant but [`TnsError::Open`] names the 1-based line.
#[derive(Debug, thiserror::Error)]
pub enum TnsError {
    /// The file could not be opened.
    #[error("cannot open {}: {source}", path.display())]
    Open {
        /// The path given.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Reading failed at line `line`.
    #[error("line {line}: I/O error: {source}")]
    Io {
        /// Line being read.
        line: usize,
        /// The reader's error.
        #[source]
        source: std::io::Error,
    },
    /// An entry line has a different number of fields than the order requires.
    #[error("line {line}: expected {expected} fields (order {} coordinates and a value), found {found}", expected - 1)]
    FieldCount {
        /// Line of the entry.
        line: usize,
        /// Fields required (order + 1).
        expected: usize,
        /// Fields found.
        found: usize,
    },
    /// A coordinate is not a positive integer, or exceeds the given shape.
    #[error("line {line}: coordinate {mode} `{text}` is not an integer in 1..={max}")]
    BadIndex {
        /// Line of the entry.
        line: usize,
        /// Mode (0-based).
        mode: usize,
        /// The field as written.
        text: String,
        /// Largest coordinate allowed (the given size, or `usize::MAX`).
        max: usize,
    },
    /// A value does not parse as a real number.
    #[error("line {line}: value `{text}` is not a real number")]
    BadValue {
        /// Line of the entry.
        line: usize,
        /// The field as written.
        text: String,
    },
    /// The input holds no entry and no shape was given, so the order is unknown.
    #[error("line {line}: no entries, the order of the tensor is unknown")]
    Empty {
        /// One past the last line.
        line: usize,
    },
}

impl TnsError {
    /// The 1-based line of the problem; `None` for [`TnsError::Open`].
    pub fn line(&self) -> Option<usize> {
        match self {
            TnsError::Open { .. } => None,
            TnsError::Io { line, .. }
            | TnsError::FieldCount { line, .. }
            | TnsError::BadIndex { line, .. }
            | TnsError::BadValue { line, .. }
            | TnsError::Empty { line } => Some(*line),
        }
    }
}

/// Reads the `.tns` file at `path`; `shape`, if given, fixes the order and the mode sizes
/// (otherwise they are inferred from the entries).
///
/// # Errors
///
/// [`TnsError::Open`], otherwise as [`parse_frostt`].
pub fn read_frostt(
    path: impl AsRef<Path>,
    shape: Option<&[usize]>,
) -> Result<CooTensor<f64>, TnsError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| TnsError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    parse_frostt(BufReader::with_capacity(1 << 16, file), shape)
}

/// Parses a `.tns` tensor from `reader` into a COO tensor with 0-based coordinates (file order).
/// `shape`, if given, fixes the order and mode sizes; otherwise the order comes from the first
/// entry and each mode size is the largest coordinate seen.
///
/// # Errors
///
/// [`TnsError::Io`], [`TnsError::FieldCount`], [`TnsError::BadIndex`] (0, not an integer,
/// or beyond `shape`), [`TnsError::BadValue`], [`TnsError::Empty`] (no entry and no shape), each
/// with its line.
pub fn parse_frostt<R: BufRead>(
    mut reader: R,
    shape: Option<&[usize]>,
) -> Result<CooTensor<f64>, TnsError> {
    let mut order = shape.map(|s| s.len());
    let mut dims: Vec<usize> = shape.map(|s| s.to_vec()).unwrap_or_default();
    let mut coo = CooTensor::new(Vec::new());
    let mut buf = Vec::new();
    let mut line = 0usize;
    loop {
        buf.clear();
        line += 1;
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|source| TnsError::Io { line, source })?;
        if n == 0 {
            break;
        }
        let text = String::from_utf8_lossy(&buf);
        let body = text.trim();
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = body.split_ascii_whitespace().collect();
        let r = *order.get_or_insert_with(|| fields.len().saturating_sub(1));
        if fields.len() != r + 1 || r == 0 {
            return Err(TnsError::FieldCount {
                line,
                expected: r.max(1) + 1,
                found: fields.len(),
            });
        }
        if dims.len() < r {
            dims.resize(r, 0);
        }
        for (mode, f) in fields[..r].iter().enumerate() {
            let max = if shape.is_some() {
                dims[mode]
            } else {
                usize::MAX
            };
            let c = f
                .parse::<usize>()
                .ok()
                .filter(|&c| c >= 1 && c <= max)
                .ok_or_else(|| TnsError::BadIndex {
                    line,
                    mode,
                    text: f.to_string(),
                    max,
                })?;
            coo.coords.push(c - 1);
            if shape.is_none() {
                dims[mode] = dims[mode].max(c);
            }
        }
        let v = fields[r].parse::<f64>().map_err(|_| TnsError::BadValue {
            line,
            text: fields[r].to_string(),
        })?;
        coo.values.push(v);
    }
    if order.is_none() {
        return Err(TnsError::Empty { line });
    }
    coo.shape = dims;
    Ok(coo)
}

/// Writes `coo` in `.tns` form: one line per entry, 1-based coordinates, then the value in its
/// `Display` form (shortest round-trip for floats), in entry order.
///
/// # Errors
///
/// The writer's errors; [`std::io::ErrorKind::InvalidInput`] if `coo.coords` does not hold
/// `rank` coordinates per value.
pub fn write_frostt<W: Write, V: std::fmt::Display>(
    mut w: W,
    coo: &CooTensor<V>,
) -> std::io::Result<()> {
    let r = coo.rank();
    if coo.coords.len() != coo.values.len() * r || r == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "COO coordinates do not match rank x entries",
        ));
    }
    for (e, v) in coo.values.iter().enumerate() {
        for c in &coo.coords[e * r..(e + 1) * r] {
            write!(w, "{} ", c + 1)?;
        }
        writeln!(w, "{v}")?;
    }
    w.flush()
}
