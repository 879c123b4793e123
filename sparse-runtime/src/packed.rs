//! Sub-byte coordinate buffers (`crdWidth` 1, 2 or 4) and the width-erased views over every
//! coordinate buffer.
//!
//! An n:m level (`structured[n, m]`, `block2_4`) stores in-block coordinates `0..m`; with
//! `crdWidth = 2` four of them share one byte. [`PackedBuffer`] holds them packed, least
//! significant bits first: element `i` of a `bits`-wide buffer is bits
//! `(i * bits) % 8 .. + bits` of byte `i * bits / 8`. Unused high bits of the last byte are 0.
//!
//! [`CrdBuffer`] is what the dynamic storage keeps per level (a byte-aligned [`IndexBuffer`] or a
//! [`PackedBuffer`]); [`IndexView`] is the borrowed form every reader (print, validate, memory)
//! goes through, so a packed buffer prints its unpacked numbers.

use crate::index::{IndexBuffer, IndexSlice};

/// `true` for the sub-byte widths a [`PackedBuffer`] supports (1, 2, 4 bits).
pub fn is_packed_width(width: u32) -> bool {
    matches!(width, 1 | 2 | 4)
}

/// An owned buffer of unsigned integers of 1, 2 or 4 bits each, packed into bytes (see the
/// module docs for the bit order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedBuffer {
    bits: u32,
    len: usize,
    data: Vec<u8>,
}

impl PackedBuffer {
    /// An empty buffer of `bits`-wide elements; `None` unless `bits` is 1, 2 or 4.
    pub fn new(bits: u32) -> Option<Self> {
        is_packed_width(bits).then_some(PackedBuffer {
            bits,
            len: 0,
            data: Vec::new(),
        })
    }

    /// Builds a buffer from unpacked numbers: `None` unless `bits` is 1, 2 or 4;
    /// `Some(Err(v))` for the first `v` that does not fit in `bits` bits.
    pub fn from_values(bits: u32, values: &[usize]) -> Option<Result<Self, usize>> {
        let mut b = PackedBuffer::new(bits)?;
        for &v in values {
            if let Err(v) = b.push(v) {
                return Some(Err(v));
            }
        }
        Some(Ok(b))
    }

