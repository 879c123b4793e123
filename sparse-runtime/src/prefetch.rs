//! Software prefetch of the arrays a generated SpMV-like kernel streams (issue 12).
//!
//! A kernel that reads a large operand's coordinates and values once, in position order (the
//! row sums of CSR's `y = A·x`, the blocks of BSR's), is bound by how many cache lines one
//! core keeps in flight from memory. Where the hardware prefetcher keeps too few, a prefetch
//! of each stream a few hundred to a few thousand bytes ahead of the position read
//! ([`range_ahead`] for a row, [`blocks_ahead`] for a block) makes up for it; where
//! it keeps enough, the prefetches only cost instructions, and in cache they cost more than
//! they bring. So a generated kernel asks [`enabled`] once per call, about the operand it
//! streams, and runs its loops with the prefetches only when the operand is past the caches
//! ([`MIN_BYTES`]) and the processor is one measured to gain ([`cpu_gains`]). It asks
//! [`locality`] too: streams of 8-byte values are prefetched non-temporally (`prefetchnta`),
//! narrower ones into all cache levels.
//!
//! Measured on `kron(I_40, bcsstk16)` (11.6M entries, 139 MB as CSR `f64`/`u32`, 100 MB as
//! BSR 3x3), scratch loops interleaved in one process, 2026-12-02:
//!
//! | processor | CSR `f64` | BSR 3x3 | source |
//! |---|---|---|---|
//! | AMD EPYC Zen 2 (family 23 model 49) | 9.2-9.7 -> 7.2-7.7 ms | 8.2-8.7 -> 6.0-6.3 ms | this module's session |
//! | AMD EPYC Zen 2, `prefetcht0` -> `prefetchnta` (same session, 10:00-10:30 UTC) | 6.7-7.0 -> 5.9-6.5 ms | 5.9-6.4 -> 5.3-5.7 ms | [`Locality`] |
//! | AMD EPYC Zen 4 (family 25) | 4.33 -> 4.73-4.83 ms (values 256 or 1,024 ahead: slower) | — | BENCHMARKS.md, 2026-12-02 00:50 |
//! | AMD EPYC Zen 5 (family 26) | 0.35 -> 0.61 ns an entry (both streams 512 ahead: slower) | — | BENCHMARKS.md, 2026-12-01 |
//!
//! In cache (bcsstk16 alone, 3.5 MB) the same CSR loop with prefetches ran 15-19% slower on
//! Zen 2 (BSR 1-3%), hence [`MIN_BYTES`].

use std::sync::atomic::{AtomicU8, Ordering};

/// How far ahead of the position read [`ahead`] and [`range_ahead`] prefetch a stream, in
/// bytes of that stream: 256 `f64` values, 512 `u32` coordinates. On Zen 2, CSR `f64` with
/// both streams 2 KiB ahead ran 7.2-7.3 ms, 1 KiB 7.5-7.7 ms, the values alone 4 KiB ahead
/// 7.5-7.6 ms.
pub const AHEAD_BYTES: usize = 2048;

/// How far ahead [`blocks_ahead`] prefetches a stream of blocks' values into all cache
/// levels ([`Locality::Temporal`]), in bytes: 16 blocks of 3x3 `f64`. On Zen 2, BSR 3x3 with
/// its values 8, 12, 16, 24 and 32 blocks ahead ran 6.6, 6.4-6.6, 6.0-6.4, 7.6-7.9 and 7.3 ms
/// (none: 8.2-8.7 ms); its coordinates, 4 bytes a block, are prefetched by [`ahead`] (16 or
/// 512 blocks ahead, the same times).
pub const BLOCK_AHEAD_BYTES: usize = 1152;

/// How far ahead [`blocks_ahead`] prefetches a stream of blocks' values non-temporally
/// ([`Locality::NonTemporal`]), in bytes: 20 blocks of 3x3 `f64`. On Zen 2 (scratch, two or
/// three runs each), BSR 3x3 with its values 8, 12, 16, 18, 20, 24, 28 and 32 blocks ahead
/// ran 6.2-6.4, 5.9-6.0, 5.6-6.0, 5.6-6.0, 5.3-5.7, 5.7-6.1, 5.8-6.5 and 5.4-5.6 ms
/// (temporal, 16 ahead: 5.9-6.4 ms).
pub const BLOCK_AHEAD_BYTES_NON_TEMPORAL: usize = 1440;

