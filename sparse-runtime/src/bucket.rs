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
//! Large inputs ([`CoarsePlan`]) are read into coarse groups of consecutive level-0
//! coordinates instead, through a small write-combining tail per group into slabs the group
//! owns ([`Coarse`]); each group is then sorted on its own, within the caches, by an LSD radix
//! sort of its keys (local level-0 coordinate, then levels `1..`), which is stable as well
//! ([`bucket_coarse`]), and freed once it is in the result. The one-pass scatter writes at random over all entries; on 11.6M
//! shuffled entries that made it DRAM-bound.
//!
//! The ordered entries then become the level arrays: directly for `dense, compressed, dense*`
//! encodings (CSR, CSC, BSR, BSC) when every position and coordinate fits its width (from
//! coarse groups, each group as soon as it is sorted: [`build_coarse`]), else through the
//! shared [`Builder`] (`lexInsert`), which gives every other level format and every width
//! error exactly as before.

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

    /// Each level's shift as an array, for [`pack_key`] in a loop over entries.
    fn shifts<const L: usize>(&self) -> [u32; L] {
        std::array::from_fn(|l| self.shift[l])
    }

    /// The coordinate of level `l >= 1` in key `p`.
    #[inline(always)]
    fn level(&self, p: u64, l: usize) -> usize {
        // a level of size 1 above 64 bits of levels sits at shift 64, where the wrapped
        // shift reads `p` itself: its mask is 0
        (p.wrapping_shr(self.shift[l]) & self.mask[l]) as usize
    }
}

/// The key of level coordinates `lc` (each below its level size) under the layout whose
/// [`KeyLayout::shifts`] are `shifts`.
#[inline(always)]
fn pack_key<P: Word, const L: usize>(shifts: &[u32; L], lc: &[usize; L]) -> P {
    let mut k = 0u64;
    for l in 1..L {
        // a level of size 1 above 64 bits of levels sits at shift 64 (wrapped: 0), where its
        // coordinate is 0
        k |= (lc[l] as u64).wrapping_shl(shifts[l]);
    }
    P::from_u64(k)
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

/// What reading the entries gave: flat arrays for the counting sort, the same split in coarse
/// groups ([`Coarse`]), or `[usize; L]` keys for the sorting assembly (more than `u32::MAX - 1`
/// entries, or a level coordinate at or past its level size, which the counting sort cannot
/// bucket).
pub(crate) enum Read<P, V, const L: usize> {
    /// Flat arrays, every level coordinate below its level size.
    Fast(Collected<P, V>),
    /// Coarse groups of level-0 coordinates, every level coordinate below its level size.
    Coarse(Coarse<P, V>),
    /// Level keys and values, in input order (or, after a coarse read, in input order within
    /// each level-0 coordinate: the same sorted result, the sort being stable).
    Keys(Vec<[usize; L]>, Vec<V>),
}

/// Fewest entries that take the coarse path: below it the arrays of the one-pass scatter (12
/// MiB for `u32` keys and `f64` values) stay in a last-level cache, where its two passes beat
/// the coarse path's four (converting bcsstk16's 290,000 entries took 15% longer coarse).
const COARSE_MIN_ENTRIES: usize = 1 << 20;
/// Entries a coarse group aims at: its keys, values and output (12 bytes an entry for `u32`
/// keys and `f64` values, twice) stay within a 1 MiB L2 and the L3 slice of a core. Fewer,
/// larger groups mean fewer tails to write into while reading: on a Zen 2 (512 KiB L2) 2^15
/// took COO->BSR from 250 to 238 ms on 11.6M shuffled entries (2^14: 250, 2^16: 270; CSR
/// alike but 2^16, far slower), the sort's scratch spilling to the L3 costing less than the
/// tails saved.
const COARSE_GROUP_ENTRIES: usize = 1 << 15;
/// Most coarse groups: each has a write-combining tail of [`COARSE_TAIL`] entries (at 12
/// bytes an entry, 6 MiB for all of them at most: within the L3).
const COARSE_MAX_GROUPS: usize = 1 << 10;
/// Entries of a coarse group's tail: the unit in which it is copied to the group's slabs,
/// large enough (2 KiB of `u32` keys, 4 KiB of `f64` values) that reading a group's slabs
/// back streams like one array.
const COARSE_TAIL: usize = 512;

/// How the coarse path splits level 0: groups of `1 << shift` consecutive level-0
/// coordinates, each entry keyed by its level-0 coordinate's low `shift` bits above the
/// `rest_bits` of levels `1..`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CoarsePlan {
    /// Level-0 coordinates per group, as a power of two.
    pub shift: u32,
    /// Number of groups (`ceil(size0 / 2^shift)`, at least 2).
    pub groups: usize,
    /// Bits of the packed key of levels `1..` ([`KeyLayout::bits`]).
    pub rest_bits: u32,
}

impl CoarsePlan {
    /// The plan for about `n` entries (the iterator's lower size bound) over `size0` level-0
    /// coordinates with `rest_bits` of key for the levels below: `None` (the one-pass
    /// scatter) for fewer than [`COARSE_MIN_ENTRIES`] entries, when level 0 is too large for
    /// the counting sort (`4n + 1024`), when there would be fewer than 2 groups, or when the
    /// combined key would need more than 64 bits.
    pub fn new(n: usize, size0: usize, rest_bits: u32) -> Option<CoarsePlan> {
        if n < COARSE_MIN_ENTRIES || size0 > n.saturating_mul(4).saturating_add(1024) {
            return None;
        }
        let want = (n / COARSE_GROUP_ENTRIES).clamp(2, COARSE_MAX_GROUPS);
        let per = size0.div_ceil(want).max(1).next_power_of_two();
        CoarsePlan::with_shift(size0, rest_bits, per.trailing_zeros())
    }

    /// The plan with groups of `2^shift` level-0 coordinates (`None` under the rules of
    /// [`CoarsePlan::new`] other than the entry count).
    pub fn with_shift(size0: usize, rest_bits: u32, shift: u32) -> Option<CoarsePlan> {
        let groups = size0.checked_shr(shift)? + usize::from(size0 & ((1 << shift) - 1) != 0);
        (groups >= 2 && rest_bits + shift <= 64).then_some(CoarsePlan {
            shift,
            groups,
            rest_bits,
        })
    }

    /// Bits of an entry's key in its group: the local level-0 coordinate and levels `1..`.
    pub fn key_bits(&self) -> u32 {
        self.rest_bits + self.shift
    }
}

/// Entries of a slab of a coarse group's storage ([`Coarse`]): two tails (12 KiB for `u32`
/// keys and `f64` values), so a group's last slab leaves at most one tail unused.
const COARSE_SLAB: usize = 2 * COARSE_TAIL;

/// A slab of a coarse group: keys and values, at most [`COARSE_SLAB`] entries.
type Slab<P, V> = (Vec<P>, Vec<V>);

/// Entries read into coarse groups of level-0 coordinates ([`CoarsePlan`]), each group in
/// input order: a group's entries are copied from its tail of [`COARSE_TAIL`] entries to the
/// group's own slabs when the tail fills (software write combining: the first pass writes as
/// many sequential streams as there are groups, never at random over all entries).
/// [`Coarse::seal`] then copies the partial tails and frees them. Each group owns its slabs,
/// so a group built into the output is freed at once ([`Coarse::free_group`]): the groups and
/// the output are not all held together (BSR assembly's peak).
pub(crate) struct Coarse<P, V> {
    plan: CoarsePlan,
    /// Each group's slabs, in input order: full but the last. Keys are `local level-0 <<
    /// rest_bits | rest`.
    slabs: Vec<Vec<Slab<P, V>>>,
    /// Each group's tail until sealed, then empty.
    tails: Vec<Tail<P, V>>,
    /// How many entries each group's tail holds (below [`COARSE_TAIL`]), apart from the
    /// tails: a few KiB that stay in the L1, so finding where an entry goes waits on no miss
    /// (the tails, 6 KiB a group, spill a 512 KiB L2; storing into them waits on nothing).
    fills: Vec<usize>,
    /// Entries read (counted at [`Coarse::seal`]).
    len: usize,
}

