//! Table padding and table stacking (SparseCore reference §7).
//!
//! The embedding width is padded to a multiple of 8 (32 bytes of `f32`), the vocabulary to a
//! multiple of `8 * num_scs` (padding rows hold NaN). Tables whose padded widths agree stack
//! (the reference also requires the same optimizer, combiner and quantization: the caller groups
//! by those), in name order; table `i` of a stack gets
//! `row_offset_in_shard = Σ_{earlier} padded_vocab / num_scs` and
//! `shard_rotation = (i * S) % num_scs`, and its features `col_offset = row_offset_in_shard *
//! num_scs`, `col_shift = shard_rotation`.

use super::{round_up, PreprocessError};

/// A logical table: name, vocabulary size (rows) and embedding width.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSpec {
    /// The table's name (stacks are ordered by it).
    pub name: String,
    /// Rows.
    pub vocab: u64,
    /// Embedding width (values per row).
    pub width: u32,
}

/// One table's place in a stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackedTable {
    /// The table's name.
    pub name: String,
    /// Its vocabulary padded to a multiple of `8 * num_scs`.
    pub padded_vocab: u64,
    /// Rows of earlier tables in each shard: `Σ_{earlier} padded_vocab / num_scs`.
    pub row_offset_in_shard: u64,
    /// `(i * S) % num_scs`.
    pub shard_rotation: u64,
    /// `row_offset_in_shard * num_scs`: the `col_offset` of the table's features.
    pub col_offset: u64,
    /// `shard_rotation`: the `col_shift` of the table's features.
    pub col_shift: u64,
}

/// A stack of tables sharing one padded width.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableStack {
    /// The padded width shared by the stack.
    pub padded_width: u32,
    /// The tables in name order.
    pub tables: Vec<StackedTable>,
    /// Rows of the stacked table: `Σ padded_vocab`.
    pub stack_vocab: u64,
    /// `num_scs` the stack was built for.
    pub num_scs: u64,
}

/// Width padded to a multiple of 8 (one 32-byte line of `f32`): the rule lives in `sparse-ir`,
/// where the compile-time `sparsecore(...)` check reads it too.
pub use sparse_ir::sparsecore::padded_width;

/// Vocabulary padded to a multiple of `8 * num_scs` (reference §7; `num_scs = 0` counts as
/// 1), saturating: when the padded size (or `8 * num_scs` itself) does not fit `u64`, the result
/// is `u64::MAX`, which is then not a multiple of `8 * num_scs` ([`stack_tables`] reports such a
/// table as [`PreprocessError::VocabOverflow`]). Never overflows, whatever the inputs.
pub fn padded_vocab(vocab: u64, num_scs: u64) -> u64 {
    match 8u64.checked_mul(num_scs.max(1)) {
        Some(m) => round_up(vocab, m),
        None if vocab == 0 => 0,
        None => u64::MAX,
    }
}

/// Groups tables by padded width (groups in ascending width) and stacks each group in name
/// order, for `S = num_sc_per_device` and `num_scs` SparseCores.
///
/// Errors: [`PreprocessError::NotPowerOfTwo`] when `num_scs` is not a power of two,
/// [`PreprocessError::NumScPerDevice`] when `num_sc_per_device` is 0,
/// [`PreprocessError::VocabOverflow`] when a table's padded vocabulary, or the stack's rows
/// with it, do not fit `u64` (checked arithmetic throughout).
pub fn stack_tables(
    tables: &[TableSpec],
    num_sc_per_device: u32,
    num_scs: u64,
) -> Result<Vec<TableStack>, PreprocessError> {
    if num_sc_per_device == 0 {
        return Err(PreprocessError::NumScPerDevice(0));
    }
    if !num_scs.is_power_of_two() {
        return Err(PreprocessError::NotPowerOfTwo(num_scs));
    }
    let mut sorted: Vec<&TableSpec> = tables.iter().collect();
    sorted.sort_by(|a, b| (padded_width(a.width), &a.name).cmp(&(padded_width(b.width), &b.name)));
    let mut stacks: Vec<TableStack> = Vec::new();
    for t in sorted {
        let w = padded_width(t.width);
        if stacks.last().is_none_or(|s| s.padded_width != w) {
            stacks.push(TableStack {
                padded_width: w,
                tables: Vec::new(),
                stack_vocab: 0,
                num_scs,
            });
        }
        let Some(s) = stacks.last_mut() else {
            continue;
        };
        let i = s.tables.len() as u64;
        let overflow = || PreprocessError::VocabOverflow {
            table: t.name.clone(),
            vocab: t.vocab,
            num_scs,
            stack_vocab: s.stack_vocab,
        };
        let pv = 8u64
            .checked_mul(num_scs)
            .and_then(|m| t.vocab.checked_next_multiple_of(m))
            .ok_or_else(overflow)?;
        let stack_vocab = s.stack_vocab.checked_add(pv).ok_or_else(overflow)?;
        // stack_vocab is a multiple of num_scs, so col_offset <= the old stack_vocab: no overflow
        let row_offset_in_shard = s.stack_vocab / num_scs;
        // i * S < 2^64 (fewer than 2^32 tables of at most 2^32 - 1 SparseCores)
        let rotation = (i * u64::from(num_sc_per_device)) % num_scs;
        s.tables.push(StackedTable {
            name: t.name.clone(),
            padded_vocab: pv,
            row_offset_in_shard,
            shard_rotation: rotation,
            col_offset: row_offset_in_shard * num_scs,
            col_shift: rotation,
        });
        s.stack_vocab = stack_vocab;
    }
    Ok(stacks)
}

