//! The verifier of an [`Encoding`] built in code: every rule of MLIR's
//! `SparseTensorEncodingAttr::verify` (and of the level-type parser) that can be checked on the
//! IR alone, with MLIR's exact messages, all errors collected and reported together in the order
//! MLIR checks the rules (the same order the parser in `sparse-dsl` reports them).
//!
//! Rules that need a tensor type (`verifyEncoding`: rank of the shape, element type of
//! `explicitVal` / `implicitVal`, `implicitVal` being zero) or the text (syntax, names, duplicate
//! keys, negative literals) are not here.

use std::fmt;

use crate::infer::{infer_lvl_to_dim, is_block_sparsity};
use crate::ir::{AffineExpr, AffineMap, Encoding, LevelFormat, LevelType};

/// Where in an [`Encoding`] a rule failed, so that a front end can point at the offending token
/// (the parser maps each variant to the span of the level's format, expression, width value, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Location {
    /// The level type (format and properties) of level `l` (`lvl_types[l]`).
    Level(usize),
    /// The expression of level `l` in `dimToLvl` (`dim_to_lvl.results[l]`).
    LevelExpr(usize),
    /// The expression of dimension `d` in `lvlToDim` (`lvl_to_dim.results[d]`).
    Dimension(usize),
    /// `posWidth`.
    PosWidth,
    /// `crdWidth`.
    CrdWidth,
    /// The slice of dimension `d` (`dim_slices[d]`).
    Slice(usize),
    /// The map as a whole (level list, ranks).
    Map,
    /// `explicitVal`. Not produced by [`verify`]: its rule (the value's type is the tensor's
    /// element type) needs a tensor type; kept for the tensor-level checks to come.
    ExplicitVal,
    /// `implicitVal`. Not produced by [`verify`]: its rules (type, zero) are checked against a
    /// tensor type (MLIR's `verifyEncoding`); kept for the tensor-level checks to come.
    ImplicitVal,
}

/// One failed rule: MLIR's message (the same text the parser reports), an optional hint on how
/// to fix it, and where it failed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VerifyError {
    /// MLIR's exact message, e.g. `unexpected position bitwidth: 7`.
    pub message: String,
    /// How to fix it, when there is a short answer (the allowed widths, ...).
    pub help: Option<String>,
    /// The part of the encoding the rule is about.
    pub at: Location,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.help {
            write!(f, " (help: {h})")?;
        }
        Ok(())
    }
}

impl std::error::Error for VerifyError {}

/// Rule ranks: the order MLIR checks the rules (the parser's `rank` module uses the same order).
mod rank {
    pub const LEVEL: u32 = 0;
    pub const SLICE_VALUE: u32 = 1;
    pub const POS_WIDTH: u32 = 10;
    pub const CRD_WIDTH: u32 = 11;
    pub const SINGLETON: u32 = 20;
    pub const SOA_LAYOUT: u32 = 21;
    pub const BATCH: u32 = 22;
    pub const SOA: u32 = 23;
    pub const NM: u32 = 24;
    pub const DENSE_AFTER_NONUNIQUE: u32 = 25;
    pub const EMPTY: u32 = 30;
    pub const LVL_RANK: u32 = 31;
    pub const INVERSE: u32 = 32;
    pub const DIM_GT_LVL: u32 = 33;
    pub const SLICES: u32 = 34;
}

/// Collects errors with their rank (serde_derive's `Ctxt` style: nothing stops at the first).
struct Ctxt {
    errors: Vec<(u32, VerifyError)>,
}

impl Ctxt {
    fn error(&mut self, rank: u32, at: Location, message: impl Into<String>) {
        self.help(rank, at, message, None);
    }
    fn help(&mut self, rank: u32, at: Location, message: impl Into<String>, help: Option<String>) {
        self.errors.push((
            rank,
            VerifyError {
                message: message.into(),
                help,
                at,
            },
        ));
    }
}

/// The widths allowed for `posWidth` (`k == 0`) and `crdWidth` (`k == 1`), as a help line.
fn width_help(k: usize, nm: bool) -> String {
    match (k, nm) {
        (0, _) => "allowed posWidth values: 0 (native `usize`), 8, 16, 32 and 64".into(),
        (_, true) => "allowed crdWidth values: 0 (native `usize`), 2, 8, 16, 32 and 64".into(),
        _ => "allowed crdWidth values: 0 (native `usize`), 8, 16, 32 and 64 (and 2 with a \
              `structured[n, m]` level)"
            .into(),
    }
}

