//! Typed position and coordinate buffers, one element type per bit width.
//!
//! `posWidth`/`crdWidth` of an encoding pick the element type: 8 -> `u8`, 16 -> `u16`,
//! 32 -> `u32`, 64 -> `u64`, 0 (native) -> `usize`. Generated code uses the [`Index`] types
//! directly; the dynamic storage holds an [`IndexBuffer`] whose variant is chosen at run time.

use std::collections::TryReserveError;
use std::fmt::{Debug, Display};

/// An unsigned integer type usable for positions or coordinates.
pub trait Index: Copy + Ord + Default + Debug + Display + Send + Sync + 'static {
    /// The encoding width this type stands for, in bits (0 for the native `usize`).
    const WIDTH: u32;
    /// Converts from `usize`; `None` if `v` does not fit in this type.
    fn from_usize(v: usize) -> Option<Self>;
    /// Widens to `usize` (lossless for every supported type on 64-bit targets).
    fn index(self) -> usize;
    /// Borrows a slice of this type as a width-erased [`IndexSlice`].
    fn slice(s: &[Self]) -> IndexSlice<'_>;
    /// The elements at `p` and `p + 1` of `s`, widened to `usize`. For `u8`, `u16` and `u32`
    /// both come from one load of twice the width (the unrolled loops of generated kernels
    /// read a segment's coordinates this way: on `Csr` SpMV, one load fewer per two stored
    /// entries took `kron(I_40, bcsstk16)` from 0.75 to 0.72 ns per entry); `u64` and
    /// `usize` read them one by one.
    ///
    /// # Safety
    /// `p + 1 < s.len()`.
    #[inline(always)]
    unsafe fn pair_unchecked(s: &[Self], p: usize) -> (usize, usize) {
        // SAFETY: `p + 1 < s.len()` (the caller's promise)
        unsafe { (s.get_unchecked(p).index(), s.get_unchecked(p + 1).index()) }
    }
}

/// The two halves of `w`, read from memory as two consecutive `H`: the element at the lower
/// address first (the low half on a little-endian target, the high half on a big-endian one).
macro_rules! halves {
    ($w:expr, $h:ty, $bits:expr) => {{
        let (low, high) = ($w as $h as usize, ($w >> $bits) as $h as usize);
        if cfg!(target_endian = "little") {
            (low, high)
        } else {
            (high, low)
        }
    }};
}

macro_rules! impl_index {
    ($t:ty, $w:expr, $variant:ident) => {
        impl_index!($t, $w, $variant, {});
    };
    ($t:ty, $w:expr, $variant:ident, $double:ty) => {
        impl_index!($t, $w, $variant, {
            #[inline(always)]
            unsafe fn pair_unchecked(s: &[Self], p: usize) -> (usize, usize) {
                // SAFETY: `p + 1 < s.len()` (the caller's promise), so the two elements from
                // `p` on lie in `s`; an unaligned read needs no alignment
                let w = unsafe { (s.as_ptr().add(p) as *const $double).read_unaligned() };
                halves!(w, $t, $w)
            }
        });
    };
    ($t:ty, $w:expr, $variant:ident, { $($pair:tt)* }) => {
        impl Index for $t {
            const WIDTH: u32 = $w;
            #[inline(always)]
            fn from_usize(v: usize) -> Option<Self> {
                <$t>::try_from(v).ok()
            }
            #[inline(always)]
            fn index(self) -> usize {
                self as usize
            }
            #[inline(always)]
            fn slice(s: &[Self]) -> IndexSlice<'_> {
                IndexSlice::$variant(s)
            }
            $($pair)*
        }
    };
}
impl_index!(u8, 8, U8, u16);
impl_index!(u16, 16, U16, u32);
impl_index!(u32, 32, U32, u64);
impl_index!(u64, 64, U64);
impl_index!(usize, 0, Native);

/// Converts native numbers to `T`, reusing `v`'s allocation (`into_iter().map().collect()` on
/// a `Vec` collects in place when `T` is no larger than `usize`): no second buffer for `usize`
/// and `u64` on 64-bit targets; narrower types are converted into the same allocation, which is
/// then shrunk. Generated batched formats call it to narrow their rebased positions.
///
/// Errors: `Err(x)` for the first number `x` that does not fit in `T` (nothing converted).
pub fn narrow_vec<T: Index>(v: Vec<usize>) -> Result<Vec<T>, usize> {
    if let Some(&x) = v.iter().find(|&&x| T::from_usize(x).is_none()) {
        return Err(x);
    }
    let mut out: Vec<T> = v
        .into_iter()
        .map(|x| T::from_usize(x).unwrap_or_default())
        .collect();
    out.shrink_to_fit();
    Ok(out)
}

