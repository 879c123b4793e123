//! Assembly by counting sort: the fast path of [`crate::generated::assemble`] (issue 12).
//!
//! Entries are read once into flat arrays (structure of arrays): the level-0 coordinate of each
//! (`u32`), the coordinates of levels `1..` packed into one integer key (`u32` or `u64`, level
//! `L - 1` in the low bits, so integer order is level order), and the values. A histogram over
//! level 0 and its prefix sum give each level-0 coordinate its segment; one stable scatter puts
//! each entry's key and value in its final slot (keys in input order, values in reverse input
//! order with decrementing cursors: both stable, with one cursor array and no index array).
//! Each segment is then put in key order by a sort of `(key, index in segment)` pairs, which is
//! stable, so duplicates stay in input order and are summed in that order, as the sorting
//! assembly sums them (bit-for-bit the same results).
//!
//! The ordered entries then become the level arrays: directly for `dense, compressed, dense*`
//! encodings (CSR, CSC, BSR, BSC) when every position and coordinate fits its width, else
//! through the shared [`Builder`] (`lexInsert`), which gives every other level format and
//! every width error exactly as before.

use sparse_ir::ir::{Encoding, LevelFormat};

use crate::error::{BufferKind, StorageError};
use crate::index::IndexBuffer;
use crate::level::Builder;
use crate::packed::CrdBuffer;
use crate::value::Value;

/// The packed key of levels `1..` of an entry: `u32` or `u64`.
pub(crate) trait Word: Copy + Ord + Default + Send + Sync + 'static {
    /// The key with the entry's index in its segment, ordered by key then index.
    type Tagged: Copy + Ord;
    /// `x` as a key; `x` fits (the layout was chosen for it).
    fn from_u64(x: u64) -> Self;
    /// The key as a `u64`.
    fn to_u64(self) -> u64;
    /// `(self, i)` as one integer.
    fn tag(self, i: u32) -> Self::Tagged;
    /// The key and index of [`Word::tag`].
    fn untag(t: Self::Tagged) -> (Self, usize);
    /// `v` as the buffer of width `width` without a copy, if its elements are that buffer's.
    fn into_buffer(v: Vec<Self>, width: u32) -> Result<IndexBuffer, Vec<Self>>;
}

impl Word for u32 {
    type Tagged = u64;
    #[inline(always)]
    fn from_u64(x: u64) -> Self {
        x as u32
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        u64::from(self)
    }
    #[inline(always)]
    fn tag(self, i: u32) -> u64 {
        (u64::from(self) << 32) | u64::from(i)
    }
    #[inline(always)]
    fn untag(t: u64) -> (Self, usize) {
        ((t >> 32) as u32, (t as u32) as usize)
    }
    fn into_buffer(v: Vec<Self>, width: u32) -> Result<IndexBuffer, Vec<Self>> {
        match width {
            32 => Ok(IndexBuffer::U32(v)),
            _ => Err(v),
        }
    }
}

impl Word for u64 {
    type Tagged = u128;
    #[inline(always)]
    fn from_u64(x: u64) -> Self {
        x
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self
    }
    #[inline(always)]
    fn tag(self, i: u32) -> u128 {
        (u128::from(self) << 32) | u128::from(i)
    }
    #[inline(always)]
    fn untag(t: u128) -> (Self, usize) {
        ((t >> 32) as u64, (t as u32) as usize)
    }
    fn into_buffer(v: Vec<Self>, width: u32) -> Result<IndexBuffer, Vec<Self>> {
        match width {
            64 => Ok(IndexBuffer::U64(v)),
            _ => Err(v),
        }
    }
}

/// Where each level `1..L` sits in the packed key: `shift[l]` and `mask[l]` (index 0 unused).
pub(crate) struct KeyLayout {
    shift: Vec<u32>,
    mask: Vec<u64>,
    /// Bits of the whole key.
    pub bits: u32,
}

impl KeyLayout {
    /// The layout for level sizes `lvl_sizes` (each level gets the bits of its largest
    /// coordinate); `None` when the key would need more than 64 bits.
    pub fn new(lvl_sizes: &[usize]) -> Option<KeyLayout> {
        let l_rank = lvl_sizes.len();
        let mut shift = vec![0; l_rank];
        let mut mask = vec![0; l_rank];
        let mut bits = 0u32;
        for l in (1..l_rank).rev() {
            let b = usize::BITS - lvl_sizes[l].saturating_sub(1).leading_zeros();
            shift[l] = bits;
            mask[l] = if b == 0 { 0 } else { u64::MAX >> (64 - b) };
            bits += b;
            if bits > 64 {
                return None;
            }
        }
        Some(KeyLayout { shift, mask, bits })
    }

