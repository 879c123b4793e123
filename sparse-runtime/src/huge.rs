//! Large transient buffers backed by transparent huge pages (Linux).
//!
//! Assembly (`bucket`) allocates arrays of hundreds of megabytes and writes each once. With
//! 4 KiB pages the kernel takes a page fault per 4 KiB touched, and those faults were a third
//! of `Csr::from_coo`'s time on 11.6M shuffled triplets. `madvise(MADV_HUGEPAGE)` on the
//! fresh allocation, before its first write, lets the kernel back it with 2 MiB pages where
//! the system allows them on request (`/sys/kernel/mm/transparent_hugepage/enabled` =
//! `madvise` or `always`): 512 times fewer faults. Elsewhere, or when the kernel declines,
//! nothing changes: the advice never alters the contents.

/// Below this many bytes a buffer is left as allocated (a huge page is 2 MiB).
const HUGE_MIN_BYTES: usize = 8 << 20;

/// An empty vector with room for `n` elements, its pages advised huge when it spans at
/// least [`HUGE_MIN_BYTES`].
pub(crate) fn with_capacity<T>(n: usize) -> Vec<T> {
    let v = Vec::with_capacity(n);
    advise(&v);
    v
}

/// [`with_capacity`] that reports a failed allocation (`Vec::try_reserve_exact`) instead of
/// aborting.
pub(crate) fn try_with_capacity<T>(n: usize) -> Result<Vec<T>, std::collections::TryReserveError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)?;
    advise(&v);
    Ok(v)
}

/// `n` copies of `value` ([`vec!`]), the pages advised huge before they are written. A
/// buffer below [`HUGE_MIN_BYTES`] is `vec![value; n]` itself (whose zeros may come from a
/// zeroed allocation, unwritten).
pub(crate) fn filled<T: Clone>(n: usize, value: T) -> Vec<T> {
    if n.saturating_mul(std::mem::size_of::<T>()) < HUGE_MIN_BYTES {
        return vec![value; n];
    }
    let mut v = with_capacity(n);
    v.resize(n, value);
    v
}

/// Advises the pages `v`'s allocation touches huge (Linux; nothing elsewhere).
///
/// The range is rounded out to whole pages, the partial first and last ones included: a
/// large allocation is a mapping of its own (glibc's `malloc` past its mmap threshold), which
/// the advice then covers whole. Advising only the pages inside the vector would split that
/// mapping in three, and `mremap` cannot move a range of several mappings: growing the vector
/// (`realloc`) would copy every value instead of moving page tables.
pub(crate) fn advise<T>(v: &Vec<T>) {
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < HUGE_MIN_BYTES {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = v.as_ptr() as usize;
        let (lo, hi) = (start / PAGE * PAGE, (start + bytes).next_multiple_of(PAGE));
        // SAFETY: `lo..hi` is page-aligned and covers only pages that hold part of the
        // vector's allocation, so they are mapped; MADV_HUGEPAGE only changes how the kernel
        // backs those pages, never their contents (the allocator's bytes next to the vector
        // on its first and last page included), and a refusal (the return value) leaves them
        // as they were
        unsafe {
            libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn buffers_hold_what_vec_would() {
        let small: Vec<u32> = super::filled(10, 7);
        assert_eq!(small, vec![7; 10]);
        let n = (super::HUGE_MIN_BYTES / 8) * 3 + 5;
        let big: Vec<f64> = super::filled(n, 1.5);
        assert_eq!(big.len(), n);
        assert!(big.iter().all(|&x| x == 1.5));
        let mut room: Vec<u64> = super::with_capacity(n);
        assert!(room.is_empty() && room.capacity() >= n);
        room.extend(0..n as u64);
        assert_eq!(room[n - 1], n as u64 - 1);
        let tried: Vec<u8> = super::try_with_capacity(n).unwrap();
        assert!(tried.is_empty() && tried.capacity() >= n);
        assert!(super::try_with_capacity::<u64>(usize::MAX / 4).is_err());
    }
}