/// Where a prefetched line goes: how a kernel's streams are read once.
///
/// On Zen 2, `prefetchnta` of CSR `f64`'s two streams (coordinates and values, both
/// [`AHEAD_BYTES`] ahead) ran `kron(I_40, bcsstk16)`'s SpMV in 5.9-6.5 ms against 6.7-7.0 ms
/// with `prefetcht0`, in five scratch runs (one of the two streams alone non-temporal: no
/// gain); BSR 3x3 (at [`BLOCK_AHEAD_BYTES_NON_TEMPORAL`]) 5.3-5.7 against 5.9-6.4 ms; the
/// 16-bit-coordinate CSR 6.6 against 7.1 ms; two threads 3-9% faster. With `f32` values no
/// distance gained more than 3% and most lost (coordinates and values 2 KiB ahead: 5.86
/// against 5.49 ms), so [`locality`] keeps narrower values temporal. A row whose entries the
/// kernel adds into a dense output at their coordinates (CSR's transposed SpMV, CSC's SpMV) is
/// prefetched [`Locality::Temporal`] whatever its values' width: on Zen 2, kron's transposed
/// SpMV ran 11.4-12.7 ms without prefetches, 11.0-11.6 ms non-temporal, 10.5-11.1 ms temporal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Locality {
    /// Into all cache levels (`prefetcht0`).
    Temporal,
    /// Close to the core, kept out of the outer caches as far as the processor can
    /// (`prefetchnta`): a stream read once.
    NonTemporal,
}

/// The [`Locality`] of the streams of an operand whose values are `values` (the array
/// [`enabled`] was asked about): [`Locality::NonTemporal`] for values of 8 bytes or more
/// (`f64`, `i64`, complex), [`Locality::Temporal`] for narrower ones (`f32`, `f16`, integers of
/// 4 bytes or less). A constant of `T` alone, so a generated kernel's branches on it fold.
#[inline(always)]
pub const fn locality<T>(values: &[T]) -> Locality {
    let _ = values;
    if std::mem::size_of::<T>() >= 8 {
        Locality::NonTemporal
    } else {
        Locality::Temporal
    }
}

/// The fewest bytes of values an operand needs for [`enabled`] to prefetch its streams: past
/// the last-level cache of the machines measured (16 MiB on the Zen 2 machine, 32 MiB on the
/// Zen 4 and 5 ones, shared with other guests), where the streams come from memory.
pub const MIN_BYTES: usize = 16 << 20;

/// [`cpu_gains`] not asked yet.
const UNKNOWN: u8 = 2;