    /// The key of level coordinates `lc` (each below its level size).
    #[inline(always)]
    fn pack<P: Word>(&self, lc: &[usize]) -> P {
        let mut k = 0u64;
        for (l, &c) in lc.iter().enumerate().skip(1) {
            // a level of size 1 above 64 bits of levels sits at shift 64: its coordinate is 0
            k |= (c as u64).checked_shl(self.shift[l]).unwrap_or(0);
        }
        P::from_u64(k)
    }

    /// The coordinate of level `l >= 1` in key `p`.
    #[inline(always)]
    fn level(&self, p: u64, l: usize) -> usize {
        (p.checked_shr(self.shift[l]).unwrap_or(0) & self.mask[l]) as usize
    }
}

/// The entries, read once: level-0 coordinates, packed keys of levels `1..`, values.
pub(crate) struct Collected<P, V> {
    k0: Vec<u32>,
    rest: Vec<P>,
    vals: Vec<V>,
}

impl<P: Word, V> Collected<P, V> {
    /// The entries as `[usize; L]` level keys (and values), in input order.
    pub fn into_keys<const L: usize>(self, layout: &KeyLayout) -> (Vec<[usize; L]>, Vec<V>) {
        let mut keys: Vec<[usize; L]> = Vec::with_capacity(self.k0.len() + 1);
        for (&a, &p) in self.k0.iter().zip(&self.rest) {
            let mut key = [0usize; L];
            key[0] = a as usize;
            for (l, x) in key.iter_mut().enumerate().skip(1) {
                *x = layout.level(p.to_u64(), l);
            }
            keys.push(key);
        }
        (keys, self.vals)
    }
}

/// What reading the entries gave: flat arrays for the counting sort, or `[usize; L]` keys for
/// the sorting assembly (more than `u32::MAX - 1` entries, or a level coordinate at or past its
/// level size, which the counting sort cannot bucket).
pub(crate) enum Read<P, V, const L: usize> {
    /// Flat arrays, every level coordinate below its level size.
    Fast(Collected<P, V>),
    /// Level keys and values in input order.
    Keys(Vec<[usize; L]>, Vec<V>),
}

/// Reads `entries` in input order, checking each dimension coordinate against `shape` and
/// mapping it with `dim_to_lvl`.
///
/// Errors: [`StorageError::CoordinateOutOfRange`] naming the first entry (input index),
/// dimension and coordinate out of range.
pub(crate) fn read<P: Word, V: Value, const D: usize, const L: usize>(
    layout: &KeyLayout,
    shape: [usize; D],
    lvl_sizes: [usize; L],
    entries: impl IntoIterator<Item = ([usize; D], V)>,
    dim_to_lvl: impl Fn(&[usize; D]) -> [usize; L],
) -> Result<Read<P, V, L>, StorageError> {
    let check = |entry: usize, c: &[usize; D]| match (0..D).find(|&d| c[d] >= shape[d]) {
        Some(dim) => Err(StorageError::CoordinateOutOfRange {
            entry,
            dim,
            coordinate: c[dim],
            size: shape[dim],
        }),
        None => Ok(()),
    };
    let mut it = entries.into_iter().enumerate();
    let cap = it.size_hint().0.min(u32::MAX as usize);
    let mut k0: Vec<u32> = Vec::with_capacity(cap);
    let mut rest: Vec<P> = Vec::with_capacity(cap);
    let mut vals: Vec<V> = Vec::with_capacity(cap);
    let limit = u32::MAX as usize - 1;
    let mut pending = None;
    for (entry, (c, v)) in it.by_ref() {
        check(entry, &c)?;
        let lc = dim_to_lvl(&c);
        if k0.len() == limit || lc.iter().zip(&lvl_sizes).any(|(&x, &s)| x >= s) {
            pending = Some((lc, v));
            break;
        }
        k0.push(lc[0] as u32);
        rest.push(layout.pack(&lc));
        vals.push(v);
    }
    let Some(first) = pending else {
        return Ok(Read::Fast(Collected { k0, rest, vals }));
    };
    // the sorting assembly's keys: what was read so far, then the rest of the entries
    let (mut keys, mut vals) = Collected { k0, rest, vals }.into_keys::<L>(layout);
    keys.push(first.0);
    vals.push(first.1);
    for (entry, (c, v)) in it {
        check(entry, &c)?;
        keys.push(dim_to_lvl(&c));
        vals.push(v);
    }
    Ok(Read::Keys(keys, vals))
}

