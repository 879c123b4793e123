//! Sorting a workspace row's few touched coordinates with a SIMD sorting network.
//!
//! A Gustavson SpGEMM row touches a dozen to a few dozen coordinates (`A·A` of jagmesh7: 17 a
//! row, bayer10: 31), and sorting them was half of the kernel's time with `sort_unstable`,
//! whose comparisons of such short random lists mispredict about every other branch. A
//! bitonic network (Batcher) has no data-dependent branch: on AVX2, eight 32-bit coordinates
//! a register, `min`/`max` against a shuffled copy per step, a list of up to 64 sorts in 10 to
//! 21 steps. Scratch runs on an AMD EPYC (Zen 1), 2026-11-25: 8 coordinates in 8 ns instead of
//! 80 ns, 13 in 19 ns instead of 140 ns, 17 to 31 in 50-70 ns instead of 190-230 ns.
//!
//! Coordinates below 2^16 (a workspace of at most 65,536 columns) sort in 16-bit lanes,
//! sixteen a register, the same steps on half the registers: a list of up to 128 sorts in 8
//! registers. bayer10's `A·A` (13,436 columns) has 1,479 rows of 65 to 128 coordinates spread
//! over 7,000 columns on average; read back from the bitmap word by word (`generated::Touched`)
//! they had cost 400 of its 2,450 µs, sorted by the 16-bit network the kernel takes 2,170 µs
//! (scratch runs, Zen 4, 2026-11-28). Rows of 17 to 64 sort as fast in either width there: the
//! network's steps are a chain, so its time is their latency more than their count.
//!
//! Elsewhere (no AVX2, another architecture, coordinates of 32 bits or more) the caller sorts
//! with `sort_unstable`.

/// The longest list [`Network::sort`] takes: eight AVX2 registers of 16-bit lanes (of 32-bit
/// lanes, [`WIDE_MAX`]).
pub(crate) const NETWORK_MAX: usize = 128;

/// The longest list the network of 32-bit lanes takes (eight AVX2 registers).
pub(crate) const WIDE_MAX: usize = 64;

/// The shortest list worth the network. Up to 16, `sort_unstable`'s insertion sort is as fast
/// or faster on a workspace row, whose list is a few increasing runs (one per row of the
/// right operand, each adding its new coordinates in order): cryg2500's rows of 9 to 16 in
/// 3.8 runs sort in 7 ns that way and cost the network about 27 ns (Zen 1 splits every 256-bit
/// operation in two). From 17 on the network wins: jagmesh7's rows of 17 to 32, 100 ns
/// before, 75 ns after; bayer10's, 176 ns before, 83 ns after.
pub(crate) const NETWORK_MIN: usize = 17;

/// Proof that this machine has the network (AVX2, detected once by
/// `is_x86_feature_detected!`), for coordinates below the bound given to [`Network::detect`]
/// (at most 2^32, so that each fits a 32-bit lane; at most 2^16 for 16-bit lanes).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Network {
    /// Whether the coordinates fit 16-bit lanes (the bound is at most 2^16): sixteen a
    /// register, lists up to [`NETWORK_MAX`]; otherwise eight, up to [`WIDE_MAX`].
    narrow: bool,
}

impl Network {
    /// The longest list this network sorts: [`NETWORK_MAX`] in 16-bit lanes, [`WIDE_MAX`] in
    /// 32-bit ones.
    #[inline]
    pub(crate) fn max_len(self) -> usize {
        if self.narrow {
            NETWORK_MAX
        } else {
            WIDE_MAX
        }
    }