/// The answer of [`cpu_gains`] (0 or 1), or [`UNKNOWN`].
static CPU_GAINS: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Whether a generated kernel streaming `values` (an operand's values array; its coordinates
/// go with it) prefetches ahead: `values` spans at least [`MIN_BYTES`] and [`cpu_gains`].
/// Asked once per call of the kernel (one atomic load after the first).
#[inline]
pub fn enabled<T>(values: &[T]) -> bool {
    std::mem::size_of_val(values) >= MIN_BYTES && cpu_gains()
}

/// Whether this processor gains from software prefetch of streamed operands: the environment
/// variable `SPARSE_PREFETCH` when it is `0` (never) or `1` (always, for a large enough
/// operand), else whether the processor is an AMD family 23 (`0x17`: Zen, Zen+ and Zen 2,
/// whose hardware prefetcher keeps too few lines in flight for one core to read memory at
/// full speed; families 25 and 26, Zen 4 and 5, measured slower with it). Decided once per
/// process.
pub fn cpu_gains() -> bool {
    match CPU_GAINS.load(Ordering::Relaxed) {
        0 => false,
        1 => true,
        _ => decide(),
    }
}

/// [`cpu_gains`]'s first call: reads the environment and the processor, keeps the answer.
#[cold]
#[inline(never)]
fn decide() -> bool {
    let gains = match std::env::var("SPARSE_PREFETCH").as_deref() {
        Ok("0") => false,
        Ok("1") => true,
        _ => cpu().is_some_and(|(vendor, family)| gains_on(&vendor, family)),
    };
    CPU_GAINS.store(u8::from(gains), Ordering::Relaxed);
    gains
}

/// Whether a processor of `vendor` (CPUID's 12-byte vendor string) and display `family`
/// (base family plus extended family, as AMD and Intel document it) gains from the
/// prefetches: AMD family 23 only (see [`cpu_gains`]).
pub fn gains_on(vendor: &[u8; 12], family: u32) -> bool {
    vendor == b"AuthenticAMD" && family == 0x17
}

/// This processor's CPUID vendor string and display family; `None` off x86-64.
fn cpu() -> Option<([u8; 12], u32)> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        // SAFETY: CPUID exists on every x86-64 processor; leaves 0 and 1 always do
        #[allow(unused_unsafe)]
        let (v, f) = unsafe { (__cpuid(0), __cpuid(1)) };
        let mut vendor = [0u8; 12];
        vendor[..4].copy_from_slice(&v.ebx.to_le_bytes());
        vendor[4..8].copy_from_slice(&v.edx.to_le_bytes());
        vendor[8..].copy_from_slice(&v.ecx.to_le_bytes());
        let base = (f.eax >> 8) & 0xf;
        let family = if base == 0xf {
            base + ((f.eax >> 20) & 0xff)
        } else {
            base
        };
        Some((vendor, family))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Prefetches (with `locality`) the element [`AHEAD_BYTES`] past `s[at]`: a hint that
/// reads nothing and never faults, whatever the address, so `at` may lie anywhere (the
/// address is computed with wrapping arithmetic and not dereferenced). Does nothing off
/// x86-64.
#[inline(always)]
pub fn ahead<T>(s: &[T], at: usize, locality: Locality) {
    prefetch_bytes(s, at, AHEAD_BYTES, locality);
}

/// Prefetches the element `bytes` past `s[at]` (see [`ahead`]).
#[inline(always)]
fn prefetch_bytes<T>(s: &[T], at: usize, bytes: usize, locality: Locality) {
    let skip = bytes / std::mem::size_of::<T>().max(1);
    hint(
        s.as_ptr().wrapping_add(at.wrapping_add(skip)).cast::<i8>(),
        locality,
    );
}

/// Prefetches (with `locality`) each 64-byte line of `s[lo..hi]` moved [`AHEAD_BYTES`]
/// ahead, for a segment of at most [`ROW_AHEAD_MAX_BYTES`] (nothing for a longer one): what
/// [`ahead`] does at every position of the range, issued once per line at the start of a row
/// (CSR's row sums: the loop summing the row stays as it is, so a matrix read without
/// prefetches runs the same instructions as before; one prefetch a step inside it cost
/// cryg2500's `f32` SpMV 15% in cache on Zen 2 with the flag off). Any `lo..hi` is accepted:
/// it is clamped to `s`'s positions (at most one prefetch per line of `s`), and nothing is
/// read.
#[inline(always)]
pub fn range_ahead<T>(s: &[T], lo: usize, hi: usize, locality: Locality) {
    let hi = hi.min(s.len());
    let lo = lo.min(hi);
    // SAFETY: clamped just above
    unsafe { row_unchecked(s, lo, hi, locality) }
}

/// The longest segment of a stream (in bytes) whose lines [`row_unchecked`] prefetches: a
/// longer row is left to the hardware prefetcher, which follows a long run of lines by itself,
/// while a burst of one prefetch per line at the row's start stalls the core once the lines in
/// flight run past its miss buffers. On Zen 2 (scratch, matrices of 4.2-4.7M entries in rows
/// of equal length, `f64` values, two runs each): rows of 128 entries ran 2.5-2.7 ms with both
/// streams prefetched, 3.7-3.8 ms without; rows of 192 entries (1,536 bytes of values) 3.5
/// against 4.2 ms; rows of 256 entries 3.9 ms with only their coordinates (1 KiB) prefetched,
/// 4.3 ms with both, 4.0 ms with neither; rows of 2,048 entries (the report's 2:4 layer) 3.2-3.4
/// ms with neither, 5.2-5.4 ms with both (57% of the read probe).
pub const ROW_AHEAD_MAX_BYTES: usize = 1536;

/// [`range_ahead`] for a row whose segment `lo..hi` of `s` is known to lie within it (a
/// generated kernel's row, a segment of its level's positions), without the clamping: two
/// comparisons and two conditional moves fewer per stream and row.
/// On Zen 2, `kron(I_40, bcsstk16)`'s SpMV (scratch, two runs of each binary) went from
/// 6.09-6.16 to 5.89-5.90 ms in `f64`, 5.56-5.57 to 5.37-5.40 ms in `f32`, 6.09 to 5.69 ms
/// with 16-bit coordinates: as fast as the same loops written by hand (5.84-5.87 and
/// 5.35-5.41 ms), which the clamping had left 4-5% ahead.
///
/// # Safety
/// `lo <= hi <= s.len()`. (Nothing is read either way; the bound keeps the number of
/// prefetches to the lines of `s`.)
#[inline(always)]
pub unsafe fn row_unchecked<T>(s: &[T], lo: usize, hi: usize, locality: Locality) {
    debug_assert!(lo <= hi && hi <= s.len());
    let size = std::mem::size_of::<T>();
    if (hi - lo) * size > ROW_AHEAD_MAX_BYTES {
        return;
    }
    let base = s.as_ptr().cast::<i8>();
    // `lo * size` and `hi * size` lie within `s`'s allocation
    let first = base.wrapping_add(lo * size + AHEAD_BYTES);
    let end = base.wrapping_add(hi * size + AHEAD_BYTES);
    // from the line holding the first byte
    let mut line = first.wrapping_sub(first as usize & 63);
    while line < end {
        hint(line, locality);
        line = line.wrapping_add(64);
    }
}

/// One prefetch of the line holding `p` (`prefetcht0` or `prefetchnta` as `locality` says): a
/// hint that accesses nothing and never faults, whatever the address. Does nothing off x86-64.
#[inline(always)]
fn hint(p: *const i8, locality: Locality) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_NTA, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint: it does not access memory as far as the program can
        // tell and does not fault on any address (SSE, in every x86-64 processor)
        #[allow(unused_unsafe)]
        unsafe {
            match locality {
                Locality::Temporal => _mm_prefetch::<_MM_HINT_T0>(p),
                Locality::NonTemporal => _mm_prefetch::<_MM_HINT_NTA>(p),
            }
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (p, locality);
    }
}