/// A coarse group's tail ([`Coarse`]): its first `fills[g]` keys and values are used.
#[derive(Clone)]
struct Tail<P, V> {
    keys: [P; COARSE_TAIL],
    vals: [V; COARSE_TAIL],
}

impl<P: Word, V: Value> Coarse<P, V> {
    /// Empty groups for `plan`.
    fn new(plan: CoarsePlan) -> Coarse<P, V> {
        Coarse {
            plan,
            slabs: (0..plan.groups).map(|_| Vec::new()).collect(),
            tails: vec![
                Tail {
                    keys: [P::default(); COARSE_TAIL],
                    vals: [V::zero(); COARSE_TAIL],
                };
                plan.groups
            ],
            fills: vec![0; plan.groups],
            len: 0,
        }
    }

    /// Appends an entry of level-0 coordinate `k0` and key `rest` of levels `1..` (not after
    /// [`Coarse::seal`]).
    #[inline(always)]
    fn push(&mut self, k0: usize, rest: P, v: V) {
        let g = k0 >> self.plan.shift;
        let local = (k0 & ((1 << self.plan.shift) - 1)) as u64;
        let key = P::from_u64(local.wrapping_shl(self.plan.rest_bits) | rest.to_u64());
        // a fill stays below COARSE_TAIL: the mask only tells the compiler so
        let f = self.fills[g] & (COARSE_TAIL - 1);
        let tail = &mut self.tails[g];
        tail.keys[f] = key;
        tail.vals[f] = v;
        if f + 1 < COARSE_TAIL {
            self.fills[g] = f + 1;
            return;
        }
        self.flush(g, COARSE_TAIL);
        self.fills[g] = 0;
    }

    /// Copies the first `len` entries of group `g`'s tail to its last slab, or a new one.
    fn flush(&mut self, g: usize, len: usize) {
        let tail = &self.tails[g];
        let slabs = &mut self.slabs[g];
        if slabs
            .last()
            .is_none_or(|(keys, _)| keys.len() + len > COARSE_SLAB)
        {
            slabs.push((
                Vec::with_capacity(COARSE_SLAB),
                Vec::with_capacity(COARSE_SLAB),
            ));
        }
        if let Some((keys, vals)) = slabs.last_mut() {
            keys.extend_from_slice(&tail.keys[..len]);
            vals.extend_from_slice(&tail.vals[..len]);
        }
    }

    /// Copies every partial tail to its group's slabs, gives back the room a group's last
    /// slab does not use, and frees the tails.
    fn seal(&mut self) {
        for g in 0..self.plan.groups {
            let f = self.fills[g];
            if f > 0 {
                self.flush(g, f);
            }
            if let Some((keys, vals)) = self.slabs[g].last_mut() {
                keys.shrink_to_fit();
                vals.shrink_to_fit();
            }
        }
        self.tails = Vec::new();
        self.fills = Vec::new();
        self.len = (0..self.plan.groups).map(|g| self.group_len(g)).sum();
    }

    /// Calls `f(key, value)` on group `g`'s entries in input order (after [`Coarse::seal`]).
    #[inline(always)]
    fn for_group(&self, g: usize, mut f: impl FnMut(P, V)) {
        for (keys, vals) in &self.slabs[g] {
            for (&k, &v) in keys.iter().zip(vals) {
                f(k, v);
            }
        }
    }

    /// Entries of group `g` (after [`Coarse::seal`]; 0 once freed).
    fn group_len(&self, g: usize) -> usize {
        self.slabs[g].iter().map(|(keys, _)| keys.len()).sum()
    }

    /// Frees group `g`'s slabs (it is built; its entries are not read again).
    fn free_group(&mut self, g: usize) {
        self.slabs[g] = Vec::new();
    }

    /// The entries as `[usize; L]` level keys (and values), group by group, each group in
    /// input order (after [`Coarse::seal`]).
    pub fn into_keys<const L: usize>(mut self, layout: &KeyLayout) -> (Vec<[usize; L]>, Vec<V>) {
        let mut keys: Vec<[usize; L]> = Vec::with_capacity(self.len + 1);
        let mut vals: Vec<V> = Vec::with_capacity(self.len + 1);
        let (shift, rest_bits) = (self.plan.shift, self.plan.rest_bits);
        for g in 0..self.plan.groups {
            self.for_group(g, |k, v| {
                let k = k.to_u64();
                let mut key = [0usize; L];
                key[0] = (g << shift) | k.checked_shr(rest_bits).unwrap_or(0) as usize;
                for (l, x) in key.iter_mut().enumerate().skip(1) {
                    *x = layout.level(k, l);
                }
                keys.push(key);
                vals.push(v);
            });
            self.free_group(g);
        }
        (keys, vals)
    }
}

/// Reads `entries` in input order, checking each dimension coordinate against `shape` and
/// mapping it with `dim_to_lvl`. `levels_in_range` says that every level coordinate of an
/// entry inside `shape` is below its level size (the encoding's map is made of dimensions,
/// `floordiv` and `mod` by constants, and `lvl_sizes` are the ones it gives:
/// `Encoding::lvl_sizes`); the level coordinates are then not tested entry by entry.
///
/// Errors: [`StorageError::CoordinateOutOfRange`] naming the first entry (input index),
/// dimension and coordinate out of range.
pub(crate) fn read<P: Word, V: Value, const D: usize, const L: usize>(
    layout: &KeyLayout,
    shape: [usize; D],
    lvl_sizes: [usize; L],
    entries: impl IntoIterator<Item = ([usize; D], V)>,
    dim_to_lvl: impl Fn(&[usize; D]) -> [usize; L],
    coarse: Option<CoarsePlan>,
    levels_in_range: bool,
) -> Result<Read<P, V, L>, StorageError> {
    let entries = entries.into_iter();
    let cap = entries.size_hint().0.min(u32::MAX as usize);
    let read = (layout, shape, lvl_sizes, entries, dim_to_lvl);
    match (coarse, levels_in_range) {
        (Some(plan), true) => read_into::<_, _, D, L, _, false>(read, Coarse::new(plan)),
        (Some(plan), false) => read_into::<_, _, D, L, _, true>(read, Coarse::new(plan)),
        (None, _) => {
            let flat = Collected {
                k0: crate::huge::with_capacity(cap),
                rest: crate::huge::with_capacity(cap),
                vals: crate::huge::with_capacity(cap),
            };
            read_into::<_, _, D, L, _, true>(read, flat)
        }
    }
}

/// Where [`read`] puts the entries it can bucket: flat arrays ([`Collected`]) or coarse groups
/// ([`Coarse`]).
trait Sink<P, V>: Sized {
    /// Takes an entry of level-0 coordinate `k0` and key `rest` of levels `1..`.
    fn take(&mut self, k0: usize, rest: P, v: V);
    /// What was taken, for the counting sort.
    fn read<const L: usize>(self) -> Read<P, V, L>;
    /// What was taken as level keys, each level-0 coordinate's entries in input order.
    fn keys<const L: usize>(self, layout: &KeyLayout) -> (Vec<[usize; L]>, Vec<V>);
}