    /// The network, if this machine has it and coordinates below `n` fit it (in 16-bit lanes
    /// for `n <= 2^16`); `None` off x86-64, without AVX2, or for `n > 2^32`.
    pub(crate) fn detect(n: usize) -> Option<Network> {
        #[cfg(target_arch = "x86_64")]
        {
            (n <= 1 << 32 && std::arch::is_x86_feature_detected!("avx2")).then_some(Network {
                narrow: n <= 1 << 16,
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = n;
            None
        }
    }

    /// Sorts `list[..len]` increasing when `len` is within the network's reach
    /// ([`Network::max_len`]) and `list` holds at least [`NETWORK_MAX`] slots (the slots past
    /// `len`, up to `len` rounded to the network's 8, 16, 32, 64 or 128 lanes, are read and
    /// overwritten); returns whether it did (otherwise `list` is untouched). Coordinates must
    /// be below the bound given to [`Network::detect`]: a larger one would be narrowed to the
    /// lanes' width (a wrong order, never an access out of bounds).
    #[inline]
    pub(crate) fn sort(self, list: &mut [usize], len: usize) -> bool {
        if len > self.max_len() || list.len() < NETWORK_MAX {
            return false;
        }
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: `self` proves AVX2 (`detect`); the network touches `list[..L * R]` for
            // the smallest `L * R >= len` (L = 8 lanes, or 16 when narrow; R = 1, 2, 4, 8),
            // at most `max_len() <= NETWORK_MAX <= list.len()`
            unsafe {
                if self.narrow {
                    avx2_16::sort(list.as_mut_ptr(), len)
                } else {
                    avx2::sort(list.as_mut_ptr(), len)
                }
            };
            true
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }
}

/// The steps of a bitonic sort (Batcher) of the `$lanes * $R` lanes of `$r`: for each block
/// size `K` from 2 up to all the lanes, compare-exchange steps at distances `J = K / 2` down
/// to 1, each `$step::<$R, K, J>($r)` (the sizes past the lanes are skipped: their condition
/// is a constant).
#[cfg(target_arch = "x86_64")]
macro_rules! bitonic_steps {
    ($step:ident, $lanes:literal, $r:ident, $R:ident) => {
        bitonic_steps!(@ $step, $lanes, $r, $R;
            2: 1; 4: 2 1; 8: 4 2 1; 16: 8 4 2 1; 32: 16 8 4 2 1; 64: 32 16 8 4 2 1;
            128: 64 32 16 8 4 2 1;)
    };
    (@ $step:ident, $lanes:literal, $r:ident, $R:ident; $($k:literal: $($j:literal)*;)*) => {{
        $(
            if $lanes * $R >= $k {
                $( $step::<$R, $k, $j>($r); )*
            }
        )*
    }};
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// One compare-exchange step of a bitonic sort of `8 * R` lanes (lane `e` is lane
    /// `e % 8` of register `e / 8`): lane `e` meets lane `e ^ J`, and keeps the smaller
    /// when `e` and `e ^ J` are in increasing order within their block of `K`, i.e. when
    /// `(e & J == 0) == (e & K == 0)`.
    #[inline(always)]
    unsafe fn step<const R: usize, const K: usize, const J: usize>(r: &mut [__m256i; R]) {
        // SAFETY (all intrinsics below): the enclosing function enables AVX2
        unsafe {
            if J >= 8 {
                for a in 0..R {
                    let b = a ^ (J / 8);
                    if b > a {
                        let (lo, hi) = (_mm256_min_epu32(r[a], r[b]), _mm256_max_epu32(r[a], r[b]));
                        if (a * 8) & K == 0 {
                            (r[a], r[b]) = (lo, hi);
                        } else {
                            (r[a], r[b]) = (hi, lo);
                        }
                    }
                }
            } else {
                for (a, v) in r.iter_mut().enumerate() {
                    let partner = match J {
                        1 => _mm256_shuffle_epi32::<0b10_11_00_01>(*v),
                        2 => _mm256_shuffle_epi32::<0b01_00_11_10>(*v),
                        _ => _mm256_permute4x64_epi64::<0b01_00_11_10>(*v),
                    };
                    let (lo, hi) = (_mm256_min_epu32(*v, partner), _mm256_max_epu32(*v, partner));
                    let keeps_lo = |lane: usize| {
                        let e = a * 8 + lane;
                        -i32::from((e & J == 0) == (e & K == 0))
                    };
                    let mask = _mm256_setr_epi32(
                        keeps_lo(0),
                        keeps_lo(1),
                        keeps_lo(2),
                        keeps_lo(3),
                        keeps_lo(4),
                        keeps_lo(5),
                        keeps_lo(6),
                        keeps_lo(7),
                    );
                    *v = _mm256_blendv_epi8(hi, lo, mask);
                }
            }
        }
    }

    /// Bitonic sort of the `8 * R` lanes of `r` (R = 1, 2, 4 or 8), increasing from lane 0 of
    /// register 0.
    #[inline(always)]
    unsafe fn network<const R: usize>(r: &mut [__m256i; R]) {
        // SAFETY: as `step`
        unsafe { bitonic_steps!(step, 8, r, R) }
    }

    /// Loads `8 * R` coordinates from `p` narrowed to 32 bits, the lanes at `len` and past
    /// it set to `u32::MAX` (sorted last), sorts them and writes them back widened.
    #[inline(always)]
    unsafe fn sort_in<const R: usize>(p: *mut usize, len: usize) {
        // SAFETY: `p..p + 8 * R` is in bounds (the caller's promise); AVX2 is enabled
        unsafe {
            let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            let mut r = [_mm256_setzero_si256(); R];
            for (a, v) in r.iter_mut().enumerate() {
                let q = p.add(8 * a) as *const __m256i;
                let (x, y) = (_mm256_loadu_si256(q), _mm256_loadu_si256(q.add(1)));
                // the low halves of 4 + 4 64-bit lanes, in order
                let packed = _mm256_castps_si256(_mm256_shuffle_ps::<0b10_00_10_00>(
                    _mm256_castsi256_ps(x),
                    _mm256_castsi256_ps(y),
                ));
                let packed = _mm256_permute4x64_epi64::<0b11_01_10_00>(packed);
                // lanes `8 * a + lane < len` hold coordinates (`len <= 64`: no overflow)
                let live = _mm256_cmpgt_epi32(_mm256_set1_epi32(len as i32 - 8 * a as i32), lanes);
                *v = _mm256_or_si256(packed, _mm256_xor_si256(live, _mm256_set1_epi32(-1)));
            }
            network(&mut r);
            for (a, v) in r.iter().enumerate() {
                let q = p.add(8 * a) as *mut __m256i;
                _mm256_storeu_si256(q, _mm256_cvtepu32_epi64(_mm256_castsi256_si128(*v)));
                _mm256_storeu_si256(
                    q.add(1),
                    _mm256_cvtepu32_epi64(_mm256_extracti128_si256::<1>(*v)),
                );
            }
        }
    }

    /// See [`super::Network::sort`].
    ///
    /// # Safety
    /// The CPU has AVX2; `p..p + 8 * R` is valid for reads and writes for the smallest
    /// `8 * R >= len` (R = 1, 2, 4 or 8; `len <= 64`).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn sort(p: *mut usize, len: usize) {
        // SAFETY: the caller's promise
        unsafe {
            match len {
                0..=1 => {}
                2..=8 => sort_in::<1>(p, len),
                9..=16 => sort_in::<2>(p, len),
                17..=32 => sort_in::<4>(p, len),
                _ => sort_in::<8>(p, len),
            }
        }
    }
}

/// The network in 16-bit lanes: the steps of [`avx2`] on sixteen lanes a register.
#[cfg(target_arch = "x86_64")]
mod avx2_16 {
    use std::arch::x86_64::*;

