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
//! ([`MIN_BYTES`]) and the processor is one measured to gain ([`cpu_gains`]).
//!
//! Measured on `kron(I_40, bcsstk16)` (11.6M entries, 139 MB as CSR `f64`/`u32`, 100 MB as
//! BSR 3x3), scratch loops interleaved in one process, 2026-12-02:
//!
//! | processor | CSR `f64` | BSR 3x3 | source |
//! |---|---|---|---|
//! | AMD EPYC Zen 2 (family 23 model 49) | 9.2-9.7 -> 7.2-7.7 ms | 8.2-8.7 -> 6.0-6.3 ms | this module's session |
//! | AMD EPYC Zen 4 (family 25) | 4.33 -> 4.73-4.83 ms (values 256 or 1,024 ahead: slower) | — | BENCHMARKS.md, 2026-12-02 00:50 |
//! | AMD EPYC Zen 5 (family 26) | 0.35 -> 0.61 ns an entry (both streams 512 ahead: slower) | — | BENCHMARKS.md, 2026-12-01 |
//!
//! In cache (bcsstk16 alone, 3.5 MB) the same CSR loop with prefetches ran 15-19% slower on
//! Zen 2 (BSR 1-3%), hence [`MIN_BYTES`].

use std::sync::atomic::{AtomicU8, Ordering};

/// How far ahead of the position read [`ahead`] and [`range_ahead`] prefetch a stream, in
/// bytes of that stream: 256 `f64` values, 512 `u32` coordinates. On Zen 2, CSR `f64` with both streams 2 KiB ahead
/// ran 7.2-7.3 ms, 1 KiB 7.5-7.7 ms, the values alone 4 KiB ahead 7.5-7.6 ms.
pub const AHEAD_BYTES: usize = 2048;

/// How far ahead [`blocks_ahead`] prefetches a stream of blocks' values, in bytes: 16 blocks
/// of 3x3 `f64`. On Zen 2, BSR 3x3 with its values 8, 12, 16, 24 and 32 blocks ahead ran
/// 6.6, 6.4-6.6, 6.0-6.4, 7.6-7.9 and 7.3 ms (none: 8.2-8.7 ms); its coordinates, 4 bytes a
/// block, are prefetched by [`ahead`] (16 or 512 blocks ahead, the same times).
pub const BLOCK_AHEAD_BYTES: usize = 1152;

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

/// Prefetches (into all cache levels) the element [`AHEAD_BYTES`] past `s[at]`: a hint that
/// reads nothing and never faults, whatever the address, so `at` may lie anywhere (the
/// address is computed with wrapping arithmetic and not dereferenced). Does nothing off
/// x86-64.
#[inline(always)]
pub fn ahead<T>(s: &[T], at: usize) {
    prefetch_bytes(s, at, AHEAD_BYTES);
}

/// Prefetches the element `bytes` past `s[at]` (see [`ahead`]).
#[inline(always)]
fn prefetch_bytes<T>(s: &[T], at: usize, bytes: usize) {
    let skip = bytes / std::mem::size_of::<T>().max(1);
    hint(s.as_ptr().wrapping_add(at.wrapping_add(skip)).cast::<i8>());
}

/// Prefetches each 64-byte line of `s[lo..hi]` moved [`AHEAD_BYTES`] ahead: what [`ahead`]
/// does at every position of the range, issued once per line at the start of a row (CSR's
/// row sums: the loop summing the row stays as it is, so a matrix read without prefetches
/// runs the same instructions as before; one prefetch a step inside it cost cryg2500's `f32`
/// SpMV 15% in cache on Zen 2 with the flag off). Any `lo..hi` is accepted: it is clamped to
/// `s`'s positions (at most one prefetch per line of `s`), and nothing is read.
#[inline(always)]
pub fn range_ahead<T>(s: &[T], lo: usize, hi: usize) {
    let hi = hi.min(s.len());
    let lo = lo.min(hi);
    let size = std::mem::size_of::<T>();
    let base = s.as_ptr().cast::<i8>();
    // `lo * size` and `hi * size` lie within `s`'s allocation
    let first = base.wrapping_add(lo * size + AHEAD_BYTES);
    let end = base.wrapping_add(hi * size + AHEAD_BYTES);
    // from the line holding the first byte
    let mut line = first.wrapping_sub(first as usize & 63);
    while line < end {
        hint(line);
        line = line.wrapping_add(64);
    }
}

/// One prefetch of the line holding `p` into all cache levels: a hint that accesses nothing
/// and never faults, whatever the address. Does nothing off x86-64.
#[inline(always)]
fn hint(p: *const i8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint: it does not access memory as far as the program can
        // tell and does not fault on any address (SSE, in every x86-64 processor)
        #[allow(unused_unsafe)]
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(p)
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = p;
    }
}

/// As [`ahead`], [`BLOCK_AHEAD_BYTES`] past `s[at]`: for the values of a blocked format (BSR),
/// `at` the first value of the block read.
#[inline(always)]
pub fn blocks_ahead<T>(s: &[T], at: usize) {
    prefetch_bytes(s, at, BLOCK_AHEAD_BYTES);
}

#[cfg(test)]
mod tests {
    use super::*;

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
        ahead(&v, 5);
        ahead(&v, usize::MAX);
        ahead(&[] as &[u32], 0);
        blocks_ahead(&v, usize::MAX - 1);
        range_ahead(&v, 0, 2);
        range_ahead(&v, usize::MAX - 4, usize::MAX);
        range_ahead(&v, 3, 1);
        range_ahead(&v, 0, usize::MAX / 8);
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
