//! PyTorch's compressed sparse layouts: the arguments of `torch.sparse_compressed_tensor`
//! checked as PyTorch checks them.
//!
//! [`validate_compressed`] runs the checks of PyTorch's `_validate_sparse_compressed_tensor_args`
//! (`aten/src/ATen/native/sparse/SparseCsrTensor.cpp`) in PyTorch's order and reports the first
//! failure with its invariant number from `../shared/reference/bsr-invariants.md`
//! (`invariant 5.3: crow_indices[2] - crow_indices[1] = 4 > ncols = 3`). Members are named as
//! PyTorch names them: `crow_indices`/`col_indices` for CSR and BSR, `ccol_indices`/`row_indices`
//! for CSC and BSC.
//!
//! Terms (PyTorch's): `B = compressed_indices.ndim - 1` batch dimensions; `K = 2` block
//! dimensions for BSR/BSC, else 0; `N = values.ndim - B - 1 - K` dense dimensions;
//! `nnz = values.shape[B]`; `blocksize = values.shape[B+1..B+3]` (a 0 counts as 1) for BSR/BSC,
//! `[1, 1]` for CSR/CSC; `nrows = size[B] / blocksize[0]`, `ncols = size[B+1] / blocksize[1]`;
//! `(ncompressed, nplain)` is `(nrows, ncols)` for CSR/BSR and `(ncols, nrows)` for CSC/BSC.

use std::fmt;

/// One of PyTorch's four compressed sparse layouts (`torch.sparse_csr`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompressedLayout {
    /// `sparse_csr`: rows compressed, blocksize `[1, 1]`.
    Csr,
    /// `sparse_csc`: columns compressed, blocksize `[1, 1]`.
    Csc,
    /// `sparse_bsr`: block rows compressed; `values` holds `blocksize` blocks.
    Bsr,
    /// `sparse_bsc`: block columns compressed; `values` holds `blocksize` blocks.
    Bsc,
}

impl CompressedLayout {
    /// Every layout, in PyTorch's order.
    pub const ALL: [CompressedLayout; 4] = [Self::Csr, Self::Csc, Self::Bsr, Self::Bsc];

    /// The layout's name as PyTorch prints it without the `torch.` prefix (`sparse_bsr`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Csr => "sparse_csr",
            Self::Csc => "sparse_csc",
            Self::Bsr => "sparse_bsr",
            Self::Bsc => "sparse_bsc",
        }
    }

    /// The layout named `name` (`sparse_csr`, `sparse_csc`, `sparse_bsr`, `sparse_bsc`), or
    /// `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.name() == name)
    }

    /// `true` for BSR and BSC (values hold blocks: `K = 2`).
    pub fn is_block(self) -> bool {
        matches!(self, Self::Bsr | Self::Bsc)
    }

    /// `true` for CSR and BSR (rows are compressed).
    pub fn is_row_compressed(self) -> bool {
        matches!(self, Self::Csr | Self::Bsr)
    }

    /// PyTorch's name of the compressed indices: `crow_indices` or `ccol_indices`.
    pub fn compressed_indices_name(self) -> &'static str {
        if self.is_row_compressed() {
            "crow_indices"
        } else {
            "ccol_indices"
        }
    }

    /// PyTorch's name of the plain indices: `col_indices` or `row_indices`.
    pub fn plain_indices_name(self) -> &'static str {
        if self.is_row_compressed() {
            "col_indices"
        } else {
            "row_indices"
        }
    }

    /// The names of `(ncompressed, nplain)` in messages: `(nrows, ncols)` for CSR/BSR,
    /// `(ncols, nrows)` for CSC/BSC.
    fn count_names(self) -> (&'static str, &'static str) {
        if self.is_row_compressed() {
            ("nrows", "ncols")
        } else {
            ("ncols", "nrows")
        }
    }
}

/// PyTorch's dtypes, by the names `torch.<name>` has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TorchDtype {
    /// `bool`
    Bool,
    /// `uint8`
    Uint8,
    /// `int8`
    Int8,
    /// `int16`
    Int16,
    /// `int32`
    Int32,
    /// `int64`
    Int64,
    /// `float16`
    Float16,
    /// `bfloat16`
    Bfloat16,
    /// `float32`
    Float32,
    /// `float64`
    Float64,
    /// `complex64`
    Complex64,
    /// `complex128`
    Complex128,
}

