//! The parts of a `sparse_format!` struct that are the same for every format, written once.
//!
//! The generated inherent methods (`from_coo_tensor`, `from_dense`, `to_dense`, `to_coo`,
//! `convert`, `spmv_par`, ...) are one-line calls into this module, so each generated struct
//! carries only what its format decides: its arrays, its assembly, its loops. A generated struct
//! implements [`Entries`] (its nested-loop visit); the functions here are generic over it.
//!
//! Shapes are dimension sizes in elements, `D` the dimension rank. Errors are
//! [`StorageError`]s, as the generated methods document them.

use std::any::Any;

use sparse_ir::ir::Encoding;

use crate::bucket;
use crate::dynamic;
use crate::index::IndexBuffer;
use crate::level::Builder;
use crate::packed::{CrdBuffer, PackedBuffer};
use crate::small_sort;
use crate::storage::{FromCoo, LevelIter, SparseStorage};
use crate::{CooTensor, DynamicStorage, Index, IndexSlice, StorageError, Value};

/// A tensor that can visit its stored entries in storage order with dimension coordinates:
/// what every generated struct provides (as nested loops over its levels).
pub trait Entries<const D: usize> {
    /// The value type.
    type Value;
    /// The dimension sizes.
    fn shape_array(&self) -> [usize; D];
    /// Calls `f(dimension coordinates, &value)` for every stored entry (explicit zeros
    /// included) in storage order.
    fn visit(&self, f: impl FnMut([usize; D], &Self::Value));

    /// The arrays of a two-level `dense, compressed` storage (CSR, CSC: ordered and unique,
    /// a permutation of the dimensions as its map, no slices), for a conversion that reads
    /// them directly instead of visiting; `None` (the default) for every other storage.
    fn compressed(&self) -> Option<Compressed<'_, Self::Value>> {
        None
    }
}

/// The arrays of a two-level `dense, compressed` storage ([`Entries::compressed`]): level 0
/// reads dimension `dims[0]` (every coordinate below `positions.len() - 1`), level 1 dimension
/// `dims[1]`; the entries of level-0 coordinate `r` are at positions `positions[r] ..
/// positions[r + 1]` of `coordinates` and `values`, coordinates strictly increasing within
/// each segment (the storage was validated when built).
#[derive(Clone, Copy, Debug)]
pub struct Compressed<'a, V> {
    /// The dimension each level reads: `[0, 1]` for CSR, `[1, 0]` for CSC.
    pub dims: [usize; 2],
    /// Level 1's positions: level-0 size + 1 elements.
    pub positions: IndexSlice<'a>,
    /// Level 1's coordinates: `nse` elements.
    pub coordinates: IndexSlice<'a>,
    /// The values: `nse` elements.
    pub values: &'a [V],
}

/// The shape of a COO tensor of rank `D` and its entries as `(coordinates, value)`, for
/// `from_coo`.
///
/// Errors: [`StorageError::RankMismatch`] if the rank is not `D`;
/// [`StorageError::LengthMismatch`] (operand `"COO coordinates"`) if there are not `D`
/// coordinates per value.
#[allow(clippy::type_complexity)]
pub fn coo_entries<const D: usize, V: Value>(
    coo: &CooTensor<V>,
) -> Result<([usize; D], impl Iterator<Item = ([usize; D], V)> + '_), StorageError> {
    let shape: [usize; D] =
        coo.shape
            .as_slice()
            .try_into()
            .map_err(|_| StorageError::RankMismatch {
                expected: D,
                got: coo.shape.len(),
            })?;
    let expected = coo.values.len().saturating_mul(D);
    if coo.coords.len() != expected {
        return Err(StorageError::LengthMismatch {
            operand: "COO coordinates",
            expected,
            got: coo.coords.len(),
        });
    }
    let entries = coo.coords.chunks_exact(D).map(|c| {
        let mut a = [0usize; D];
        a.copy_from_slice(c);
        a
    });
    Ok((shape, entries.zip(coo.values.iter().copied())))
}

/// The entries of a dense row-major array of `shape` (last dimension fastest) that are not
/// zero, as `(coordinates, value)`, for `from_coo`.
///
/// Errors: [`StorageError::ShapeOverflow`] if the element count does not fit `usize`;
/// [`StorageError::LengthMismatch`] (operand `"dense input"`) if `data.len()` is not the
/// product of `shape`.
pub fn dense_entries<const D: usize, V: Value>(
    shape: [usize; D],
    data: &[V],
) -> Result<impl Iterator<Item = ([usize; D], V)> + '_, StorageError> {
    let total = crate::dynamic::checked_product(&shape)?;
    if data.len() != total {
        return Err(StorageError::LengthMismatch {
            operand: "dense input",
            expected: total,
            got: data.len(),
        });
    }
    let mut idx = [0usize; D];
    Ok(data
        .iter()
        .enumerate()
        .filter(|(_, v)| !v.is_zero())
        .map(move |(flat, v)| {
            crate::dynamic::unflatten(flat, &shape, &mut idx);
            (idx, *v)
        }))
}

/// The dense row-major array (last dimension fastest) of `s`; stored duplicates are summed.
///
/// Errors: [`StorageError::ShapeOverflow`] if the element count does not fit `usize`.
pub fn to_dense<const D: usize, V: Value, S: Entries<D, Value = V>>(
    s: &S,
) -> Result<Vec<V>, StorageError> {
    let shape = s.shape_array();
    let total = crate::dynamic::checked_product(&shape)?;
    let mut out = vec![V::zero(); total];
    s.visit(|c, v| {
        let flat = c
            .iter()
            .zip(shape.iter())
            .fold(0usize, |acc, (c, s)| acc * s + c);
        out[flat] += *v;
    });
    Ok(out)
}

/// All stored entries of `s` (explicit zeros included) as a COO tensor in storage order;
/// `nse` is the number of stored entries (the capacity to reserve).
pub fn to_coo<const D: usize, V: Value, S: Entries<D, Value = V>>(
    s: &S,
    nse: usize,
) -> CooTensor<V> {
    let mut coo = CooTensor::new(s.shape_array().to_vec());
    coo.coords.reserve(nse.saturating_mul(D));
    coo.values.reserve(nse);
    s.visit(|c, v| coo.push(&c, *v));
    coo
}

/// `s` in another format `T`, re-assembled from the stored entries that are not zero (explicit
/// zeros of `s` are not carried over, as in `DynamicStorage::convert`), through
/// [`FromCoo::from_entries`] (for a generated `T`, [`assemble_entries`]).
///
/// Errors: as `T::from_coo_tensor`.
pub fn convert<const D: usize, V: Value, S: Entries<D, Value = V>, T: FromCoo<V>>(
    s: &S,
) -> Result<T, StorageError> {
    T::from_entries(s)
}

/// The stored entries of `s` that are not zero as a COO tensor, in `s`'s order (the default
/// of [`FromCoo::from_entries`]).
pub fn nonzero_coo<const D: usize, V: Value, S: Entries<D, Value = V>>(s: &S) -> CooTensor<V> {
    let mut coo = CooTensor::new(s.shape_array().to_vec());
    s.visit(|c, v| {
        if !v.is_zero() {
            coo.push(&c, *v);
        }
    });
    coo
}

/// [`assemble`] from the stored entries of `s` that are not zero, in `s`'s order: what a
/// conversion into a generated format runs. For a `dense, compressed` encoding (CSR, CSC:
/// level 0 dense, level 1 compressed, unique and ordered, owning its coordinates) `s` is
/// visited twice, as a transposition by counting sort (sprs's and SciPy's CSR-to-CSC
/// algorithm): once to count the entries of each level-0 coordinate, once to scatter each
/// entry's level-1 coordinate and value to its slot, into the final arrays with nothing in
/// between. When a segment then turns out not strictly increasing (`s` visits the entries of a
/// level-0 coordinate out of level-1 order, or holds duplicates), when a width cannot hold a
/// position or coordinate, or for any other encoding, the entries are collected in `s`'s
/// order and assembled by [`assemble`], so the arrays and errors are `assemble`'s either way.
///
/// Errors: as [`assemble`].
pub fn assemble_entries<
    const D: usize,
    const R: usize,
    const L: usize,
    V: Value,
    S: Entries<D, Value = V>,
>(
    encoding: &Encoding,
    shape: [usize; R],
    lvl_sizes: [usize; L],
    s: &S,
    dim_to_lvl: impl Fn(&[usize; R]) -> [usize; L],
) -> Result<Assembled<V>, StorageError> {
    if D != R {
        return Err(StorageError::RankMismatch {
            expected: R,
            got: D,
        });
    }
    // `s`'s coordinates as the format's (the same rank, checked above)
    let at = |c: [usize; D]| -> [usize; R] { std::array::from_fn(|d| c[d]) };
    let map = |c: &[usize; D]| dim_to_lvl(&at(*c));
    if L == 2 && transposes_by_counting(encoding) {
        if let Some(a) = counted(encoding, lvl_sizes, s, &map) {
            return Ok(a);
        }
    }
    let mut entries = Vec::new();
    s.visit(|c, v| {
        if !v.is_zero() {
            entries.push((at(c), *v));
        }
    });
    assemble(encoding.clone(), shape, lvl_sizes, entries, dim_to_lvl)
}

/// Whether [`assemble_entries`] may count: two levels, `dense` then `compressed`, ordered and
/// unique, level 1 owning a byte-aligned coordinate buffer, no ELL symbols or slices.
fn transposes_by_counting(enc: &Encoding) -> bool {
    use sparse_ir::ir::LevelFormat;
    let t = &enc.lvl_types;
    t.len() == 2
        && t[0].format == LevelFormat::Dense
        && t[1].format == LevelFormat::Compressed
        && t.iter().all(|x| x.is_ordered() && x.is_unique())
        && enc.owns_crd_buffer(1)
        && matches!(enc.crd_width, 0 | 8 | 16 | 32 | 64)
        && matches!(enc.pos_width, 0 | 8 | 16 | 32 | 64)
        && enc.dim_to_lvl.num_symbols == 0
        && enc.dim_slices.is_none()
}

/// The counting transposition of [`assemble_entries`]; `None` where it does not apply.
fn counted<const D: usize, const L: usize, V: Value, S: Entries<D, Value = V>>(
    enc: &Encoding,
    lvl_sizes: [usize; L],
    s: &S,
    dim_to_lvl: &impl Fn(&[usize; D]) -> [usize; L],
) -> Option<Assembled<V>> {
    let (n0, n1) = (lvl_sizes[0], lvl_sizes[1]);
    if let Some(src) = s.compressed() {
        if let Some(a) = direct(enc, lvl_sizes, s.shape_array(), &src, dim_to_lvl) {
            return Some(a);
        }
    }
    let mut pos = vec![0usize; n0.checked_add(1)?];
    // only the rare entry outside the level sizes writes the flag, so the loop keeps no
    // counter in memory
    let mut outside = false;
    s.visit(|c, v| {
        if v.is_zero() {
            return;
        }
        let lc = dim_to_lvl(&c);
        match pos.get_mut(lc[0] + 1) {
            Some(p) if lc[1] < n1 => *p += 1,
            _ => outside = true,
        }
    });
    crate::index::running_sum(&mut pos);
    let n = pos[n0];
    let fits = |width: u32, x: usize| width == 0 || width == 64 || (x as u64) < (1u64 << width);
    if outside || !fits(enc.pos_width, n) || !fits(enc.crd_width, n1.saturating_sub(1)) {
        return None;
    }
    let (coordinates, values) = match enc.crd_width {
        8 => scatter::<D, L, u8, V, S>(&pos, n, s, dim_to_lvl)?,
        16 => scatter::<D, L, u16, V, S>(&pos, n, s, dim_to_lvl)?,
        32 => scatter::<D, L, u32, V, S>(&pos, n, s, dim_to_lvl)?,
        64 => scatter::<D, L, u64, V, S>(&pos, n, s, dim_to_lvl)?,
        _ => scatter::<D, L, usize, V, S>(&pos, n, s, dim_to_lvl)?,
    };
    let positions = IndexBuffer::from_native(enc.pos_width, pos)?.ok()?;
    Some(Assembled {
        positions: PerLevel::Second(Some(positions)),
        coordinates: PerLevel::Second(Some(CrdBuffer::Plain(coordinates))),
        values,
    })
}

/// [`counted`] from a source's own arrays ([`Entries::compressed`]): the same counting sort, its
/// loops over the source's segments with no visit, each width a loop of its own. `None` where
/// it does not apply ( a map that is not a permutation of
/// the source's dimensions; a width that cannot hold a position or coordinate), and the caller
/// visits instead.
fn direct<const D: usize, const L: usize, V: Value>(
    enc: &Encoding,
    lvl_sizes: [usize; L],
    shape: [usize; D],
    src: &Compressed<'_, V>,
    dim_to_lvl: &impl Fn(&[usize; D]) -> [usize; L],
) -> Option<Assembled<V>> {
    if D != 2 || L != 2 {
        return None;
    }
    // which source level becomes the target's level 0: the map applied to distinct probes
    let probe: [usize; D] = std::array::from_fn(|d| d + 1);
    let lc = dim_to_lvl(&probe);
    let (src0, src1) = (src.dims[0] + 1, src.dims[1] + 1);
    let transpose = match (lc[0], lc[1]) {
        (a, b) if a == src1 && b == src0 => true,
        (a, b) if a == src0 && b == src1 => false,
        _ => return None,
    };
    let (n0, n1) = (lvl_sizes[0], lvl_sizes[1]);
    let nnz = src.values.len();
    let rows = src.positions.len().checked_sub(1)?;
    // the source's level sizes are the target's, exchanged when transposing
    let (src_rows, src_cols) = (shape[src.dims[0]], shape[src.dims[1]]);
    let fits = |width: u32, x: usize| width == 0 || width == 64 || (x as u64) < (1u64 << width);
    let sizes_agree = if transpose {
        (src_rows, src_cols) == (n1, n0)
    } else {
        (src_rows, src_cols) == (n0, n1)
    };
    if rows != src_rows
        || src.coordinates.len() != nnz
        || !sizes_agree
        || !fits(enc.pos_width, nnz)
        || !fits(enc.crd_width, n1.saturating_sub(1))
    {
        return None;
    }
    let (positions, coordinates, values) = match src.coordinates {
        IndexSlice::U8(c) => direct_from(src.positions, c, src.values, transpose, n0, enc)?,
        IndexSlice::U16(c) => direct_from(src.positions, c, src.values, transpose, n0, enc)?,
        IndexSlice::U32(c) => direct_from(src.positions, c, src.values, transpose, n0, enc)?,
        IndexSlice::U64(c) => direct_from(src.positions, c, src.values, transpose, n0, enc)?,
        IndexSlice::Native(c) => direct_from(src.positions, c, src.values, transpose, n0, enc)?,
    };
    Some(Assembled {
        positions: PerLevel::Second(Some(positions)),
        coordinates: PerLevel::Second(Some(CrdBuffer::Plain(coordinates))),
        values,
    })
}