    /// Appends `v`; `Err(v)` (buffer unchanged) if `v >= 2^bits`.
    pub fn push(&mut self, v: usize) -> Result<(), usize> {
        if v >> self.bits != 0 {
            return Err(v);
        }
        let bit = self.len * self.bits as usize;
        if bit.is_multiple_of(8) {
            self.data.push(0);
        }
        let last = self.data.len() - 1;
        self.data[last] |= (v as u8) << (bit % 8);
        self.len += 1;
        Ok(())
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` if there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Element `i`; `None` past the end.
    pub fn get(&self, i: usize) -> Option<usize> {
        self.as_slice().get(i)
    }

    /// Borrows the buffer.
    pub fn as_slice(&self) -> PackedSlice<'_> {
        PackedSlice {
            bits: self.bits,
            len: self.len,
            data: &self.data,
        }
    }

    /// The packed bytes (`ceil(len * bits / 8)` of them).
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }
}

/// A borrowed [`PackedBuffer`].
#[derive(Clone, Copy, Debug)]
pub struct PackedSlice<'a> {
    bits: u32,
    len: usize,
    data: &'a [u8],
}

impl PackedSlice<'_> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// `true` if there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Element width in bits (1, 2 or 4).
    pub fn bits(&self) -> u32 {
        self.bits
    }
    /// Element `i`; `None` past the end.
    #[inline]
    pub fn get(&self, i: usize) -> Option<usize> {
        if i >= self.len {
            return None;
        }
        let bit = i * self.bits as usize;
        let byte = *self.data.get(bit / 8)?;
        Some(((byte >> (bit % 8)) & ((1u8 << self.bits) - 1)) as usize)
    }
    /// Bytes occupied (`ceil(len * bits / 8)`).
    pub fn bytes(&self) -> usize {
        self.data.len()
    }
}

/// A coordinate buffer of the dynamic storage: byte-aligned ([`IndexBuffer`], widths 0, 8, 16,
/// 32, 64) or packed ([`PackedBuffer`], widths 1, 2, 4: only n:m levels use them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CrdBuffer {
    /// A byte-aligned buffer.
    Plain(IndexBuffer),
    /// A sub-byte packed buffer.
    Packed(PackedBuffer),
}

impl CrdBuffer {
    /// An empty buffer for `width` bits (0, 1, 2, 4, 8, 16, 32, 64); `None` for other widths.
    pub fn new(width: u32) -> Option<Self> {
        if is_packed_width(width) {
            PackedBuffer::new(width).map(CrdBuffer::Packed)
        } else {
            IndexBuffer::new(width).map(CrdBuffer::Plain)
        }
    }
    /// Appends `v`; `Err(v)` (buffer unchanged) if it does not fit the width.
    pub fn push(&mut self, v: usize) -> Result<(), usize> {
        match self {
            CrdBuffer::Plain(b) => b.push(v),
            CrdBuffer::Packed(b) => b.push(v),
        }
    }
    /// Element `i`; `None` past the end.
    #[inline]
    pub fn get(&self, i: usize) -> Option<usize> {
        match self {
            CrdBuffer::Plain(b) => b.get(i),
            CrdBuffer::Packed(b) => b.get(i),
        }
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.view().len()
    }
    /// `true` if there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The width in bits (0 for native).
    pub fn width(&self) -> u32 {
        self.view().width()
    }
    /// Borrows the buffer.
    pub fn view(&self) -> IndexView<'_> {
        match self {
            CrdBuffer::Plain(b) => IndexView::Plain(b.as_slice()),
            CrdBuffer::Packed(b) => IndexView::Packed(b.as_slice()),
        }
    }
    /// The byte-aligned slice, `None` for a packed buffer.
    pub fn as_index_slice(&self) -> Option<IndexSlice<'_>> {
        match self {
            CrdBuffer::Plain(b) => Some(b.as_slice()),
            CrdBuffer::Packed(_) => None,
        }
    }
}

impl From<IndexBuffer> for CrdBuffer {
    fn from(b: IndexBuffer) -> Self {
        CrdBuffer::Plain(b)
    }
}

impl From<PackedBuffer> for CrdBuffer {
    fn from(b: PackedBuffer) -> Self {
        CrdBuffer::Packed(b)
    }
}

/// A borrowed index buffer of any width, byte-aligned or packed.
#[derive(Clone, Copy, Debug)]
pub enum IndexView<'a> {
    /// Widths 0, 8, 16, 32, 64.
    Plain(IndexSlice<'a>),
    /// Widths 1, 2, 4.
    Packed(PackedSlice<'a>),
}

impl IndexView<'_> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            IndexView::Plain(s) => s.len(),
            IndexView::Packed(s) => s.len(),
        }
    }
    /// `true` if there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Element `i` widened to `usize`; `None` past the end.
    #[inline]
    pub fn get(&self, i: usize) -> Option<usize> {
        match self {
            IndexView::Plain(s) => s.get(i),
            IndexView::Packed(s) => s.get(i),
        }
    }
    /// All elements, unpacked and widened to `usize`.
    pub fn to_vec(&self) -> Vec<usize> {
        match self {
            IndexView::Plain(s) => s.to_vec(),
            IndexView::Packed(s) => (0..s.len()).filter_map(|i| s.get(i)).collect(),
        }
    }
    /// Bytes occupied by the elements (packed bytes for a packed buffer).
    pub fn bytes(&self) -> usize {
        match self {
            IndexView::Plain(s) => s.bytes(),
            IndexView::Packed(s) => s.bytes(),
        }
    }
    /// The width in bits (0 for native).
    pub fn width(&self) -> u32 {
        match self {
            IndexView::Plain(s) => s.width(),
            IndexView::Packed(s) => s.bits(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_four_per_byte() {
        let mut b = PackedBuffer::new(2).unwrap();
        for v in [0, 2, 1, 3, 3] {
            b.push(v).unwrap();
        }
        assert_eq!(b.push(4), Err(4));
        assert_eq!(b.len(), 5);
        assert_eq!(b.bytes(), &[0b11_01_10_00, 0b11]);
        assert_eq!(
            CrdBuffer::Packed(b.clone()).view().to_vec(),
            vec![0, 2, 1, 3, 3]
        );
        assert_eq!(b.get(5), None);
        assert!(PackedBuffer::new(3).is_none());
        let b1 = PackedBuffer::from_values(1, &[1, 0, 1]).unwrap().unwrap();
        assert_eq!(b1.bytes(), &[0b101]);
        assert_eq!(PackedBuffer::from_values(4, &[15, 16]).unwrap(), Err(16));
    }
}
