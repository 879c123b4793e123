//! Vocabulary-dimension minibatching (SparseCore reference §6; the peer's
//! `minibatching_splits_impl.h` and `PartitionedCooTensors::Merge`).
//!
//! Ids go to `bucket = hash(col_id) & 63`. Per partition and per limit, the 64 bucket counts
//! are folded bottom-up in a binary tree (subtrees of 2, 4, ..., 64 buckets); node `i` is
//! numbered in that order (the 32 pairs first, the root last). When `left + right > limit` the
//! node's bit is set and it carries `max(left, right)`, else it carries `left + right`. The masks
//! of all partitions, SCs, devices and both limits are ORed; buckets `b` and `b + 1` share a
//! minibatch unless the node where they meet is split, so there are `popcount(mask) + 1`
//! minibatches.

use super::PreprocessError;

/// Buckets of the split (the peer's `kMaxMinibatchingBuckets`).
pub const NUM_BUCKETS: usize = 64;

/// The hash that puts a column in a bucket: `bucket = hash(col_id) & 63`. Pluggable; the
/// peer's production default is HighwayHash ([`HighwayHash`]), tests (ours and the
/// reference's) use [`IdentityHash`].
pub trait MinibatchHash {
    /// The hash of a column (after shift and offset); only its low 6 bits are used.
    fn hash(&self, col_id: u32) -> u32;
}

/// `hash(col_id) = col_id`, so `bucket = col_id & 63`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdentityHash;

impl MinibatchHash for IdentityHash {
    fn hash(&self, col_id: u32) -> u32 {
        col_id
    }
}

/// The peer's production bucket hash: HighwayHash-64 of the column's 4 bytes (little-endian, as
/// the peer hashes an `int` in memory on x86 and ARM) under the peer's fixed key
/// (`kHighwayHashKey` of `coo_format.h`), truncated to 32 bits as its `HashFn` returns
/// `uint32_t`. Computed with the `highway` crate (checked against HighwayHash's published test
/// vectors below).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HighwayHash;

/// The peer's `kHighwayHashKey`.
pub const PEER_HIGHWAY_KEY: [u64; 4] = [
    0x4451_e30f_87db_9609,
    0xca73_58a1_fd27_37f8,
    0x4b2c_991f_cee4_fdea,
    0x0b26_58e1_8326_f6ba,
];

impl MinibatchHash for HighwayHash {
    fn hash(&self, col_id: u32) -> u32 {
        highway64(PEER_HIGHWAY_KEY, &col_id.to_le_bytes()) as u32
    }
}

/// HighwayHash-64 of `data` under `key`.
fn highway64(key: [u64; 4], data: &[u8]) -> u64 {
    use highway::HighwayHash as _;
    let mut h = highway::HighwayHasher::new(highway::Key(key));
    h.append(data);
    h.finalize64()
}

/// The bucket of a column: `hash(col_id) & 63`.
pub fn bucket_of(hash: &(impl MinibatchHash + ?Sized), col_id: u32) -> u32 {
    hash.hash(col_id) & (NUM_BUCKETS as u32 - 1)
}

/// The split mask of per-bucket counts against `limit` (bit i = node i of the tree, pairs
/// first, root last).
///
/// `counts.len()` must be a power of two from 1 to 64 (64 in production); a length of 1 has no
/// node and gives 0. Sums saturate (they only decide `> limit`).
///
/// Errors: [`PreprocessError::SplitCounts`] for any other length.
///
/// Public checks on 8 buckets: `[10; 8]`, 100 -> 0; `[100; 8]`, 150 -> `0b1111111`;
/// `[10, 20, 30, 40, 50, 60, 70, 80]`, 100 -> `0b1101100`.
pub fn compute_split(counts: &[u64], limit: u64) -> Result<u64, PreprocessError> {
    let n = counts.len();
    if n == 0 || !n.is_power_of_two() || n > NUM_BUCKETS {
        return Err(PreprocessError::SplitCounts(format!(
            "{n} counts; their number must be a power of two from 1 to {NUM_BUCKETS}"
        )));
    }
    let mut c = counts.to_vec();
    Ok(split_in_place(&mut c, limit))
}