/// The output size (coordinates and values, bytes) above which [`direct_typed`] fills its
/// arrays before scattering into them: the L2 of one core on the machines measured (AMD EPYC,
/// Zen 4: 1 MiB).
const FILL_BYTES: usize = 1 << 20;

/// Non-decreasing positions at `width` bits (0: native), `None` if the last does not fit: a
/// copy by truncating casts once the last is known to fit (they vectorize; the checked
/// conversion of `IndexBuffer::from_native` took 13 instructions a position, as much as a
/// fifth of a CSR-to-CSC conversion of jagmesh7).
fn narrow_positions<P: Index>(width: u32, v: &[P]) -> Option<IndexBuffer> {
    let last = v.last().map_or(0, |x| x.index());
    let fits = |bits: u32| bits >= usize::BITS || last >> bits == 0;
    Some(match width {
        0 => IndexBuffer::Native(v.iter().map(|x| x.index()).collect()),
        8 if fits(8) => IndexBuffer::U8(v.iter().map(|x| x.index() as u8).collect()),
        16 if fits(16) => IndexBuffer::U16(v.iter().map(|x| x.index() as u16).collect()),
        32 if fits(32) => IndexBuffer::U32(v.iter().map(|x| x.index() as u32).collect()),
        64 if fits(64) => IndexBuffer::U64(v.iter().map(|x| x.index() as u64).collect()),
        _ => return None,
    })
}

/// The target's positions (level-0 size + 1, at the target's position width), coordinates
/// (at its coordinate width) and values for [`direct`].
fn direct_from<C: Index, V: Value>(
    positions: IndexSlice<'_>,
    crd: &[C],
    values: &[V],
    transpose: bool,
    n0: usize,
    enc: &Encoding,
) -> Option<(IndexBuffer, IndexBuffer, Vec<V>)> {
    let w = enc.pos_width;
    match enc.crd_width {
        8 => direct_typed::<C, u8, V>(positions, crd, values, transpose, n0, w),
        16 => direct_typed::<C, u16, V>(positions, crd, values, transpose, n0, w),
        32 => direct_typed::<C, u32, V>(positions, crd, values, transpose, n0, w),
        64 => direct_typed::<C, u64, V>(positions, crd, values, transpose, n0, w),
        _ => direct_typed::<C, usize, V>(positions, crd, values, transpose, n0, w),
    }
}

/// [`direct_from`] for source coordinates `C` and target coordinates `T`, positions at
/// `pos_width` bits: transposing, [`transpose_typed`], its counts and cursors `u32` when the
/// source's last position fits (every count and segment bound then does), else `usize`;
/// otherwise the arrays copied at the target's widths.
fn direct_typed<C: Index, T: Index, V: Value>(
    positions: IndexSlice<'_>,
    crd: &[C],
    values: &[V],
    transpose: bool,
    n0: usize,
    pos_width: u32,
) -> Option<(IndexBuffer, IndexBuffer, Vec<V>)> {
    if !transpose {
        let out = crd
            .iter()
            .map(|c| T::from_usize(c.index()))
            .collect::<Option<Vec<T>>>()?;
        let mut arrays = (positions.to_vec(), out, values.to_vec());
        if values.iter().any(|v| v.is_zero()) {
            drop_zeros(&mut arrays);
        }
        let (pos, out, vals) = arrays;
        return Some((narrow_positions(pos_width, &pos)?, buffer_of(out)?, vals));
    }
    if positions.get(positions.len().checked_sub(1)?)? <= u32::MAX as usize {
        transpose_typed::<C, T, V, u32>(positions, crd, values, n0, pos_width)
    } else {
        transpose_typed::<C, T, V, usize>(positions, crd, values, n0, pos_width)
    }
}

/// The transposition of [`direct_typed`]: the count of each source coordinate, their prefix
/// sums, then each entry's source row number and value to the next slot of its coordinate
/// (rows are visited in order, so every target segment comes out increasing). The counts,
/// cursors and segment bounds are `P`, which must hold the source's last position (the
/// caller's choice: `u32` where it fits, half the bytes of `usize`, so a cursor array of up
/// to 8,192 coordinates stays in a 32 KiB L1: CSR-to-CSC of bcsstk16, 4,884 columns, 455
/// against 501 µs with `usize` cursors, bcsstk13 129 against 143 µs, scratch, interleaved,
/// Zen 4). Four allocations in all (a conversion of a small matrix is bound by them): the
/// three arrays and one of scratch, the source's segments and the counts.
fn transpose_typed<C: Index, T: Index, V: Value, P: Index + std::ops::Add<Output = P>>(
    positions: IndexSlice<'_>,
    crd: &[C],
    values: &[V],
    n0: usize,
    pos_width: u32,
) -> Option<(IndexBuffer, IndexBuffer, Vec<V>)> {
    let (zero, one) = (P::from_usize(0)?, P::from_usize(1)?);
    // the counts of each coordinate (`n0 + 1`: the scatter's cursors), then the source's
    // segments, in one allocation
    let mut scratch: Vec<P> = Vec::new();
    scratch
        .try_reserve_exact(n0.checked_add(1)?.checked_add(positions.len())?)
        .ok()?;
    scratch.resize(n0 + 1, zero);
    positions.extend_as(&mut scratch)?;
    let (pos, bounds) = scratch.split_at_mut(n0 + 1);
    // the segments, which must follow each other (validated arrays do): then they partition
    // `first..last` and the scatter below visits exactly the entries counted
    if bounds
        .windows(2)
        .fold(false, |down, w| down | (w[0] > w[1]))
    {
        return None;
    }
    let (first, last) = (bounds.first()?.index(), bounds.last()?.index());
    let (crd, values) = (crd.get(first..last)?, values.get(first..last)?);
    // a stored zero is not kept (`assemble` stores none): one pass looks for any (in chunks
    // that vectorize, up to the first holding one), and only where there are some do the count
    // and the scatter test each value (a test in the scatter cost jagmesh7, which stores none,
    // 20%: 14.0 against 11.7 µs)
    let zeros = values
        .chunks(256)
        .any(|chunk| chunk.iter().fold(false, |z, v| z | v.is_zero()));
    // which entries are kept, decided once: the count and the scatter then agree whatever
    // `is_zero` answers (it is the value type's own code)
    let keep: Vec<bool> = if zeros {
        values.iter().map(|v| !v.is_zero()).collect()
    } else {
        Vec::new()
    };
    if zeros {
        for (c, &k) in crd.iter().zip(&keep) {
            let n = pos.get_mut(c.index() + 1)?;
            *n = *n + if k { one } else { zero };
        }
    } else {
        for c in crd {
            let n = pos.get_mut(c.index() + 1)?;
            *n = *n + one;
        }
    }
    crate::index::running_sum(pos);
    let kept = pos[n0].index();
    // the target's positions are the counts' prefix sums, which the scatter then advances
    let positions = narrow_positions(pos_width, pos)?;
    // the scatter writes the output's lines in no order: one larger than a core's L2 is
    // filled in order first, which brings its lines into cache at the memory's full bandwidth
    // instead of one read for ownership at a time (bcsstk16's 3.5 MB, converted between other
    // kernels: 577 µs filled, 760-837 µs not); a smaller one is written unfilled (jagmesh7,
    // cryg2500: 8-10% faster than filled)
    let fill =
        kept.saturating_mul(std::mem::size_of::<T>() + std::mem::size_of::<V>()) > FILL_BYTES;
    let (mut out, mut vals): (Vec<T>, Vec<V>) = if fill {
        (vec![T::default(); kept], vec![V::zero(); kept])
    } else {
        (Vec::with_capacity(kept), Vec::with_capacity(kept))
    };
    let scatter = if zeros {
        scatter_rows::<true, C, T, V, P>
    } else {
        scatter_rows::<false, C, T, V, P>
    };
    // SAFETY: the segments partition `first..last` (checked above), `crd`, `values` and (with
    // zeros) `keep` are that range, every coordinate is below `n0` (counted above, the entries
    // `keep` drops left out) and `pos` holds the counts' prefix sums; `out` and `vals` have
    // room for the `kept` entries counted
    unsafe {
        scatter(
            bounds,
            first,
            crd,
            values,
            &keep,
            pos,
            out.as_mut_ptr(),
            vals.as_mut_ptr(),
        )?
    };
    // SAFETY: every slot of `0..kept` was written once (and, filled, initialized before): the
    // scatter wrote each counted entry of coordinate `c` to the next slot of
    // `pos[c]..pos[c + 1]`, which it fills
    unsafe {
        out.set_len(kept);
        vals.set_len(kept);
    }
    Some((positions, buffer_of(out)?, vals))
}

/// The scatter of [`direct_typed`]: each entry of row `r` (`bounds[r] - first ..
/// bounds[r + 1] - first` of `crd` and `values`) written as `(r, value)` to the next slot of
/// its coordinate, `next[c]`, which it advances; with `SKIP_ZEROS`, entry `p` is skipped
/// unless `keep[p]`. `None` if the last row number does not fit `T`.
///
/// # Safety
/// `bounds` is non-decreasing from `first` to `first + crd.len()`, `values.len() ==
/// crd.len()` (and `keep.len()`, with `SKIP_ZEROS`), every coordinate of `crd` is below
/// `next.len()`, and `next[c]` plus the number of entries with coordinate `c` (those `keep`
/// keeps, with `SKIP_ZEROS`) is at most the room of `out` and `vals` (`next` holds the prefix
/// sums of those counts).
#[allow(clippy::too_many_arguments)]
#[inline]
unsafe fn scatter_rows<
    const SKIP_ZEROS: bool,
    C: Index,
    T: Index,
    V: Value,
    P: Index + std::ops::Add<Output = P>,
>(
    bounds: &[P],
    first: usize,
    crd: &[C],
    values: &[V],
    keep: &[bool],
    next: &mut [P],
    out: *mut T,
    vals: *mut V,
) -> Option<()> {
    // every row number fits `T` when the last one does
    T::from_usize(bounds.len().saturating_sub(2))?;
    let one = P::from_usize(1)?;
    // each row's positions as a range of their own: a position carried from row to row (`while
    // p < end`) ran cryg2500's conversion 1.35x slower (scratch, interleaved, Zen 2)
    for (r, w) in bounds.windows(2).enumerate() {
        // SAFETY: `r <= bounds.len() - 2`, which fits `T` (checked above)
        let row = unsafe { T::from_usize(r).unwrap_unchecked() };
        for p in w[0].index() - first..w[1].index() - first {
            // SAFETY: `p < crd.len()` and `c < next.len()`, and coordinate `c` is met as many
            // times as it was counted, so `next[c]` stays within `out`'s and `vals`' room and
            // each slot is written at most once (the caller's promise)
            unsafe {
                if SKIP_ZEROS && !*keep.get_unchecked(p) {
                    continue;
                }
                let v = *values.get_unchecked(p);
                let slot = next.get_unchecked_mut(crd.get_unchecked(p).index());
                let at = *slot;
                *slot = at + one;
                out.add(at.index()).write(row);
                vals.add(at.index()).write(v);
            }
        }
    }
    Some(())
}

/// Removes the entries whose value is zero from compressed arrays `(positions, coordinates,
/// values)`, keeping the order of the rest (what `assemble` stores of the same entries).
fn drop_zeros<T: Copy, V: Value>(arrays: &mut (Vec<usize>, Vec<T>, Vec<V>)) {
    let (pos, crd, vals) = arrays;
    let mut k = 0;
    let mut lo = pos.first().copied().unwrap_or(0);
    for end in pos.iter_mut().skip(1) {
        let hi = *end;
        for p in lo..hi {
            if !vals[p].is_zero() {
                crd[k] = crd[p];
                vals[k] = vals[p];
                k += 1;
            }
        }
        lo = hi;
        *end = k;
    }
    crd.truncate(k);
    vals.truncate(k);
}

/// `v` as the [`IndexBuffer`] of its width.
fn buffer_of<T: Index>(v: Vec<T>) -> Option<IndexBuffer> {
    Some(match () {
        _ if T::WIDTH == 8 => IndexBuffer::U8(cast_vec(v)?),
        _ if T::WIDTH == 16 => IndexBuffer::U16(cast_vec(v)?),
        _ if T::WIDTH == 32 => IndexBuffer::U32(cast_vec(v)?),
        _ if T::WIDTH == 64 => IndexBuffer::U64(cast_vec(v)?),
        _ => IndexBuffer::Native(cast_vec(v)?),
    })
}

/// `v` as a `Vec<T>` if `X` is `T` (moved, with no box: a conversion into a small format
/// allocates nothing but its arrays), `None` otherwise.
fn cast_vec<X: Index, T: Index>(v: Vec<X>) -> Option<Vec<T>> {
    let mut v = Some(v);
    (&mut v as &mut dyn Any)
        .downcast_mut::<Option<Vec<T>>>()?
        .take()
}

/// The second pass of [`counted`]: each entry's level-1 coordinate (as `C`, which holds every
/// one: checked by the caller) and value to the next free slot of its level-0 coordinate, then
/// `None` unless every segment of `pos` is strictly increasing.
fn scatter<const D: usize, const L: usize, C: Index, V: Value, S: Entries<D, Value = V>>(
    pos: &[usize],
    n: usize,
    s: &S,
    dim_to_lvl: &impl Fn(&[usize; D]) -> [usize; L],
) -> Option<(IndexBuffer, Vec<V>)> {
    let mut next = pos.to_vec();
    let mut crd = vec![C::default(); n];
    let mut values = vec![V::zero(); n];
    s.visit(|c, v| {
        if v.is_zero() {
            return;
        }
        let lc = dim_to_lvl(&c);
        // the slot read once: the stores below cannot change it
        let at = next[lc[0]];
        next[lc[0]] = at + 1;
        // fits: the caller checked the largest coordinate against the width
        crd[at] = C::from_usize(lc[1]).unwrap_or_default();
        values[at] = *v;
    });
    let increasing = pos
        .windows(2)
        .all(|g| crd[g[0]..g[1]].windows(2).all(|w| w[0] < w[1]));
    if !increasing {
        return None;
    }
    Some((buffer_of(crd)?, values))
}