impl<P: Word, V: Value> Sink<P, V> for Collected<P, V> {
    #[inline(always)]
    fn take(&mut self, k0: usize, rest: P, v: V) {
        self.k0.push(k0 as u32);
        self.rest.push(rest);
        self.vals.push(v);
    }
    fn read<const L: usize>(self) -> Read<P, V, L> {
        Read::Fast(self)
    }
    fn keys<const L: usize>(self, layout: &KeyLayout) -> (Vec<[usize; L]>, Vec<V>) {
        self.into_keys(layout)
    }
}

impl<P: Word, V: Value> Sink<P, V> for Coarse<P, V> {
    #[inline(always)]
    fn take(&mut self, k0: usize, rest: P, v: V) {
        self.push(k0, rest, v);
    }
    fn read<const L: usize>(mut self) -> Read<P, V, L> {
        self.seal();
        Read::Coarse(self)
    }
    fn keys<const L: usize>(mut self, layout: &KeyLayout) -> (Vec<[usize; L]>, Vec<V>) {
        self.seal();
        self.into_keys(layout)
    }
}

/// [`read`] into `sink`: each entry's dimension coordinates checked against `shape`, mapped
/// with `dim_to_lvl` and taken; at the first level coordinate past its level size (tested
/// when `CHECK_LEVELS`) or past `u32::MAX - 1` entries, what was taken and the rest become
/// the sorting assembly's keys.
#[allow(clippy::type_complexity)]
fn read_into<
    P: Word,
    V: Value,
    const D: usize,
    const L: usize,
    S: Sink<P, V>,
    const CHECK_LEVELS: bool,
>(
    (layout, shape, lvl_sizes, entries, dim_to_lvl): (
        &KeyLayout,
        [usize; D],
        [usize; L],
        impl Iterator<Item = ([usize; D], V)>,
        impl Fn(&[usize; D]) -> [usize; L],
    ),
    mut sink: S,
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
    let mut it = entries.enumerate();
    let limit = u32::MAX as usize - 1;
    let mut pending = None;
    let shifts = layout.shifts::<L>();
    for (entry, (c, v)) in it.by_ref() {
        // the tests without early exits (no branch per coordinate); the error path names
        // the first bad dimension
        if c.iter()
            .zip(&shape)
            .fold(false, |bad, (&x, &s)| bad | (x >= s))
        {
            check(entry, &c)?;
        }
        let lc = dim_to_lvl(&c);
        let past = CHECK_LEVELS
            && lc
                .iter()
                .zip(&lvl_sizes)
                .fold(false, |past, (&x, &s)| past | (x >= s));
        // every entry before this one was taken
        if past || entry == limit {
            pending = Some((lc, v));
            break;
        }
        sink.take(lc[0], pack_key(&shifts, &lc), v);
    }
    let Some(first) = pending else {
        return Ok(sink.read());
    };
    // the sorting assembly's keys: what was read so far, then the rest of the entries
    let (mut keys, mut vals) = sink.keys::<L>(layout);
    keys.push(first.0);
    vals.push(first.1);
    for (entry, (c, v)) in it {
        check(entry, &c)?;
        keys.push(dim_to_lvl(&c));
        vals.push(v);
    }
    Ok(Read::Keys(keys, vals))
}

/// Most bits of a radix digit in [`bucket_coarse`]: its histogram (`4 << 14` bytes) stays in
/// the L1 and L2 caches.
const DIGIT_BITS: u32 = 14;

/// A digit's counters: [`DIGIT_BITS`] bits at most, so an index masked with `DIGIT_MASK` is
/// within it (no bounds check per entry).
type Histogram = [u32; 1 << DIGIT_BITS];

/// The mask of the largest digit.
const DIGIT_MASK: u64 = (1 << DIGIT_BITS) - 1;

/// Most passes of the [`GroupSorter`]: keys of at most 32 bits, digits of [`DIGIT_BITS`].
const MAX_PASSES: usize = 3;

/// The LSD radix sort of coarse groups whose keys (local level-0 coordinate, then levels `1..`)
/// fit 32 bits ([`CoarsePlan::key_bits`]): counting passes of at most [`DIGIT_BITS`]-bit digits,
/// stable, with scratch arrays sized for the largest group, so a group, its scratch and its
/// sorted copy stay within the L2.
struct GroupSorter<P, V> {
    plan: CoarsePlan,
    /// Low bits of the key left unsorted (entries equal above them keep their input order):
    /// the offset in a BSR block, which the build places by value ([`build_sorted`]).
    skip: u32,
    passes: u32,
    digit: u32,
    /// One histogram per pass, the first `passes` used (`2^digit` of their counters).
    hist: Box<[Histogram; MAX_PASSES]>,
    /// `rows[l + 1]` counts local level-0 coordinate `l`; its prefix sum gives the rows' starts.
    rows: Vec<u32>,
    tmp_keys: Vec<P>,
    tmp_vals: Vec<V>,
    tmp2_keys: Vec<P>,
    tmp2_vals: Vec<V>,
    /// The last pass's output: levels `1..` of each key, and the values.
    keys: Vec<P>,
    vals: Vec<V>,
}

impl<P: Word, V: Value> GroupSorter<P, V> {
    /// The sorter for the groups of `c`, its keys sorted above their low `skip` bits (at most
    /// those of levels `1..`); `None` when its keys need more than 32 bits.
    fn new(c: &Coarse<P, V>, skip: u32) -> Option<GroupSorter<P, V>> {
        let plan = c.plan;
        let key_bits = plan.key_bits();
        if key_bits > 32 || skip > plan.rest_bits {
            return None;
        }
        let sorted_bits = key_bits - skip;
        let passes = sorted_bits.div_ceil(DIGIT_BITS).max(1);
        let digit = sorted_bits.div_ceil(passes);
        let largest = (0..plan.groups).map(|g| c.group_len(g)).max().unwrap_or(0);
        let t = |x| if passes > 1 { x } else { 0 };
        let u = |x| if passes > 2 { x } else { 0 };
        Some(GroupSorter {
            plan,
            skip,
            passes,
            digit,
            hist: Box::new([[0u32; 1 << DIGIT_BITS]; MAX_PASSES]),
            rows: vec![0u32; (1usize << plan.shift) + 1],
            tmp_keys: vec![P::default(); t(largest)],
            tmp_vals: vec![V::zero(); t(largest)],
            tmp2_keys: vec![P::default(); u(largest)],
            tmp2_vals: vec![V::zero(); u(largest)],
            keys: vec![P::default(); largest],
            vals: vec![V::zero(); largest],
        })
    }

    /// Puts group `g` of `c` in level order, stably: afterwards `self.rows[l]..self.rows[l + 1]`
    /// (`l` below the group's `nrows` level-0 coordinates) are the entries of its `l`-th
    /// level-0 coordinate in `self.keys` (levels `1..` only) and `self.vals`.
    fn sort(&mut self, c: &Coarse<P, V>, g: usize, nrows: usize) {
        match self.passes {
            1 => self.sort_in::<1>(c, g, nrows),
            2 => self.sort_in::<2>(c, g, nrows),
            _ => self.sort_in::<MAX_PASSES>(c, g, nrows),
        }
    }