    /// One compare-exchange step of a bitonic sort of `16 * R` lanes (lane `e` is lane
    /// `e % 16` of register `e / 16`): lane `e` meets lane `e ^ J`, and keeps the smaller
    /// when `(e & J == 0) == (e & K == 0)`, as in [`super::avx2`].
    #[inline(always)]
    unsafe fn step<const R: usize, const K: usize, const J: usize>(r: &mut [__m256i; R]) {
        // SAFETY (all intrinsics below): the enclosing function enables AVX2
        unsafe {
            if J >= 16 {
                for a in 0..R {
                    let b = a ^ (J / 16);
                    if b > a {
                        let (lo, hi) = (_mm256_min_epu16(r[a], r[b]), _mm256_max_epu16(r[a], r[b]));
                        if (a * 16) & K == 0 {
                            (r[a], r[b]) = (lo, hi);
                        } else {
                            (r[a], r[b]) = (hi, lo);
                        }
                    }
                }
            } else {
                for (a, v) in r.iter_mut().enumerate() {
                    // the partner lanes: neighbouring 16-bit lanes (bytes swapped in pairs),
                    // 32-bit pairs, 64-bit halves of a 128-bit lane, the two 128-bit lanes
                    let partner = match J {
                        1 => _mm256_shuffle_epi8(
                            *v,
                            _mm256_setr_epi8(
                                2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, 2, 3, 0, 1,
                                6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,
                            ),
                        ),
                        2 => _mm256_shuffle_epi32::<0b10_11_00_01>(*v),
                        4 => _mm256_shuffle_epi32::<0b01_00_11_10>(*v),
                        _ => _mm256_permute4x64_epi64::<0b01_00_11_10>(*v),
                    };
                    let (lo, hi) = (_mm256_min_epu16(*v, partner), _mm256_max_epu16(*v, partner));
                    let k = |lane: usize| {
                        let e = a * 16 + lane;
                        -i16::from((e & J == 0) == (e & K == 0))
                    };
                    let mask = _mm256_setr_epi16(
                        k(0),
                        k(1),
                        k(2),
                        k(3),
                        k(4),
                        k(5),
                        k(6),
                        k(7),
                        k(8),
                        k(9),
                        k(10),
                        k(11),
                        k(12),
                        k(13),
                        k(14),
                        k(15),
                    );
                    *v = _mm256_blendv_epi8(hi, lo, mask);
                }
            }
        }
    }

    /// Bitonic sort of the `16 * R` lanes of `r` (R = 1, 2, 4 or 8), increasing from lane 0 of
    /// register 0.
    #[inline(always)]
    unsafe fn network<const R: usize>(r: &mut [__m256i; R]) {
        // SAFETY: as `step`
        unsafe { bitonic_steps!(step, 16, r, R) }
    }