/// Verifies an encoding built in code against every IR-checkable rule; `Err` holds all failed
/// rules, in the order MLIR reports them (then by position). The rules, in that order:
///
/// 1. per level: `dense`, `batch` and `structured[n, m]` take no properties
///    (`invalid level type: level format doesn't support the properties`); `n <= m`
///    (`expected n <= m in n_out_of_m`);
/// 2. slices: size and stride positive (`expect positive value or ? for slice size` /
///    `... stride`);
/// 3. widths: `posWidth` in 0, 8, 16, 32, 64 (`unexpected position bitwidth: N`); `crdWidth`
///    too, or 2 with an n:m level (`unexpected coordinate bitwidth: N`);
/// 4. singleton levels follow a compressed, loose_compressed or singleton level (`expected
///    compressed or loose_compressed level before singleton level`) and share one layout
///    (`expected all singleton lvlTypes stored in the same memory layout (SoA vs AoS).`);
/// 5. batch levels lead (`Batch lvlType can only be leading levels.`);
/// 6. `soa` only on singleton levels (`SoA is only applicable to singleton lvlTypes.`);
/// 7. n:m: last level (`expected n_out_of_m to be the last level type`), after dense levels
///    only (`expected all dense lvlTypes before a n_out_of_m level`), with a `1 x m` block map
///    when the ranks differ (`expected 1xm block structure for n_out_of_m level`, `expected only
///    one blocked level with the same coefficients`, `expected coeffiencts of Affine expressions
///    to be equal to m of n_out_of_m level`, sic);
/// 8. no dense level after a nonunique one (`dense level cannot follow a non-unique level`);
/// 9. at least one level (`expected a non-empty array for lvlTypes`); one `dimToLvl` result per
///    level (`level-rank mismatch between dimToLvl and lvlTypes: N != M`);
/// 10. `lvlToDim` is an inverse of `dimToLvl`: absent only where MLIR cannot infer it with
///     symbols (`failed to infer lvlToDim from dimToLvl` otherwise), else checked by evaluation
///     on sample points (`expected lvlToDim to be an inverse of dimToLvl`);
/// 11. no more dimensions than levels (`unexpected dimToLvl mapping from N to M`);
/// 12. slices only when dimension rank equals level rank, one per dimension (`dimSlices expected
///     dimension-rank to match level-rank: N != M`).
///
/// As in MLIR (and the parser), a rule is only checked when the rules it builds on pass: the
/// cross-level rules (4 to 8) need every level type valid (1), the map rules (9 to 12) need
/// valid levels, slices (2) and cross-level rules; the widths (3) are always checked.
pub fn verify(enc: &Encoding) -> Result<(), Vec<VerifyError>> {
    let mut cx = Ctxt { errors: Vec::new() };
    let lts = &enc.lvl_types;
    let num_dims = enc.dim_rank();
    let num_lvls = lts.len();

    // 1. level types alone (MLIR's level-type parser)
    for (l, lt) in lts.iter().enumerate() {
        let p = lt.properties;
        let has_props = p.nonunique || p.nonordered || p.soa;
        if let LevelFormat::NOutOfM { n, m } = lt.format {
            if n > m {
                cx.error(
                    rank::LEVEL,
                    Location::Level(l),
                    "expected n <= m in n_out_of_m",
                );
                continue;
            }
        }
        let supports = match lt.format {
            LevelFormat::Dense | LevelFormat::Batch | LevelFormat::NOutOfM { .. } => !has_props,
            _ => true,
        };
        if !supports {
            cx.error(
                rank::LEVEL,
                Location::Level(l),
                "invalid level type: level format doesn't support the properties",
            );
        }
    }
    let levels_ok = cx.errors.is_empty();
    // 2. slice values
    for (d, s) in enc.dim_slices.iter().flatten().enumerate() {
        if s.size == Some(0) {
            cx.error(
                rank::SLICE_VALUE,
                Location::Slice(d),
                "expect positive value or ? for slice size",
            );
        }
        if s.stride == Some(0) {
            cx.error(
                rank::SLICE_VALUE,
                Location::Slice(d),
                "expect positive value or ? for slice stride",
            );
        }
    }
    let locals_ok = cx.errors.is_empty();
    // 3. widths
    let has_nm = lts
        .iter()
        .any(|t| matches!(t.format, LevelFormat::NOutOfM { .. }));
    if !matches!(enc.pos_width, 0 | 8 | 16 | 32 | 64) {
        cx.help(
            rank::POS_WIDTH,
            Location::PosWidth,
            format!("unexpected position bitwidth: {}", enc.pos_width),
            Some(width_help(0, false)),
        );
    }
    if !(matches!(enc.crd_width, 0 | 8 | 16 | 32 | 64) || (has_nm && enc.crd_width == 2)) {
        cx.help(
            rank::CRD_WIDTH,
            Location::CrdWidth,
            format!("unexpected coordinate bitwidth: {}", enc.crd_width),
            Some(width_help(1, has_nm)),
        );
    }
    // 4.-8. cross-level rules (MLIR's `SparseTensorEncodingAttr::verify`), on valid levels only
    let before = cx.errors.len();
    if levels_ok {
        check_lvl_types(&mut cx, lts, num_dims, Some(&enc.dim_to_lvl));
    }
    // MLIR stops at its first failed rule: the map rules need valid levels and slices
    if !locals_ok || cx.errors.len() != before {
        return finish(cx);
    }
    // 9. level count
    if num_lvls == 0 {
        cx.error(
            rank::EMPTY,
            Location::Map,
            "expected a non-empty array for lvlTypes",
        );
    }
    let rank_ok = enc.dim_to_lvl.results.len() == num_lvls;
    if !rank_ok {
        cx.error(
            rank::LVL_RANK,
            Location::Map,
            format!(
                "level-rank mismatch between dimToLvl and lvlTypes: {} != {}",
                enc.dim_to_lvl.results.len(),
                num_lvls
            ),
        );
    }
    // 10. the inverse
    if rank_ok && num_lvls > 0 {
        check_inverse(&mut cx, enc);
    }
    // 11. dimension rank
    if num_dims > num_lvls {
        cx.error(
            rank::DIM_GT_LVL,
            Location::Map,
            format!("unexpected dimToLvl mapping from {num_dims} to {num_lvls}"),
        );
    }
    // 12. slices
    if let Some(slices) = &enc.dim_slices {
        if num_dims != num_lvls || slices.len() != num_dims {
            cx.error(
                rank::SLICES,
                Location::Map,
                format!(
                    "dimSlices expected dimension-rank to match level-rank: {} != {}",
                    slices.len().max(num_dims),
                    num_lvls
                ),
            );
        }
    }
    finish(cx)
}