/// Checks `shape` (dimension sizes) against a declared static shape (`None` entries are
/// dynamic) and against the format's blocks: `(dimension, block size)` for each `d floordiv b`
/// level (PyTorch's BSR rule: a blocked dimension is a multiple of its block).
///
/// Errors: [`StorageError::ShapeMismatch`] naming the first static dimension that differs;
/// then [`StorageError::BlockShape`] naming the first blocked dimension that is not a multiple.
pub fn check_shape<const D: usize>(
    shape: &[usize; D],
    static_shape: Option<[Option<usize>; D]>,
    blocks: &[(usize, usize)],
) -> Result<(), StorageError> {
    for (dim, (want, &got)) in static_shape.iter().flatten().zip(shape).enumerate() {
        if let Some(&expected) = want.as_ref().filter(|&&w| w != got) {
            return Err(StorageError::ShapeMismatch { dim, expected, got });
        }
    }
    for &(dim, block) in blocks {
        let size = shape.get(dim).copied().unwrap_or(0);
        if block == 0 || size % block != 0 {
            return Err(StorageError::BlockShape { dim, size, block });
        }
    }
    Ok(())
}

/// Checks the operands of `y = A · x` for a matrix of `shape` (rows, columns).
///
/// Errors: [`StorageError::LengthMismatch`] naming `"x"` (must have `shape[1]` elements) or
/// `"y"` (must have `shape[0]`).
pub fn check_spmv(shape: [usize; 2], x: usize, y: usize) -> Result<(), StorageError> {
    if x != shape[1] {
        return Err(StorageError::LengthMismatch {
            operand: "x",
            expected: shape[1],
            got: x,
        });
    }
    if y != shape[0] {
        return Err(StorageError::LengthMismatch {
            operand: "y",
            expected: shape[0],
            got: y,
        });
    }
    Ok(())
}

/// How a kernel runs (faer's `Par`): on the calling thread, or split over `n` rayon tasks.
/// A kernel declared with a `par: Par` parameter takes it (`sparse::Par`); `Par::rayon(0)`
/// uses as many tasks as rayon has threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Par {
    /// Sequential, on the calling thread.
    Seq,
    /// Split over this many rayon tasks (of the global pool).
    Rayon(std::num::NonZeroUsize),
}

impl Par {
    /// `Par::Rayon(n)`, with `n = 0` meaning rayon's current number of threads.
    pub fn rayon(n: usize) -> Par {
        let n = if n == 0 {
            rayon::current_num_threads()
        } else {
            n
        };
        Par::Rayon(std::num::NonZeroUsize::new(n).unwrap_or(std::num::NonZeroUsize::MIN))
    }
}

/// Runs a row kernel as `par` says: `rows(y, 0)` for [`Par::Seq`]; for [`Par::Rayon`] as
/// [`par_rows`] with `n` tasks (ranges of about equal `before` work). The result is the same
/// either way (each unit is computed by the same loops).
pub fn par_rows_with<V: Send>(
    par: Par,
    y: &mut [V],
    unit: usize,
    before: impl Fn(usize) -> usize,
    rows: impl Fn(&mut [V], usize) + Sync,
) {
    let done: Result<(), std::convert::Infallible> = par_rows_try(par, y, unit, before, |y, r| {
        rows(y, r);
        Ok(())
    });
    match done {
        Ok(()) => {}
        Err(never) => match never {},
    }
}