/// Entries grouped by level-0 coordinate, each group in level order (stable: duplicates in
/// input order). Group `b` is `starts[b]..starts[b + 1]` of `rest` and `vals`.
pub(crate) struct Bucketed<P, V> {
    starts: Vec<u32>,
    rest: Vec<P>,
    vals: Vec<V>,
}

impl<P, V> Bucketed<P, V> {
    /// Number of entries.
    fn len(&self) -> usize {
        self.vals.len()
    }
    /// The positions of group `b`.
    #[inline(always)]
    fn group(&self, b: usize) -> std::ops::Range<usize> {
        self.starts[b] as usize..self.starts[b + 1] as usize
    }
}

/// Counting sort of `c` by level-0 coordinate (`size0` groups), then each group sorted by key,
/// stably. `None` (nothing done) when `size0` exceeds `4n + 1024` for `n` entries, where the
/// histogram would outweigh the entries (the sorting assembly's rule as well).
pub(crate) fn bucket<P: Word, V: Value>(
    c: Collected<P, V>,
    size0: usize,
) -> Result<Bucketed<P, V>, Collected<P, V>> {
    let n = c.vals.len();
    if size0 > n.saturating_mul(4).saturating_add(1024) {
        return Err(c);
    }
    let Collected { k0, rest, vals } = c;
    // starts[b + 1] counts group b, then the prefix sum makes starts[b] its first position
    let mut starts = vec![0u32; size0 + 1];
    for &b in &k0 {
        starts[b as usize + 1] += 1;
    }
    for b in 0..size0 {
        starts[b + 1] += starts[b];
    }
    // keys forward (cursors end at each group's end), values backward (cursors return to
    // each group's start): both stable, one cursor array; each input array is freed as soon
    // as it is scattered
    let mut sorted_rest = vec![P::default(); n];
    for (&b, &p) in k0.iter().zip(&rest) {
        let d = &mut starts[b as usize];
        sorted_rest[*d as usize] = p;
        *d += 1;
    }
    drop(rest);
    let mut sorted_vals = vec![V::zero(); n];
    for (&b, &v) in k0.iter().zip(&vals).rev() {
        let d = &mut starts[b as usize];
        *d -= 1;
        sorted_vals[*d as usize] = v;
    }
    drop((k0, vals));
    let mut out = Bucketed {
        starts,
        rest: sorted_rest,
        vals: sorted_vals,
    };
    sort_groups(&mut out);
    Ok(out)
}

/// Puts every group of `bk` in key order, stably (by `(key, index in group)`).
fn sort_groups<P: Word, V: Value>(bk: &mut Bucketed<P, V>) {
    let mut tagged: Vec<P::Tagged> = Vec::new();
    let mut scratch: Vec<V> = Vec::new();
    for b in 0..bk.starts.len() - 1 {
        let g = bk.group(b);
        let rest = &mut bk.rest[g.clone()];
        if rest.is_sorted() {
            continue;
        }
        tagged.clear();
        tagged.extend(rest.iter().zip(0u32..).map(|(&p, i)| p.tag(i)));
        tagged.sort_unstable();
        let vals = &mut bk.vals[g];
        scratch.clear();
        scratch.extend_from_slice(vals);
        for ((t, r), v) in tagged.iter().zip(rest.iter_mut()).zip(vals.iter_mut()) {
            let (p, i) = P::untag(*t);
            *r = p;
            *v = scratch[i];
        }
    }
}

/// The level arrays of the ordered entries `bk` for `enc` (level sizes `lvl_sizes`, `batches`
/// batches), into `b`'s buffers: directly for `dense, compressed, dense*` encodings when
/// every position and coordinate fits its width, else entry by entry through `lexInsert`.
/// Duplicates are summed (in input order) when `merge`.
///
/// Errors: as [`Builder::lex_insert`] and [`Builder::end_insert`]; [`StorageError::ShapeOverflow`]
/// if a BSR value array cannot be had.
pub(crate) fn build<P: Word, V: Value, const L: usize>(
    b: &mut Builder<'_, V>,
    layout: &KeyLayout,
    bk: Bucketed<P, V>,
    merge: bool,
) -> Result<(), StorageError> {
    if direct_applies(b.enc, b.lvl_sizes, bk.len(), merge) {
        return build_direct::<P, V, L>(b, layout, bk, merge);
    }
    let n = bk.len();
    let mut key = [0usize; L];
    let mut first = true;
    for g in 0..bk.starts.len() - 1 {
        key[0] = g;
        let range = bk.group(g);
        let end = range.end;
        let mut k = range.start;
        while k < end {
            let p = bk.rest[k];
            let mut v = bk.vals[k];
            k += 1;
            if merge {
                while k < end && bk.rest[k] == p {
                    v += bk.vals[k];
                    k += 1;
                }
            }
            for (l, x) in key.iter_mut().enumerate().skip(1) {
                *x = layout.level(p.to_u64(), l);
            }
            b.lex_insert(first, &key, v)?;
            first = false;
        }
    }
    b.end_insert(n == 0)
}