impl TorchDtype {
    /// Every dtype this module knows.
    pub const ALL: [TorchDtype; 12] = [
        Self::Bool,
        Self::Uint8,
        Self::Int8,
        Self::Int16,
        Self::Int32,
        Self::Int64,
        Self::Float16,
        Self::Bfloat16,
        Self::Float32,
        Self::Float64,
        Self::Complex64,
        Self::Complex128,
    ];

    /// The name (`int64`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Bool => "bool",
            Self::Uint8 => "uint8",
            Self::Int8 => "int8",
            Self::Int16 => "int16",
            Self::Int32 => "int32",
            Self::Int64 => "int64",
            Self::Float16 => "float16",
            Self::Bfloat16 => "bfloat16",
            Self::Float32 => "float32",
            Self::Float64 => "float64",
            Self::Complex64 => "complex64",
            Self::Complex128 => "complex128",
        }
    }

    /// The dtype named `name`, or `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The inclusive range of an integer dtype's values (`bool` is `0..=1`), `None` for floating
    /// and complex dtypes.
    pub fn integer_range(self) -> Option<(i64, i64)> {
        Some(match self {
            Self::Bool => (0, 1),
            Self::Uint8 => (0, u8::MAX.into()),
            Self::Int8 => (i8::MIN.into(), i8::MAX.into()),
            Self::Int16 => (i16::MIN.into(), i16::MAX.into()),
            Self::Int32 => (i32::MIN.into(), i32::MAX.into()),
            Self::Int64 => (i64::MIN, i64::MAX),
            _ => return None,
        })
    }

    /// `true` for `complex64` and `complex128`.
    pub fn is_complex(self) -> bool {
        matches!(self, Self::Complex64 | Self::Complex128)
    }
}

impl fmt::Display for TorchDtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A strided tensor's metadata: dtype, shape and strides (in elements, as `Tensor.stride()`
/// gives them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorMeta {
    /// The dtype.
    pub dtype: TorchDtype,
    /// The shape (`[]` for 0-d).
    pub shape: Vec<usize>,
    /// The strides in elements, one per dimension.
    pub strides: Vec<i64>,
}

impl TensorMeta {
    /// Row-major (contiguous) strides of `shape`, as `Tensor.contiguous().stride()`: the last is
    /// 1, each other the product of the sizes after it (sizes of 0 counted as 1, as PyTorch
    /// does).
    pub fn contiguous_strides(shape: &[usize]) -> Vec<i64> {
        let mut strides = vec![1i64; shape.len()];
        for d in (0..shape.len().saturating_sub(1)).rev() {
            let size = i64::try_from(shape[d + 1].max(1)).unwrap_or(i64::MAX);
            strides[d] = strides[d + 1].saturating_mul(size);
        }
        strides
    }
}

/// An index tensor (`compressed_indices` or `plain_indices`): metadata and its logical elements
/// in row-major order (whatever the strides).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexTensor {
    /// dtype, shape, strides.
    pub meta: TensorMeta,
    /// The elements, row-major; `data.len()` is the product of `meta.shape`.
    pub data: Vec<i64>,
}

/// The arguments of `torch.sparse_compressed_tensor(compressed_indices, plain_indices, values,
/// size, layout=layout)`. The values' elements are not needed by the checks, only their
/// metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompressedArgs {
    /// The layout.
    pub layout: CompressedLayout,
    /// `crow_indices` / `ccol_indices`: shape `batch + [ncompressed + 1]`.
    pub compressed_indices: IndexTensor,
    /// `col_indices` / `row_indices`: shape `batch + [nnz]`.
    pub plain_indices: IndexTensor,
    /// The values' metadata: shape `batch + [nnz] + blocksize (BSR/BSC) + dense`.
    pub values: TensorMeta,
    /// The size, `batch + [rows, cols] + dense`; `None` to estimate it as PyTorch does.
    pub size: Option<Vec<usize>>,
}

/// What a valid set of arguments describes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompressedSummary {
    /// The layout.
    pub layout: CompressedLayout,
    /// The size (given or estimated): `batch + [rows, cols] + dense`.
    pub size: Vec<usize>,
    /// The batch dimensions' sizes (`size[..B]`).
    pub batch: Vec<usize>,
    /// The block size (`[1, 1]` for CSR/CSC).
    pub blocksize: [usize; 2],
    /// The dense dimensions' sizes (`size[B + 2..]`).
    pub dense: Vec<usize>,
    /// Stored elements (blocks for BSR/BSC) per batch: `values.shape[B]`.
    pub nnz: usize,
    /// `true` if `size` was `None` and estimated.
    pub size_estimated: bool,
}