/// [`par_rows_with`] for a row kernel that can fail (an integer division by zero): the error
/// of a range that failed is returned (which one, when several fail, depends on the
/// schedule); ranges not started by then are skipped, so `y` is partly written.
///
/// `y` is split into four ranges per task (`RANGES_PER_TASK`), of about equal `before` work,
/// which the tasks take one after the other until none is left: a thread that rayon wakes
/// late, or that loses its CPU for a while, takes fewer (bcsstk16's SpMV on 2 vCPUs of a
/// shared machine, a scratch run of 2026-11-28, six rounds of interleaved 2 ms turns: the
/// median turn at 1.35-1.79x the serial kernel with one range per task, 1.58-1.82x with four).
///
/// The calling thread takes ranges itself while rayon's threads take the others
/// (`rayon::in_place_scope`), rather than handing all of them to the pool and sleeping until
/// they are done: on 2 vCPUs that sleep and wake-up cost bcsstk16's SpMV (70 µs serial) 10 µs
/// a call with rayon's threads pinned, and made it slower than the serial kernel without.
pub fn par_rows_try<V: Send, E: Send>(
    par: Par,
    y: &mut [V],
    unit: usize,
    before: impl Fn(usize) -> usize,
    rows: impl Fn(&mut [V], usize) -> Result<(), E> + Sync,
) -> Result<(), E> {
    let tasks = match par {
        Par::Seq => return rows(y, 0),
        Par::Rayon(n) => n.get(),
    };
    let units = y.len() / unit.max(1);
    let splits = crate::storage::balanced_splits(units, tasks * RANGES_PER_TASK, before);
    let mut ranges = Vec::with_capacity(splits.len());
    let mut rest: &mut [V] = y;
    for w in splits.windows(2) {
        let (chunk, tail) = std::mem::take(&mut rest).split_at_mut((w[1] - w[0]) * unit);
        rest = tail;
        if !chunk.is_empty() {
            ranges.push(std::sync::Mutex::new(Some((chunk, w[0]))));
        }
    }
    let failed = std::sync::atomic::AtomicBool::new(false);
    let error: std::sync::Mutex<Option<E>> = std::sync::Mutex::new(None);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let finished = std::sync::atomic::AtomicUsize::new(0);
    // each task takes the next range not yet taken until none is left (a range is taken once:
    // its index comes from `next`), so a thread that starts late or runs slowly takes fewer
    let claim = || loop {
        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let Some(range) = ranges.get(k) else {
            return;
        };
        let range = range
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some((chunk, row0)) = range {
            if !failed.load(std::sync::atomic::Ordering::Relaxed) {
                if let Err(e) = rows(chunk, row0) {
                    failed.store(true, std::sync::atomic::Ordering::Relaxed);
                    error
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .get_or_insert(e);
                }
            }
        }
        finished.fetch_add(1, std::sync::atomic::Ordering::Release);
    };
    let claim = &claim;
    let helpers = tasks.min(ranges.len()).saturating_sub(1);
    rayon::in_place_scope(|scope| {
        for _ in 0..helpers {
            scope.spawn(move |_| claim());
        }
        claim();
        // the ranges other threads took are usually a few µs from done: spin (at most
        // SPIN_WAIT) rather than reach the scope's end early, where a thread outside the pool
        // sleeps until woken, a wake-up of 5-20 µs on a small virtual machine (a thread of the
        // pool waits there by running queued work, so it goes on)
        let outside_pool = rayon::current_thread_index().is_none();
        let start = std::time::Instant::now();
        while outside_pool && finished.load(std::sync::atomic::Ordering::Acquire) < ranges.len() {
            for _ in 0..64 {
                std::hint::spin_loop();
            }
            if start.elapsed() > SPIN_WAIT {
                break;
            }
        }
    });
    match error
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
    {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Integer division as generated kernels compute it: wrapping (`MIN / -1` is `MIN`), and
/// [`StorageError::DivisionByZero`] for a zero divisor,
/// as the interpreter (MLIR's `arith.divsi`/`divui` leave that case undefined; here it is an
/// error, never a panic).
pub trait IntDiv: Sized {
    /// `self / d`, wrapping; an error when `d` is zero.
    fn int_div(self, d: Self) -> Result<Self, crate::StorageError>;
}

macro_rules! int_div {
    ($($t:ty),*) => {$(
        impl IntDiv for $t {
            #[inline]
            fn int_div(self, d: Self) -> Result<Self, crate::StorageError> {
                if d == 0 {
                    Err(crate::StorageError::DivisionByZero)
                } else {
                    Ok(self.wrapping_div(d))
                }
            }
        }
    )*};
}
int_div!(i8, i16, i32, i64, u8, u16, u32, u64);

/// `i1`: a division by 1 keeps the dividend.
impl IntDiv for crate::value::I1 {
    #[inline]
    fn int_div(self, d: Self) -> Result<Self, crate::StorageError> {
        if d.0 {
            Ok(self)
        } else {
            Err(crate::StorageError::DivisionByZero)
        }
    }
}

/// `a / d` for a generated kernel on integers ([`IntDiv`]).
#[inline]
pub fn int_div<T: IntDiv>(a: T, d: T) -> Result<T, crate::StorageError> {
    a.int_div(d)
}

/// How a dense matrix lies in a slice (the built-in `spmm`'s `B` and `C`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DenseOrder {
    /// Row after row: element `(r, c)` of an `m x n` matrix at `r * n + c` (C, NumPy).
    RowMajor,
    /// Column after column: element `(r, c)` at `c * m + r` (Fortran, BLAS, faer, nalgebra).
    ColMajor,
}

/// How long the calling thread of [`par_rows_try`] spins, after its own range, waiting for the
/// ranges it handed to rayon's threads before it blocks.
const SPIN_WAIT: std::time::Duration = std::time::Duration::from_micros(200);

/// The ranges per task of [`par_rows_try`]: the tasks take them one after the other, so that a
/// thread that starts late (woken from sleep) or loses its CPU for a while leaves its share
/// to the others, at the cost of one uncontended lock per range.
const RANGES_PER_TASK: usize = 4;

/// The fewest stored values a task of [`par_rows`] gets: a smaller matrix runs on the calling
/// thread. Handing a range to another thread and waiting for it costs about 10-20 µs on a
/// small virtual machine, the time of some 50,000 entries of SpMV (cryg2500's 12,349 entries:
/// 4 µs serial, 23 µs split in two).
pub const PAR_MIN_ENTRIES: usize = 1 << 16;

/// The tasks [`par_rows`] splits a kernel reading `values` stored values into: one per rayon
/// thread, none with fewer than [`PAR_MIN_ENTRIES`] values (1: the calling thread runs it
/// all). A generated `spmv_par` runs its serial `spmv` when this is 1: through the row-range
/// form, cryg2500's SpMV ran 3-8% slower than `spmv` (scratch, interleaved, Zen 2).
#[inline]
pub fn par_tasks(values: usize) -> usize {
    match values / PAR_MIN_ENTRIES {
        // (no look at rayon's pool for a small kernel)
        0 | 1 => 1,
        most => rayon::current_num_threads().min(most),
    }
}

/// Runs a row kernel over `y` in parallel (rayon). `y` holds `unit` elements per row unit (1
/// for CSR, the block height for BSR); `values` is the number of stored values the kernel
/// reads (`nse()`: a BSR block counts its block's values, a loose CSR row its segment), which
/// decides the number of tasks: one per rayon thread but none for fewer than
/// [`PAR_MIN_ENTRIES`] values. `before(r)` is the work before unit `r` (non-decreasing,
/// defined for `r <= units`; level 1's positions for CSR and BSR, `r` itself when rows have no
/// back-to-back segments), used to split the units into ranges of about equal work, each task
/// taking four ranges on average (`RANGES_PER_TASK`; the calling thread is one of the tasks,
/// [`par_rows_try`]); `rows(chunk, first_unit)` computes the part of `y` starting at unit
/// `first_unit`. The result equals one serial `rows(y, 0)`.
pub fn par_rows<V: Send>(
    y: &mut [V],
    unit: usize,
    values: usize,
    before: impl Fn(usize) -> usize,
    rows: impl Fn(&mut [V], usize) + Sync,
) {
    let tasks = par_tasks(values);
    par_rows_with(
        if tasks <= 1 {
            Par::Seq
        } else {
            Par::rayon(tasks)
        },
        y,
        unit,
        before,
        rows,
    );
}

/// Assembles entries `(dimension coordinates, value)` in any order into the arrays of `encoding`
/// on a tensor of dimension sizes `shape` (level sizes `lvl_sizes`), mapping coordinates with
/// the generated `dim_to_lvl`: MLIR's `lexInsert` / `endPath` over the level formats' units
/// (`level/`), as [`DynamicStorage::from_coo`] does, in level order (`level_order`, with
/// `nonordered` levels in first-occurrence order), duplicates summed when the last level is
/// unique, batch positions rebased and narrowed in place. A generated struct takes its typed
/// arrays out of the result with [`Assembled::positions`] and [`Assembled::coordinates`].
/// Dimension slices of `encoding` are ignored (a sliced format stores its parent's arrays); an
/// ELL counting map goes through [`DynamicStorage::from_coo`], which assigns the slices.
///
/// When every level is ordered, level 0 has at most `2^32` coordinates and the levels below it
/// fit a 64-bit key, the entries are assembled by counting sort (`bucket.rs`): read once into
/// flat arrays (level-0 coordinate as `u32`, levels `1..` packed in a `u32` or `u64` key,
/// values), a histogram over level 0 and its prefix sum, one stable scatter of keys and values
/// into their level-0 group, a stable sort of each group by key; `dense, compressed, dense*`
/// encodings (CSR, CSC, BSR, BSC) then get their arrays directly, the others through
/// `lexInsert`. Duplicates are summed in input order either way, so the arrays and values are
/// the sorting assembly's bit for bit. From 2^20 entries on (by the iterator's lower size
/// bound) the entries are read into coarse groups of consecutive level-0 coordinates instead
/// (`bucket::CoarsePlan`: about 2^15 entries a group), each group then put in order on its
/// own by an LSD radix sort within the caches, so that no pass scatters at random over all
/// entries (11.6M shuffled entries assemble in about two thirds of the time); CSR, CSC, BSR
/// and BSC then take each sorted group straight into their arrays (`bucket::build_coarse`).
/// When the map is made of dimensions, `floordiv` and `mod` by constants and `lvl_sizes` are
/// the sizes it gives (`Encoding::lvl_sizes`), an entry inside `shape` is inside every level,
/// and the level coordinates are not tested entry by entry.
/// Extra memory at the peak: 24 bytes per entry for `u32` keys and `f64` values (the flat
/// arrays or groups and the sorted result; for BSR the groups and the blocks' values) plus 4
/// bytes per level-0 coordinate, for entries whose iterator reports its length. Otherwise
/// (and for level 0 above `4n + 1024` coordinates for `n` entries) the entries are sorted as
/// `[usize; L]` keys.
///
/// Errors: [`StorageError::InvalidEncoding`] if `encoding` breaks a rule of the language (it is
/// verified first: a generated struct's encoding was verified when it was generated, so this
/// only reports a verifier that changed in between); [`StorageError::CoordinateOutOfRange`]
/// naming the entry, dimension and value; [`StorageError::ShapeOverflow`] for a batch count or
/// positions array that cannot be had; otherwise as [`DynamicStorage::from_coo`]
/// (`WidthOverflow`, `NOutOfMOverflow`, `EllRowOverflow`, `BatchNse`, ...).
pub fn assemble<const D: usize, const L: usize, V: Value>(
    mut encoding: Encoding,
    shape: [usize; D],
    lvl_sizes: [usize; L],
    entries: impl IntoIterator<Item = ([usize; D], V)>,
    dim_to_lvl: impl Fn(&[usize; D]) -> [usize; L],
) -> Result<Assembled<V>, StorageError> {
    encoding.dim_slices = None;
    let encoding = verified(encoding)?;
    let entries = entries.into_iter();
    let cap = entries.size_hint().0;
    if encoding.dim_to_lvl.num_symbols > 0 {
        let mut coo = CooTensor::new(shape.to_vec());
        coo.coords.reserve(cap.saturating_mul(D));
        coo.values.reserve(cap);
        for (c, v) in entries {
            coo.push(&c, v);
        }
        let raw = DynamicStorage::from_coo(&encoding, &coo)?.into_raw_parts();
        return Ok(Assembled {
            positions: PerLevel::All(raw.positions),
            coordinates: PerLevel::All(raw.coordinates),
            values: raw.values,
        });
    }
    let ordered = encoding.lvl_types.iter().all(|t| t.is_ordered());
    let layout = bucket::KeyLayout::new(&lvl_sizes)
        .filter(|_| L >= 1 && ordered && lvl_sizes[0] <= u32::MAX as usize);
    match layout {
        Some(k) => {
            let coarse = bucket::CoarsePlan::new(cap, lvl_sizes[0], k.bits);
            let enc = &encoding;
            if coarse.map_or(k.bits, |c| c.key_bits()) <= 32 {
                assemble_counting::<u32, D, L, V>(
                    enc, shape, lvl_sizes, &k, entries, dim_to_lvl, coarse,
                )
            } else {
                assemble_counting::<u64, D, L, V>(
                    enc, shape, lvl_sizes, &k, entries, dim_to_lvl, coarse,
                )
            }
        }
        None => {
            let mut keys: Vec<[usize; L]> = Vec::with_capacity(cap);
            let mut vals: Vec<V> = Vec::with_capacity(cap);
            for (entry, (c, v)) in entries.enumerate() {
                if let Some(dim) = (0..D).find(|&d| c[d] >= shape[d]) {
                    return Err(StorageError::CoordinateOutOfRange {
                        entry,
                        dim,
                        coordinate: c[dim],
                        size: shape[dim],
                    });
                }
                keys.push(dim_to_lvl(&c));
                vals.push(v);
            }
            assemble_keys(&encoding, shape, lvl_sizes, keys, vals)
        }
    }
}

/// [`assemble`] by counting sort ([`bucket`]): entries read once into flat arrays, grouped by
/// level-0 coordinate and sorted within groups, then turned into the level arrays. Falls back to
/// [`assemble_keys`] where the counting sort does not apply (level 0 larger than `4n + 1024`,
/// more than `u32::MAX - 1` entries, a level coordinate past its level size).
fn assemble_counting<P: bucket::Word, const D: usize, const L: usize, V: Value>(
    encoding: &Encoding,
    shape: [usize; D],
    lvl_sizes: [usize; L],
    layout: &bucket::KeyLayout,
    entries: impl IntoIterator<Item = ([usize; D], V)>,
    dim_to_lvl: impl Fn(&[usize; D]) -> [usize; L],
    coarse: Option<bucket::CoarsePlan>,
) -> Result<Assembled<V>, StorageError> {
    // a map of dimensions, `floordiv` and `mod` by constants keeps every entry inside
    // `shape` inside the level sizes it gives: no level is then tested entry by entry
    let in_range = encoding
        .lvl_sizes(&shape)
        .is_some_and(|s| s[..] == lvl_sizes[..]);
    let read = bucket::read::<P, V, D, L>(
        layout, shape, lvl_sizes, entries, dim_to_lvl, coarse, in_range,
    )?;
    let (batches, batch_levels) = batch_count(encoding, shape, &lvl_sizes)?;
    let merge = encoding.lvl_types.last().is_some_and(|t| t.is_unique());
    let bucketed = match read {
        bucket::Read::Fast(c) => match bucket::bucket(c, lvl_sizes[0]) {
            Ok(b) => b,
            Err(c) => {
                let (keys, vals) = c.into_keys::<L>(layout);
                return assemble_keys(encoding, shape, lvl_sizes, keys, vals);
            }
        },
        bucket::Read::Coarse(c) if bucket::builds_from_groups(encoding, &lvl_sizes, &c, merge) => {
            // CSR, BSR and their column-major twins straight from the sorted groups
            let mut b = Builder::new(encoding, &lvl_sizes, batches)?;
            bucket::build_coarse::<P, V, L>(&mut b, layout, c, lvl_sizes[0], merge)?;
            return finish(encoding, b, batches, batch_levels);
        }
        bucket::Read::Coarse(c) => bucket::bucket_coarse(c, lvl_sizes[0]),
        bucket::Read::Keys(keys, vals) => {
            return assemble_keys(encoding, shape, lvl_sizes, keys, vals)
        }
    };
    let mut b = Builder::new(encoding, &lvl_sizes, batches)?;
    bucket::build::<P, V, L>(&mut b, layout, bucketed, merge)?;
    finish(encoding, b, batches, batch_levels)
}

/// The number of batches (product of the leading batch level sizes) and of batch levels.
///
/// Errors: [`StorageError::ShapeOverflow`] naming `shape` if the product overflows.
fn batch_count<const D: usize>(
    encoding: &Encoding,
    shape: [usize; D],
    lvl_sizes: &[usize],
) -> Result<(usize, usize), StorageError> {
    let batch_levels = encoding
        .lvl_types
        .iter()
        .take_while(|t| t.capabilities().batch)
        .count();
    let batches = lvl_sizes[..batch_levels]
        .iter()
        .try_fold(1usize, |a, &s| a.checked_mul(s))
        .ok_or_else(|| StorageError::ShapeOverflow {
            shape: shape.to_vec(),
        })?;
    Ok((batches, batch_levels))
}

/// [`assemble`] from level keys and values in input order (the sorting assembly: `level_order`,
/// with `nonordered` levels in first-occurrence order, then `lexInsert`).
fn assemble_keys<const D: usize, const L: usize, V: Value>(
    encoding: &Encoding,
    shape: [usize; D],
    lvl_sizes: [usize; L],
    keys: Vec<[usize; L]>,
    vals: Vec<V>,
) -> Result<Assembled<V>, StorageError> {
    let n = keys.len();
    let flat = keys.as_flattened();
    let nonordered: Vec<bool> = encoding.lvl_types.iter().map(|t| !t.is_ordered()).collect();
    let size0 = lvl_sizes.first().copied().unwrap_or(0);
    let order = match dynamic::nonordered_sort_keys(flat, L, n, &nonordered) {
        Some(sort_keys) => dynamic::level_order(&sort_keys, L, n, n.max(size0)),
        None => dynamic::level_order(flat, L, n, size0),
    };
    let (batches, batch_levels) = batch_count(encoding, shape, &lvl_sizes)?;
    let merge = encoding.lvl_types.last().is_some_and(|t| t.is_unique());
    let mut b = Builder::new(encoding, &lvl_sizes, batches)?;
    let mut k = 0;
    let mut first = true;
    while k < n {
        let e = order[k];
        let mut v = vals[e];
        k += 1;
        if merge {
            while k < n && keys[order[k]] == keys[e] {
                v += vals[order[k]];
                k += 1;
            }
        }
        b.lex_insert(first, &keys[e], v)?;
        first = false;
    }
    b.end_insert(n == 0)?;
    finish(encoding, b, batches, batch_levels)
}

/// The arrays of a finished builder: without batch levels as they are; with them, positions
/// rebased to batch-local numbers and narrowed to `posWidth` in place.
///
/// Errors: [`StorageError::BatchNse`] if batches store different numbers of positions;
/// [`StorageError::WidthOverflow`] if a rebased position does not fit `posWidth`.
fn finish<V: Value>(
    encoding: &Encoding,
    b: Builder<'_, V>,
    batches: usize,
    batch_levels: usize,
) -> Result<Assembled<V>, StorageError> {
    let types = &encoding.lvl_types;
    let Builder {
        positions: global,
        coordinates,
        values,
        ..
    } = b;
    // without batch levels the positions are final; with them, rebase and narrow in place
    let mut positions = Vec::with_capacity(global.len());
    for (l, p) in global.into_iter().enumerate() {
        positions.push(match p {
            Some(IndexBuffer::Native(mut g)) if batch_levels > 0 => {
                dynamic::rebase_batches_in_place(l, types[l].format, &mut g, batches)?;
                let width = encoding.pos_width;
                let narrowed = IndexBuffer::from_native(width, g)
                    .ok_or_else(|| StorageError::Unsupported {
                        reason: format!("posWidth = {width}"),
                    })?
                    .map_err(|value| StorageError::WidthOverflow {
                        level: l,
                        kind: crate::BufferKind::Position,
                        value,
                        width,
                    })?;
                Some(narrowed)
            }
            p => p,
        });
    }
    Ok(Assembled {
        positions: PerLevel::All(positions),
        coordinates: PerLevel::All(coordinates),
        values,
    })
}

/// For a generated format whose encoding has an `explicitVal` (it stores no values array):
/// checks that every value assembly produced (`values`, one per stored position of `s`, in
/// storage order; input entries after duplicates are summed, and the explicit zeros the format
/// stores) equals the constant `s` holds ([`SparseStorage::explicit_value`]); `Ok` for a format
/// without one.
///
/// Errors: [`StorageError::ExplicitValueMismatch`] naming the first entry in storage order that
/// differs, by its dimension coordinates (`lvl_to_dim` of its level coordinates), its value and
/// the constant.
pub fn check_explicit<S, const L: usize, const D: usize>(
    s: &S,
    values: &[S::Value],
    lvl_to_dim: impl Fn(&[usize; L]) -> [usize; D],
) -> Result<(), StorageError>
where
    S: SparseStorage,
    S::Value: Value,
{
    let Some(explicit) = s.explicit_value() else {
        return Ok(());
    };
    crate::storage::check_explicit_values(explicit, values, |p| {
        LevelIter::<S, L>::new(s)
            .find(|&(_, q)| q == p)
            .map(|(lc, _)| lvl_to_dim(&lc).to_vec())
            .unwrap_or_default()
    })
}

/// The arrays [`assemble`] built, per level, to be moved (not copied) into a generated struct's
/// typed fields.
#[derive(Debug)]
pub struct Assembled<V> {
    positions: PerLevel<IndexBuffer>,
    coordinates: PerLevel<CrdBuffer>,
    /// One value per stored position of the last level.
    pub values: Vec<V>,
}

/// An array (or none) per level: every level's, or only level 1's (a two-level `dense,
/// compressed` format's, which [`direct`] builds with no allocation beyond the arrays).
#[derive(Debug)]
enum PerLevel<T> {
    /// Level `l`'s array at `l`.
    All(Vec<Option<T>>),
    /// Level 1's array; the other levels have none.
    Second(Option<T>),
}

impl<T> PerLevel<T> {
    /// Takes level `l`'s array, `None` if it has none (or it was taken).
    fn take(&mut self, l: usize) -> Option<T> {
        match self {
            PerLevel::All(v) => v.get_mut(l).and_then(Option::take),
            PerLevel::Second(x) if l == 1 => x.take(),
            PerLevel::Second(_) => None,
        }
    }
}

impl<V> Assembled<V> {
    /// Takes the positions array of level `l` as a `Vec<T>` (`T` of width `posWidth`).
    ///
    /// Errors: [`StorageError::RawParts`] naming the level if it has no positions array of
    /// that width (a generated struct that disagrees with its encoding).
    pub fn positions<T: Index>(&mut self, l: usize) -> Result<Vec<T>, StorageError> {
        let buf = self.positions.take(l);
        buf.and_then(index_vec)
            .ok_or_else(|| mismatch(l, "positions"))
    }

    /// Takes the coordinate buffer level `l` owns as the field type `B` (`Vec<T>` of width
    /// `crdWidth`, or a `PackedBuffer` for the packed widths).
    ///
    /// Errors: [`StorageError::RawParts`] naming the level if it owns no such buffer.
    pub fn coordinates<B: CoordinateField>(&mut self, l: usize) -> Result<B, StorageError> {
        let buf = self.coordinates.take(l);
        buf.and_then(B::from_buffer)
            .ok_or_else(|| mismatch(l, "coordinates"))
    }
}

fn mismatch(level: usize, what: &str) -> StorageError {
    StorageError::RawParts {
        level,
        reason: format!("assembly gave no {what} of the generated field's type"),
    }
}

/// The `Vec<T>` inside `buf` if its elements are `T` (moved, not copied).
fn index_vec<T: Index>(buf: IndexBuffer) -> Option<Vec<T>> {
    match buf {
        IndexBuffer::U8(v) => cast_vec(v),
        IndexBuffer::U16(v) => cast_vec(v),
        IndexBuffer::U32(v) => cast_vec(v),
        IndexBuffer::U64(v) => cast_vec(v),
        IndexBuffer::Native(v) => cast_vec(v),
    }
}

/// The type of a generated coordinate field: `Vec<T>` for the byte widths, `PackedBuffer` for
/// the packed ones (1, 2, 4 bits; n:m levels).
pub trait CoordinateField: Sized {
    /// The field from an assembled buffer; `None` if the buffer holds other elements.
    fn from_buffer(buf: CrdBuffer) -> Option<Self>;
}

impl<T: Index> CoordinateField for Vec<T> {
    fn from_buffer(buf: CrdBuffer) -> Option<Self> {
        match buf {
            CrdBuffer::Plain(b) => index_vec(b),
            CrdBuffer::Packed(_) => None,
        }
    }
}

impl CoordinateField for PackedBuffer {
    fn from_buffer(buf: CrdBuffer) -> Option<Self> {
        match buf {
            CrdBuffer::Packed(b) => Some(b),
            CrdBuffer::Plain(_) => None,
        }
    }
}

/// The most coordinates of a row that [`Touched::take_sorted`] sorts with `sort_unstable` (whose
/// small-input sort costs less than any scan) on a machine without the SIMD network; a row
/// with more may be read back from a bitmap instead. (24 instead made
/// no difference on bayer10, whose rows of `A·A` hold 31 coordinates on average; 16 cost
/// jagmesh7's rows of 17 15%: scratch runs, 2026-11-25.)
pub const SORT_TOUCHED_DIRECT: usize = 32;

/// [`SORT_TOUCHED_DIRECT`] where the machine has the SIMD network (`small_sort`) and the workspace
/// is at most 65,536 columns wide (coordinates in 16-bit lanes), which sorts up to this many
/// coordinates without a data-dependent branch: rows of 33 to 128 spread over the columns cost
/// it less than marking their bits and reading them back word by word (bayer10's `A·A`: 5,103
/// rows of 33 to 128 coordinates, a row spanning 7,363 of 13,436 columns on average: with the
/// network up to 64, 2.47 ms instead of 2.75 ms; up to 128, 2.17 ms instead of 2.46 ms; scratch
/// runs on an AMD EPYC (Zen 4), 2026-11-28).
pub const SORT_TOUCHED_NETWORK: usize = small_sort::NETWORK_MAX;

/// [`SORT_TOUCHED_NETWORK`] for a workspace wider than 65,536 columns (coordinates in 32-bit
/// lanes, eight a register).
pub const SORT_TOUCHED_NETWORK_WIDE: usize = small_sort::WIDE_MAX;

/// The most bitmap words of a [`Touched`] whose every row marks its bits on a machine without
/// the SIMD network (a workspace of at most 256 coordinates): reading all its words costs less
/// than sorting even a short row there.
pub const TOUCHED_TINY_WORDS: usize = 4;

/// The coordinates a generated kernel's workspace touched in one row (MLIR's `expand`/`compress`
/// keep them as their `added` list), in the order first touched, given back in increasing order
/// for the insertion into the output.
///
/// A row of up to [`SORT_TOUCHED_NETWORK`] coordinates ([`SORT_TOUCHED_NETWORK_WIDE`] for a
/// workspace of more than 65,536 columns, [`SORT_TOUCHED_DIRECT`] without the SIMD network) is
/// sorted: from 17 coordinates on by a
/// SIMD sorting network where the machine has AVX2 (`small_sort`: bayer10's rows of 17 to 32
/// in 83 ns instead of 176 ns on Zen 1), by `sort_unstable` otherwise. A row with more, once
/// summed, sets one bit per coordinate in a bitmap of `n` bits, and one bit per non-zero word of
/// it in a summary, and comes out of the non-zero words the summary names (`trailing_zeros`,
/// each word cleared on the way) when the summary words between its least and greatest
/// coordinate (one per 4,096 coordinates) number fewer than `m * log2 m` for its `m`
/// coordinates (a row's extraction visits those summary words, not all of them); otherwise it
/// is sorted too. On `A·A` of bcsstk13 (198 coordinates per row, 2,003 columns) the bitmap took
/// the SpGEMM from 1.6x to 2.0x sprs. Without the network, a workspace of at most
/// [`TOUCHED_TINY_WORDS`] words reads every row from its bitmap (west0067's 67 columns: 1.85x
/// to 2.1x sprs on a Zen 1); with it, sorting costs less (Zen 4: west0067 4.2 -> 4.1 µs,
/// 2026-11-28).
///
/// The bits are set from the list after the row, not as each coordinate is first touched: the
/// kernel's product loop then only appends to the list, and keeps fewer values in registers
/// (cryg2500's `A·A` 2.085M -> 2.041M instructions, about 121 -> 117 µs; jagmesh7 88 -> 85 µs;
/// bayer10 2.55 -> 2.49 ms: scratch runs, old and new builds alternating, Zen 4, 2026-11-28).
/// Until then the previous row decided whether a row set bits while it was summed.
///
/// Memory: `n + 2` coordinates (`usize`), `n / 64 + 1` words and a summary of one bit per word.
#[derive(Clone, Debug)]
pub struct Touched {
    /// The row's coordinates, first `len` of `max(n + 2, NETWORK_MAX)` slots, never resized
    /// (two past the last coordinate are written, and overwritten, while a row is read from
    /// the bitmap; [`Touched::take_window`] writes up to 64 unchecked).
    list: Vec<usize>,
    /// How many coordinates the row has touched.
    len: usize,
    /// One bit per coordinate of a marked row; all zero between rows.
    bits: Vec<u64>,
    /// One bit per non-zero word of `bits` in a marked row; all zero between rows; empty for a
    /// tiny workspace, whose few words are all read.
    summary: Vec<u64>,
    /// The fewest coordinates of a row that may be read back from the bitmap: one more than
    /// [`sorted_directly`] allows, 0 where every row is (decided once, in [`Touched::new`]).
    mark_from: usize,
    /// Whether the bitmap is tiny ([`TOUCHED_TINY_WORDS`] words at most: no summary).
    tiny: bool,
    /// The SIMD network that sorts a row of 17 to 64 coordinates, where the machine has it
    /// (`small_sort`: AVX2, coordinates of 32 bits); `sort_unstable` otherwise.
    network: Option<small_sort::Network>,
}

impl Touched {
    /// An empty list for coordinates below `n` (a workspace of `n` slots).
    pub fn new(n: usize) -> Self {
        let words = n / 64 + 1;
        let network = small_sort::Network::detect(n);
        let tiny = words <= TOUCHED_TINY_WORDS;
        // without the network, a tiny workspace marks every row
        let always_mark = tiny && network.is_none();
        Touched {
            // the network reads and writes whole registers: at least its longest list
            list: vec![0; n.saturating_add(2).max(small_sort::NETWORK_MAX)],
            len: 0,
            bits: vec![0; words],
            summary: if tiny {
                Vec::new()
            } else {
                vec![0; words / 64 + 1]
            },
            mark_from: if always_mark {
                0
            } else {
                sorted_directly(network) + 1
            },
            tiny,
            network,
        }
    }

    /// Whether the row has touched no coordinate.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Records coordinate `j`, touched for the first time in this row.
    ///
    /// # Safety
    /// `j < n` (the size given to [`Touched::new`]), and `j` was not recorded since the last
    /// [`Touched::take_sorted`]: a generated kernel calls it only when the workspace slot of `j`
    /// says it is new, so at most `n` coordinates are recorded per row.
    #[inline(always)]
    pub unsafe fn push_unchecked(&mut self, j: usize) {
        // SAFETY: at most `n` distinct coordinates below `n` per row (the caller's promise)
        unsafe {
            *self.list.get_unchecked_mut(self.len) = j;
        }
        self.len += 1;
    }

    /// The coordinates `base + b` of the bits `b` set in `pattern`, in increasing order (a
    /// row in a [`RowWindow`], which recorded none with [`Touched::push_unchecked`]).
    #[inline(always)]
    pub fn take_window(&mut self, pattern: u64, base: usize) -> &[usize] {
        const { assert!(small_sort::NETWORK_MAX >= WINDOW) };
        let mut rest = pattern;
        let mut n = 0;
        while rest != 0 {
            // SAFETY: one turn per bit of a `u64`, so `n < 64`, and the list holds at least
            // `NETWORK_MAX >= 64` slots (`Touched::new`) (a loop over the list, testing its end
            // as well as the bits left, took 11 instructions a coordinate, a tenth of
            // jagmesh7's `A·A`)
            unsafe { *self.list.get_unchecked_mut(n) = base + rest.trailing_zeros() as usize };
            rest &= rest - 1;
            n += 1;
        }
        &self.list[..n]
    }

    /// The row's coordinates in increasing order (empty for a row that touched none); the
    /// next row starts empty.
    ///
    /// Always inlined, with its slow paths in functions that take the arrays, not `self`: the
    /// list's length then stays in a register through a kernel's loops (a call taking
    /// `&mut self` kept it in memory, each first touch a load and a store: cryg2500's SpGEMM
    /// 15% slower).
    #[inline(always)]
    pub fn take_sorted(&mut self) -> &[usize] {
        let n = std::mem::take(&mut self.len);
        let tiny = self.tiny;
        if n >= self.mark_from {
            read_marked(
                &mut self.list,
                &mut self.bits,
                &mut self.summary,
                n,
                tiny,
                self.network,
            );
        } else {
            sort_list(&mut self.list, n, self.network);
        }
        &self.list[..n]
    }
}

/// The most coordinates of a row [`Touched::take_sorted`] sorts directly, never marking its
/// bits: [`SORT_TOUCHED_NETWORK`] (or [`SORT_TOUCHED_NETWORK_WIDE`]) with the SIMD network,
/// [`SORT_TOUCHED_DIRECT`] without.
#[inline(always)]
fn sorted_directly(network: Option<small_sort::Network>) -> usize {
    if let Some(network) = network {
        network.max_len()
    } else {
        SORT_TOUCHED_DIRECT
    }
}

/// The first `n` coordinates of `list` sorted: by the SIMD network where there is one
/// (`Touched::new` detected it for the workspace's coordinates) and `n` is at least
/// [`small_sort::NETWORK_MIN`] and within its reach, by `sort_unstable` otherwise.
#[inline]
fn sort_list(list: &mut [usize], n: usize, network: Option<small_sort::Network>) {
    match network {
        Some(network) if n >= small_sort::NETWORK_MIN && sort_network(network, list, n) => {}
        _ => list[..n].sort_unstable(),
    }
}

/// The network's call, out of line, so that [`Touched::take_sorted`], inlined into a kernel,
/// stays small; whether it sorted.
#[inline(never)]
fn sort_network(network: small_sort::Network, list: &mut [usize], n: usize) -> bool {
    network.sort(list, n)
}

/// [`Touched::take_sorted`] of a row of `n` coordinates (`list[..n]`) that may be read back
/// from the bitmap: its bits set in `bits` and `summary` and read back (every word of a tiny
/// workspace, else the words the summary names between the least and greatest coordinate)
/// or, when that costs more than sorting, the list sorted with no bit set. Leaves `list[..n]`
/// sorted and every bit zero (as it found them).
#[inline(never)]
fn read_marked(
    list: &mut [usize],
    bits: &mut [u64],
    summary: &mut [u64],
    n: usize,
    tiny: bool,
    network: Option<small_sort::Network>,
) {
    // the summary words the row's coordinates lie in (all of them for a tiny workspace,
    // which has none)
    let mut reach = 0..summary.len();
    if !tiny {
        let (lo, hi) = list[..n]
            .iter()
            .fold((usize::MAX, 0), |(lo, hi), &j| (lo.min(j), hi.max(j)));
        reach = lo >> 12..(hi >> 12) + 1;
        // (`n > sorted_directly(network) > 0` here: `take_sorted` reads no shorter row back)
        if reach.len() >= n * n.ilog2() as usize {
            sort_list(list, n, network);
            return;
        }
    }
    for &j in &list[..n] {
        if let Some(w) = bits.get_mut(j >> 6) {
            *w |= 1 << (j & 63);
        }
        if let Some(s) = summary.get_mut(j >> 12) {
            *s |= 1 << ((j >> 6) & 63);
        }
    }
    let mut k = 0;
    if tiny {
        for (w, word) in bits.iter_mut().enumerate() {
            k = extract(std::mem::take(word), w << 6, list, k);
        }
    }
    for s in reach {
        let Some(summary) = summary.get_mut(s) else {
            break;
        };
        let mut nonzero = std::mem::take(summary);
        while nonzero != 0 {
            let w = (s << 6) | nonzero.trailing_zeros() as usize;
            nonzero &= nonzero - 1;
            let Some(word) = bits.get_mut(w) else {
                break;
            };
            k = extract(std::mem::take(word), w << 6, list, k);
        }
    }
    debug_assert_eq!(k, n, "one bit per listed coordinate");
}

/// Writes the coordinates `base + b` of the set bits `b` of `word`, increasing, into `list` from
/// `k` on; returns the next free slot. The first two are written without a branch (a sparse
/// row's words hold one or two), to slots `k` and `k + 1` whether or not the bits exist, so
/// `list` has two slots past the last coordinate.
#[inline(always)]
fn extract(word: u64, base: usize, list: &mut [usize], mut k: usize) -> usize {
    if let Some(slot) = list.get_mut(k) {
        *slot = base | word.trailing_zeros() as usize;
    }
    k += usize::from(word != 0);
    let second = word & word.wrapping_sub(1);
    if let Some(slot) = list.get_mut(k) {
        *slot = base | second.trailing_zeros() as usize;
    }
    k += usize::from(second != 0);
    let mut rest = second & second.wrapping_sub(1);
    while rest != 0 {
        if let Some(slot) = list.get_mut(k) {
            *slot = base | rest.trailing_zeros() as usize;
        }
        k += 1;
        rest &= rest - 1;
    }
    k
}

/// The most rows of an operand that a generated Gustavson kernel runs together
/// ([`shared_rows`]): the lanes of its `[f64; SHARED_ROWS]` workspace (one 256-bit vector).
pub const SHARED_ROWS: usize = 4;

/// How many rows from `i` on (at most [`SHARED_ROWS`], all below `n`) hold in a compressed
/// level (`pos`, `crd`) the same coordinates as row `i`, in the same order, and for each of
/// them the distance of its segment from row `i`'s (`shift[t] = pos[i + t] - pos[i]`; `0`
/// past the count, so a spare lane reads row `i` again).
///
/// A generated `C(i,j) = A(i,k) * B(k,j)` (Gustavson, `f64` sums) runs such rows in one pass
/// over the rows of `B` that row `i` of `A` selects, each row in its own lane of the workspace:
/// the touched coordinates are found and sorted once, and `B` is read once for all. The
/// results are bit for bit those of one row at a time (each lane adds the same terms in the
/// same order). Finite-element matrices store the unknowns of a node as rows with one pattern:
/// 3,092 of bcsstk16's 4,884 rows repeat the row before them, and its `A·A` took 24 ms instead
/// of 25-62 ms on a Zen 1 (BENCHMARKS.md). A row with no stored entry shares with none.
///
/// Returns `(1, [0; SHARED_ROWS])` when `i + 1 >= n`, when row `i` is empty, or when the
/// arrays are too short for the rows compared (never for a validated level).
#[inline]
pub fn shared_rows<P: Index, C: Index>(
    pos: &[P],
    crd: &[C],
    i: usize,
    n: usize,
) -> (usize, [usize; SHARED_ROWS]) {
    let mut shift = [0; SHARED_ROWS];
    let at = |r: usize| pos.get(r).map(|p| p.index());
    // most rows differ from the next in length or first coordinate: two reads tell
    let (Some(lo), Some(hi), Some(next_hi)) = (at(i), at(i + 1), at(i + 2)) else {
        return (1, shift);
    };
    let len = hi.wrapping_sub(lo);
    // one branch, on a test without branches: matrices whose rows never repeat predict it,
    // where a branch per condition would miss on rows that only have the next one's length
    let maybe = (i + 1 < n) & (len != 0) & (next_hi.wrapping_sub(hi) == len);
    if !(maybe & (crd.get(hi) == crd.get(lo))) {
        return (1, shift);
    }
    let Some(first) = crd.get(lo..hi) else {
        return (1, shift);
    };
    let mut rows = 1;
    while rows < SHARED_ROWS && i + rows < n {
        match (at(i + rows), at(i + rows + 1)) {
            (Some(l), Some(h)) if crd.get(l..h) == Some(first) => {
                shift[rows] = l - lo;
                rows += 1;
            }
            _ => break,
        }
    }
    (rows, shift)
}

/// The first row from `i` on that [`shared_rows`] runs together with the next (its count above
/// 1), `n` if there is none. A generated Gustavson kernel looks for it in this loop of its own
/// and runs the rows before it one at a time without asking [`shared_rows`] of each: the
/// question asked inside the kernel's row loop, where the kernel's own state fills the
/// registers, cost jagmesh7's and cryg2500's `A·A` (no row shares its pattern) about 5%
/// (scratch binaries on an AMD EPYC (Zen 4), 2026-11-28).
#[inline(never)]
pub fn next_shared_row<P: Index, C: Index>(pos: &[P], crd: &[C], i: usize, n: usize) -> usize {
    // rows whose both bounds and the next row's end are stored
    let rows = n.min(pos.len().saturating_sub(2));
    let Some(window) = pos.get(i..rows + 2) else {
        return n;
    };
    // over a window of `pos` (no bounds checks in the loop: 27 instructions a row of west0067
    // before, its `A·A` 2-4% slower with jagmesh7's)
    for (k, w) in window.windows(3).enumerate() {
        // what `shared_rows` asks first (equal nonzero lengths, equal first coordinates), as a
        // plain scan of `pos`; `shared_rows` decides the rare row that passes
        let (lo, hi, next_hi) = (w[0].index(), w[1].index(), w[2].index());
        let len = hi.wrapping_sub(lo);
        if len == next_hi.wrapping_sub(hi)
            && len != 0
            && crd.get(lo) == crd.get(hi)
            && shared_rows(pos, crd, i + k, n).0 > 1
        {
            return i + k;
        }
    }
    n
}

/// `[f(0), f(1), ..]`: one value per lane of rows run together ([`shared_rows`]); a generated
/// kernel reads the shared matrix's value of each row with it, and computes each row's term.
#[inline(always)]
pub fn lanes<T>(f: impl FnMut(usize) -> T) -> [T; SHARED_ROWS] {
    std::array::from_fn(f)
}

/// The width of a [`RowWindow`]: 64 coordinates, one bit each of a `u64` pattern.
pub const WINDOW: usize = 64;

/// One segment of a compressed level as [`RowWindow`] holds it.
#[derive(Clone, Copy, Debug)]
struct WindowSegment {
    /// Its first coordinate (its least); `usize::MAX` for an empty segment, `0` for a wide one.
    first: usize,
    /// Its greatest coordinate; `0` for an empty segment, `usize::MAX` for a wide one (so that a
    /// row reaching it spans more than [`WINDOW`] coordinates).
    last: usize,
    /// Bit `c - first` set for each coordinate `c` (`0` for an empty or a wide segment).
    bits: u64,
}

/// The segments of a compressed level (`B`'s rows in `C(i,j) = A(i,k) * B(k,j)`) as windows of
/// [`WINDOW`] coordinates, for the rows of a generated Gustavson kernel whose coordinates all
/// fall within 64 columns.
///
/// Per segment: its first and last coordinate and the bits of its coordinates from the first.
/// Row `i` of `C` gathers the segments of `B` that row `i` of `A` selects; when they all lie
/// within 64 coordinates of the least first coordinate ([`RowWindow::reach_unchecked`]), the
/// row's coordinates are the union of their bits shifted to that base
/// ([`RowWindow::pattern_unchecked`]), in increasing order ([`Touched::take_window`]). The
/// kernel then sums the row into a workspace that holds `-0.0`, the identity of `+` (`-0.0 +
/// v` is `v` bit for bit: the same sums as the untouched marker's first store), with no
/// first-touch test per product, no touched list and no sort; other rows take the marker's
/// path. Mesh matrices numbered along the mesh have such rows: 740 of jagmesh7's 1,138 rows of
/// `A·A` (64% of its products), 63 of west0067's 67; the first-touch branch and the sort's
/// were those rows' mispredicted branches. Two builds run alternately on an AMD EPYC (Zen 4),
/// 2026-11-28: jagmesh7 93-101 -> 88-95 µs (1.79-1.92x -> 2.03-2.07x sprs), west0067 4.1-4.3
/// -> 3.5-3.7 µs, cryg2500 (no windowed row; the segments' spans counted until a quarter are
/// wide) unchanged. Bits of 128 columns (`u128`, 77% of jagmesh7's products) were slower on
/// every matrix, and so was a bit set per product instead of the segments' bits.
///
/// Memory: three words per segment.
#[derive(Clone, Debug)]
pub struct RowWindow {
    segments: Vec<WindowSegment>,
}

impl RowWindow {
    /// The windows of the level whose segment `k` is `crd[pos[k]..pos[k + 1]]`, or `None` when
    /// in fewer than three in four of its non-empty segments the last coordinate lies less
    /// than [`WINDOW`] past the first: a row of `C` is in a window only when every segment it
    /// reaches is, so the windows would serve too few rows to pay for the test of each row
    /// (cryg2500 has 50 such segments of 2,500, bayer10 4,721 of 13,436 and 1% of its
    /// products in windowed rows, jagmesh7 972 of 1,138). The level must be ordered (the
    /// coordinates of a segment increasing): the bits are those of the coordinates from the
    /// first, kept within the span to the last. Also `None` when `pos` does not delimit
    /// segments of `crd` (never for a validated level).
    pub fn new<P: Index, C: Index>(pos: &[P], crd: &[C]) -> Option<Self> {
        const EMPTY: WindowSegment = WindowSegment {
            first: usize::MAX,
            last: 0,
            bits: 0,
        };
        const WIDE: WindowSegment = WindowSegment {
            first: 0,
            last: usize::MAX,
            bits: 0,
        };
        // one pass: each segment's span and, for a narrow one, its bits; given up as soon as a
        // quarter of all segments are wide (then fewer than three in four of the stored ones
        // can be narrow), so most levels are turned down after a few of their segments
        let count = pos.len().checked_sub(1)?;
        let mut segments = vec![EMPTY; count];
        let (mut narrow, mut wide) = (0usize, 0usize);
        let mut lo = pos.first()?.index();
        for (segment, end) in segments.iter_mut().zip(&pos[1..]) {
            let hi = end.index();
            let coords = crd.get(lo..hi)?;
            lo = hi;
            let (Some(first), Some(last)) = (coords.first(), coords.last()) else {
                continue;
            };
            let (first, last) = (first.index(), last.index());
            let span = last.wrapping_sub(first);
            if span >= WINDOW {
                wide += 1;
                if 4 * wide > count {
                    return None;
                }
                *segment = WIDE;
                continue;
            }
            narrow += 1;
            let mut bits = 0u64;
            for c in coords {
                // only bits within the span: an ordered level's coordinates all are (a bit past
                // it, of a level out of order, would name a coordinate that may lie past the
                // level's size); the exit also keeps this short loop scalar (vectorized, its
                // setup cost more than the segment's six or seven coordinates)
                let offset = c.index().wrapping_sub(first);
                if offset > span {
                    break;
                }
                bits |= 1u64 << offset;
            }
            *segment = WindowSegment { first, last, bits };
        }
        if narrow == 0 || 4 * narrow < 3 * (narrow + wide) {
            return None;
        }
        Some(RowWindow { segments })
    }

    /// The base (least coordinate) of the row that gathers the segments `crd[pos[p]..pos[p +
    /// 1]]` names (row `p` of `A`: its coordinates `k` are segments of this level), when all
    /// of them lie within [`WINDOW`] coordinates of it and one at least is not empty; `None`
    /// otherwise.
    ///
    /// # Safety
    /// `p + 1 < pos.len()`, `pos[p]..pos[p + 1]` is a range of `crd`, and every coordinate
    /// in it is a segment of this level (below `pos.len() - 1` of the level given to
    /// [`RowWindow::new`]): a validated CSR `A` whose columns are `B`'s rows.
    #[inline(always)]
    pub unsafe fn reach_unchecked<P: Index, C: Index>(
        &self,
        pos: &[P],
        crd: &[C],
        p: usize,
    ) -> Option<usize> {
        let (mut least, mut greatest) = (usize::MAX, 0);
        // SAFETY: the caller's promise
        unsafe {
            let (lo, hi) = (
                pos.get_unchecked(p).index(),
                pos.get_unchecked(p + 1).index(),
            );
            for k in crd.get_unchecked(lo..hi) {
                let s = self.segments.get_unchecked(k.index());
                least = least.min(s.first);
                greatest = greatest.max(s.last);
            }
        }
        (greatest >= least && greatest - least < WINDOW).then_some(least)
    }

    /// The bits of segment `k`'s coordinates from `base` (bit `c - base` for coordinate `c`),
    /// for a row whose [`RowWindow::reach_unchecked`] gave `base` and that reaches segment
    /// `k`.
    ///
    /// # Safety
    /// `k` is a segment of the level given to [`RowWindow::new`].
    #[inline(always)]
    pub unsafe fn pattern_unchecked(&self, k: usize, base: usize) -> u64 {
        // SAFETY: the caller's promise
        let s = unsafe { self.segments.get_unchecked(k) };
        s.bits.wrapping_shl(s.first.wrapping_sub(base) as u32)
    }
}

/// The fewest stored entries a row of `A` needs for [`RowSpans::reach_unchecked`] to look at
/// its span: a shorter row reaches few rows of `B`, whose products rarely meet on a coordinate
/// (cryg2500's and jagmesh7's rows of 5 to 9, about two products a coordinate of `A·A`), and the
/// look (four reads per entry) would cost such rows more than it saves.
pub const SPAN_MIN_ENTRIES: usize = 16;

/// The widest span, in coordinates per product, of a row that [`RowSpans`] sums: its scan
/// reads one byte per coordinate of the span, 64 into the bits of a word, against the
/// first-touch test, list and sort the products would pay otherwise.
pub const SPAN_PER_PRODUCT: usize = 8;

/// How many rows of [`SPAN_MIN_ENTRIES`] entries or more [`RowSpans::reach_unchecked`] turns
/// down without looking at their span after one it looked at and turned down: rows of a
/// product are alike next to each other, and the look costs a turned-down row about a tenth
/// of its products' time (bayer10's `A·A`: 1,560 rows of 16 entries or more, 42 of them
/// summed over their span; 1.5-2.5% of the kernel's time with a look at every one).
pub const SPAN_SKIP_AFTER_MISS: u32 = 7;

/// The coordinates a row of a generated Gustavson kernel can touch: from the least first
/// coordinate to the greatest last coordinate of the rows of `B` it reaches (both included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowSpan {
    /// The least coordinate.
    pub least: usize,
    /// The greatest coordinate.
    pub greatest: usize,
}