/// Whether `enc` is `dense, compressed, dense*` (no batch level, level 1 unique unless it is the
/// last) with level 1 owning its coordinate buffer, and `n` entries can overflow neither
/// `posWidth` nor `crdWidth` (byte widths only): then [`build_direct`] gives what `lexInsert`
/// would.
fn direct_applies(enc: &Encoding, lvl_sizes: &[usize], n: usize, merge: bool) -> bool {
    let t = &enc.lvl_types;
    let fits = |width: u32, x: usize| match width {
        0 | 64 => true,
        8 | 16 | 32 => (x as u64) < (1u64 << width),
        _ => false,
    };
    t.len() >= 2
        && t[0].format == LevelFormat::Dense
        && t[1].format == LevelFormat::Compressed
        && t[2..].iter().all(|x| x.format == LevelFormat::Dense)
        && t.iter().all(|x| x.is_ordered())
        && (t.len() == 2 || (t[1].is_unique() && merge))
        && enc.owns_crd_buffer(1)
        && fits(enc.pos_width, n)
        && fits(enc.crd_width, lvl_sizes[1].saturating_sub(1))
}

/// Appends `x` to `buf` (a position or coordinate buffer of level `l`, width `width`).
fn push(
    buf: &mut IndexBuffer,
    l: usize,
    kind: BufferKind,
    x: usize,
    width: u32,
) -> Result<(), StorageError> {
    buf.push(x).map_err(|value| StorageError::WidthOverflow {
        level: l,
        kind,
        value,
        width,
    })
}

/// [`build`] for `dense, compressed, dense*`: level 1's positions (one segment per level-0
/// coordinate) and coordinates (one per distinct level-1 coordinate in a segment), the values
/// of each level-1 node's dense block (`lvl_sizes[2..]`, row-major, zeros where nothing was
/// inserted); duplicates summed in input order when `merge` (the first value assigned, the next
/// ones added, as `lexInsert` after the sorting assembly's merge does).
fn build_direct<P: Word, V: Value, const L: usize>(
    b: &mut Builder<'_, V>,
    layout: &KeyLayout,
    bk: Bucketed<P, V>,
    merge: bool,
) -> Result<(), StorageError> {
    let (pw, cw) = (b.enc.pos_width, b.enc.crd_width);
    let Some(mut pos) = b.positions[1].take() else {
        return Err(StorageError::Unsupported {
            reason: "level 1 has no positions".into(),
        });
    };
    let Some(CrdBuffer::Plain(mut crd)) = b.coordinates[1].take() else {
        return Err(StorageError::Unsupported {
            reason: "level 1 has no byte-aligned coordinates".into(),
        });
    };
    let groups = bk.starts.len() - 1;
    if L == 2 {
        // compact each group in place (duplicates summed), then move the arrays
        let Bucketed {
            starts,
            mut rest,
            mut vals,
        } = bk;
        let mut w = 0;
        for g in 0..groups {
            let lo = w;
            for k in starts[g] as usize..starts[g + 1] as usize {
                if merge && w > lo && rest[w - 1] == rest[k] {
                    let v = vals[k];
                    vals[w - 1] += v;
                } else {
                    if w != k {
                        rest[w] = rest[k];
                        vals[w] = vals[k];
                    }
                    w += 1;
                }
            }
            push(&mut pos, 1, BufferKind::Position, w, pw)?;
        }
        drop(starts);
        rest.truncate(w);
        vals.truncate(w);
        crd = fill(crd, rest, cw)?;
        b.values = vals;
    } else {
        let too_large = || StorageError::ShapeOverflow {
            shape: b.lvl_sizes.to_vec(),
        };
        // row-major strides of the dense block below level 1
        let mut stride = [0usize; L];
        let mut block = 1usize;
        for l in (2..L).rev() {
            stride[l] = block;
            block = block.checked_mul(b.lvl_sizes[l]).ok_or_else(too_large)?;
        }
        let node = |p: P| layout.level(p.to_u64(), 1);
        // count the level-1 nodes: a new one wherever the level-1 coordinate changes in a group
        let mut count = 0usize;
        for g in 0..groups {
            let r = bk.group(g);
            let mut prev = None;
            for &p in &bk.rest[r] {
                let c = node(p);
                if prev != Some(c) {
                    count += 1;
                    prev = Some(c);
                }
            }
        }
        let total = count.checked_mul(block).ok_or_else(too_large)?;
        let mut vals: Vec<V> = Vec::new();
        vals.try_reserve_exact(total).map_err(|_| too_large())?;
        vals.resize(total, V::zero());
        crd.try_reserve_exact(count).map_err(|_| too_large())?;
        let mut at = 0usize; // offset of the current node's block
        let mut nodes = 0usize;
        for g in 0..groups {
            let r = bk.group(g);
            let mut prev: Option<usize> = None;
            let mut prev_key: Option<P> = None;
            for k in r {
                let p = bk.rest[k];
                let c = node(p);
                if prev != Some(c) {
                    at = nodes * block;
                    nodes += 1;
                    prev = Some(c);
                    prev_key = None;
                    push(&mut crd, 1, BufferKind::Coordinate, c, cw)?;
                }
                let mut off = at;
                for (l, s) in stride.iter().enumerate().skip(2) {
                    off += layout.level(p.to_u64(), l) * s;
                }
                if prev_key == Some(p) {
                    let v = bk.vals[k];
                    vals[off] += v;
                } else {
                    vals[off] = bk.vals[k];
                }
                prev_key = Some(p);
            }
            push(&mut pos, 1, BufferKind::Position, nodes, pw)?;
        }
        b.values = vals;
    }
    b.positions[1] = Some(pos);
    b.coordinates[1] = Some(CrdBuffer::Plain(crd));
    Ok(())
}