    /// [`GroupSorter::sort`] in `PASSES` passes (`self.passes`), unrolled.
    #[inline(always)]
    fn sort_in<const PASSES: usize>(&mut self, c: &Coarse<P, V>, g: usize, nrows: usize) {
        let plan = self.plan;
        let rest_mask = (1u64 << plan.rest_bits) - 1;
        let (skip, digit) = (self.skip, self.digit);
        // `& DIGIT_MASK` as well: the compiler then knows every index is within a histogram
        let dmask = ((1u64 << digit) - 1) & DIGIT_MASK;
        let len = c.group_len(g);
        let rows = &mut self.rows[..=nrows];
        let hist = &mut self.hist[..PASSES];
        for h in hist.iter_mut() {
            h[..1 << digit].fill(0);
        }
        // the last pass's digit holds every bit of the local level-0 coordinate when
        // `rest_bits` reaches its shift: the rows' starts are then read from its histogram
        let last_shift = skip + (PASSES as u32 - 1) * digit;
        let count_rows = plan.rest_bits < last_shift;
        let mut count = |k: u64| {
            for (p, h) in hist.iter_mut().enumerate() {
                h[((k >> (skip + p as u32 * digit)) & dmask) as usize] += 1;
            }
        };
        if count_rows {
            rows.fill(0);
            for (keys, _) in &c.slabs[g] {
                for &k in keys {
                    let k = k.to_u64();
                    rows[(k >> plan.rest_bits) as usize + 1] += 1;
                    count(k);
                }
            }
        } else {
            for (keys, _) in &c.slabs[g] {
                for &k in keys {
                    count(k.to_u64());
                }
            }
        }
        for h in hist.iter_mut() {
            let mut sum = 0u32;
            for x in &mut h[..1 << digit] {
                (*x, sum) = (sum, sum + *x);
            }
        }
        if count_rows {
            crate::index::running_sum(&mut rows[..=nrows]);
        } else {
            // row `l`'s keys start at digit `l << (rest_bits - last_shift)` of the last pass
            let to_digit = plan.rest_bits - last_shift;
            for (l, r) in rows[..nrows].iter_mut().enumerate() {
                *r = hist[PASSES - 1][((l as u64) << to_digit & dmask) as usize];
            }
            rows[nrows] = len as u32;
        }
        // pass p reads what pass p - 1 wrote: the slabs, then the scratch arrays in turn;
        // the last pass writes the output (levels `1..` of the key only)
        let last_mask = if PASSES == 1 { rest_mask } else { u64::MAX };
        let (keys, vals) = (&mut self.keys[..len], &mut self.vals[..len]);
        let (tmp_keys, tmp_vals) = (&mut self.tmp_keys[..], &mut self.tmp_vals[..]);
        let (tmp2_keys, tmp2_vals) = (&mut self.tmp2_keys[..], &mut self.tmp2_vals[..]);
        // pass 0: the slabs into the output (one pass) or the first scratch
        {
            let (out_keys, out_vals) = if PASSES == 1 {
                (&mut *keys, &mut *vals)
            } else {
                (&mut tmp_keys[..len], &mut tmp_vals[..len])
            };
            let h = &mut hist[0];
            for (ks, vs) in &c.slabs[g] {
                for (&k, &v) in ks.iter().zip(vs) {
                    let d = &mut h[((k.to_u64() >> skip) & dmask) as usize];
                    let at = *d as usize;
                    *d += 1;
                    // SAFETY: the histogram counted exactly these `len` keys, so each
                    // digit's cursor stays within its own range of `0..len`
                    unsafe {
                        put_unchecked(
                            out_keys,
                            out_vals,
                            at,
                            P::from_u64(k.to_u64() & last_mask),
                            v,
                        )
                    };
                }
            }
        }
        let scatter = |h: &mut Histogram,
                       shift: u32,
                       mask: u64,
                       from: (&[P], &[V]),
                       to: (&mut [P], &mut [V])| {
            for (&k, &v) in from.0.iter().zip(from.1) {
                let d = &mut h[((k.to_u64() >> shift) & dmask) as usize];
                let at = *d as usize;
                *d += 1;
                // SAFETY: `from` holds the `len` keys the histogram counted (the previous
                // pass permuted them), so each digit's cursor stays within `0..len`
                unsafe {
                    put_unchecked(
                        &mut *to.0,
                        &mut *to.1,
                        at,
                        P::from_u64(k.to_u64() & mask),
                        v,
                    )
                };
            }
        };
        if PASSES == 2 {
            scatter(
                &mut hist[1],
                skip + digit,
                rest_mask,
                (&tmp_keys[..len], &tmp_vals[..len]),
                (keys, vals),
            );
        } else if PASSES == 3 {
            scatter(
                &mut hist[1],
                skip + digit,
                u64::MAX,
                (&tmp_keys[..len], &tmp_vals[..len]),
                (&mut tmp2_keys[..len], &mut tmp2_vals[..len]),
            );
            scatter(
                &mut hist[2],
                skip + 2 * digit,
                rest_mask,
                (&tmp2_keys[..len], &tmp2_vals[..len]),
                (keys, vals),
            );
        }
    }
}

/// Writes key `k` and value `v` at `at` of `keys` and `vals` (a radix pass's scatter, whose
/// cursors the histogram bounds), without a bounds check in release builds.
///
/// # Safety
/// `at` must be below `keys.len()` and `vals.len()`.
#[inline(always)]
unsafe fn put_unchecked<P: Copy, V: Copy>(keys: &mut [P], vals: &mut [V], at: usize, k: P, v: V) {
    debug_assert!(at < keys.len() && at < vals.len());
    // SAFETY: the caller's bound
    unsafe {
        *keys.get_unchecked_mut(at) = k;
        *vals.get_unchecked_mut(at) = v;
    }
}