/// Rows of a generated Gustavson kernel summed over their span: a row of `A` whose products
/// are many for the columns they fall in (a finite-element matrix's, whose rows of `B` overlap:
/// `A·A` of bcsstk13 adds 11.5 products into each coordinate it stores, bcsstk16's 18) is
/// summed into a workspace that holds `-0.0` (the identity of `+`, as in a [`RowWindow`])
/// with no first-touch test: each product also sets its coordinate's byte, and the row's
/// coordinates come out of one scan of those bytes over the row's span, in increasing order,
/// with no list and no sort. [`RowSpans::reach_unchecked`] picks the rows: at least
/// [`SPAN_MIN_ENTRIES`] stored entries, a span under [`SPAN_PER_PRODUCT`] coordinates per
/// product, not among the [`SPAN_SKIP_AFTER_MISS`] rows after one turned down. Either way
/// the row's sums are the same, bit for bit. Scratch runs on an AMD EPYC (Zen 4), 2026-11-28, against the first-touch path
/// (rows run together included): bcsstk13 5.5 -> 3.9 ms, bcsstk16 10.8 -> 8.5 ms; rows of
/// cryg2500 (24 products over 200 columns) were 40% slower summed this way, whose scan
/// branched on every word. With the scan gathering 64 flags a word without a branch
/// ([`RowSpans::take`]; Zen 2, 2026-12-02: bcsstk13 5.6-5.8 -> 5.3-5.5 ms, bcsstk16
/// 12.8-12.9 -> 12.6-12.8 ms, bayer10 2.81-2.84 -> 2.79-2.80 ms), cryg2500 summed this way
/// (its rows let in by a [`SPAN_MIN_ENTRIES`] of 4 and a [`SPAN_PER_PRODUCT`] of 16) still
/// ran 237 µs against 162 µs: two products a coordinate do not pay for the span.
///
/// Memory: one byte and one coordinate (`usize`) per column, allocated at the first row
/// summed this way.
#[derive(Clone, Debug)]
pub struct RowSpans {
    /// The number of columns (coordinates below it).
    n: usize,
    /// One byte per column, and 63 past the last for whole blocks of 64: 1 where the row touched, 0
    /// elsewhere and between rows; empty before the first row summed this way.
    flags: Vec<u8>,
    /// The coordinates [`RowSpans::take`] read, first of `n` slots.
    list: Vec<usize>,
    /// Rows left to turn down unseen ([`SPAN_SKIP_AFTER_MISS`]).
    skip: u32,
}