/// As [`ahead`], for the values of a blocked format (BSR), `at` the first value of the block
/// read: [`BLOCK_AHEAD_BYTES`] past `s[at]` when temporal,
/// [`BLOCK_AHEAD_BYTES_NON_TEMPORAL`] when not.
#[inline(always)]
pub fn blocks_ahead<T>(s: &[T], at: usize, locality: Locality) {
    let bytes = match locality {
        Locality::Temporal => BLOCK_AHEAD_BYTES,
        Locality::NonTemporal => BLOCK_AHEAD_BYTES_NON_TEMPORAL,
    };
    prefetch_bytes(s, at, bytes, locality);
}

/// The order in which a kernel whose rows are independent (each writes its own rows of a dense
/// output) visits its rows `rows`: in increasing order, or, when `halves`, alternately a row
/// of the first half and the row half the rows later (`0, h, 1, h + 1, ...` for `0..n`, `h =
/// ⌈n/2⌉`), so that the operand is read as two streams instead of one. A generated kernel that
/// streams a blocked operand (BSR's block rows, [`blocks_ahead`]) passes its `prefetch` flag
/// ([`enabled`]), for all its rows or for each range of `spmv_par`: a block row's values are
/// one stream of 72 bytes a block beside a coordinate stream of 4, and one core of a Zen 2
/// keeps too few lines of a single stream in flight even with its prefetches. On Zen 2 (AMD
/// EPYC family 23 model 49, scratch loops of the generated kernel's sums interleaved in one
/// process, 2026-12-02), BSR 3x3 of `kron(I_40, bcsstk16)` ran 5.7-7.2 ms in row order and
/// 4.6-6.3 ms in halves (0.81-0.92x in each of nine runs), two threads 0.93-0.96x; quarters
/// ran 1.07-1.13x; CSR (two streams already) in halves 1.03-1.12x. Each row is computed by
/// the same loops either way, so the result is the same.
#[inline]
pub fn row_order(rows: std::ops::Range<usize>, halves: bool) -> RowOrder {
    let n = rows.end.saturating_sub(rows.start);
    let lower = if halves { n.div_ceil(2) } else { n };
    RowOrder {
        start: rows.start,
        next: 0,
        lower,
        n,
        stride: if halves { lower } else { 0 },
        upper: false,
    }
}

/// The rows of [`row_order`], as an iterator of row indices (each of the range once).
#[derive(Clone, Debug)]
pub struct RowOrder {
    /// The first row of the range.
    start: usize,
    /// The next row of the first half, from `start` (all rows when not in halves).
    next: usize,
    /// The end of the first half, from `start` (`n` when not in halves).
    lower: usize,
    /// The number of rows.
    n: usize,
    /// How far after a row of the first half its partner lies (`0`: no partners).
    stride: usize,
    /// Whether the partner of the row just given comes next.
    upper: bool,
}

