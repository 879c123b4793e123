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
//!
//! [`to_storage`] stores valid arguments as a [`crate::DynamicStorage`] without moving an
//! element, batched and hybrid ones too: in [`encoding_of`]'s encoding the `B` batch
//! dimensions are leading `batch` levels and the `N` dense dimensions trailing `dense` levels,
//! so PyTorch's per-batch `compressed_indices` are the compressed level's batch-local positions
//! and the contiguous `values` (`batch + [nnz] + blocksize + dense`) are in level order.

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

    /// The dtype of the Rust value type `V`: `bool`, `u8`, `i8`..`i64`, `half::f16`
    /// (`float16`), `half::bf16` (`bfloat16`), `f32`, `f64`, `Complex<f32>` (`complex64`),
    /// `Complex<f64>` (`complex128`); `None` for a type PyTorch's list here has no dtype for
    /// (`u16`, `u32`, `u64`, `usize`, ...).
    pub fn of<V: 'static>() -> Option<Self> {
        use crate::num_complex::Complex;
        use std::any::TypeId;
        let t = TypeId::of::<V>();
        let table = [
            (TypeId::of::<bool>(), Self::Bool),
            (TypeId::of::<u8>(), Self::Uint8),
            (TypeId::of::<i8>(), Self::Int8),
            (TypeId::of::<i16>(), Self::Int16),
            (TypeId::of::<i32>(), Self::Int32),
            (TypeId::of::<i64>(), Self::Int64),
            (TypeId::of::<crate::half::f16>(), Self::Float16),
            (TypeId::of::<crate::half::bf16>(), Self::Bfloat16),
            (TypeId::of::<f32>(), Self::Float32),
            (TypeId::of::<f64>(), Self::Float64),
            (TypeId::of::<Complex<f32>>(), Self::Complex64),
            (TypeId::of::<Complex<f64>>(), Self::Complex128),
        ];
        table.into_iter().find(|&(id, _)| id == t).map(|(_, d)| d)
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

    // 1. dimensionalities
    let (b, k, n) = dimensionalities(layout, &c.meta, &p.meta, v)?;
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
    check_size_rank(&size, b, n)?;
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

/// The dimension counts `(B, K, N)` of the arguments (see the module docs), checking PyTorch's
/// dimensionality invariants in its order: 3.2 `compressed_indices.ndim >= 1`; 3.3
/// `plain_indices.ndim == compressed_indices.ndim`; 3.4 `values.ndim >= B + 1 + K`. Reads only
/// the shapes' lengths.
fn dimensionalities(
    layout: CompressedLayout,
    c: &TensorMeta,
    p: &TensorMeta,
    v: &TensorMeta,
) -> Result<(usize, usize, usize), InvariantError> {
    let cname = layout.compressed_indices_name();
    let pname = layout.plain_indices_name();
    let cdim = c.shape.len();
    let pdim = p.shape.len();
    let vdim = v.shape.len();
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
    Ok((b, k, n))
}

/// PyTorch's 3.1 dimensionality invariant: `len(size) == B + 2 + N`.
fn check_size_rank(size: &[usize], b: usize, n: usize) -> Result<(), InvariantError> {
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
    Ok(())
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
    /// A violated invariant ([`validate_compressed`]; [`to_storage_unchecked`] checks only the
    /// dimensionalities, 3.2, 3.3, 3.4 and 3.1).
    #[error(transparent)]
    Invariant(#[from] InvariantError),
    /// Arguments this module cannot store: [`to_storage_unchecked`] without a size, or an
    /// encoding that does not verify or cannot be built ([`encoding_of`]: a block size or a
    /// dimension count too large for it).
    #[error("{0}")]
    Unsupported(String),
    /// The values' dtype is not the Rust value type's ([`TorchDtype::of`]): `float32` values
    /// given as `f64`, say. PyTorch's `values` tensor fixes the element type; storing it as
    /// another would convert, which these constructors never do.
    #[error("values have dtype {}, but the storage's value type is {rust}{}", values.name(), match expected { Some(d) => format!(" ({})", d.name()), None => " (no PyTorch dtype)".to_string() })]
    Dtype {
        /// The dtype of `values`.
        values: TorchDtype,
        /// The Rust value type's name.
        rust: &'static str,
        /// The dtype of the Rust value type, if it has one.
        expected: Option<TorchDtype>,
    },
    /// `values` does not hold `batches * nnz * blocksize[0] * blocksize[1] * prod(dense)`
    /// elements (`batches` the product of the batch sizes, `blocksize` `[1, 1]` for CSR/CSC).
    #[error(
        "values holds {got} elements, but batches * nnz * blocksize * prod(dense) = {expected}"
    )]
    ValuesLength {
        /// Elements given.
        got: usize,
        /// Elements needed.
        expected: usize,
    },
    /// The storage rejected the arrays (cannot happen for validated arguments whose values
    /// count fits `usize`; reported rather than assumed), or the values count
    /// `batches * nnz * blocksize * prod(dense)` overflows `usize`
    /// ([`crate::StorageError::ShapeOverflow`] with the values shape `batch + [nnz] +
    /// blocksize + dense`, the block size only for BSR/BSC).
    #[error(transparent)]
    Storage(#[from] crate::StorageError),
}