impl RowSpans {
    /// Spans for coordinates below `n` (a workspace of `n` slots); allocates nothing yet.
    pub fn new(n: usize) -> Self {
        RowSpans {
            n,
            flags: Vec::new(),
            list: Vec::new(),
            skip: 0,
        }
    }

    /// The span of the row that gathers the segments of `B` (`b_pos`, `b_crd`) that row `p`
    /// of `A` (`crd[pos[p]..pos[p + 1]]`) names, when the row is one to sum over its span
    /// (see [`RowSpans`]); `None` otherwise.
    ///
    /// # Safety
    /// `p + 1 < pos.len()`, `pos[p]..pos[p + 1]` is a range of `crd`, every coordinate `k` in
    /// it has `k + 1 < b_pos.len()`, `b_pos[k]..b_pos[k + 1]` is an increasing range of
    /// `b_crd` whose coordinates increase and lie below `n`: validated CSR matrices `A` and
    /// `B`, `A`'s columns `B`'s rows, `B`'s columns the `n` of [`RowSpans::new`].
    #[inline(always)]
    pub unsafe fn reach_unchecked<P: Index, C: Index, Q: Index, D: Index>(
        &mut self,
        pos: &[P],
        crd: &[C],
        p: usize,
        b_pos: &[Q],
        b_crd: &[D],
    ) -> Option<RowSpan> {
        let (mut least, mut greatest, mut products) = (usize::MAX, 0, 0);
        // SAFETY: the caller's promise
        unsafe {
            let (lo, hi) = (
                pos.get_unchecked(p).index(),
                pos.get_unchecked(p + 1).index(),
            );
            if hi - lo < SPAN_MIN_ENTRIES {
                return None;
            }
            if self.skip > 0 {
                self.skip -= 1;
                return None;
            }
            for k in crd.get_unchecked(lo..hi) {
                let k = k.index();
                let (first, end) = (
                    b_pos.get_unchecked(k).index(),
                    b_pos.get_unchecked(k + 1).index(),
                );
                if first < end {
                    least = least.min(b_crd.get_unchecked(first).index());
                    greatest = greatest.max(b_crd.get_unchecked(end - 1).index());
                    products += end - first;
                }
            }
        }
        // (wrapping: a level out of order, against the promise, is turned down, not a panic)
        if products == 0
            || greatest.wrapping_sub(least) >= SPAN_PER_PRODUCT.saturating_mul(products)
        {
            self.skip = SPAN_SKIP_AFTER_MISS;
            return None;
        }
        if self.flags.is_empty() {
            self.allocate();
        }
        Some(RowSpan { least, greatest })
    }