/// The collected errors in MLIR's order: by rule, then (stable) by level or dimension.
fn finish(mut cx: Ctxt) -> Result<(), Vec<VerifyError>> {
    if cx.errors.is_empty() {
        return Ok(());
    }
    cx.errors.sort_by_key(|(r, _)| *r);
    Err(cx.errors.into_iter().map(|(_, e)| e).collect())
}

/// The cross-level rules alone (rules 4 to 8 of [`verify`]: singleton, SoA, batch, n:m, dense
/// after nonunique), in MLIR's order, for a front end that checks the level types before it has
/// a whole [`Encoding`] (the parser, which maps each [`Location::Level`] and
/// [`Location::LevelExpr`] to its token). `dim_to_lvl` is `None` when a level expression did not
/// build; the n:m block rule then fails as MLIR's would on a map that is not a block map.
pub fn verify_level_types(
    lvl_types: &[LevelType],
    num_dims: usize,
    dim_to_lvl: Option<&AffineMap>,
) -> Vec<VerifyError> {
    let mut cx = Ctxt { errors: Vec::new() };
    check_lvl_types(&mut cx, lvl_types, num_dims, dim_to_lvl);
    finish(cx).err().unwrap_or_default()
}

/// Rules 4 to 8 of [`verify`].
fn check_lvl_types(
    cx: &mut Ctxt,
    lts: &[LevelType],
    num_dims: usize,
    dim_to_lvl: Option<&AffineMap>,
) {
    if let Some(first) = lts.iter().position(|t| t.format == LevelFormat::Singleton) {
        for (l, lt) in lts.iter().enumerate().skip(first) {
            if lt.format != LevelFormat::Singleton {
                continue;
            }
            let after_ok = l > 0
                && matches!(
                    lts[l - 1].format,
                    LevelFormat::Compressed | LevelFormat::LooseCompressed | LevelFormat::Singleton
                );
            if !after_ok {
                cx.error(
                    rank::SINGLETON,
                    Location::Level(l),
                    "expected compressed or loose_compressed level before singleton level",
                );
            } else if lt.properties.soa != lts[first].properties.soa {
                cx.error(
                    rank::SOA_LAYOUT,
                    Location::Level(l),
                    "expected all singleton lvlTypes stored in the same memory layout (SoA vs AoS).",
                );
            }
        }
    }
    let first_non_batch = lts
        .iter()
        .position(|t| t.format != LevelFormat::Batch)
        .unwrap_or(lts.len());
    for (l, lt) in lts.iter().enumerate() {
        if lt.format == LevelFormat::Batch && l > first_non_batch {
            cx.error(
                rank::BATCH,
                Location::Level(l),
                "Batch lvlType can only be leading levels.",
            );
        }
        if lt.properties.soa && lt.format != LevelFormat::Singleton {
            cx.error(
                rank::SOA,
                Location::Level(l),
                "SoA is only applicable to singleton lvlTypes.",
            );
        }
        if lt.format == LevelFormat::Dense && l > 0 && !lts[l - 1].is_unique() {
            cx.error(
                rank::DENSE_AFTER_NONUNIQUE,
                Location::Level(l),
                "dense level cannot follow a non-unique level",
            );
        }
    }
    let Some(k) = lts
        .iter()
        .position(|t| matches!(t.format, LevelFormat::NOutOfM { .. }))
    else {
        return;
    };
    let at = Location::Level(k);
    if k != lts.len() - 1 {
        cx.error(
            rank::NM,
            at,
            "expected n_out_of_m to be the last level type",
        );
        return;
    }
    if !lts[..k].iter().all(|t| t.format == LevelFormat::Dense) {
        cx.error(
            rank::NM,
            at,
            "expected all dense lvlTypes before a n_out_of_m level",
        );
        return;
    }
    let LevelFormat::NOutOfM { m, .. } = lts[k].format else {
        return;
    };
    if num_dims == lts.len() {
        return;
    }
    let Some(map) = dim_to_lvl.filter(|m| m.results.len() == lts.len() && is_block_sparsity(m))
    else {
        cx.error(
            rank::NM,
            at,
            "expected 1xm block structure for n_out_of_m level",
        );
        return;
    };
    let mut coefficient = 0i64;
    let mut mixed = false;
    for r in &map.results {
        let size = match r {
            AffineExpr::Mod(_, b) => b.as_constant().unwrap_or(0),
            _ => 0,
        };
        if size != 0 {
            if size != coefficient && coefficient != 0 {
                mixed = true;
            }
            coefficient = size;
        }
    }
    if mixed {
        cx.error(
            rank::NM,
            at,
            "expected only one blocked level with the same coefficients",
        );
    } else if coefficient != i64::from(m) {
        cx.error(
            rank::NM,
            Location::LevelExpr(k),
            "expected coeffiencts of Affine expressions to be equal to m of n_out_of_m level",
        );
    }
}