/// The MLIR encoding of a PyTorch layout with block size `[r, c]`, `batch_dims` batch
/// dimensions (`B`), `dense_dims` dense dimensions (`N`) and index width `width` bits (32 or
/// 64) as `posWidth` and `crdWidth`.
///
/// The dimensions are PyTorch's, `batch + [rows, cols] + dense`: `b0 .. b(B-1)`, `i`, `j`,
/// `d0 .. d(N-1)`. The levels are `B` leading `batch` levels (`bk : batch`), the levels of the
/// matrix, then `N` trailing `dense` levels (`dk : dense`), so the level order is PyTorch's
/// contiguous order of `values`, `batch + [nnz] + blocksize + dense`. The matrix levels:
/// - CSR: `i : dense, j : compressed`; CSC: `j : dense, i : compressed`;
/// - BSR: `i floordiv r : dense, j floordiv c : compressed, i mod r : dense, j mod c : dense`;
///   BSC: `j floordiv c : dense, i floordiv r : compressed, i mod r : dense, j mod c : dense`
///   (PyTorch's blocks are row-major in both, `bsr-invariants.md`).
///
/// For example CSR with `B = N = 1` is `(b, i, j, d) -> (b : batch, i : dense, j : compressed,
/// d : dense)`, and BSR is `(b, i, j, d) -> (b : batch, i floordiv r : dense, j floordiv c :
/// compressed, i mod r : dense, j mod c : dense, d : dense)`. `lvl_to_dim` is the inverse
/// (`i = (i floordiv r) * r + i mod r`). A compressed level under batch levels stores
/// batch-local positions (`crate::dynamic`'s batch layout), which is PyTorch's
/// `compressed_indices` of shape `batch + [ncompressed + 1]`, each batch starting at 0.
///
/// # Errors
/// [`TorchError::Unsupported`] if the encoding does not verify (a zero block size), a block
/// size does not fit `i64`, or the rank `B + 4 + N` overflows or cannot be allocated.
pub fn encoding_of(
    layout: CompressedLayout,
    blocksize: [usize; 2],
    batch_dims: usize,
    dense_dims: usize,
    width: u32,
) -> Result<crate::sparse_ir::ir::VerifiedEncoding, TorchError> {
    use crate::sparse_ir::ir::{
        AffineExpr, AffineExpr::*, AffineMap, Encoding, LevelFormat, LevelType,
    };
    let unsupported = |why: String| {
        TorchError::Unsupported(format!(
            "no encoding for {} {blocksize:?} with {batch_dims} batch and {dense_dims} dense \
             dimensions: {why}",
            layout.name()
        ))
    };
    let (Ok(r), Ok(c)) = (i64::try_from(blocksize[0]), i64::try_from(blocksize[1])) else {
        return Err(unsupported("the block size does not fit i64".into()));
    };
    let (nb, nd) = (batch_dims, dense_dims);
    // matrix levels: 2 for CSR/CSC, 4 for BSR/BSC
    let m = if layout.is_block() { 4 } else { 2 };
    let ranks = nb
        .checked_add(nd)
        .and_then(|x| x.checked_add(m))
        .map(|lvl_rank| (lvl_rank, lvl_rank - m + 2));
    let Some((lvl_rank, dim_rank)) = ranks else {
        return Err(unsupported("the rank overflows usize".into()));
    };
    fn reserved<T>(n: usize) -> Option<Vec<T>> {
        let mut v = Vec::new();
        v.try_reserve_exact(n).ok()?;
        Some(v)
    }
    let (Some(mut types), Some(mut to_lvl), Some(mut to_dim)) = (
        reserved::<LevelType>(lvl_rank),
        reserved::<AffineExpr>(lvl_rank),
        reserved::<AffineExpr>(dim_rank),
    ) else {
        return Err(unsupported("the rank cannot be allocated".into()));
    };
    let dense = LevelType::new(LevelFormat::Dense);
    let compressed = LevelType::new(LevelFormat::Compressed);
    // batch levels: level k is dimension k
    for k in 0..nb {
        types.push(LevelType::new(LevelFormat::Batch));
        to_lvl.push(Var(k));
        to_dim.push(Var(k));
    }
    // the matrix: dimensions i, j; its levels start at level nb
    let (i, j, o) = (Var(nb), Var(nb + 1), nb);
    match layout {
        CompressedLayout::Csr => {
            types.extend([dense, compressed]);
            to_lvl.extend([i, j]);
            to_dim.extend([Var(o), Var(o + 1)]);
        }
        CompressedLayout::Csc => {
            types.extend([dense, compressed]);
            to_lvl.extend([j, i]);
            to_dim.extend([Var(o + 1), Var(o)]);
        }
        CompressedLayout::Bsr => {
            types.extend([dense, compressed, dense, dense]);
            to_lvl.extend([
                i.clone().floor_div(Constant(r)),
                j.clone().floor_div(Constant(c)),
                i % Constant(r),
                j % Constant(c),
            ]);
            to_dim.extend([
                Var(o) * Constant(r) + Var(o + 2),
                Var(o + 1) * Constant(c) + Var(o + 3),
            ]);
        }
        CompressedLayout::Bsc => {
            types.extend([dense, compressed, dense, dense]);
            to_lvl.extend([
                j.clone().floor_div(Constant(c)),
                i.clone().floor_div(Constant(r)),
                i % Constant(r),
                j % Constant(c),
            ]);
            to_dim.extend([
                Var(o + 1) * Constant(r) + Var(o + 2),
                Var(o) * Constant(c) + Var(o + 3),
            ]);
        }
    }
    // dense levels: dimension nb + 2 + k is level nb + m + k
    for k in 0..nd {
        types.push(dense);
        to_lvl.push(Var(nb + 2 + k));
        to_dim.push(Var(nb + m + k));
    }
    let mut enc = Encoding::new(
        types,
        AffineMap::new(dim_rank, 0, to_lvl),
        AffineMap::new(lvl_rank, 0, to_dim),
    );
    enc.pos_width = width;
    enc.crd_width = width;
    enc.verify().map_err(|errors| {
        unsupported(
            errors
                .first()
                .map_or("invalid".to_string(), ToString::to_string),
        )
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

/// The number of values `summary` describes, `batches * nnz * blocksize[0] * blocksize[1] *
/// prod(dense)`, in checked arithmetic.
///
/// # Errors
/// [`crate::StorageError::ShapeOverflow`] with the values shape `batch + [nnz] + blocksize
/// (BSR/BSC) + dense` when the product overflows `usize`.
fn values_count(
    layout: CompressedLayout,
    summary: &CompressedSummary,
) -> Result<usize, TorchError> {
    let blocks: &[usize] = if layout.is_block() {
        &summary.blocksize
    } else {
        &[]
    };
    let shape: Vec<usize> = summary
        .batch
        .iter()
        .chain([&summary.nnz])
        .chain(blocks)
        .chain(&summary.dense)
        .copied()
        .collect();
    Ok(crate::dynamic::checked_product(&shape)?)
}

/// The parts of a storage for `args` (not validated), for [`encoding_of`]'s encoding with
/// `summary`'s batch and dense dimension counts: the compressed indices are the positions and
/// the plain indices the coordinates of the compressed level (level `B + 1`), both flat and
/// batch-major as PyTorch holds them; the values as given.
#[allow(clippy::type_complexity)]
fn storage_parts<V: 'static>(
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
    let rust_dtype = TorchDtype::of::<V>();
    if rust_dtype != Some(args.values.dtype) {
        return Err(TorchError::Dtype {
            values: args.values.dtype,
            rust: std::any::type_name::<V>(),
            expected: rust_dtype,
        });
    }
    let expected = values_count(args.layout, summary)?;
    if values.len() != expected {
        return Err(TorchError::ValuesLength {
            got: values.len(),
            expected,
        });
    }
    let dtype = args.compressed_indices.meta.dtype;
    let width = if dtype == TorchDtype::Int32 { 32 } else { 64 };
    let b = summary.batch.len();
    let enc = encoding_of(
        args.layout,
        summary.blocksize,
        b,
        summary.dense.len(),
        width,
    )?;
    let levels = enc.lvl_types.len();
    let mut positions = vec![None; levels];
    let mut coordinates = vec![None; levels];
    positions[b + 1] = Some(index_buffer(&args.compressed_indices.data, dtype));
    coordinates[b + 1] = Some(crate::CrdBuffer::Plain(index_buffer(
        &args.plain_indices.data,
        dtype,
    )));
    Ok((enc, positions, coordinates, values))
}

/// A storage of PyTorch's compressed arguments and values, in the encoding [`encoding_of`]
/// spells (CSR, CSC, BSR or BSC, with leading `batch` levels for the batch dimensions and
/// trailing `dense` levels for the dense dimensions): checked by [`validate_compressed`] first,
/// then stored without conversion. The compressed indices (shape `batch + [ncompressed + 1]`,
/// each batch starting at 0) become the positions of the compressed level (level `B + 1`) and
/// the plain indices (shape `batch + [nnz]`) its coordinates, both batch-local as
/// `crate::dynamic`'s batch layout stores them; the values stay in PyTorch's order.
///
/// `values` holds `batches * nnz * blocksize[0] * blocksize[1] * prod(dense)` elements in
/// PyTorch's contiguous order of shape `batch + [nnz] + blocksize (BSR/BSC) + dense` (row-major
/// blocks, `values.contiguous()`); `batches` is the product of the batch sizes.
///
/// # Errors
/// [`TorchError::Invariant`] as [`validate_compressed`] (per batch invariants name the batch,
/// `crow_indices[1, 0]`); [`TorchError::ValuesLength`] if `values` has another length;
/// [`TorchError::Storage`] if that length overflows `usize`; [`TorchError::Unsupported`] as
/// [`encoding_of`] (a block size beyond `i64::MAX`); [`TorchError::Dtype`] if `values`' dtype is
/// not `V`'s ([`TorchDtype::of`]).
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
/// (PyTorch's own `_sparse_compressed_tensor_unsafe`). Only the dimensionalities are checked
/// (they say where the batch, block and dense dimensions are; reading only the shapes'
/// lengths): 3.2, 3.3, 3.4 and 3.1 as [`validate_compressed`] words them.
///
/// # Safety
/// `args` must satisfy every invariant [`validate_compressed`] checks, with `size` given;
/// otherwise later reads of the storage may index out of bounds.
///
/// # Errors
/// [`TorchError::Unsupported`] without a size; [`TorchError::Invariant`] for the
/// dimensionalities above; otherwise as [`to_storage`] ([`TorchError::ValuesLength`],
/// [`TorchError::Storage`] for an overflowing values count, [`TorchError::Unsupported`] from
/// [`encoding_of`], [`TorchError::Dtype`]).
pub unsafe fn to_storage_unchecked<V: crate::Value>(
    args: &CompressedArgs,
    values: Vec<V>,
) -> Result<crate::DynamicStorage<V>, TorchError> {
    let Some(size) = args.size.clone() else {
        return Err(TorchError::Unsupported(
            "to_storage_unchecked needs the size (estimating it reads the indices)".into(),
        ));
    };
    let v = &args.values.shape;
    let (b, k, n) = dimensionalities(
        args.layout,
        &args.compressed_indices.meta,
        &args.plain_indices.meta,
        &args.values,
    )?;
    check_size_rank(&size, b, n)?;
    let blocksize = if k == 2 {
        [v[b + 1].max(1), v[b + 2].max(1)]
    } else {
        [1, 1]
    };
    let summary = CompressedSummary {
        layout: args.layout,
        batch: size[..b].to_vec(),
        dense: size[b + 2..].to_vec(),
        nnz: v[b],
        blocksize,
        size: size.clone(),
        size_estimated: false,
    };
    let (enc, positions, coordinates, values) = storage_parts(args, &summary, values)?;
    // SAFETY: the caller promises the invariants validate_compressed checks; they are the
    // storage's invariants for this encoding (per batch: segments within nnz, coordinates below
    // the level size, sorted and unique within a segment).
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
            dtype: TorchDtype::Float64,
            shape: shape.to_vec(),
            strides: TensorMeta::contiguous_strides(shape),
        }
    }

    #[test]
    fn values_of_another_dtype_are_refused() {
        let mut args = bsr();
        args.values.dtype = TorchDtype::Float32;
        let err = to_storage(&args, vec![0.0f64; 24]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "values have dtype float32, but the storage's value type is f64 (float64)"
        );
        // SAFETY: the reference BSR is valid; the dtype is checked before anything is stored
        let err = unsafe { to_storage_unchecked(&args, vec![0u32; 24]) }.unwrap_err();
        assert_eq!(
            err.to_string(),
            "values have dtype float32, but the storage's value type is u32 (no PyTorch dtype)"
        );
        assert!(to_storage(&args, vec![0.0f32; 24]).is_ok());
        assert_eq!(
            TorchDtype::of::<crate::half::bf16>(),
            Some(TorchDtype::Bfloat16)
        );
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

    /// Positions, coordinates (as `usize`) and values of level `l` of `s`.
    fn level_arrays(s: &crate::DynamicStorage<f64>, l: usize) -> (Vec<usize>, Vec<usize>) {
        (
            s.positions(l).map(|p| p.to_vec()).unwrap_or_default(),
            s.coordinates(l).map(|c| c.to_vec()).unwrap_or_default(),
        )
    }

    #[test]
    fn encodings_with_batch_and_dense_dimensions() {
        let map = |layout, b, n| {
            encoding_of(layout, [2, 3], b, n, 64)
                .unwrap()
                .map_to_string()
        };
        assert_eq!(
            map(CompressedLayout::Csr, 1, 1),
            "(d0, d1, d2, d3) -> (d0 : batch, d1 : dense, d2 : compressed, d3 : dense)"
        );
        assert_eq!(
            map(CompressedLayout::Csc, 2, 0),
            "(d0, d1, d2, d3) -> (d0 : batch, d1 : batch, d3 : dense, d2 : compressed)"
        );
        assert_eq!(
            map(CompressedLayout::Bsr, 1, 1),
            "(d0, d1, d2, d3) -> (d0 : batch, d1 floordiv 2 : dense, d2 floordiv 3 : compressed, \
             d1 mod 2 : dense, d2 mod 3 : dense, d3 : dense)"
        );
        assert_eq!(
            map(CompressedLayout::Bsc, 0, 2),
            "(d0, d1, d2, d3) -> (d1 floordiv 3 : dense, d0 floordiv 2 : compressed, d0 mod 2 : \
             dense, d1 mod 3 : dense, d2 : dense, d3 : dense)"
        );
        // the 2-d encodings are unchanged
        assert_eq!(
            map(CompressedLayout::Csr, 0, 0),
            "(d0, d1) -> (d0 : dense, d1 : compressed)"
        );
        assert!(matches!(
            encoding_of(CompressedLayout::Bsr, [0, 3], 1, 0, 64),
            Err(TorchError::Unsupported(_))
        ));
        assert!(matches!(
            encoding_of(CompressedLayout::Bsr, [usize::MAX, 3], 1, 0, 64),
            Err(TorchError::Unsupported(_))
        ));
        assert!(matches!(
            encoding_of(CompressedLayout::Csr, [1, 1], usize::MAX, 1, 64),
            Err(TorchError::Unsupported(_))
        ));
    }

    /// Two batches of a 2 x 3 matrix: `[[1, 0, 2], [0, 0, 3]]` and `[[0, 4, 0], [5, 0, 6]]`.
    fn batched_csr() -> CompressedArgs {
        CompressedArgs {
            layout: CompressedLayout::Csr,
            compressed_indices: index(&[2, 3], &[0, 2, 3, 0, 1, 3]),
            plain_indices: index(&[2, 3], &[0, 2, 2, 1, 0, 2]),
            values: values(&[2, 3]),
            size: Some(vec![2, 2, 3]),
        }
    }

    #[test]
    fn batched_csr_is_stored_with_batch_local_positions() {
        let vals: Vec<f64> = (1..=6).map(f64::from).collect();
        let s = to_storage(&batched_csr(), vals.clone()).unwrap();
        assert_eq!(
            s.encoding().map_to_string(),
            "(d0, d1, d2) -> (d0 : batch, d1 : dense, d2 : compressed)"
        );
        assert_eq!(s.batches(), 2);
        assert_eq!(level_arrays(&s, 0), (vec![], vec![]));
        assert_eq!(level_arrays(&s, 1), (vec![], vec![]));
        assert_eq!(
            level_arrays(&s, 2),
            (vec![0, 2, 3, 0, 1, 3], vec![0, 2, 2, 1, 0, 2])
        );
        assert_eq!(s.values(), &vals[..]);
        let dense = [1, 0, 2, 0, 0, 3, 0, 4, 0, 5, 0, 6].map(f64::from).to_vec();
        assert_eq!(s.to_dense().unwrap(), dense);
        assert_eq!(s.get(&[1, 1, 0]), Some(&5.0));
        // SAFETY: the arguments are valid (just stored by to_storage)
        let unchecked = unsafe { to_storage_unchecked(&batched_csr(), vals.clone()) }.unwrap();
        assert_eq!(unchecked, s);
        assert!(matches!(
            to_storage(&batched_csr(), vec![0.0; 3]),
            Err(TorchError::ValuesLength {
                got: 3,
                expected: 6
            })
        ));
    }

    #[test]
    fn hybrid_csr_stores_a_dense_dimension_in_the_values() {
        // 2 x 3 matrix of pairs: [[(1, 2), 0, (0, 3)], [0, (4, 0), 0]]
        let args = CompressedArgs {
            layout: CompressedLayout::Csr,
            compressed_indices: index(&[3], &[0, 2, 3]),
            plain_indices: index(&[3], &[0, 2, 1]),
            values: values(&[3, 2]),
            size: Some(vec![2, 3, 2]),
        };
        let vals = [1, 2, 0, 3, 4, 0].map(f64::from).to_vec();
        let s = to_storage(&args, vals.clone()).unwrap();
        assert_eq!(
            s.encoding().map_to_string(),
            "(d0, d1, d2) -> (d0 : dense, d1 : compressed, d2 : dense)"
        );
        assert_eq!(level_arrays(&s, 1), (vec![0, 2, 3], vec![0, 2, 1]));
        assert_eq!(s.values(), &vals[..]);
        let dense = [1, 2, 0, 0, 0, 3, 0, 0, 4, 0, 0, 0].map(f64::from).to_vec();
        assert_eq!(s.to_dense().unwrap(), dense);
        // SAFETY: valid arguments
        assert_eq!(unsafe { to_storage_unchecked(&args, vals) }.unwrap(), s);
        assert!(matches!(
            to_storage(&args, vec![0.0; 3]),
            Err(TorchError::ValuesLength {
                got: 3,
                expected: 6
            })
        ));
    }

    #[test]
    fn batched_hybrid_bsr_keeps_pytorchs_value_order() {
        // two batches of a 2 x 4 matrix of pairs, blocksize (2, 2): batch 0 stores block column
        // 1, batch 1 block column 0; values shape [2, 1, 2, 2, 2]
        let args = CompressedArgs {
            layout: CompressedLayout::Bsr,
            compressed_indices: index(&[2, 2], &[0, 1, 0, 1]),
            plain_indices: index(&[2, 1], &[1, 0]),
            values: values(&[2, 1, 2, 2, 2]),
            size: Some(vec![2, 2, 4, 2]),
        };
        let vals: Vec<f64> = (1..=16).map(f64::from).collect();
        let s = to_storage(&args, vals.clone()).unwrap();
        assert_eq!(
            s.encoding().map_to_string(),
            "(d0, d1, d2, d3) -> (d0 : batch, d1 floordiv 2 : dense, d2 floordiv 2 : compressed, \
             d1 mod 2 : dense, d2 mod 2 : dense, d3 : dense)"
        );
        assert_eq!(level_arrays(&s, 2), (vec![0, 1, 0, 1], vec![1, 0]));
        assert_eq!(s.values(), &vals[..]);
        #[rustfmt::skip]
        let dense = [
            0, 0, 0, 0, 1, 2, 3, 4, //
            0, 0, 0, 0, 5, 6, 7, 8, //
            9, 10, 11, 12, 0, 0, 0, 0, //
            13, 14, 15, 16, 0, 0, 0, 0,
        ]
        .map(f64::from)
        .to_vec();
        assert_eq!(s.to_dense().unwrap(), dense);
        // SAFETY: valid arguments
        assert_eq!(unsafe { to_storage_unchecked(&args, vals) }.unwrap(), s);
        assert!(matches!(
            to_storage(&args, vec![0.0; 15]),
            Err(TorchError::ValuesLength {
                got: 15,
                expected: 16
            })
        ));
    }

    #[test]
    fn a_per_batch_invariant_names_the_batch() {
        let mut a = batched_csr();
        a.compressed_indices.data = vec![0, 2, 3, 0, 3, 3];
        a.plain_indices.data = vec![0, 2, 2, 2, 1, 0];
        let err = to_storage(&a, vec![0.0; 6]).unwrap_err();
        assert!(matches!(err, TorchError::Invariant(_)));
        assert_eq!(
            err.to_string(),
            "invariant 5.6: col_indices[1, 1] = 1 is not greater than col_indices[1, 0] = 2: \
             col_indices must strictly increase within each compressed slice (row 0)"
        );
    }

    #[test]
    fn unchecked_checks_the_dimensionalities_and_needs_the_size() {
        let mut a = batched_csr();
        a.size = Some(vec![2, 3]);
        // SAFETY: rejected before any array is read
        let err = unsafe { to_storage_unchecked(&a, vec![0.0; 6]) }.unwrap_err();
        assert_eq!(
            err.to_string(),
            "invariant 3.1: tensor dimensionality must be sum of batch, base, and dense \
             dimensionalities (=1 + 2 + 0) but got 2"
        );
        let mut a = batched_csr();
        a.values.shape = vec![];
        // SAFETY: as above
        let err = unsafe { to_storage_unchecked(&a, vec![0.0; 6]) }.unwrap_err();
        assert!(err.to_string().starts_with("invariant 3.4: "));
        let mut a = batched_csr();
        a.size = None;
        // SAFETY: as above
        let err = unsafe { to_storage_unchecked(&a, vec![0.0; 6]) }.unwrap_err();
        assert!(matches!(err, TorchError::Unsupported(_)));
    }

    #[test]
    fn an_overflowing_values_count_is_an_error() {
        // one block of 2^33 x 2^33 (metadata only): nnz * blocksize overflows usize
        let big = 1usize << 33;
        let args = CompressedArgs {
            layout: CompressedLayout::Bsr,
            compressed_indices: index(&[2], &[0, 1]),
            plain_indices: index(&[1], &[0]),
            values: values(&[1, big, big, 2]),
            size: Some(vec![big, big, 2]),
        };
        let err = to_storage::<f64>(&args, vec![]).unwrap_err();
        assert_eq!(
            err,
            TorchError::Storage(crate::StorageError::ShapeOverflow {
                shape: vec![1, big, big, 2]
            })
        );
        // SAFETY: rejected before the arrays are stored
        assert_eq!(
            unsafe { to_storage_unchecked::<f64>(&args, vec![]) }.unwrap_err(),
            err
        );
    }

    /// PyTorch's arguments and contiguous values for the dense tensor `data` (row-major, shape
    /// `batch + [rows, cols] + dense`) in `layout` with `blocksize` (BSR/BSC): a block is stored
    /// when it holds a nonzero, and batches with fewer stored blocks than the most are padded
    /// with explicit zero blocks (the first ones not stored), as batches share one nnz.
    fn compress(
        layout: CompressedLayout,
        batch: &[usize],
        [rows, cols]: [usize; 2],
        blocksize: [usize; 2],
        dense: &[usize],
        data: &[f64],
    ) -> (CompressedArgs, Vec<f64>) {
        let [r, c] = if layout.is_block() { blocksize } else { [1, 1] };
        let (nrb, ncb) = (rows / r, cols / c);
        let row = layout.is_row_compressed();
        let (ncomp, nplain) = if row { (nrb, ncb) } else { (ncb, nrb) };
        let nbatch: usize = batch.iter().product();
        let nd: usize = dense.iter().product();
        let at =
            |bt: usize, i: usize, j: usize, d: usize| data[((bt * rows + i) * cols + j) * nd + d];
        // the elements of block (u, w) in (compressed, plain) coordinates, PyTorch's order
        let block = |bt: usize, u: usize, w: usize| -> Vec<f64> {
            let (bi, bj) = if row { (u, w) } else { (w, u) };
            let mut out = Vec::new();
            for ii in 0..r {
                for jj in 0..c {
                    for d in 0..nd {
                        out.push(at(bt, bi * r + ii, bj * c + jj, d));
                    }
                }
            }
            out
        };
        let mut stored: Vec<Vec<bool>> = (0..nbatch)
            .map(|bt| {
                (0..ncomp * nplain)
                    .map(|x| block(bt, x / nplain, x % nplain).iter().any(|&v| v != 0.0))
                    .collect()
            })
            .collect();
        let nnz = stored
            .iter()
            .map(|s| s.iter().filter(|&&x| x).count())
            .max()
            .unwrap_or(0);
        for s in &mut stored {
            let mut missing = nnz - s.iter().filter(|&&x| x).count();
            for x in s.iter_mut() {
                if missing > 0 && !*x {
                    *x = true;
                    missing -= 1;
                }
            }
        }
        let (mut crow, mut col, mut vals) = (Vec::new(), Vec::new(), Vec::new());
        for (bt, s) in stored.iter().enumerate() {
            crow.push(0);
            let mut count = 0;
            for u in 0..ncomp {
                for w in 0..nplain {
                    if s[u * nplain + w] {
                        col.push(w as i64);
                        vals.extend(block(bt, u, w));
                        count += 1;
                    }
                }
                crow.push(count);
            }
        }
        let shape = |last: &[usize]| [batch, last].concat();
        let blocks: &[usize] = if layout.is_block() { &blocksize } else { &[] };
        let args = CompressedArgs {
            layout,
            compressed_indices: index(&shape(&[ncomp + 1]), &crow),
            plain_indices: index(&shape(&[nnz]), &col),
            values: values(&[batch, &[nnz], blocks, dense].concat()),
            size: Some([batch, &[rows, cols], dense].concat()),
        };
        (args, vals)
    }

    use proptest::prelude::*;

    /// A random layout, batch shape, block size, block grid and dense shape, and a dense tensor
    /// of that shape with about half its elements zero.
    #[allow(clippy::type_complexity)]
    fn hybrid_case() -> impl Strategy<
        Value = (
            CompressedLayout,
            Vec<usize>,
            [usize; 2],
            [usize; 2],
            Vec<usize>,
            Vec<f64>,
        ),
    > {
        (
            proptest::sample::select(CompressedLayout::ALL.to_vec()),
            proptest::collection::vec(0usize..3, 0..3),
            [1usize..3, 1usize..3],
            [0usize..4, 0usize..4],
            proptest::collection::vec(0usize..3, 0..3),
        )
            .prop_flat_map(|(layout, batch, bs, grid, dense)| {
                let bs = if layout.is_block() { bs } else { [1, 1] };
                let n = batch.iter().product::<usize>()
                    * grid[0]
                    * bs[0]
                    * grid[1]
                    * bs[1]
                    * dense.iter().product::<usize>();
                let data = proptest::collection::vec(
                    prop_oneof![Just(0.0), (-3i8..4).prop_map(f64::from)],
                    n,
                );
                (
                    Just(layout),
                    Just(batch),
                    Just(bs),
                    Just([grid[0] * bs[0], grid[1] * bs[1]]),
                    Just(dense),
                    data,
                )
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Arguments built from a random dense tensor store that tensor, checked or not.
        #[test]
        fn batched_hybrid_storage_holds_the_dense_tensor(
            (layout, batch, bs, shape, dense, data) in hybrid_case()
        ) {
            let (args, vals) = compress(layout, &batch, shape, bs, &dense, &data);
            prop_assert!(validate_compressed(&args).is_ok(), "{:?}", validate_compressed(&args));
            let s = to_storage(&args, vals.clone()).unwrap();
            prop_assert_eq!(s.to_dense().unwrap(), data);
            prop_assert_eq!(s.values(), &vals[..]);
            prop_assert_eq!(s.encoding().lvl_types.len(), batch.len() + dense.len() + if layout.is_block() { 4 } else { 2 });
            // SAFETY: the arguments were just validated
            let unchecked = unsafe { to_storage_unchecked(&args, vals) }.unwrap();
            prop_assert_eq!(unchecked, s);
        }
    }
}