    /// The low halves of four 64-bit coordinates from `q` and four from `q + 4`, as 32-bit
    /// lanes in the order 0, 1, 4, 5, 2, 3, 6, 7.
    #[inline(always)]
    unsafe fn halves(q: *const usize) -> __m256i {
        // SAFETY: `q..q + 8` is in bounds (the caller's promise); AVX2 is enabled
        unsafe {
            let q = q as *const __m256i;
            let (x, y) = (_mm256_loadu_si256(q), _mm256_loadu_si256(q.add(1)));
            _mm256_castps_si256(_mm256_shuffle_ps::<0b10_00_10_00>(
                _mm256_castsi256_ps(x),
                _mm256_castsi256_ps(y),
            ))
        }
    }

    /// Loads `16 * R` coordinates from `p` narrowed to 16 bits (in an order of their own: the
    /// network does not care), the lanes of the elements at `len` and past it set to
    /// `u16::MAX` (sorted last), sorts them and writes them back widened, in order.
    #[inline(always)]
    unsafe fn sort_in<const R: usize>(p: *mut usize, len: usize) {
        // SAFETY: `p..p + 16 * R` is in bounds (the caller's promise); AVX2 is enabled
        unsafe {
            // the element each 16-bit lane holds after `halves` and `packus` (which saturates
            // a 32-bit lane, taken as signed, to 16 bits: exact below 2^16)
            let order = _mm256_setr_epi16(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
            let mut r = [_mm256_setzero_si256(); R];
            for (a, v) in r.iter_mut().enumerate() {
                let q = p.add(16 * a);
                let packed = _mm256_packus_epi32(halves(q), halves(q.add(8)));
                // lanes whose element `16 * a + order < len` holds a coordinate (`len <= 128`:
                // no overflow)
                let live = _mm256_cmpgt_epi16(_mm256_set1_epi16(len as i16 - 16 * a as i16), order);
                *v = _mm256_or_si256(packed, _mm256_xor_si256(live, _mm256_set1_epi32(-1)));
            }
            network(&mut r);
            for (a, v) in r.iter().enumerate() {
                let q = p.add(16 * a) as *mut __m256i;
                let (lo, hi) = (
                    _mm256_castsi256_si128(*v),
                    _mm256_extracti128_si256::<1>(*v),
                );
                _mm256_storeu_si256(q, _mm256_cvtepu16_epi64(lo));
                _mm256_storeu_si256(q.add(1), _mm256_cvtepu16_epi64(_mm_srli_si128::<8>(lo)));
                _mm256_storeu_si256(q.add(2), _mm256_cvtepu16_epi64(hi));
                _mm256_storeu_si256(q.add(3), _mm256_cvtepu16_epi64(_mm_srli_si128::<8>(hi)));
            }
        }
    }

    /// See [`super::Network::sort`].
    ///
    /// # Safety
    /// The CPU has AVX2; `p..p + 16 * R` is valid for reads and writes for the smallest
    /// `16 * R >= len` (R = 1, 2, 4 or 8; `len <= 128`); every coordinate is below 2^16.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn sort(p: *mut usize, len: usize) {
        // SAFETY: the caller's promise
        unsafe {
            match len {
                0..=1 => {}
                2..=16 => sort_in::<1>(p, len),
                17..=32 => sort_in::<2>(p, len),
                33..=64 => sort_in::<4>(p, len),
                _ => sort_in::<8>(p, len),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// Every length the network takes, in random, reversed and increasing order, with
    /// coordinates up to the bound's largest (the padding's value) and repeats, for 32-bit and
    /// 16-bit lanes: the first `len` slots come back sorted, as `sort_unstable` sorts them.
    #[test]
    fn network_sorts_every_length() {
        for bound in [1u64 << 32, 1 << 16] {
            let Some(network) = super::Network::detect(bound as usize) else {
                return;
            };
            assert_eq!(network.narrow, bound <= 1 << 16);
            let mut s = 0x9e37_79b9_7f4a_7c15_u64;
            let mut next = move || {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s
            };
            for len in 0..=network.max_len() {
                for case in 0..40 {
                    let mut list: Vec<usize> = (0..super::NETWORK_MAX + 3)
                        .map(|_| match case % 4 {
                            0 => (next() % 5000) as usize,
                            1 => (next() % 4) as usize,
                            2 => (next() % bound) as usize,
                            _ => (bound - 1 - next() % 100) as usize,
                        })
                        .collect();
                    if case == 5 {
                        list[..len].sort_unstable_by(|a, b| b.cmp(a));
                    } else if case == 6 {
                        list[..len].sort_unstable();
                    }
                    let mut want = list[..len].to_vec();
                    want.sort_unstable();
                    assert!(network.sort(&mut list, len));
                    assert_eq!(
                        &list[..len],
                        &want[..],
                        "bound {bound}, len {len}, case {case}"
                    );
                }
            }
        }
    }
}