/// [`bucket`] for coarse groups: each group in turn (its entries, scratch and output within the
/// L2) is put in level order, stably, and written to its part of the output, so no pass writes
/// at random over all entries. Keys of at most 32 bits go through the [`GroupSorter`], each
/// group's sorted copy appended to the output from the cache (no pass zeroing the output
/// first); wider keys are scattered by level-0 coordinate and each segment sorted as
/// [`bucket`] does.
pub(crate) fn bucket_coarse<P: Word, V: Value>(
    mut c: Coarse<P, V>,
    size0: usize,
) -> Bucketed<P, V> {
    let n = c.len;
    let plan = c.plan;
    let per = 1usize << plan.shift;
    let mut starts = crate::huge::filled(size0 + 1, 0u32);
    if let Some(mut sorter) = GroupSorter::new(&c, 0) {
        let (mut rest, mut vals) = (crate::huge::with_capacity(n), crate::huge::with_capacity(n));
        for g in 0..plan.groups {
            let r0 = g << plan.shift;
            let nrows = per.min(size0 - r0);
            let len = c.group_len(g);
            sorter.sort(&c, g, nrows);
            c.free_group(g);
            let base = rest.len() as u32;
            rest.extend_from_slice(&sorter.keys[..len]);
            vals.extend_from_slice(&sorter.vals[..len]);
            for (s, &r) in starts[r0..=r0 + nrows].iter_mut().zip(&sorter.rows) {
                *s = base + r;
            }
        }
        return Bucketed { starts, rest, vals };
    }
    let rest_mask = match plan.rest_bits {
        64.. => u64::MAX,
        b => (1u64 << b) - 1,
    };
    let local = |k: P| k.to_u64().checked_shr(plan.rest_bits).unwrap_or(0) as usize;
    let mut rest = crate::huge::filled(n, P::default());
    let mut vals = crate::huge::filled(n, V::zero());
    let mut rows = vec![0u32; per + 1];
    let mut tagged: Vec<P::Tagged> = Vec::new();
    let mut scratch: Vec<V> = Vec::new();
    let mut base = 0usize;
    for g in 0..plan.groups {
        let r0 = g << plan.shift;
        let nrows = per.min(size0 - r0);
        let len = c.group_len(g);
        // rows[l + 1] counts local coordinate l; its prefix sum gives the group's starts
        rows[..=nrows].fill(0);
        c.for_group(g, |k, _| rows[local(k) + 1] += 1);
        rows[0] = base as u32;
        crate::index::running_sum(&mut rows[..=nrows]);
        starts[r0..=r0 + nrows].copy_from_slice(&rows[..=nrows]);
        c.for_group(g, |k, v| {
            let d = &mut rows[local(k)];
            let at = *d as usize;
            rest[at] = P::from_u64(k.to_u64() & rest_mask);
            vals[at] = v;
            *d += 1;
        });
        c.free_group(g);
        for l in r0..r0 + nrows {
            let s = starts[l] as usize..starts[l + 1] as usize;
            sort_group(
                &mut rest[s.clone()],
                &mut vals[s],
                &mut tagged,
                &mut scratch,
            );
        }
        base += len;
    }
    Bucketed { starts, rest, vals }
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
    crate::index::running_sum(&mut starts);
    // keys forward (cursors end at each group's end), values backward (cursors return to
    // each group's start): both stable, one cursor array; each input array is freed as soon
    // as it is scattered
    let mut sorted_rest = crate::huge::filled(n, P::default());
    for (&b, &p) in k0.iter().zip(&rest) {
        let d = &mut starts[b as usize];
        sorted_rest[*d as usize] = p;
        *d += 1;
    }
    drop(rest);
    let mut sorted_vals = crate::huge::filled(n, V::zero());
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
        sort_group(
            &mut bk.rest[g.clone()],
            &mut bk.vals[g],
            &mut tagged,
            &mut scratch,
        );
    }
}