/// `buf` (empty, width `width`) holding `keys` as level-1 coordinates: `keys` moved in when it
/// already has the buffer's element type, else converted.
fn fill<P: Word>(buf: IndexBuffer, keys: Vec<P>, width: u32) -> Result<IndexBuffer, StorageError> {
    match P::into_buffer(keys, width) {
        Ok(moved) => Ok(moved),
        Err(keys) => {
            let len = keys.len();
            convert(
                buf,
                keys.into_iter().map(|x| x.to_u64() as usize),
                len,
                width,
            )
        }
    }
}

/// `buf` with `len` numbers from `it` appended, width-checked.
fn convert(
    mut buf: IndexBuffer,
    it: impl Iterator<Item = usize>,
    len: usize,
    width: u32,
) -> Result<IndexBuffer, StorageError> {
    buf.try_reserve_exact(len)
        .map_err(|_| StorageError::ShapeOverflow { shape: vec![len] })?;
    for x in it {
        push(&mut buf, 1, BufferKind::Coordinate, x, width)?;
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_layout_packs_in_level_order() {
        let k = KeyLayout::new(&[5, 3, 1000, 2]).unwrap();
        assert_eq!(k.bits, 2 + 10 + 1);
        let a: u32 = k.pack(&[4, 2, 999, 1]);
        let b: u32 = k.pack(&[0, 2, 999, 0]);
        let c: u32 = k.pack(&[0, 1, 999, 1]);
        assert!(c < b && b < a);
        assert_eq!(
            (1..4).map(|l| k.level(u64::from(a), l)).collect::<Vec<_>>(),
            [2, 999, 1]
        );
    }

    #[test]
    fn key_layout_of_64_bits_and_a_unit_level() {
        // levels 2 and 3 take all 64 bits; level 1 (size 1) sits at shift 64
        let k = KeyLayout::new(&[7, 1, 1 << 32, 1 << 32]).unwrap();
        assert_eq!(k.bits, 64);
        let p: u64 = k.pack(&[3, 0, (1 << 32) - 1, 5]);
        assert_eq!(k.level(p, 1), 0);
        assert_eq!(k.level(p, 2), (1 << 32) - 1);
        assert_eq!(k.level(p, 3), 5);
        assert!(KeyLayout::new(&[2, 2, 1 << 32, 1 << 32]).is_none());
    }

    #[test]
    fn tags_order_by_key_then_index() {
        assert!(5u32.tag(9) < 6u32.tag(0));
        assert!(5u32.tag(1) < 5u32.tag(2));
        assert_eq!(u32::untag(7u32.tag(3)), (7, 3));
        assert_eq!(
            u64::untag((u64::MAX).tag(u32::MAX)),
            (u64::MAX, u32::MAX as usize)
        );
    }
}