/// A violated invariant: its number in `../shared/reference/bsr-invariants.md` (`"5.3"`) and a
/// message naming the member and the values. Displays as `invariant 5.3: MESSAGE`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invariant {invariant}: {message}")]
pub struct InvariantError {
    /// The invariant's number (`"3.8"`, `"5.3"`).
    pub invariant: &'static str,
    /// What was wrong, naming the member (PyTorch's names) and the values.
    pub message: String,
}

fn fail<T>(invariant: &'static str, message: String) -> Result<T, InvariantError> {
    Err(InvariantError { invariant, message })
}

/// A shape written `[2, 3]` (`[]` if empty), as the messages and `sparse compressed check`
/// print it.
pub fn format_list(items: &[usize]) -> String {
    let parts: Vec<String> = items.iter().map(ToString::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// Writes an element index `[b0, b1, i]` of a tensor with batch index `batch` (the batch part
/// omitted when there are no batch dimensions).
fn element(name: &str, batch: &[usize], i: usize) -> String {
    let mut parts: Vec<String> = batch.iter().map(ToString::to_string).collect();
    parts.push(i.to_string());
    format!("{name}[{}]", parts.join(", "))
}

/// The batch multi-index of flat batch number `b` (row-major over `shape`).
fn batch_index(mut b: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        let s = shape[d].max(1);
        index[d] = b % s;
        b /= s;
    }
    index
}

/// Checks the arguments of `torch.sparse_compressed_tensor` in the order of PyTorch's
/// `_validate_sparse_compressed_tensor_args` and returns what they describe.
///
/// The order (the first failure is reported):
/// 1. 3.2 `compressed_indices.ndim >= 1`; 3.3 `plain_indices.ndim == compressed_indices.ndim`;
///    3.4 `N >= 0`. A `None` size is estimated here, as PyTorch's
///    `_sparse_compressed_tensor_unsafe` does: batch from `compressed_indices.shape[..-1]`,
///    `ncompressed = compressed_indices.shape[-1] - 1`, `nplain = max(plain_indices) + 1` over
///    all batches (0 if empty), rows and columns those counts times the block size, dense
///    dimensions `values.shape[B+1+K..]`.
/// 2. 3.6 `plain_indices.stride(-1) == 1`, then 3.5 the same for `compressed_indices`.
/// 3. 3.1 `len(size) == B + 2 + N`; the batch shapes equal `size[..B]`: the compressed
///    indices' (else 3.8), the plain indices' (3.9), the values' (3.10); 3.1 `size[B]` and
///    `size[B+1]` are multiples of the block size.
/// 4. 3.8 `compressed_indices.shape[-1] == ncompressed + 1`; 3.9 `plain_indices.shape[-1] ==
///    nnz`; 3.10 `values.shape[B+1+K..] == size[B+2..]`.
/// 5. 1.1 both index dtypes are equal; 1.3 that dtype is `int32` or `int64`.
/// 6. Over all batches: 5.4 `min(plain_indices) >= 0`, then 5.5 `max(plain_indices) < nplain`.
/// 7. Per batch, batches in row-major order: 5.1 the first compressed index is 0; 5.2 the last
///    is `nnz`; 5.3 consecutive compressed indices differ by `0..=nplain`; 5.6 plain indices
///    strictly increase within each compressed slice.
///
/// # Errors
/// [`InvariantError`] naming the first invariant violated. An index tensor whose `data` does not
/// hold the product of its shape in elements is reported as the shape invariant of that member
/// (3.8 or 3.9).
pub fn validate_compressed(args: &CompressedArgs) -> Result<CompressedSummary, InvariantError> {
    let layout = args.layout;
    let cname = layout.compressed_indices_name();
    let pname = layout.plain_indices_name();
    let (ncomp_name, nplain_name) = layout.count_names();
    let c = &args.compressed_indices;
    let p = &args.plain_indices;
    let v = &args.values;
    let cdim = c.meta.shape.len();
    let pdim = p.meta.shape.len();
    let vdim = v.shape.len();

    // 1. dimensionalities
    if cdim < 1 {
        return fail(
            "3.2",
            format!("{cname} must have dimensionality >= 1 but got {cdim}"),
        );
    }
    if pdim != cdim {
        return fail(
            "3.3",
            format!(
                "{cname} and {pname} dimensionalities must be equal but got {cdim} and {pdim}, \
                 respectively"
            ),
        );
    }
    let b = cdim - 1;
    let k = if layout.is_block() { 2 } else { 0 };
    if vdim < b + 1 + k {
        return fail(
            "3.4",
            format!(
                "values must have dimensionality > sum of batch and block dimensionalities \
                 (={b} + {k}) but got {vdim}"
            ),
        );
    }
    let n = vdim - b - 1 - k;
    for (name, t) in [(cname, c), (pname, p)] {
        let count = t
            .meta
            .shape
            .iter()
            .try_fold(1usize, |a, &s| a.checked_mul(s));
        if count != Some(t.data.len()) {
            let invariant = if name == cname { "3.8" } else { "3.9" };
            return fail(
                invariant,
                format!(
                    "{name} holds {} elements but its shape {} needs {}",
                    t.data.len(),
                    format_list(&t.meta.shape),
                    count.map_or("more than usize::MAX".into(), |n| n.to_string())
                ),
            );
        }
    }
    let blocksize = if layout.is_block() {
        [v.shape[b + 1].max(1), v.shape[b + 2].max(1)]
    } else {
        [1, 1]
    };
    let nnz = v.shape[b];
    let (size, size_estimated) = match &args.size {
        Some(size) => (size.clone(), false),
        None => (estimate_size(layout, c, p, v, b, k, blocksize), true),
    };

    // 2. contiguity of the index arrays' last dimension
    for (invariant, name, t) in [("3.6", pname, p), ("3.5", cname, c)] {
        let stride = t.meta.strides.last().copied().unwrap_or(1);
        if stride != 1 {
            return fail(
                invariant,
                format!(
                    "{name} must be contiguous per batch: {name}.stride(-1) = {stride}, expected 1"
                ),
            );
        }
    }

    // 3. the size's dimensionality and batch shapes
    if size.len() != b + 2 + n {
        return fail(
            "3.1",
            format!(
                "tensor dimensionality must be sum of batch, base, and dense dimensionalities \
                 (={b} + 2 + {n}) but got {}",
                size.len()
            ),
        );
    }
    let batch = &size[..b];
    for (invariant, name, shape) in [
        ("3.8", cname, &c.meta.shape),
        ("3.9", pname, &p.meta.shape),
        ("3.10", "values", &v.shape),
    ] {
        if &shape[..b] != batch {
            return fail(
                invariant,
                format!(
                    "all batch dimensions of {name} (={}) must be equal to tensor batch \
                     dimensions (={})",
                    format_list(&shape[..b]),
                    format_list(batch)
                ),
            );
        }
    }
    for (i, axis) in [(0, b), (1, b + 1)] {
        if size[axis] % blocksize[i] != 0 {
            return fail(
                "3.1",
                format!(
                    "tensor shape[{axis}] (={}) must be divisible with blocksize[{i}] (={}) as \
                     defined by values shape",
                    size[axis], blocksize[i]
                ),
            );
        }
    }
    let nrows = size[b] / blocksize[0];
    let ncols = size[b + 1] / blocksize[1];
    let (ncompressed, nplain) = if layout.is_row_compressed() {
        (nrows, ncols)
    } else {
        (ncols, nrows)
    };

    // 4. the index arrays' last dimensions and the dense dimensions
    let clast = c.meta.shape[b];
    if Some(clast) != ncompressed.checked_add(1) {
        return fail(
            "3.8",
            format!(
                "{cname}.shape[-1] = {clast}, expected {ncomp_name} + 1 = {}",
                ncompressed as u128 + 1
            ),
        );
    }
    let plast = p.meta.shape[b];
    if plast != nnz {
        return fail(
            "3.9",
            format!("{pname}.shape[-1] = {plast}, expected nnz = values.shape[{b}] = {nnz}"),
        );
    }
    let dense = &size[b + 2..];
    if &v.shape[b + 1 + k..] != dense {
        return fail(
            "3.10",
            format!(
                "values.shape[{}:] = {}, expected the dense dimensions size[{}:] = {}",
                b + 1 + k,
                format_list(&v.shape[b + 1 + k..]),
                b + 2,
                format_list(dense)
            ),
        );
    }

    // 5. index dtypes
    if c.meta.dtype != p.meta.dtype {
        return fail(
            "1.1",
            format!(
                "{cname} and {pname} must have the same dtype, but got {} and {}, respectively",
                c.meta.dtype, p.meta.dtype
            ),
        );
    }
    if !matches!(c.meta.dtype, TorchDtype::Int32 | TorchDtype::Int64) {
        return fail(
            "1.3",
            format!(
                "{cname} and {pname} dtype must be int32 or int64, but got {}",
                c.meta.dtype
            ),
        );
    }

    // 6. plain indices' range over all batches
    if let Some(&min) = p.data.iter().min() {
        if min < 0 {
            return fail("5.4", format!("{pname}.min() = {min}, expected >= 0"));
        }
    }
    if let Some(&max) = p.data.iter().max() {
        if u64::try_from(max).is_ok_and(|m| m >= nplain as u64) {
            return fail(
                "5.5",
                format!("{pname}.max() = {max}, expected < {nplain_name} = {nplain}"),
            );
        }
    }

    // 7. per batch: compressed indices and the order of plain indices
    let batches = c.data.len() / (ncompressed + 1);
    let nplain_i = i64::try_from(nplain).unwrap_or(i64::MAX);
    let nnz_i = i64::try_from(nnz).unwrap_or(i64::MAX);
    for bi in 0..batches {
        let at = batch_index(bi, batch);
        let crow = &c.data[bi * (ncompressed + 1)..(bi + 1) * (ncompressed + 1)];
        let plain = &p.data[bi * nnz..(bi + 1) * nnz];
        if crow[0] != 0 {
            return fail(
                "5.1",
                format!("{} = {}, expected 0", element(cname, &at, 0), crow[0]),
            );
        }
        if crow[ncompressed] != nnz_i {
            return fail(
                "5.2",
                format!(
                    "{} = {}, expected nnz = {nnz}",
                    element(cname, &at, ncompressed),
                    crow[ncompressed]
                ),
            );
        }
        for i in 1..=ncompressed {
            let d = i128::from(crow[i]) - i128::from(crow[i - 1]);
            let (hi, lo) = (element(cname, &at, i), element(cname, &at, i - 1));
            if crow[i] < crow[i - 1] {
                return fail("5.3", format!("{hi} - {lo} = {d} < 0"));
            }
            if d > i128::from(nplain_i) {
                return fail(
                    "5.3",
                    format!("{hi} - {lo} = {d} > {nplain_name} = {nplain}"),
                );
            }
        }
        for i in 0..ncompressed {
            // crow is monotone and bounded by nnz here (5.1-5.3 passed, and the last is nnz)
            let (start, end) = (crow[i] as usize, crow[i + 1] as usize);
            for q in start + 1..end {
                if plain[q] <= plain[q - 1] {
                    return fail(
                        "5.6",
                        format!(
                            "{} = {} is not greater than {} = {}: {pname} must strictly increase \
                             within each compressed slice ({} {i})",
                            element(pname, &at, q),
                            plain[q],
                            element(pname, &at, q - 1),
                            plain[q - 1],
                            if layout.is_row_compressed() {
                                "row"
                            } else {
                                "column"
                            }
                        ),
                    );
                }
            }
        }
    }

    Ok(CompressedSummary {
        layout,
        batch: batch.to_vec(),
        dense: dense.to_vec(),
        size,
        blocksize,
        nnz,
        size_estimated,
    })
}

/// PyTorch's estimate of a missing size (`_sparse_compressed_tensor_unsafe`): see
/// [`validate_compressed`].
fn estimate_size(
    layout: CompressedLayout,
    c: &IndexTensor,
    p: &IndexTensor,
    v: &TensorMeta,
    b: usize,
    k: usize,
    blocksize: [usize; 2],
) -> Vec<usize> {
    let ncompressed = c.meta.shape[b].saturating_sub(1);
    let nplain = p
        .data
        .iter()
        .max()
        .map_or(0, |&m| usize::try_from(m.saturating_add(1)).unwrap_or(0));
    let (nrows, ncols) = if layout.is_row_compressed() {
        (ncompressed, nplain)
    } else {
        (nplain, ncompressed)
    };
    let mut size = c.meta.shape[..b].to_vec();
    size.push(nrows.saturating_mul(blocksize[0]));
    size.push(ncols.saturating_mul(blocksize[1]));
    size.extend_from_slice(&v.shape[b + 1 + k..]);
    size
}

/// Why PyTorch arrays cannot become a storage.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TorchError {
    /// A violated invariant ([`validate_compressed`]).
    #[error(transparent)]
    Invariant(#[from] InvariantError),
    /// Batch or dense dimensions (not stored by this constructor yet).
    #[error("{0}")]
    Unsupported(String),
    /// `values` does not hold `nnz * blocksize[0] * blocksize[1]` elements.
    #[error("values holds {got} elements, but nnz * blocksize = {expected}")]
    ValuesLength {
        /// Elements given.
        got: usize,
        /// Elements needed.
        expected: usize,
    },
    /// The storage rejected the arrays (cannot happen for validated arguments; reported rather
    /// than assumed).
    #[error(transparent)]
    Storage(#[from] crate::StorageError),
}

/// The MLIR encoding of a PyTorch layout with block size `[r, c]` and index width `width` bits
/// (32 or 64) as `posWidth` and `crdWidth`:
/// - CSR: `(i, j) -> (i : dense, j : compressed)`; CSC: `(i, j) -> (j : dense, i : compressed)`;
/// - BSR: `(i, j) -> (i floordiv r : dense, j floordiv c : compressed, i mod r : dense, j mod c :
///   dense)`; BSC: `(i, j) -> (j floordiv c : dense, i floordiv r : compressed, i mod r : dense,
///   j mod c : dense)` (PyTorch's blocks are row-major in both, `bsr-invariants.md`).
///
/// # Errors
/// `TorchError::Unsupported` if the encoding does not verify (a zero block size).
pub fn encoding_of(
    layout: CompressedLayout,
    blocksize: [usize; 2],
    width: u32,
) -> Result<crate::sparse_ir::ir::VerifiedEncoding, TorchError> {
    use crate::sparse_ir::ir::{AffineExpr::*, AffineMap, Encoding, LevelFormat, LevelType};
    let dense = LevelType::new(LevelFormat::Dense);
    let compressed = LevelType::new(LevelFormat::Compressed);
    let (r, c) = (blocksize[0] as i64, blocksize[1] as i64);
    let (types, dim_to_lvl, lvl_to_dim) = match layout {
        CompressedLayout::Csr => (
            vec![dense, compressed],
            AffineMap::identity(2),
            AffineMap::identity(2),
        ),
        CompressedLayout::Csc => (
            vec![dense, compressed],
            AffineMap::new(2, 0, [Var(1), Var(0)]),
            AffineMap::new(2, 0, [Var(1), Var(0)]),
        ),
        CompressedLayout::Bsr => (
            vec![dense, compressed, dense, dense],
            AffineMap::new(
                2,
                0,
                [
                    Var(0).floor_div(Constant(r)),
                    Var(1).floor_div(Constant(c)),
                    Var(0) % Constant(r),
                    Var(1) % Constant(c),
                ],
            ),
            AffineMap::new(
                4,
                0,
                [Var(0) * Constant(r) + Var(2), Var(1) * Constant(c) + Var(3)],
            ),
        ),
        CompressedLayout::Bsc => (
            vec![dense, compressed, dense, dense],
            AffineMap::new(
                2,
                0,
                [
                    Var(1).floor_div(Constant(c)),
                    Var(0).floor_div(Constant(r)),
                    Var(0) % Constant(r),
                    Var(1) % Constant(c),
                ],
            ),
            AffineMap::new(
                4,
                0,
                [Var(1) * Constant(r) + Var(2), Var(0) * Constant(c) + Var(3)],
            ),
        ),
    };
    let mut enc = Encoding::new(types, dim_to_lvl, lvl_to_dim);
    enc.pos_width = width;
    enc.crd_width = width;
    enc.verify().map_err(|errors| {
        let first = errors
            .first()
            .map_or("invalid".to_string(), ToString::to_string);
        TorchError::Unsupported(format!(
            "no encoding for {} {blocksize:?}: {first}",
            layout.name()
        ))
    })
}

/// The index arrays as buffers of the dtype's width (`int32` -> 32 bits, else 64).
fn index_buffer(data: &[i64], dtype: TorchDtype) -> crate::IndexBuffer {
    // validated indices are non-negative and fit the dtype
    if dtype == TorchDtype::Int32 {
        crate::IndexBuffer::U32(data.iter().map(|&x| x as u32).collect())
    } else {
        crate::IndexBuffer::U64(data.iter().map(|&x| x as u64).collect())
    }
}

/// The parts of a storage for `args` (not validated).
#[allow(clippy::type_complexity)]
fn storage_parts<V>(
    args: &CompressedArgs,
    summary: &CompressedSummary,
    values: Vec<V>,
) -> Result<
    (
        crate::sparse_ir::ir::VerifiedEncoding,
        Vec<Option<crate::IndexBuffer>>,
        Vec<Option<crate::CrdBuffer>>,
        Vec<V>,
    ),
    TorchError,
> {
    if !summary.batch.is_empty() || !summary.dense.is_empty() {
        return Err(TorchError::Unsupported(format!(
            "batch dimensions {} and dense dimensions {} are not stored yet: give a 2-d tensor",
            format_list(&summary.batch),
            format_list(&summary.dense)
        )));
    }
    let expected = summary.nnz * summary.blocksize[0] * summary.blocksize[1];
    if values.len() != expected {
        return Err(TorchError::ValuesLength {
            got: values.len(),
            expected,
        });
    }
    let dtype = args.compressed_indices.meta.dtype;
    let width = if dtype == TorchDtype::Int32 { 32 } else { 64 };
    let enc = encoding_of(args.layout, summary.blocksize, width)?;
    let levels = enc.lvl_types.len();
    let mut positions = vec![None; levels];
    let mut coordinates = vec![None; levels];
    positions[1] = Some(index_buffer(&args.compressed_indices.data, dtype));
    coordinates[1] = Some(crate::CrdBuffer::Plain(index_buffer(
        &args.plain_indices.data,
        dtype,
    )));
    Ok((enc, positions, coordinates, values))
}

/// A storage (CSR, CSC, BSR or BSC as [`encoding_of`] spells them) of PyTorch's compressed
/// arguments and values: checked by [`validate_compressed`] first, then stored without
/// conversion (the compressed indices become level 1's positions, the plain indices its
/// coordinates, the values stay in PyTorch's order: row-major blocks).
///
/// `values` holds `nnz * blocksize[0] * blocksize[1]` elements in PyTorch's contiguous order.
///
/// # Errors
/// [`TorchError::Invariant`] as [`validate_compressed`]; [`TorchError::Unsupported`] for batch
/// or dense dimensions; [`TorchError::ValuesLength`].
pub fn to_storage<V: crate::Value>(
    args: &CompressedArgs,
    values: Vec<V>,
) -> Result<crate::DynamicStorage<V>, TorchError> {
    let summary = validate_compressed(args)?;
    let (enc, positions, coordinates, values) = storage_parts(args, &summary, values)?;
    Ok(crate::DynamicStorage::from_raw_parts(
        &enc,
        &summary.size,
        positions,
        coordinates,
        values,
    )?)
}

/// [`to_storage`] without PyTorch's checks or the storage's validation: for trusted arrays
/// (PyTorch's own `_sparse_compressed_tensor_unsafe`).
///
/// # Safety
/// `args` must satisfy every invariant [`validate_compressed`] checks, with `size` given;
/// otherwise later reads of the storage may index out of bounds.
///
/// # Errors
/// [`TorchError::Unsupported`] without a size or with batch or dense dimensions;
/// [`TorchError::ValuesLength`].
pub unsafe fn to_storage_unchecked<V: crate::Value>(
    args: &CompressedArgs,
    values: Vec<V>,
) -> Result<crate::DynamicStorage<V>, TorchError> {
    let Some(size) = args.size.clone() else {
        return Err(TorchError::Unsupported(
            "to_storage_unchecked needs the size (estimating it reads the indices)".into(),
        ));
    };
    let b = args.compressed_indices.meta.shape.len().saturating_sub(1);
    let k = if args.layout.is_block() { 2 } else { 0 };
    let v = &args.values.shape;
    if b != 0 || v.len() != 1 + k || size.len() != 2 {
        return Err(TorchError::Unsupported(
            "batch and dense dimensions are not stored yet: give a 2-d tensor".into(),
        ));
    }
    let blocksize = if args.layout.is_block() {
        [v[1].max(1), v[2].max(1)]
    } else {
        [1, 1]
    };
    let summary = CompressedSummary {
        layout: args.layout,
        batch: vec![],
        dense: vec![],
        nnz: v[0],
        blocksize,
        size: size.clone(),
        size_estimated: false,
    };
    let (enc, positions, coordinates, values) = storage_parts(args, &summary, values)?;
    // SAFETY: the caller promises the invariants validate_compressed checks; they are the
    // storage's invariants for this encoding (segments within nnz, coordinates below the level
    // size, sorted and unique within a segment).
    Ok(unsafe {
        crate::DynamicStorage::from_raw_parts_unchecked(&enc, &size, positions, coordinates, values)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(shape: &[usize], data: &[i64]) -> IndexTensor {
        IndexTensor {
            meta: TensorMeta {
                dtype: TorchDtype::Int64,
                shape: shape.to_vec(),
                strides: TensorMeta::contiguous_strides(shape),
            },
            data: data.to_vec(),
        }
    }

    fn values(shape: &[usize]) -> TensorMeta {
        TensorMeta {
            dtype: TorchDtype::Float32,
            shape: shape.to_vec(),
            strides: TensorMeta::contiguous_strides(shape),
        }
    }

    /// The reference's 4 x 6 BSR with blocksize (2, 3).
    fn bsr() -> CompressedArgs {
        CompressedArgs {
            layout: CompressedLayout::Bsr,
            compressed_indices: index(&[3], &[0, 2, 4]),
            plain_indices: index(&[4], &[0, 1, 0, 1]),
            values: values(&[4, 2, 3]),
            size: Some(vec![4, 6]),
        }
    }

    #[test]
    fn reference_bsr_is_valid_given_or_estimated() {
        let s = validate_compressed(&bsr()).unwrap();
        assert_eq!(
            (
                s.size,
                s.batch,
                s.blocksize,
                s.dense,
                s.nnz,
                s.size_estimated
            ),
            (vec![4, 6], vec![], [2, 3], vec![], 4, false)
        );
        let mut a = bsr();
        a.size = None;
        let s = validate_compressed(&a).unwrap();
        assert_eq!((s.size, s.size_estimated), (vec![4, 6], true));
    }

    #[test]
    fn contiguous_strides_count_zero_sizes_as_one() {
        assert_eq!(TensorMeta::contiguous_strides(&[2, 0, 3]), vec![3, 3, 1]);
        assert_eq!(TensorMeta::contiguous_strides(&[]), Vec::<i64>::new());
    }

    #[test]
    fn each_invariant_in_order() {
        let check = |a: &CompressedArgs| validate_compressed(a).unwrap_err().to_string();
        let mut a = bsr();
        a.compressed_indices.data = vec![0, 3, 4];
        assert_eq!(
            check(&a),
            "invariant 5.3: crow_indices[1] - crow_indices[0] = 3 > ncols = 2"
        );
        let mut a = bsr();
        a.plain_indices.data = vec![1, 0, 0, 1];
        assert_eq!(
            check(&a),
            "invariant 5.6: col_indices[1] = 0 is not greater than col_indices[0] = 1: \
             col_indices must strictly increase within each compressed slice (row 0)"
        );
        let mut a = bsr();
        a.size = Some(vec![4, 7]);
        assert_eq!(
            check(&a),
            "invariant 3.1: tensor shape[1] (=7) must be divisible with blocksize[1] (=3) as \
             defined by values shape"
        );
        // 3.6 (plain) is checked before 3.5 (compressed)
        let mut a = bsr();
        a.plain_indices.meta.strides = vec![2];
        a.compressed_indices.meta.strides = vec![2];
        assert!(check(&a).starts_with("invariant 3.6: col_indices must be contiguous"));
        // 1.1 before 5.x
        let mut a = bsr();
        a.plain_indices.meta.dtype = TorchDtype::Int32;
        a.plain_indices.data = vec![-1, 1, 0, 1];
        assert!(check(&a).starts_with("invariant 1.1: "));
    }

    #[test]
    fn reference_bsr_and_its_bsc_transpose_store_the_same_matrix() {
        let vals: Vec<f64> = [
            0, 1, 2, 6, 7, 8, 3, 4, 5, 9, 10, 11, 12, 13, 14, 18, 19, 20, 15, 16, 17, 21, 22, 23,
        ]
        .map(f64::from)
        .to_vec();
        let s = to_storage(&bsr(), vals).unwrap();
        let dense: Vec<f64> = (0..24).map(f64::from).collect();
        assert_eq!(s.to_dense().unwrap(), dense);
        // the transpose: 6 x 4 BSC, blocks 3 x 2 (the reference's example)
        let bsc = CompressedArgs {
            layout: CompressedLayout::Bsc,
            compressed_indices: index(&[3], &[0, 2, 4]),
            plain_indices: index(&[4], &[0, 1, 0, 1]),
            values: values(&[4, 3, 2]),
            size: Some(vec![6, 4]),
        };
        let t: Vec<f64> = [
            0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11, 12, 18, 13, 19, 14, 20, 15, 21, 16, 22, 17, 23,
        ]
        .map(f64::from)
        .to_vec();
        let st = to_storage(&bsc, t.clone()).unwrap();
        let transposed: Vec<f64> = (0..24)
            .map(|k| f64::from((k % 4 * 6 + k / 4) as u8))
            .collect();
        assert_eq!(st.to_dense().unwrap(), transposed);
        // SAFETY: the arguments are the valid ones just checked
        let unchecked = unsafe { to_storage_unchecked(&bsc, t) }.unwrap();
        assert_eq!(unchecked.to_dense().unwrap(), transposed);
        let mut bad = bsr();
        bad.plain_indices.data = vec![1, 0, 0, 1];
        assert!(matches!(
            to_storage(&bad, vec![0.0; 24]),
            Err(TorchError::Invariant(_))
        ));
        assert!(matches!(
            to_storage(&bsr(), vec![0.0; 23]),
            Err(TorchError::ValuesLength {
                got: 23,
                expected: 24
            })
        ));
    }
}