/// Puts the keys `rest` (and their `vals`) of one group in key order, stably (by `(key, index
/// in group)`); `tagged` and `scratch` are reused buffers.
#[inline]
fn sort_group<P: Word, V: Value>(
    rest: &mut [P],
    vals: &mut [V],
    tagged: &mut Vec<P::Tagged>,
    scratch: &mut Vec<V>,
) {
    if rest.is_sorted() {
        return;
    }
    tagged.clear();
    tagged.extend(rest.iter().zip(0u32..).map(|(&p, i)| p.tag(i)));
    tagged.sort_unstable();
    scratch.clear();
    scratch.extend_from_slice(vals);
    for ((t, r), v) in tagged.iter().zip(rest.iter_mut()).zip(vals.iter_mut()) {
        let (p, i) = P::untag(*t);
        *r = p;
        *v = scratch[i];
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

/// [`build`] straight from coarse groups ([`Coarse`]) where [`builds_from_groups`] says so (the
/// encodings [`build_direct`] serves, group keys of at most 32 bits). Each group is sorted
/// within the L2 ([`GroupSorter`]) and its entries go into the level arrays from there: no
/// array of all sorted entries is written and read again. CSR appends a group as it is when
/// no two neighbouring keys are equal, else each row's distinct coordinates with their values
/// summed in input order; BSR appends each block (node of level 1) as its coordinate and a
/// block of zeros into pieces ([`PIECE_BYTES`], [`MAPPED_PIECE_BYTES`]), each filled before
/// the next, writes or adds the entries' values into it, and joins the pieces at the end.
/// Each group is freed once built ([`Coarse::free_group`]), so the peak is the larger of the
/// groups and twice the values (11.6M shuffled entries of `kron(I_40, bcsstk16)` in 3x3
/// blocks: peak extra memory 2.49x the result when the groups lived to the end, 1.98x now).
/// The arrays are those of [`bucket_coarse`] then [`build`], bit for bit.
///
/// Errors: as [`build_direct`]; [`StorageError::Unsupported`] for keys past 32 bits (which
/// [`builds_from_groups`] rules out); [`StorageError::ShapeOverflow`] when the values cannot
/// be had.
pub(crate) fn build_coarse<P: Word, V: Value, const L: usize>(
    b: &mut Builder<'_, V>,
    layout: &KeyLayout,
    c: Coarse<P, V>,
    size0: usize,
    merge: bool,
) -> Result<(), StorageError> {
    // BSR blocks of at most 64 values: the entries of a block need no order among them (the
    // build places each by its offset, a mask telling a duplicate), so the sort skips the
    // key's bits below level 1 (a 3 x 3 block's 4: kron(I_40, bcsstk16)'s keys sort on 24
    // bits, two passes of 12-bit digits instead of 14)
    let skip = match block_strides::<L>(b.lvl_sizes) {
        Some((_, block)) if L > 2 && block <= 64 => layout.shift[1],
        _ => 0,
    };
    let Some(mut sorter) = GroupSorter::new(&c, skip) else {
        return Err(StorageError::Unsupported {
            reason: "coarse keys past 32 bits".into(),
        });
    };
    let mut pieces = Vec::new();
    let mut c = c;
    let built = build_sorted::<P, V, L>(b, layout, &mut c, &mut sorter, &mut pieces, size0, merge);
    drop((c, sorter));
    built?;
    // BSR's values, joined once the groups are freed: the last piece gives back its unused
    // room first, so the values are held twice at most. The first piece, the largest (but for
    // a row of more blocks than it holds), grows to hold them all (`realloc`: past the
    // allocator's mmap threshold, 32 MiB in glibc, the kernel moves its pages, no value is
    // copied) and the others are appended
    if L > 2 {
        if let Some(last) = pieces.last_mut() {
            last.shrink_to_fit();
        }
        let total: usize = pieces.iter().map(Vec::len).sum();
        let mut pieces = pieces.into_iter();
        let mut values = pieces.next().unwrap_or_default();
        values
            .try_reserve_exact(total - values.len())
            .map_err(|_| StorageError::ShapeOverflow {
                shape: b.lvl_sizes.to_vec(),
            })?;
        crate::huge::advise(&values);
        for piece in pieces {
            values.extend_from_slice(&piece);
        }
        b.values = values;
    }
    Ok(())
}

/// Whether [`build_coarse`] serves `enc` (levels `lvl_sizes`) for the groups `c`: the encodings
/// [`build_direct`] serves, with group keys of at most 32 bits ([`GroupSorter`]).
pub(crate) fn builds_from_groups<P: Word, V: Value>(
    enc: &Encoding,
    lvl_sizes: &[usize],
    c: &Coarse<P, V>,
    merge: bool,
) -> bool {
    c.plan.key_bits() <= 32 && direct_applies(enc, lvl_sizes, c.len, merge)
}

/// Bytes of a piece of BSR values in [`build_sorted`] (at most; a whole number of blocks, at
/// least one, and no more values than an eighth of the entries) when the first piece is
/// smaller than [`MAPPED_PIECE_BYTES`]: large enough for huge pages ([`crate::huge`]).
const PIECE_BYTES: usize = 16 << 20;

/// Bytes of a piece of BSR values in [`build_sorted`] when the first piece is at least as
/// large: glibc's largest mmap threshold (`DEFAULT_MMAP_THRESHOLD_MAX`, 32 MiB on 64-bit), so
/// each piece is mapped on its own whatever the process freed before. glibc raises its
/// threshold to the size of each large block freed, after which smaller pieces came from the
/// heap, from memory earlier work had left: the report's `Bsr3::from_coo` of
/// `kron(I_40, bcsstk16)` (11.6 MB pieces) ran 237-245 ms after the report's other groups and
/// 211 ms with pieces of 33 MiB (sprs 899-936 ms either way), as with the threshold fixed by
/// `MALLOC_MMAP_THRESHOLD_` (213-217 ms). The total of the pieces after the first is the same
/// either way, so the peak memory at the join is too.
const MAPPED_PIECE_BYTES: usize = 32 << 20;

/// CSR's keys and values in [`build_sorted`] start with room for all but one `CSR_FIRST_SHARE`-th
/// of the entries, and grow to all of them (`realloc`) when a group no longer fits: by then
/// the groups read are freed. Counting a `realloc` as its old and new blocks both held (as an
/// allocator that copies holds them), the peak extra memory of the assembly is then about
/// 1.75x the result, the values' growth with a quarter of the groups left (`7/4` of the
/// groups' 12 bytes an entry with `u32` keys and `f64` values), where the whole output
/// allocated next to all the groups made it 2.01x (11.6M shuffled entries of
/// `kron(I_40, bcsstk16)`: 281.9 MB for a 140.2 MB result). Past glibc's mmap threshold the
/// `realloc` moves page tables, no value is copied.
const CSR_FIRST_SHARE: usize = 4;

/// Most bits of a block's levels (`2..`) for which [`build_sorted`] reads an entry's offset in
/// its block from a table (`2^bits` offsets).
const OFFSET_TABLE_BITS: u32 = 12;

/// [`build_coarse`] once it applies: the level-1 arrays into `b`, and CSR's values; BSR's
/// values in consecutive `pieces`, for the caller to join. Frees each group of `c` once it
/// is sorted.
fn build_sorted<P: Word, V: Value, const L: usize>(
    b: &mut Builder<'_, V>,
    layout: &KeyLayout,
    c: &mut Coarse<P, V>,
    sorter: &mut GroupSorter<P, V>,
    pieces: &mut Vec<Vec<V>>,
    size0: usize,
    merge: bool,
) -> Result<(), StorageError> {
    let (pw, cw) = (b.enc.pos_width, b.enc.crd_width);
    let (mut pos, mut crd) = level1_buffers(b)?;
    let too_large = || StorageError::ShapeOverflow {
        shape: b.lvl_sizes.to_vec(),
    };
    let plan = c.plan;
    let per = 1usize << plan.shift;
    if L == 2 {
        // CSR's keys and values start with room for three quarters of the entries and grow to
        // all of them once the groups read by then are freed: held at once, the groups and
        // the whole output would be twice the result (`CSR_FIRST_SHARE`)
        let first = c.len - c.len / CSR_FIRST_SHARE;
        let mut keys: Vec<P> = crate::huge::try_with_capacity(first).map_err(|_| too_large())?;
        let mut vals: Vec<V> = crate::huge::try_with_capacity(first).map_err(|_| too_large())?;
        for g in 0..plan.groups {
            let r0 = g << plan.shift;
            let nrows = per.min(size0 - r0);
            let len = c.group_len(g);
            sorter.sort(c, g, nrows);
            c.free_group(g);
            if keys.capacity() - keys.len() < len {
                // the keys first, the smaller array: the groups left, the values and both
                // blocks of the keys, then of the values, are held at once
                keys.try_reserve_exact(c.len - keys.len())
                    .map_err(|_| too_large())?;
                crate::huge::advise(&keys);
                vals.try_reserve_exact(c.len - vals.len())
                    .map_err(|_| too_large())?;
                crate::huge::advise(&vals);
            }
            // no two equal neighbours (within a row or across one): copied as they are
            if !merge || sorter.keys[..len].windows(2).all(|w| w[0] != w[1]) {
                let base = keys.len();
                keys.extend_from_slice(&sorter.keys[..len]);
                vals.extend_from_slice(&sorter.vals[..len]);
                for &end in &sorter.rows[1..=nrows] {
                    push(&mut pos, 1, BufferKind::Position, base + end as usize, pw)?;
                }
                continue;
            }
            for l in 0..nrows {
                let row = sorter.rows[l] as usize..sorter.rows[l + 1] as usize;
                let lo = keys.len();
                for (&k, &v) in sorter.keys[row.clone()].iter().zip(&sorter.vals[row]) {
                    if merge && keys.len() > lo && keys[keys.len() - 1] == k {
                        let last = vals.len() - 1;
                        vals[last] += v;
                    } else {
                        keys.push(k);
                        vals.push(v);
                    }
                }
                push(&mut pos, 1, BufferKind::Position, keys.len(), pw)?;
            }
        }
        crd = fill(crd, keys, cw)?;
        b.values = vals;
    } else {
        let (stride, block) = block_strides::<L>(b.lvl_sizes).ok_or_else(too_large)?;
        // blocks go into pieces (huge pages) filled one after the other: the number of
        // blocks is known at the end only, and one growing array would be held twice while
        // it moves, next to the groups
        // (an eighth of the entries at most: a small output is not held in one large piece
        // next to the groups; past glibc's largest mmap threshold when the first piece, half
        // a value an entry, is as large: `MAPPED_PIECE_BYTES`)
        let size = std::mem::size_of::<V>().max(1);
        let piece_values = if MAPPED_PIECE_BYTES / size <= c.len / 2 {
            MAPPED_PIECE_BYTES / size
        } else {
            (PIECE_BYTES / size).min(c.len / 8)
        }
        .max(block)
            / block
            * block;
        // the first piece holds half a value an entry (half of what full blocks take), the
        // most that keeps it and the groups (12 bytes an entry with `u32` keys and `f64`
        // values) within twice the result at the start: it is the one the join grows
        let first_values = (c.len / 2).max(piece_values) / block * block;
        // the current piece: each block is zero-filled as it starts (in the cache, where its
        // values are then written; a piece zero-filled whole when allocated was out of the
        // cache again by then, every block's first write a miss)
        let mut vals: Vec<V> = Vec::new();
        let mut nodes = 0usize;
        // level 1 (the block's coordinate) is the key's top field once the sorter has
        // dropped the local level-0 coordinate; levels `2..`, the low `top` bits, give the
        // entry's offset in its row-major block: from a table when they are few (a 64 x 64
        // block at most), else field by field
        let top = layout.shift[1];
        let mut field = [(0u32, 0u64, 0usize); L];
        for (l, f) in field.iter_mut().enumerate().skip(2) {
            *f = (layout.shift[l], layout.mask[l], stride[l]);
        }
        let in_block = |p: u64| {
            field[2..]
                .iter()
                .map(|&(shift, mask, stride)| ((p >> shift) & mask) as usize * stride)
                .sum::<usize>()
        };
        let tabled = top <= OFFSET_TABLE_BITS;
        let mut table = [0usize; 1 << OFFSET_TABLE_BITS];
        if tabled {
            for (x, t) in table[..1 << top].iter_mut().enumerate() {
                *t = in_block(x as u64);
            }
        }
        // (masked to the table as well: the compiler then knows every lookup is inside it)
        let low = ((1u64 << top) - 1) & ((1 << OFFSET_TABLE_BITS) - 1);
        let unsorted = sorter.skip > 0;
        let mut block_crd: Vec<P> = Vec::new();
        for g in 0..plan.groups {
            let r0 = g << plan.shift;
            let nrows = per.min(size0 - r0);
            sorter.sort(c, g, nrows);
            c.free_group(g);
            for l in 0..nrows {
                let row = sorter.rows[l] as usize..sorter.rows[l + 1] as usize;
                // room for the row's blocks (at most one an entry) in this piece, or a new one
                let most = row.len().checked_mul(block).ok_or_else(too_large)?;
                if vals.capacity() - vals.len() < most {
                    let size = if vals.capacity() == 0 {
                        first_values
                    } else {
                        piece_values
                    };
                    let room =
                        crate::huge::try_with_capacity(size.max(most)).map_err(|_| too_large())?;
                    let full = std::mem::replace(&mut vals, room);
                    if full.capacity() > 0 {
                        pieces.push(full);
                    }
                }
                // keys fit 32 bits: `u64::MAX` is no key, no block
                let mut node = u64::MAX;
                let mut prev = u64::MAX;
                let mut at = 0usize;
                // the offsets of the current block written so far (blocks of at most 64
                // values, whose entries the sorter left in input order)
                let mut written = 0u64;
                for (&p, &v) in sorter.keys[row.clone()].iter().zip(&sorter.vals[row]) {
                    let p = p.to_u64();
                    if p >> top != node {
                        node = p >> top;
                        at = vals.len();
                        vals.resize(at + block, V::zero());
                        nodes += 1;
                        block_crd.push(P::from_u64(node));
                        written = 0;
                    }
                    let o = if tabled {
                        table[(p & low) as usize]
                    } else {
                        in_block(p)
                    };
                    // a duplicate (its offset written before in this block when the block's
                    // entries are in input order, else the key just before) is summed in
                    // input order
                    let again = if unsorted {
                        let bit = 1u64 << (o & 63);
                        let again = written & bit != 0;
                        written |= bit;
                        again
                    } else {
                        p == prev
                    };
                    if again {
                        vals[at + o] += v;
                    } else {
                        vals[at + o] = v;
                    }
                    prev = p;
                }
                push(&mut pos, 1, BufferKind::Position, nodes, pw)?;
            }
        }
        crd = fill(crd, block_crd, cw)?;
        pieces.push(vals);
    }
    b.positions[1] = Some(pos);
    b.coordinates[1] = Some(CrdBuffer::Plain(crd));
    Ok(())
}

/// Writes value `v` of the entry with key `p` into its block starting at `at` (row-major
/// `stride` over levels `2..`): assigned, or added when `p` repeats the previous entry's key
/// `prev_key` of the same block (a duplicate, summed in input order); `prev_key` becomes `p`.
#[inline(always)]
fn put_in_block<P: Word, V: Value, const L: usize>(
    vals: &mut [V],
    at: usize,
    p: P,
    v: V,
    prev_key: &mut Option<P>,
    layout: &KeyLayout,
    stride: &[usize; L],
) {
    let mut off = at;
    for (l, s) in stride.iter().enumerate().skip(2) {
        off += layout.level(p.to_u64(), l) * s;
    }
    if *prev_key == Some(p) {
        vals[off] += v;
    } else {
        vals[off] = v;
    }
    *prev_key = Some(p);
}

/// Level 1's positions and byte-aligned coordinates, taken out of `b` to be filled directly.
///
/// Errors: [`StorageError::Unsupported`] if level 1 has no positions or its coordinates are
/// not a byte-aligned buffer of its own ([`direct_applies`] rules both out).
fn level1_buffers<V: Value>(
    b: &mut Builder<'_, V>,
) -> Result<(IndexBuffer, IndexBuffer), StorageError> {
    let Some(pos) = b.positions[1].take() else {
        return Err(StorageError::Unsupported {
            reason: "level 1 has no positions".into(),
        });
    };
    let Some(CrdBuffer::Plain(crd)) = b.coordinates[1].take() else {
        return Err(StorageError::Unsupported {
            reason: "level 1 has no byte-aligned coordinates".into(),
        });
    };
    Ok((pos, crd))
}

/// The row-major strides of the dense block of levels `2..` (`lvl_sizes[2..]`) and its number
/// of elements; `None` if that overflows `usize`.
fn block_strides<const L: usize>(lvl_sizes: &[usize]) -> Option<([usize; L], usize)> {
    let mut stride = [0usize; L];
    let mut block = 1usize;
    for l in (2..L).rev() {
        stride[l] = block;
        block = block.checked_mul(lvl_sizes[l])?;
    }
    Some((stride, block))
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
    let (mut pos, mut crd) = level1_buffers(b)?;
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
        let (stride, block) = block_strides::<L>(b.lvl_sizes).ok_or_else(too_large)?;
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
        let mut vals: Vec<V> = crate::huge::try_with_capacity(total).map_err(|_| too_large())?;
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
                put_in_block(&mut vals, at, p, bk.vals[k], &mut prev_key, layout, &stride);
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
        let a: u32 = pack_key(&k.shifts(), &[4, 2, 999, 1]);
        let b: u32 = pack_key(&k.shifts(), &[0, 2, 999, 0]);
        let c: u32 = pack_key(&k.shifts(), &[0, 1, 999, 1]);
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
        let p: u64 = pack_key(&k.shifts(), &[3, 0, (1 << 32) - 1, 5]);
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

    /// Bucketed arrays as plain numbers (keys as `u64`, values as bits), for comparisons.
    fn plain<P: Word>(b: &Bucketed<P, f64>) -> (Vec<u32>, Vec<u64>, Vec<u64>) {
        (
            b.starts.clone(),
            b.rest.iter().map(|p| p.to_u64()).collect(),
            b.vals.iter().map(|v| v.to_bits()).collect(),
        )
    }

    /// The one-pass counting sort and the coarse one (groups of `2^shift` rows) give the same
    /// arrays on `entries` (rank 2, levels = dimensions), duplicates in input order.
    fn same_both_ways<P: Word>(lvl_sizes: [usize; 2], entries: &[([usize; 2], f64)], shift: u32) {
        let layout = KeyLayout::new(&lvl_sizes).unwrap();
        let plan = CoarsePlan::with_shift(lvl_sizes[0], layout.bits, shift).unwrap();
        let it = || entries.iter().copied();
        let one =
            match read::<P, f64, 2, 2>(&layout, lvl_sizes, lvl_sizes, it(), |c| *c, None, false) {
                Ok(Read::Fast(c)) => bucket(c, lvl_sizes[0]).ok().unwrap(),
                _ => panic!("the one-pass read"),
            };
        let two = match read::<P, f64, 2, 2>(
            &layout,
            lvl_sizes,
            lvl_sizes,
            it(),
            |c| *c,
            Some(plan),
            false,
        ) {
            Ok(Read::Coarse(c)) => bucket_coarse(c, lvl_sizes[0]),
            _ => panic!("the coarse read"),
        };
        assert_eq!(plain(&one), plain(&two), "plan {plan:?}");
    }

    /// [`build_coarse`] and [`bucket_coarse`] then [`build`] give the same level-1 arrays and
    /// values for `entries` of a `shape` matrix in encoding `enc` (levels `lvl_sizes`
    /// through `dim_to_lvl`), groups of `2^shift` level-0 coordinates.
    fn same_built<const L: usize>(
        enc: &Encoding,
        shape: [usize; 2],
        lvl_sizes: [usize; L],
        entries: &[([usize; 2], f64)],
        dim_to_lvl: impl Fn(&[usize; 2]) -> [usize; L] + Copy,
        shift: u32,
    ) {
        let layout = KeyLayout::new(&lvl_sizes).unwrap();
        let plan = CoarsePlan::with_shift(lvl_sizes[0], layout.bits, shift).unwrap();
        let coarse = || match read::<u32, f64, 2, L>(
            &layout,
            shape,
            lvl_sizes,
            entries.iter().copied(),
            dim_to_lvl,
            Some(plan),
            // dimensions and `floordiv`/`mod` levels: in range
            true,
        ) {
            Ok(Read::Coarse(c)) => c,
            _ => panic!("the coarse read"),
        };
        let mut direct = Builder::new(enc, &lvl_sizes, 1).unwrap();
        assert!(builds_from_groups(enc, &lvl_sizes, &coarse(), true));
        build_coarse::<u32, f64, L>(&mut direct, &layout, coarse(), lvl_sizes[0], true).unwrap();
        let mut after = Builder::new(enc, &lvl_sizes, 1).unwrap();
        let bk = bucket_coarse(coarse(), lvl_sizes[0]);
        build::<u32, f64, L>(&mut after, &layout, bk, true).unwrap();
        assert_eq!(direct.positions[1], after.positions[1], "plan {plan:?}");
        assert_eq!(direct.coordinates[1], after.coordinates[1], "plan {plan:?}");
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&direct.values), bits(&after.values), "plan {plan:?}");
    }

    #[test]
    fn coarse_plan_sizes_groups_to_the_entries() {
        // 11.6M entries over 195,360 rows: 354 groups wanted, 1,024 rows each, 191 groups
        let p = CoarsePlan::new(11_600_000, 195_360, 18).unwrap();
        assert_eq!(CoarsePlan::new(1 << 20, 64, 10).map(|p| p.groups), Some(32));
        assert_eq!((p.shift, p.groups, p.key_bits()), (10, 191, 28));
        assert_eq!(CoarsePlan::new(COARSE_MIN_ENTRIES - 1, 1000, 10), None);
        // level 0 too large for the counting sort, or a key past 64 bits
        assert_eq!(CoarsePlan::new(1 << 20, (1 << 22) + 1025, 10), None);
        assert_eq!(CoarsePlan::with_shift(1 << 20, 60, 5), None);
        // one group is no split
        assert_eq!(CoarsePlan::with_shift(8, 3, 3), None);
        assert_eq!(CoarsePlan::with_shift(9, 3, 3).map(|p| p.groups), Some(2));
    }

    #[test]
    fn coarse_reads_fall_back_to_keys_in_order_per_coordinate() {
        // the third entry maps past level 1's size: the keys of the sorting assembly, each
        // level-0 coordinate's entries still in input order
        let lvl = [8usize, 4];
        let layout = KeyLayout::new(&lvl).unwrap();
        let plan = CoarsePlan::with_shift(8, layout.bits, 1).unwrap();
        let entries = [([5, 1], 1.0), ([0, 2], 2.0), ([5, 9], 3.0), ([5, 0], 4.0)];
        let Ok(Read::Keys(keys, vals)) =
            read::<u32, f64, 2, 2>(&layout, [8, 10], lvl, entries, |c| *c, Some(plan), false)
        else {
            panic!("keys")
        };
        assert_eq!(keys, [[0, 2], [5, 1], [5, 9], [5, 0]]);
        assert_eq!(vals, [2.0, 1.0, 3.0, 4.0]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// One radix pass (keys of 5 to 7 bits), two (up to 28 bits) and three (29 to 32
        /// bits), each against the one-pass counting sort; more entries than a tail,
        /// duplicates included; rows' starts read from the last pass's histogram and (tall
        /// groups) counted.
        #[test]
        fn coarse_radix_equals_the_one_pass_sort(
            raw in proptest::collection::vec((0usize..64, 0usize..1 << 20, -8i32..8), 0..3000),
            shift in 1u32..5,
        ) {
            let narrow: Vec<([usize; 2], f64)> =
                raw.iter().map(|&(i, j, v)| ([i % 16, j % 16], f64::from(v))).collect();
            same_both_ways::<u32>([16, 16], &narrow, shift.min(3));
            let mid: Vec<([usize; 2], f64)> =
                raw.iter().map(|&(i, j, v)| ([i, j % 1000], f64::from(v))).collect();
            same_both_ways::<u32>([64, 1000], &mid, shift);
            let wide: Vec<([usize; 2], f64)> = raw
                .iter()
                .map(|&(i, j, v)| ([i, (j * 127) % (1 << 27)], f64::from(v) + 0.5))
                .collect();
            same_both_ways::<u32>([64, 1 << 27], &wide, shift);
            // groups of 2^10 rows over 6 bits of columns: two passes whose last digit (8
            // bits) does not hold the whole row, so rows are counted entry by entry (the
            // one-pass sort takes 2,048 rows from 256 entries)
            if raw.len() >= 256 {
                let tall: Vec<([usize; 2], f64)> = raw
                    .iter()
                    .map(|&(i, j, v)| ([(i * 131 + j) % 2048, j % 64], f64::from(v)))
                    .collect();
                same_both_ways::<u32>([2048, 64], &tall, 10);
            }
        }

        /// CSR and BSR 2x2 built straight from the sorted groups equal the bucketed arrays
        /// built afterwards: positions, coordinates and values (bits), duplicates summed in
        /// input order, for groups of 2 to 16 level-0 coordinates (BSR 2x2's groups sorted
        /// above the offset in a block, each block's entries placed in input order); and BSR
        /// 128x64, whose offsets in a block are too many for the offset table (and for an
        /// unsorted block: sorted on the whole key).
        #[test]
        fn direct_from_groups_equals_bucket_then_build(
            raw in proptest::collection::vec((0usize..64, 0usize..48, -8i32..8), 0..2500),
            shift in 1u32..5,
        ) {
            use crate::torch::{encoding_of, CompressedLayout};
            let e: Vec<([usize; 2], f64)> = raw
                .iter()
                .map(|&(i, j, v)| ([i, j], f64::from(v) * 0.1 + [0.0, 1e9][i % 2]))
                .collect();
            let csr = encoding_of(CompressedLayout::Csr, [1, 1], 0, 0, 32).unwrap();
            same_built::<2>(&csr, [64, 48], [64, 48], &e, |c| *c, shift);
            let bsr = encoding_of(CompressedLayout::Bsr, [2, 2], 0, 0, 32).unwrap();
            same_built::<4>(&bsr, [64, 48], [32, 24, 2, 2], &e, |c| [c[0] / 2, c[1] / 2, c[0] % 2, c[1] % 2], shift);
            // 128 x 64 blocks: 13 bits of offset in a block, past the offset table
            let spread: Vec<([usize; 2], f64)> = e
                .iter()
                .map(|&([i, j], v)| ([(i * 4 + j % 4) % 256, (j * 2 + i % 2) % 128], v))
                .collect();
            let big = encoding_of(CompressedLayout::Bsr, [128, 64], 0, 0, 32).unwrap();
            same_built::<4>(&big, [256, 128], [2, 2, 128, 64], &spread, |c| [c[0] / 128, c[1] / 64, c[0] % 128, c[1] % 64], 0);
        }

        /// Keys past 32 bits take the scatter and per-segment sort.
        #[test]
        fn coarse_wide_keys_equal_the_one_pass_sort(
            raw in proptest::collection::vec((0usize..40, 0usize..1 << 30, -8i32..8), 0..2000),
            shift in 1u32..5,
        ) {
            let e: Vec<([usize; 2], f64)> =
                raw.iter().map(|&(i, j, v)| ([i, j], f64::from(v))).collect();
            same_both_ways::<u64>([40, 1 << 30], &e, shift);
        }
    }
}