    /// The flags and the list, at the first row summed over its span.
    #[cold]
    #[inline(never)]
    fn allocate(&mut self) {
        self.flags = vec![0; self.n + 63];
        self.list = vec![0; self.n];
    }

    /// Records coordinate `j` as touched in this row.
    ///
    /// # Safety
    /// `j` is below the `n` of [`RowSpans::new`], and [`RowSpans::reach_unchecked`] gave this
    /// row's span (so the flags are allocated) and `j` lies in it.
    #[inline(always)]
    pub unsafe fn mark_unchecked(&mut self, j: usize) {
        // SAFETY: `j < n < flags.len()` (the caller's promise)
        unsafe { *self.flags.get_unchecked_mut(j) = 1 };
    }

    /// The coordinates the row recorded ([`RowSpans::mark_unchecked`]) in increasing order,
    /// their flags cleared for the next row. `span` is the row's
    /// ([`RowSpans::reach_unchecked`]): only its coordinates are read, 64 at a time, their
    /// flags gathered into the bits of a word without a branch (a multiply gathers a word's
    /// eight flag bytes into eight bits), each set bit then a coordinate.
    #[inline(always)]
    pub fn take(&mut self, span: RowSpan) -> &[usize] {
        // bit `56 + k` of `word * GATHER` is byte `k`'s flag (0 or 1): the products of the
        // flags and the multiplier's powers fall on distinct bits, so nothing carries
        const GATHER: u64 = 0x0102_0408_1020_4080;
        let mut n = 0;
        let mut w = span.least;
        while w <= span.greatest {
            // past `greatest` the flags are 0 (nothing there is touched)
            let Some(block) = self.flags.get_mut(w..w + 64) else {
                break;
            };
            let mut bits = 0u64;
            for (k, chunk) in block.chunks_exact(8).enumerate() {
                let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
                bits |= (word.wrapping_mul(GATHER) >> 56) << (8 * k);
            }
            if bits != 0 {
                block.fill(0);
                while bits != 0 {
                    if let Some(slot) = self.list.get_mut(n) {
                        *slot = w + bits.trailing_zeros() as usize;
                    }
                    n += 1;
                    bits &= bits - 1;
                }
            }
            w += 64;
        }
        &self.list[..n.min(self.list.len())]
    }
}

/// Marks the branch that calls it as the unlikely one (a call to a `#[cold]` function makes
/// LLVM lay the branch out of the straight path); does nothing. A generated kernel's Gustavson
/// update calls it on a slot's first product, so the common update, an addition into a
/// touched slot, runs without a taken branch.
#[cold]
#[inline]
pub fn cold() {}

/// A signaling NaN that no value of `inputs` has (with either sign), for a generated kernel's
/// workspace of `f64` to mark its untouched slots (in place of an array of visited flags).
/// Arithmetic yields a signaling NaN only when an operand is one, and then that operand's
/// payload, its sign possibly changed (Rust's float semantics, RFC 3514), so a slot computed
/// from `inputs` never holds the marker. The marker is the first of `0x7ff0_dead_0000_0000 +
/// k` (`k < 2^32`) that no input holds: one pass over the inputs, then a sort of the few
/// inputs in that range.
pub fn untouched_marker(inputs: &[&[f64]]) -> f64 {
    const BASE: u64 = 0x7ff0_dead_0000_0000;
    // the bits without the sign, the high half compared first
    let magnitude = |v: &f64| v.to_bits() & !(1 << 63);
    let mut taken: Vec<u64> = Vec::new();
    for (k, values) in inputs.iter().enumerate() {
        // an operand passed twice (`A·A`) is read once
        if inputs[..k].iter().any(|seen| std::ptr::eq(*seen, *values)) {
            continue;
        }
        for chunk in values.chunks(256) {
            // a branch-free test per chunk, the rare hits collected after
            // the high half without the sign, compared as 32 bits (lanes SSE2 compares), four
            // values a step in four flags (one fold over the chunk took 3.9 instructions a
            // value, this 2.3: 2% of cryg2500's `A·A`, whose 12,349 values it reads each call)
            let high = |v: &f64| (v.to_bits() >> 32) as u32 & 0x7fff_ffff;
            let mut quads = chunk.chunks_exact(4);
            let mut hits = [false; 4];
            for q in &mut quads {
                for (hit, v) in hits.iter_mut().zip(q) {
                    *hit |= high(v) == (BASE >> 32) as u32;
                }
            }
            let hit = hits.contains(&true)
                || quads
                    .remainder()
                    .iter()
                    .any(|v| high(v) == (BASE >> 32) as u32);
            if hit {
                taken.extend(
                    chunk
                        .iter()
                        .map(magnitude)
                        .filter(|b| b >> 32 == BASE >> 32)
                        .map(|b| b - BASE),
                );
            }
        }
    }
    taken.sort_unstable();
    taken.dedup();
    // the first k not taken: fewer than 2^32 values cannot take them all
    let k = taken
        .iter()
        .enumerate()
        .find(|&(i, &t)| t != i as u64)
        .map_or(taken.len() as u64, |(i, _)| i as u64);
    f64::from_bits(BASE + k)
}

/// Names the safety argument of the `unsafe` block that follows it in generated code (the
/// invariant it relies on and where that invariant is established); expands to nothing.
/// `sparse expand` and `sparse_dsl::build` print each use as a `// SAFETY: ...` comment above
/// the block, so a reader of the generated code sees the justification next to every `unsafe`.
///
/// ```
/// sparse_runtime::safety!("`i < v.len()`: checked on the line above.");
/// ```
#[macro_export]
macro_rules! safety {
    ($why:literal) => {};
}

/// Whether a generated kernel may empty its sparse output's arrays and refill them in place
/// ([`output_buffer`]) instead of filling new ones: whether every entry count the output can
/// reach, at most the product of its level sizes `lvl_sizes` (each coordinate stored once),
/// is at most `max_entries` (the largest value of its narrowest position width). Then no
/// position can overflow once the arrays are emptied, the one error left after them, so an
/// error still leaves the output as it was (a kernel refills only when its loops cannot fail).
///
/// Refilling spares the allocator: new arrays each call came from pages the allocator had just
/// handed back to the system whenever other code freed memory in between (SpGEMM `A·A` of
/// cryg2500 called in turn with sprs's product: 15-25 page faults and a median 153-219 µs a
/// call, against none and 112 µs refilled, on an AMD EPYC Zen 4, scratch, 2026-12-03).
pub fn refills(lvl_sizes: &[usize], max_entries: usize) -> bool {
    lvl_sizes
        .iter()
        .try_fold(1usize, |n, &s| n.checked_mul(s))
        .is_some_and(|n| n <= max_entries)
}

/// The buffer a generated kernel fills for its sparse output's array `old`: `old` itself,
/// taken and emptied (its capacity kept, `old` left empty), when `reuse` ([`refills`]); else a
/// new vector with room for as many elements as `old` holds (a kernel run again on similar
/// operands then fills it without growing), `old` untouched.
#[inline]
pub fn output_buffer<T>(old: &mut Vec<T>, reuse: bool) -> Vec<T> {
    if reuse {
        let mut v = std::mem::take(old);
        v.clear();
        v
    } else {
        Vec::with_capacity(old.len())
    }
}

/// [`assemble`] for entries already in level order, each coordinate once (a kernel's output
/// appended in order or through a workspace): mapped and inserted one by one (MLIR's
/// `lexInsert`), without sorting. Falls back to [`assemble`] for what in-order insertion does
/// not cover (ELL counting maps, batch levels, `nonordered` levels) and when an entry does
/// not follow the previous one in level order.
///
/// Errors: as [`assemble`].
pub fn assemble_in_order<const D: usize, const L: usize, V: Value>(
    encoding: Encoding,
    shape: [usize; D],
    lvl_sizes: [usize; L],
    entries: Vec<([usize; D], V)>,
    dim_to_lvl: impl Fn(&[usize; D]) -> [usize; L],
) -> Result<Assembled<V>, StorageError> {
    let simple = encoding.dim_to_lvl.num_symbols == 0
        && encoding
            .lvl_types
            .iter()
            .all(|t| t.is_ordered() && !t.capabilities().batch);
    if !simple {
        return assemble(encoding, shape, lvl_sizes, entries, dim_to_lvl);
    }
    let mut enc = encoding.clone();
    enc.dim_slices = None;
    let enc = verified(enc)?;
    let mut b = Builder::new(&enc, &lvl_sizes, 1)?;
    b.values.reserve(entries.len());
    let mut prev: Option<[usize; L]> = None;
    for (entry, (c, v)) in entries.iter().enumerate() {
        if let Some(dim) = (0..D).find(|&d| c[d] >= shape[d]) {
            return Err(StorageError::CoordinateOutOfRange {
                entry,
                dim,
                coordinate: c[dim],
                size: shape[dim],
            });
        }
        let key = dim_to_lvl(c);
        if prev.is_some_and(|p| p >= key) {
            // not in level order (or repeated): sort and sum as `from_coo` does
            return assemble(encoding, shape, lvl_sizes, entries, dim_to_lvl);
        }
        b.lex_insert(prev.is_none(), &key, *v)?;
        prev = Some(key);
    }
    b.end_insert(prev.is_none())?;
    let Builder {
        positions,
        coordinates,
        values,
        ..
    } = b;
    Ok(Assembled {
        positions: PerLevel::All(positions),
        coordinates: PerLevel::All(coordinates),
        values,
    })
}