impl Iterator for RowOrder {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.upper {
            self.upper = false;
            // the partner of row `next - 1` (none for the middle row of an odd count)
            let r = self.next - 1 + self.stride;
            if r < self.n {
                return Some(self.start + r);
            }
        }
        if self.next < self.lower {
            let r = self.next;
            self.next += 1;
            self.upper = self.stride > 0;
            return Some(self.start + r);
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let lower = self.lower - self.next;
        let upper = if self.stride == 0 {
            0
        } else {
            // partners of the rows given and to give, from row `next - 1` or `next` on
            let from = if self.upper { self.next - 1 } else { self.next };
            (self.n - self.stride).saturating_sub(from)
        };
        (lower + upper, Some(lower + upper))
    }
}

impl ExactSizeIterator for RowOrder {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_order_visits_each_row_once() {
        let seq: Vec<usize> = row_order(0..5, false).collect();
        assert_eq!(seq, [0, 1, 2, 3, 4]);
        let halves: Vec<usize> = row_order(0..5, true).collect();
        assert_eq!(halves, [0, 3, 1, 4, 2]);
        let even: Vec<usize> = row_order(10..16, true).collect();
        assert_eq!(even, [10, 13, 11, 14, 12, 15]);
        assert_eq!(row_order(7..8, true).collect::<Vec<_>>(), [7]);
        assert_eq!(row_order(3..3, true).count(), 0);
        for n in 0..40 {
            for halves in [false, true] {
                let mut order = row_order(5..5 + n, halves);
                let mut seen = vec![false; n];
                let mut left = n;
                assert_eq!(order.len(), left);
                while let Some(r) = order.next() {
                    assert!(!std::mem::replace(&mut seen[r - 5], true), "row {r} twice");
                    left -= 1;
                    assert_eq!(order.len(), left, "n {n}, after row {r}");
                }
                assert!(seen.iter().all(|&s| s));
            }
        }
    }

    #[test]
    fn only_amd_family_23_gains() {
        assert!(gains_on(b"AuthenticAMD", 0x17));
        // Zen 4 and Zen 5 measured slower with the prefetches
        assert!(!gains_on(b"AuthenticAMD", 0x19));
        assert!(!gains_on(b"AuthenticAMD", 0x1a));
        assert!(!gains_on(b"GenuineIntel", 0x17));
    }

    #[test]
    fn small_operands_never_prefetch() {
        let small = vec![0.0f64; (MIN_BYTES / 8) - 1];
        assert!(!enabled(&small));
        // a large one prefetches exactly when the processor gains
        let large = vec![0u8; MIN_BYTES];
        assert_eq!(enabled(&large), cpu_gains());
    }

    #[test]
    fn ahead_takes_any_position() {
        // past the end, and at the largest position: a hint, no access
        let v = [1.0f64, 2.0];
        for l in [Locality::Temporal, Locality::NonTemporal] {
            ahead(&v, 5, l);
            ahead(&v, usize::MAX, l);
            ahead(&[] as &[u32], 0, l);
            blocks_ahead(&v, usize::MAX - 1, l);
            range_ahead(&v, 0, 2, l);
            range_ahead(&v, usize::MAX - 4, usize::MAX, l);
            range_ahead(&v, 3, 1, l);
            range_ahead(&v, 0, usize::MAX / 8, l);
            // SAFETY: each range lies within `v`
            unsafe {
                row_unchecked(&v, 0, 2, l);
                row_unchecked(&v, 1, 1, l);
                row_unchecked(&[] as &[u16], 0, 0, l);
            }
        }
    }

    #[test]
    fn eight_byte_values_stream_non_temporally() {
        assert_eq!(locality(&[0.0f64]), Locality::NonTemporal);
        assert_eq!(locality(&[0i64]), Locality::NonTemporal);
        assert_eq!(locality(&[[0.0f64; 2]]), Locality::NonTemporal);
        assert_eq!(locality(&[0.0f32]), Locality::Temporal);
        assert_eq!(locality(&[0u16]), Locality::Temporal);
        // the type decides, not the length
        assert_eq!(locality(&[] as &[f64]), Locality::NonTemporal);
    }

    #[test]
    fn this_processor_is_read_once() {
        let first = cpu_gains();
        assert_eq!(cpu_gains(), first);
        if std::env::var_os("SPARSE_PREFETCH").is_none() {
            assert_eq!(
                first,
                cpu().is_some_and(|(vendor, family)| gains_on(&vendor, family))
            );
        }
    }
}