impl TableStack {
    /// The physical row of `id` of table `table` in the stacked table:
    /// `((id % num_scs + rotation) % num_scs) * (stack_vocab / num_scs) + id / num_scs +
    /// row_offset_in_shard` (reference §7); `None` for an unknown table index, `num_scs = 0`
    /// or a row beyond `u64` (checked arithmetic: an id past the table's vocabulary may get
    /// there).
    pub fn physical_row(&self, table: usize, id: u64) -> Option<u64> {
        let t = self.tables.get(table)?;
        let n = self.num_scs;
        let partition = (id.checked_rem(n)? + t.shard_rotation % n) % n;
        partition
            .checked_mul(self.stack_vocab / n)?
            .checked_add(id / n)?
            .checked_add(t.row_offset_in_shard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sparsecore::col_id;

    #[test]
    fn padding() {
        assert_eq!(padded_width(1), 8);
        assert_eq!(padded_width(8), 8);
        assert_eq!(padded_width(9), 16);
        assert_eq!(padded_vocab(100, 4), 128);
        assert_eq!(padded_vocab(0, 4), 0);
        assert_eq!(padded_vocab(5, 0), 8);
        // near u64::MAX: saturates instead of overflowing (a panic in debug builds before)
        assert_eq!(padded_vocab(u64::MAX - 31, 4), u64::MAX - 31);
        assert_eq!(padded_vocab(u64::MAX - 30, 4), u64::MAX);
        assert_eq!(padded_vocab(u64::MAX, 1), u64::MAX);
        // 8 * num_scs itself beyond u64
        assert_eq!(padded_vocab(1, 1 << 62), u64::MAX);
        assert_eq!(padded_vocab(0, u64::MAX), 0);
    }

    #[test]
    fn stacking_huge_vocabularies_is_an_error_not_an_overflow() {
        let t = |name: &str, vocab: u64| TableSpec {
            name: name.into(),
            vocab,
            width: 8,
        };
        // one table that cannot be padded
        assert_eq!(
            stack_tables(&[t("a", u64::MAX - 30)], 1, 4)
                .unwrap_err()
                .to_string(),
            "table a: vocabulary 18446744073709551585 padded to a multiple of 8 * num_scs (4) \
             does not fit u64 (the stack before it has 0 rows)"
        );
        // two that can, but not together
        let half = 1u64 << 63;
        assert_eq!(
            stack_tables(&[t("a", half), t("b", half)], 1, 4).unwrap_err(),
            PreprocessError::VocabOverflow {
                table: "b".into(),
                vocab: half,
                num_scs: 4,
                stack_vocab: half,
            }
        );
        // the largest stack that fits: 2^63 + (2^63 - 32) rows
        let s = stack_tables(&[t("a", half), t("b", half - 32)], 1, 4).unwrap();
        assert_eq!(s[0].stack_vocab, u64::MAX - 31);
        assert_eq!(s[0].tables[1].col_offset, half);
        // physical rows are checked too: b's rotation is 1, so id 2 is in partition 3
        assert_eq!(
            s[0].physical_row(1, 2),
            Some(3 * ((u64::MAX - 31) / 4) + (half / 4))
        );
        assert_eq!(s[0].physical_row(1, 3), Some(half / 4));
        // partition 3, local id 2^62 - 1: 3 * (2^62 - 8) + 2^62 - 1 + 2^61 is beyond u64
        assert_eq!(s[0].physical_row(1, u64::MAX - 1), None);
    }

    #[test]
    fn stack_offsets_rotations_and_physical_rows() {
        let tables = [
            TableSpec {
                name: "b".into(),
                vocab: 40,
                width: 5,
            },
            TableSpec {
                name: "a".into(),
                vocab: 100,
                width: 8,
            },
            TableSpec {
                name: "c".into(),
                vocab: 10,
                width: 16,
            },
        ];
        let stacks = stack_tables(&tables, 2, 4).unwrap();
        assert_eq!(stacks.len(), 2);
        let s = &stacks[0];
        assert_eq!(s.padded_width, 8);
        let names: Vec<&str> = s.tables.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        // a: 100 -> 128 rows (32 per shard); b: 40 -> 64 rows, offset 32, rotation 2.
        assert_eq!(s.stack_vocab, 192);
        assert_eq!(
            (s.tables[1].row_offset_in_shard, s.tables[1].shard_rotation),
            (32, 2)
        );
        assert_eq!((s.tables[1].col_offset, s.tables[1].col_shift), (128, 2));
        // The physical row is partition * rows per shard + local id of the column.
        for id in 0..40u64 {
            let c = col_id(id as i64, 2, 128, 4) as u64;
            let want = (c % 4) * 48 + c / 4;
            assert_eq!(s.physical_row(1, id), Some(want));
        }
        assert_eq!(s.physical_row(1, 5), Some(3 * 48 + 1 + 32));
        assert_eq!(s.physical_row(2, 0), None);
        assert_eq!(stacks[1].tables[0].name, "c");
        assert!(stack_tables(&tables, 2, 6).is_err());
    }
}