/// [`compute_split`] on a buffer it may overwrite (length a power of two, at most 64).
pub(crate) fn split_in_place(c: &mut [u64], limit: u64) -> u64 {
    let n = c.len();
    let mut split = 0u64;
    let mut node = 0;
    let mut size = 2;
    while size <= n {
        let mut i = 0;
        while i < n {
            let (l, r) = (c[i], c[i + size / 2]);
            if l.saturating_add(r) > limit {
                split |= 1 << node;
                c[i] = l.max(r);
            } else {
                // `l + r <= limit` unless it saturated at `u64::MAX` (then `limit` is too)
                c[i] = l.saturating_add(r);
            }
            i += size;
            node += 1;
        }
        size *= 2;
    }
    split
}

/// The tree node where buckets `b` and `b + 1` meet (`b + 1 < n`, `n` a power of two): the
/// level is the number of trailing zeros of `b + 1`; the nodes of the levels below come first.
pub fn meeting_node(b: usize, n: usize) -> usize {
    let level = (b + 1).trailing_zeros() as usize;
    let below: usize = (0..level).map(|k| n >> (k + 1)).sum();
    below + b / (2 << level)
}

/// The minibatch of each of the `n` buckets under `split`: bucket 0 in minibatch 0, and
/// bucket `b + 1` in the next minibatch exactly when the node where `b` and `b + 1` meet is
/// split.
pub fn bucket_minibatches(split: u64, n: usize) -> Vec<usize> {
    let mut mb = Vec::with_capacity(n);
    let mut cur = 0;
    for b in 0..n {
        if b > 0 && split >> meeting_node(b - 1, n) & 1 == 1 {
            cur += 1;
        }
        mb.push(cur);
    }
    mb
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_split_checks() {
        assert_eq!(compute_split(&[10; 8], 100), Ok(0));
        assert_eq!(compute_split(&[100; 8], 150), Ok(0b1111111));
        assert_eq!(
            compute_split(&[10, 20, 30, 40, 50, 60, 70, 80], 100),
            Ok(0b1101100)
        );
        assert_eq!(
            compute_split(&[50, 50, 20, 80, 10, 10, 70, 10], 100),
            Ok(0b1010000)
        );
        assert_eq!(
            compute_split(&[90, 10, 90, 10, 90, 10, 90, 10], 100),
            Ok(0b1110000)
        );
        assert_eq!(compute_split(&[7], 0), Ok(0));
        assert!(compute_split(&[1, 2, 3], 1).is_err());
        assert!(compute_split(&[], 1).is_err());
        assert!(compute_split(&[0; 128], 1).is_err());
        // Sums saturate, even when the limit is u64::MAX (no overflow panic).
        assert_eq!(compute_split(&[u64::MAX; 4], u64::MAX), Ok(0));
        assert_eq!(compute_split(&[u64::MAX, 1, 0, 0], u64::MAX - 1), Ok(0b101));
    }

    #[test]
    fn sixty_four_buckets_root_is_bit_62() {
        let mut c = [0u64; 64];
        c[0] = 5;
        c[63] = 5;
        // Only the root sees both.
        assert_eq!(compute_split(&c, 9), Ok(1 << 62));
        assert_eq!(bucket_minibatches(1 << 62, 64)[31..33], [0, 1]);
    }

    #[test]
    fn highway_matches_the_published_vectors() {
        // highwayhash_test.cc: key bytes 0..32, data bytes 0..n, kExpected64[n].
        let key = [
            0x0706_0504_0302_0100,
            0x0f0e_0d0c_0b0a_0908,
            0x1716_1514_1312_1110,
            0x1f1e_1d1c_1b1a_1918,
        ];
        assert_eq!(highway64(key, &[]), 0x907a_56de_22c2_6e53);
        assert_eq!(highway64(key, &[0, 1, 2, 3]), 0xf205_a468_9300_7eda);
        assert_eq!(highway64(key, &[0, 1, 2, 3, 4]), 0x2b8a_1668_e4a9_4541);
        // The bucket hash reads the column's 4 little-endian bytes under the peer's key.
        assert_eq!(
            HighwayHash.hash(0x0302_0100),
            highway64(PEER_HIGHWAY_KEY, &[0, 1, 2, 3]) as u32
        );
        assert!(bucket_of(&HighwayHash, 70) < 64);
    }

    #[test]
    fn meeting_nodes_on_8() {
        let nodes: Vec<usize> = (0..7).map(|b| meeting_node(b, 8)).collect();
        assert_eq!(nodes, vec![0, 4, 1, 6, 2, 5, 3]);
        assert_eq!(
            bucket_minibatches(0b1101100, 8),
            vec![0, 0, 0, 0, 1, 2, 3, 4]
        );
        assert_eq!(bucket_minibatches(0, 8), vec![0; 8]);
    }
}