/// Rule 10 of [`verify`]: `lvl_to_dim` against `dim_to_lvl`.
fn check_inverse(cx: &mut Ctxt, enc: &Encoding) {
    let (fwd, inv) = (&enc.dim_to_lvl, &enc.lvl_to_dim);
    let inverse = "expected lvlToDim to be an inverse of dimToLvl";
    if inv.results.is_empty() && fwd.num_vars > 0 {
        // MLIR leaves the inverse empty only for a map with symbols it cannot invert
        if infer_lvl_to_dim(fwd).is_some() {
            cx.error(rank::INVERSE, Location::Map, inverse);
        } else if fwd.num_symbols == 0 {
            cx.help(
                rank::INVERSE,
                Location::Map,
                "failed to infer lvlToDim from dimToLvl",
                Some(
                    "give every dimension a level of its own (`d`) or a block pair \
                     (`d floordiv b`, `d mod b`), or write the inverse explicitly"
                        .into(),
                ),
            );
        }
        return;
    }
    if inv.num_vars != enc.lvl_rank() || inv.results.len() != fwd.num_vars {
        cx.error(rank::INVERSE, Location::Map, inverse);
        return;
    }
    let xs: Vec<(usize, &AffineExpr)> = inv.results.iter().enumerate().collect();
    let symbols = fwd.num_symbols.max(inv.num_symbols);
    for (d, ok) in inverse_samples_ok(fwd, &xs, symbols)
        .into_iter()
        .enumerate()
    {
        if !ok {
            cx.error(rank::INVERSE, Location::Dimension(d), inverse);
        }
    }
}