/// `encoding` verified, or [`StorageError::InvalidEncoding`] with the verifier's messages.
fn verified(
    encoding: Encoding,
) -> Result<crate::sparse_ir::verify::VerifiedEncoding, StorageError> {
    encoding
        .verify()
        .map_err(|errors| StorageError::InvalidEncoding {
            messages: errors.iter().map(ToString::to_string).collect(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn par_tasks_splits_only_from_two_tasks_worth() {
        assert_eq!(par_tasks(0), 1);
        assert_eq!(par_tasks(2 * PAR_MIN_ENTRIES - 1), 1);
        let threads = rayon::current_num_threads();
        assert_eq!(par_tasks(2 * PAR_MIN_ENTRIES), threads.min(2));
        assert_eq!(par_tasks(1000 * PAR_MIN_ENTRIES), threads.min(1000));
    }

    /// The number of tasks follows the stored values, not the work `before` counts: a BSR
    /// matrix of 3x3 blocks or a loose CSR one (`before` = the row) with more than
    /// `2 * PAR_MIN_ENTRIES` values is split on two threads even when `before(units)` is small.
    #[test]
    fn par_rows_splits_by_stored_values() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let ranges = |values: usize| {
            let calls = std::sync::atomic::AtomicUsize::new(0);
            let mut y = vec![0usize; 300];
            pool.install(|| {
                par_rows(
                    &mut y,
                    3,
                    values,
                    |r| r,
                    |chunk, row0| {
                        calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        for (k, v) in chunk.iter_mut().enumerate() {
                            *v = row0 * 3 + k;
                        }
                    },
                )
            });
            assert_eq!(y, (0..300).collect::<Vec<_>>());
            calls.into_inner()
        };
        assert_eq!(ranges(2 * PAR_MIN_ENTRIES - 1), 1);
        assert_eq!(ranges(2 * PAR_MIN_ENTRIES), 2 * RANGES_PER_TASK);
    }
    #[test]
    fn row_spans_pick_rows_and_read_their_flags_in_order() {
        // `B`: rows 0..16 hold columns 0..16, rows 16..32 one column each, 60 apart
        let mut b_pos = vec![0u32];
        let mut b_crd: Vec<u32> = Vec::new();
        for r in 0..32 {
            if r < 16 {
                b_crd.extend(0..16);
            } else {
                b_crd.push(60 * (r - 16));
            }
            b_pos.push(b_crd.len() as u32);
        }
        // `A`: row 0 reaches rows 0..16 of `B` (256 products over 16 columns), row 1 rows
        // 16..32 (16 products over 901 columns), row 2 holds 15 entries
        let a_rows = [0..16, 16..32, 0..15];
        let mut a_pos = vec![0u32];
        let mut a_crd: Vec<u32> = Vec::new();
        for row in a_rows {
            a_crd.extend(row);
            a_pos.push(a_crd.len() as u32);
        }
        let mut spans = RowSpans::new(1000);
        // SAFETY: every coordinate of `A` is a row of `B`, whose rows increase below 1,000
        let reach = |spans: &mut RowSpans, p| unsafe {
            spans.reach_unchecked(&a_pos, &a_crd, p, &b_pos, &b_crd)
        };
        let span = reach(&mut spans, 0);
        assert_eq!(
            span,
            Some(RowSpan {
                least: 0,
                greatest: 15
            })
        );
        assert_eq!(reach(&mut spans, 1), None, "901 columns for 16 products");
        assert_eq!(reach(&mut spans, 2), None, "15 entries");
        // after a row turned down, the next rows of 16 entries or more are turned down unseen
        for _ in 0..SPAN_SKIP_AFTER_MISS {
            assert_eq!(reach(&mut spans, 0), None);
        }
        assert_eq!(reach(&mut spans, 0), span);
        // SAFETY: the span was given and its coordinates are below 1,000
        unsafe {
            for j in [15, 3, 8, 3, 0, 9] {
                spans.mark_unchecked(j);
            }
        }
        assert_eq!(spans.take(span.unwrap()), [0, 3, 8, 9, 15]);
        // the flags were cleared: the next row starts with none
        assert_eq!(spans.take(span.unwrap()), [] as [usize; 0]);
        let far = RowSpan {
            least: 990,
            greatest: 999,
        };
        // SAFETY: as above; the last block read ends 63 flags past the last column
        unsafe { spans.mark_unchecked(999) };
        assert_eq!(spans.take(far), [999]);
        // a span over several blocks of 64, flags on both sides of each block's edge and at
        // every byte of one word
        let wide = RowSpan {
            least: 5,
            greatest: 300,
        };
        let marked = [5, 68, 69, 70, 71, 72, 73, 74, 75, 132, 133, 260, 300];
        // SAFETY: as above
        unsafe {
            for &j in marked.iter().rev() {
                spans.mark_unchecked(j);
            }
        }
        assert_eq!(spans.take(wide), marked);
        assert_eq!(spans.take(wide), [] as [usize; 0]);
    }

    #[test]
    fn assembled_arrays_move_by_level_and_width() {
        // a vector moves out only as its own element type
        assert_eq!(
            index_vec::<u32>(IndexBuffer::U32(vec![1, 2])),
            Some(vec![1u32, 2])
        );
        assert_eq!(index_vec::<u16>(IndexBuffer::U32(vec![1, 2])), None);
        assert_eq!(
            index_vec::<usize>(IndexBuffer::Native(vec![7])),
            Some(vec![7usize])
        );
        assert!(matches!(buffer_of(vec![3u16]), Some(IndexBuffer::U16(v)) if v == [3]));
        // a two-level result holds level 1's arrays only, each taken once
        let mut a = Assembled {
            positions: PerLevel::Second(Some(IndexBuffer::U32(vec![0, 1]))),
            coordinates: PerLevel::Second(Some(CrdBuffer::Plain(IndexBuffer::U32(vec![0])))),
            values: vec![1.0f64],
        };
        assert!(matches!(
            a.positions::<u32>(0),
            Err(StorageError::RawParts { level: 0, .. })
        ));
        assert!(matches!(
            a.positions::<u16>(1),
            Err(StorageError::RawParts { level: 1, .. })
        ));
        let mut a = Assembled {
            positions: PerLevel::Second(Some(IndexBuffer::U32(vec![0, 1]))),
            ..a
        };
        assert_eq!(a.positions::<u32>(1).unwrap(), [0, 1]);
        assert!(a.positions::<u32>(1).is_err());
        assert_eq!(a.coordinates::<Vec<u32>>(1).unwrap(), [0]);
        let mut all = PerLevel::All(vec![None, Some(5), Some(6)]);
        assert_eq!(
            (all.take(0), all.take(2), all.take(2), all.take(3)),
            (None, Some(6), None, None)
        );
    }

    #[test]
    fn row_window_gathers_rows_from_segment_bits() {
        // segments: {2, 5, 9}, {}, {10, 80} (wide), {60, 63}, {3}
        let pos: [u32; 6] = [0, 3, 3, 5, 7, 8];
        let crd: [u32; 8] = [2, 5, 9, 10, 80, 60, 63, 3];
        let w = RowWindow::new(&pos, &crd).expect("3 of 4 stored segments are narrow");
        // rows of `A` naming segments: [0, 4], [0, 3], [2], [1], [0, 2], [3, 4]
        let a_pos: [u32; 7] = [0, 2, 4, 5, 6, 8, 10];
        let a_crd: [u32; 10] = [0, 4, 0, 3, 2, 1, 0, 2, 3, 4];
        // SAFETY: every row of `A` is a range of `a_crd`, every coordinate a segment
        let reach = |p: usize| unsafe { w.reach_unchecked(&a_pos, &a_crd, p) };
        assert_eq!(
            (0..6).map(reach).collect::<Vec<_>>(),
            [Some(2), Some(2), None, None, None, Some(3)]
        );
        // SAFETY: segments 0..5 exist
        let pattern = |segs: &[usize], base| -> u64 {
            segs.iter()
                .map(|&k| unsafe { w.pattern_unchecked(k, base) })
                .fold(0, |a, b| a | b)
        };
        let mut touched = Touched::new(64);
        assert_eq!(touched.take_window(pattern(&[0, 4], 2), 2), [2, 3, 5, 9]);
        assert_eq!(
            touched.take_window(pattern(&[0, 3], 2), 2),
            [2, 5, 9, 60, 63]
        );
        assert_eq!(touched.take_window(pattern(&[3, 4], 3), 3), [3, 60, 63]);
        assert_eq!(touched.take_window(0, 7), [] as [usize; 0]);
        assert_eq!(touched.take_window(1 << 63 | 1, 0), [0, 63]);
        // half the stored segments span 64 columns or more: not worth a window
        assert!(RowWindow::new(&[0u32, 2, 4], &[0u32, 64, 1, 2]).is_none());
        assert!(RowWindow::new(&[0u32, 0], &[] as &[u32]).is_none());
        // `pos` past `crd`
        assert!(RowWindow::new(&[0u32, 3], &[0u32, 1]).is_none());
        // a segment out of order: its bits stay within its span (coordinates 5..=8), read up
        // to the first coordinate outside it (3)
        let w = RowWindow::new(&[0u32, 3], &[5u32, 3, 8]).unwrap();
        // SAFETY: segment 0 exists
        assert_eq!(unsafe { w.pattern_unchecked(0, 5) }, 1);
    }

    /// Records each row of `rows` (coordinates below the size of `touched`, each once) and
    /// checks that it comes back sorted, and that no bit is left set after the last.
    fn take_each(touched: &mut Touched, rows: &[Vec<usize>]) {
        for row in rows {
            for &j in row {
                // SAFETY: `j` is below the size (the caller's promise), each coordinate once
                unsafe { touched.push_unchecked(j) };
            }
            let mut want = row.clone();
            want.sort_unstable();
            assert_eq!(touched.take_sorted(), want, "row of {}", row.len());
        }
        assert!(touched.bits.iter().chain(&touched.summary).all(|&w| w == 0));
    }

    /// Rows of many coordinates in a narrow range come back from the bitmap, others sorted;
    /// each row sets its bits only after it is recorded and leaves none behind for the next
    /// (a row after a spread one, after a short one, after an empty one).
    #[test]
    fn touched_reads_long_narrow_rows_from_the_bitmap_and_sorts_the_others() {
        // 2^21 coordinates: 512 summary words, so a row of 70 spread over all of them
        // costs more to read back (70 * log2 70 = 420 words) than to sort
        let n = 1 << 21;
        let mut touched = Touched::new(n);
        let rows: Vec<Vec<usize>> = vec![
            // long and narrow: 100 distinct coordinates of 0..300, out of order
            (0..100).map(|k| (k * 37) % 300).collect(),
            // short
            vec![9_999, 5, 4_096, 17],
            // long and spread over all the summary words
            (0..70).map(|k| (k * 29_959 + 11) % n).collect(),
            // empty
            vec![],
            // long and narrow, across a summary word's boundary (4,096 * 244)
            (0..80).map(|k| 999_400 + (k * 7) % 560).collect(),
            // at the top of the range
            (0..66).rev().map(|k| n - 1 - 3 * k).collect(),
        ];
        take_each(&mut touched, &rows);
        // a workspace of at most 2^16 columns: the network (where there is one) takes rows of
        // up to 128, the bitmap longer narrow ones
        let n = 60_000;
        let mut touched = Touched::new(n);
        let rows: Vec<Vec<usize>> = vec![
            (0..128).map(|k| (k * 433 + 7) % n).collect(),
            (0..129).map(|k| 30_000 + (k * 5) % 700).collect(),
            (0..65).rev().map(|k| k * 900).collect(),
            (0..300).map(|k| (k * 97) % 300).collect(),
        ];
        take_each(&mut touched, &rows);
    }

    #[test]
    fn shared_rows_counts_rows_with_the_coordinates_of_the_first() {
        // rows: [1 3] [1 3] [1 3] [] [] [0 3] [1 3] [1 3] [1 3] [1 3] [1 3] [2]
        let crd: Vec<u32> = vec![1, 3, 1, 3, 1, 3, 0, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 2];
        let pos: Vec<u32> = vec![0, 2, 4, 6, 6, 6, 8, 10, 12, 14, 16, 18, 19];
        let n = pos.len() - 1;
        let got: Vec<(usize, [usize; SHARED_ROWS])> =
            (0..n).map(|i| shared_rows(&pos, &crd, i, n)).collect();
        assert_eq!(got[0], (3, [0, 2, 4, 0]));
        assert_eq!(got[1], (2, [0, 2, 0, 0]));
        // an empty row shares with none, not even the empty row after it
        assert_eq!(got[3], (1, [0; SHARED_ROWS]));
        // same first coordinate and length, another last one
        assert_eq!(got[5], (1, [0; SHARED_ROWS]));
        // five equal rows: at most four together
        assert_eq!(got[6], (4, [0, 2, 4, 6]));
        assert_eq!(got[10], (1, [0; SHARED_ROWS]));
        // the last row, and rows past `n` are not compared
        assert_eq!(got[11], (1, [0; SHARED_ROWS]));
        assert_eq!(shared_rows(&pos, &crd, 0, 2), (2, [0, 2, 0, 0]));
        // arrays too short for the rows: one row, no panic
        assert_eq!(shared_rows(&pos[..3], &crd, 0, 5), (2, [0, 2, 0, 0]));
        assert_eq!(shared_rows(&pos, &crd[..3], 0, n), (1, [0; SHARED_ROWS]));
        assert_eq!(
            shared_rows::<u32, u32>(&[], &[], 0, 1),
            (1, [0; SHARED_ROWS])
        );
        // the rows that share with the next, from a row on: 0, 1, 6 to 9
        let next: Vec<usize> = (0..=n).map(|i| next_shared_row(&pos, &crd, i, n)).collect();
        assert_eq!(next, [0, 1, 6, 6, 6, 6, 6, 7, 8, 9, 12, 12, 12]);
        assert_eq!(next_shared_row(&pos, &crd, 0, 1), 1);
        assert_eq!(next_shared_row::<u32, u32>(&[], &[], 0, 3), 3);
    }
    /// The transposition gives the same arrays with `u32` and `usize` counts and cursors:
    /// CSR `[[1, 0, 2], [0, 0, 3], [4, 5, 0]]` with an explicit zero at (1, 0) becomes CSC's
    /// positions `[0, 2, 3, 5]`, rows `[0, 2, 2, 0, 1]`, values `[1, 4, 5, 2, 3]` (the zero not
    /// kept), at the target's widths; a segment bound that `u32` cannot hold is `None` (the
    /// caller then visits the entries), never a wrong array.
    #[test]
    fn transpose_typed_is_the_same_with_either_cursor_width() {
        let pos: Vec<u32> = vec![0, 2, 4, 6];
        let crd: Vec<u32> = vec![0, 2, 0, 2, 0, 1];
        let values = vec![1.0, 2.0, 0.0, 3.0, 4.0, 5.0];
        let positions = IndexSlice::U32(&pos);
        let narrow = transpose_typed::<u32, u16, f64, u32>(positions, &crd, &values, 3, 32);
        let wide = transpose_typed::<u32, u16, f64, usize>(positions, &crd, &values, 3, 32);
        let want = (
            IndexBuffer::U32(vec![0, 2, 3, 5]),
            IndexBuffer::U16(vec![0, 2, 2, 0, 1]),
            vec![1.0, 4.0, 5.0, 2.0, 3.0],
        );
        assert_eq!(narrow, Some(want.clone()));
        assert_eq!(wide, Some(want));
        // through `direct_typed`'s choice (the last position fits `u32`), native positions
        let native = direct_typed::<u32, u32, f64>(positions, &crd, &values, true, 3, 0);
        assert_eq!(
            native.map(|(p, c, _)| (p, c)),
            Some((
                IndexBuffer::Native(vec![0, 2, 3, 5]),
                IndexBuffer::U32(vec![0, 2, 2, 0, 1])
            ))
        );
        // a bound past `u32::MAX` does not fit `u32` cursors
        let far: Vec<u64> = vec![0, 2, 1 << 33];
        let out = transpose_typed::<u32, u32, f64, u32>(IndexSlice::U64(&far), &crd, &values, 3, 0);
        assert_eq!(out, None);
    }
}