/// Replaces each element of `counts` by the sum of it and all before it (an inclusive prefix
/// sum, in place): a level's counts per coordinate, stored one past each coordinate after a
/// base in `counts[0]`, become its positions. The running sum stays in a register: written
/// `counts[g + 1] += counts[g]`, each step read the previous one back through memory (a
/// store-to-load forward, about 7 cycles a coordinate on an AMD EPYC (Zen 2); cryg2500's CSR
/// to CSC conversion spent 12% of its time there). The callers' sums fit `T`: they count
/// entries of a level whose positions `T` holds.
#[inline]
pub(crate) fn running_sum<T: Copy + std::ops::Add<Output = T>>(counts: &mut [T]) {
    let Some((&mut first, rest)) = counts.split_first_mut() else {
        return;
    };
    let mut sum = first;
    for c in rest {
        sum = sum + *c;
        *c = sum;
    }
}

/// A borrowed position or coordinate array of any width.
#[derive(Clone, Copy, Debug)]
pub enum IndexSlice<'a> {
    /// `posWidth`/`crdWidth = 8`.
    U8(&'a [u8]),
    /// `= 16`.
    U16(&'a [u16]),
    /// `= 32`.
    U32(&'a [u32]),
    /// `= 64`.
    U64(&'a [u64]),
    /// `= 0` (native `usize`).
    Native(&'a [usize]),
}

macro_rules! each_slice {
    ($s:expr, $v:ident => $e:expr) => {
        match $s {
            IndexSlice::U8($v) => $e,
            IndexSlice::U16($v) => $e,
            IndexSlice::U32($v) => $e,
            IndexSlice::U64($v) => $e,
            IndexSlice::Native($v) => $e,
        }
    };
}

impl<'a> IndexSlice<'a> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        each_slice!(self, s => s.len())
    }
    /// `true` if there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Element `i` widened to `usize`; `None` past the end.
    pub fn get(&self, i: usize) -> Option<usize> {
        each_slice!(self, s => s.get(i).map(|x| x.index()))
    }
    /// All elements widened to `usize`.
    pub fn to_vec(&self) -> Vec<usize> {
        each_slice!(self, s => s.iter().map(|x| x.index()).collect())
    }
    /// Appends all elements, widened to `usize`, to `out` (which grows as `Vec::extend` does).
    pub fn extend_into(&self, out: &mut Vec<usize>) {
        each_slice!(self, s => out.extend(s.iter().map(|x| x.index())))
    }
    /// Appends all elements to `out` as `P` (which grows as `Vec::extend` does); `None` at the
    /// first element that `P` cannot hold, `out` then holding the elements before it.
    pub(crate) fn extend_as<P: Index>(&self, out: &mut Vec<P>) -> Option<()> {
        each_slice!(self, s => {
            out.reserve(s.len());
            for x in s.iter() {
                out.push(P::from_usize(x.index())?);
            }
            Some(())
        })
    }
    /// Bytes occupied by the elements.
    pub fn bytes(&self) -> usize {
        each_slice!(self, s => std::mem::size_of_val(*s))
    }
    /// The width in bits (0 for native).
    pub fn width(&self) -> u32 {
        match self {
            IndexSlice::U8(_) => 8,
            IndexSlice::U16(_) => 16,
            IndexSlice::U32(_) => 32,
            IndexSlice::U64(_) => 64,
            IndexSlice::Native(_) => 0,
        }
    }
}

/// An owned position or coordinate buffer whose width is chosen at run time (dynamic storage).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexBuffer {
    /// 8-bit elements.
    U8(Vec<u8>),
    /// 16-bit elements.
    U16(Vec<u16>),
    /// 32-bit elements.
    U32(Vec<u32>),
    /// 64-bit elements.
    U64(Vec<u64>),
    /// Native `usize` elements (width 0).
    Native(Vec<usize>),
}

macro_rules! each_buf {
    ($s:expr, $v:ident => $e:expr) => {
        match $s {
            IndexBuffer::U8($v) => $e,
            IndexBuffer::U16($v) => $e,
            IndexBuffer::U32($v) => $e,
            IndexBuffer::U64($v) => $e,
            IndexBuffer::Native($v) => $e,
        }
    };
}

impl IndexBuffer {
    /// An empty buffer for `width` bits (0, 8, 16, 32, 64); `None` for any other width.
    pub fn new(width: u32) -> Option<Self> {
        Some(match width {
            0 => IndexBuffer::Native(Vec::new()),
            8 => IndexBuffer::U8(Vec::new()),
            16 => IndexBuffer::U16(Vec::new()),
            32 => IndexBuffer::U32(Vec::new()),
            64 => IndexBuffer::U64(Vec::new()),
            _ => return None,
        })
    }
    /// Converts native numbers to a `width`-bit buffer (0, 8, 16, 32, 64) reusing `v`'s
    /// allocation where it can: width 0 keeps `v` as it is, width 64 converts in place on 64-bit
    /// targets (no second buffer), narrower widths convert into the same allocation and then
    /// shrink it. `None` for any other width; `Some(Err(x))` for the first number `x` that does
    /// not fit in the width (nothing converted).
    pub fn from_native(width: u32, v: Vec<usize>) -> Option<Result<Self, usize>> {
        Some(match width {
            0 => Ok(IndexBuffer::Native(v)),
            8 => narrow_vec(v).map(IndexBuffer::U8),
            16 => narrow_vec(v).map(IndexBuffer::U16),
            32 => narrow_vec(v).map(IndexBuffer::U32),
            64 => narrow_vec(v).map(IndexBuffer::U64),
            _ => return None,
        })
    }
    /// Reserves room for at least `additional` more elements (`Vec::try_reserve`).
    ///
    /// Errors: [`TryReserveError`] if the capacity overflows or the allocation fails.
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), TryReserveError> {
        each_buf!(self, b => b.try_reserve(additional))
    }
    /// Reserves room for exactly `additional` more elements (`Vec::try_reserve_exact`).
    ///
    /// Errors: [`TryReserveError`] if the capacity overflows or the allocation fails.
    pub fn try_reserve_exact(&mut self, additional: usize) -> Result<(), TryReserveError> {
        each_buf!(self, b => b.try_reserve_exact(additional))
    }
    /// Elements the buffer holds room for without reallocating.
    pub fn capacity(&self) -> usize {
        each_buf!(self, b => b.capacity())
    }
    /// Appends `v`; `Err(v)` (buffer unchanged) if `v` does not fit in the width.
    pub fn push(&mut self, v: usize) -> Result<(), usize> {
        each_buf!(self, b => b.push(Index::from_usize(v).ok_or(v)?));
        Ok(())
    }
    /// Appends `count` copies of `v`; `Err(v)` if `v` does not fit in the width.
    pub fn push_n(&mut self, v: usize, count: usize) -> Result<(), usize> {
        each_buf!(self, b => {
            let x = Index::from_usize(v).ok_or(v)?;
            b.resize(b.len() + count, x)
        });
        Ok(())
    }
    /// Overwrites element `i` with `v`; `Err(v)` if `v` does not fit. Panics if `i` is out of
    /// bounds (internal use by assembly, which only writes indices it has allocated).
    pub fn set(&mut self, i: usize, v: usize) -> Result<(), usize> {
        each_buf!(self, b => b[i] = Index::from_usize(v).ok_or(v)?);
        Ok(())
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }
    /// `true` if there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Element `i` widened to `usize`; `None` past the end.
    #[inline]
    pub fn get(&self, i: usize) -> Option<usize> {
        each_buf!(self, b => b.get(i).map(|x| x.index()))
    }
    /// Borrows the buffer as a width-erased slice.
    pub fn as_slice(&self) -> IndexSlice<'_> {
        each_buf!(self, b => Index::slice(b.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_sum_turns_counts_into_positions() {
        // a base of 5, then the counts of four coordinates
        let mut counts = [5u32, 2, 0, 3, 1];
        running_sum(&mut counts);
        assert_eq!(counts, [5, 7, 7, 10, 11]);
        let mut one = [4usize];
        running_sum(&mut one);
        assert_eq!(one, [4]);
        running_sum::<usize>(&mut []);
    }

    #[test]
    fn push_checks_width() {
        let mut b = IndexBuffer::new(8).unwrap();
        assert_eq!(b.push(255), Ok(()));
        assert_eq!(b.push(300), Err(300));
        assert_eq!(b.as_slice().to_vec(), vec![255]);
        assert!(IndexBuffer::new(12).is_none());
        assert_eq!(u16::from_usize(65536), None);
        assert_eq!(<u32 as Index>::WIDTH, 32);
    }

    /// `pair_unchecked` gives the elements at `p` and `p + 1` in order, at every offset
    /// (aligned or not), for every width, with the top bit set.
    #[test]
    fn pairs_read_in_order() {
        fn check<I: Index>(max: usize) {
            let s: Vec<I> = (0..9)
                .map(|k| I::from_usize(max - k * 3).expect("fits"))
                .collect();
            for p in 0..s.len() - 1 {
                // SAFETY: p + 1 < s.len()
                let got = unsafe { I::pair_unchecked(&s, p) };
                assert_eq!(
                    got,
                    (s[p].index(), s[p + 1].index()),
                    "width {} at {p}",
                    I::WIDTH
                );
            }
        }
        check::<u8>(u8::MAX as usize);
        check::<u16>(u16::MAX as usize);
        check::<u32>(u32::MAX as usize);
        check::<u64>(u64::MAX as usize);
        check::<usize>(usize::MAX);
    }
}