/// Checks on sample coordinates that each dimension expression `(d, x)` (over the level
/// variables of `fwd`'s results) recovers dimension `d` from the levels `fwd` computes: one flag
/// per expression, `true` if `x(fwd(p)) == p[d]` on all of 300 fixed sample points `p` that
/// evaluate (`num_symbols` symbols, all 1). All `false` if no sample evaluates. The samples are
/// evaluated once for all expressions: linear in the size of the map. The parser checks an
/// explicit inverse with this too, so both give the same verdicts.
pub fn inverse_samples_ok(
    fwd: &AffineMap,
    xs: &[(usize, &AffineExpr)],
    num_symbols: usize,
) -> Vec<bool> {
    let n = fwd.num_vars;
    let mut ok = vec![true; xs.len()];
    if xs.is_empty() {
        return ok;
    }
    let symbols = vec![1i64; num_symbols];
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % 97
    };
    let mut checked = 0;
    for sample in 0..300 {
        let dims: Vec<i64> = (0..n)
            .map(|k| match sample {
                0 => 0,
                1..=20 => ((sample + k * 7) % 13) as i64,
                _ => next() as i64,
            })
            .collect();
        let Some(lvls) = fwd.eval(&dims, &symbols) else {
            continue;
        };
        checked += 1;
        for (flag, (d, x)) in ok.iter_mut().zip(xs) {
            if *flag && x.eval(&lvls, &symbols) != dims.get(*d).copied() {
                *flag = false;
            }
        }
    }
    if checked == 0 && n != 0 {
        ok.iter_mut().for_each(|f| *f = false);
    }
    ok
}

impl Encoding {
    /// Checks every rule MLIR's verifier applies that needs no tensor type (see [`verify`]) and
    /// returns the encoding as a [`VerifiedEncoding`]: the only way to build one, so code that
    /// takes a `VerifiedEncoding` (the code generator, the dynamic storage) never sees an
    /// encoding that breaks a rule, whether it came from text or was built in code.
    ///
    /// Errors: every [`VerifyError`] found, in MLIR's order, with the messages the parser gives
    /// for the same encoding written as text.
    pub fn verify(self) -> Result<VerifiedEncoding, Vec<VerifyError>> {
        verify(&self)?;
        Ok(VerifiedEncoding(self))
    }
}

/// An [`Encoding`] that passed [`Encoding::verify`] (MLIR's `verifyEncoding`): the field is
/// private and `Encoding::verify` is the only constructor, so holding one is the proof. It reads
/// as the encoding (`Deref<Target = Encoding>`, [`AsRef`]); [`VerifiedEncoding::into_inner`]
/// gives the plain value back (to change it and verify it again).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VerifiedEncoding(Encoding);

impl VerifiedEncoding {
    /// The plain encoding (no longer marked verified).
    pub fn into_inner(self) -> Encoding {
        self.0
    }
}

impl std::ops::Deref for VerifiedEncoding {
    type Target = Encoding;
    fn deref(&self) -> &Encoding {
        &self.0
    }
}

impl AsRef<Encoding> for VerifiedEncoding {
    fn as_ref(&self) -> &Encoding {
        &self.0
    }
}

impl PartialEq<Encoding> for VerifiedEncoding {
    fn eq(&self, other: &Encoding) -> bool {
        self.0 == *other
    }
}

impl PartialEq<VerifiedEncoding> for Encoding {
    fn eq(&self, other: &VerifiedEncoding) -> bool {
        *self == other.0
    }
}

impl fmt::Display for VerifiedEncoding {
    /// The canonical text, as [`Encoding`]'s `Display`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}
