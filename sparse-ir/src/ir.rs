//! The semantic IR: what an encoding *means*, independent of how it was written.
//!
//! Every layer meets here: the parser produces an [`Encoding`], the code generator, the CLI, the
//! canonical printer and the dynamic storage (in `sparse-runtime`) consume it. Names follow MLIR's
//! `sparse_tensor` dialect (`SparseTensorEncodingAttr`, `LevelType`, `dimToLvl`, `lvlToDim`).

use std::fmt;

pub use crate::verify::VerifiedEncoding;

use crate::level::{self, LevelCapabilities, PositionsArray};
use crate::types::TypedValue;

/// A level format: how one storage level keeps its coordinates.
///
/// Rules follow MLIR's `sparse_tensor::LevelFormat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LevelFormat {
    /// Every coordinate of the level is present implicitly; no arrays.
    Dense,
    /// A leading batch level (MLIR `batch`): like dense, but every buffer below gets a leading
    /// batch dimension. Stored by a later issue; the parser accepts it.
    Batch,
    /// Only coordinates that hold entries: `pos` (length parent-size + 1) and `crd`.
    Compressed,
    /// Like compressed with a `(lo, hi)` pair per parent position: `pos` has 2 x parent-size entries.
    LooseCompressed,
    /// One coordinate per parent position, no `pos` (MLIR `singleton`).
    Singleton,
    /// n:m structured sparsity (MLIR `structured[n, m]`, the reference's `block2_4`): exactly `n`
    /// stored values per block of `m`, each with its in-block coordinate.
    NOutOfM {
        /// Stored values per block.
        n: u32,
        /// Block size.
        m: u32,
    },
}

impl LevelFormat {
    /// What the format stores and can do ([`LevelCapabilities`]): the one place that maps a
    /// format to its unit in `level/` (one line per format).
    pub fn capabilities(&self) -> &'static LevelCapabilities {
        match self {
            LevelFormat::Dense => &level::dense::CAPABILITIES,
            LevelFormat::Batch => &level::batch::CAPABILITIES,
            LevelFormat::Compressed => &level::compressed::CAPABILITIES,
            LevelFormat::LooseCompressed => &level::loose_compressed::CAPABILITIES,
            LevelFormat::Singleton => &level::singleton::CAPABILITIES,
            LevelFormat::NOutOfM { .. } => &level::n_out_of_m::CAPABILITIES,
        }
    }

    /// Positions per parent position for a [`PositionCount::NPerParent`](crate::level::PositionCount::NPerParent) format (`n` of n:m);
    /// `None` for the others.
    pub fn n_per_parent(&self) -> Option<usize> {
        match self {
            LevelFormat::NOutOfM { n, .. } => Some(*n as usize),
            _ => None,
        }
    }

    /// The MLIR spelling of the format (`structured[n, m]` for n:m), from its unit's
    /// [`Spelling`](crate::level::Spelling).
    pub fn mlir_name(&self) -> String {
        match self {
            LevelFormat::NOutOfM { n, m } => format!("structured[{n}, {m}]"),
            f => f.spelling().name.to_string(),
        }
    }

    /// How the format is written and which properties it takes: its unit's
    /// [`Spelling`](crate::level::Spelling) in [`level::FORMATS`].
    pub fn spelling(&self) -> &'static level::Spelling {
        let kind = std::mem::discriminant(self);
        level::FORMATS
            .iter()
            .copied()
            .find(|s| std::mem::discriminant(&s.format) == kind)
            .unwrap_or(level::FORMATS[0])
    }
}

/// Level properties, as MLIR's `LevelPropNonDefault`. Every level is unique and ordered unless a
/// property says otherwise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LevelProperties {
    /// `nonunique`: duplicate coordinates may appear in a segment of this level.
    pub nonunique: bool,
    /// `nonordered`: coordinates in a segment may appear in any order.
    pub nonordered: bool,
    /// `soa`: a singleton level of a COO region keeps its own coordinate buffer (structure of
    /// arrays) instead of sharing the interleaved buffer of the region's first level.
    pub soa: bool,
}

/// One level of an encoding: a format plus properties.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LevelType {
    /// How the level stores coordinates.
    pub format: LevelFormat,
    /// `nonunique` / `nonordered` / `soa`.
    pub properties: LevelProperties,
}

impl LevelType {
    /// A level with the given format and default properties (unique, ordered, AoS).
    pub const fn new(format: LevelFormat) -> Self {
        LevelType {
            format,
            properties: LevelProperties {
                nonunique: false,
                nonordered: false,
                soa: false,
            },
        }
    }
    /// `true` unless the level is `nonunique`.
    pub fn is_unique(&self) -> bool {
        !self.properties.nonunique
    }
    /// `true` unless the level is `nonordered`.
    pub fn is_ordered(&self) -> bool {
        !self.properties.nonordered
    }
    /// `dense` or `batch`: every coordinate present, nothing stored.
    pub fn is_dense(&self) -> bool {
        self.format.capabilities().full
    }
    /// The level stores a positions (`pos`) array: compressed and loose_compressed.
    pub fn has_positions(&self) -> bool {
        self.format.capabilities().positions != PositionsArray::None
    }
    /// The level stores coordinates (`crd`) of its own (possibly inside a shared AoS buffer).
    pub fn has_coordinates(&self) -> bool {
        self.format.capabilities().coordinates
    }
    /// What the level's format stores and can do.
    pub fn capabilities(&self) -> &'static LevelCapabilities {
        self.format.capabilities()
    }
}

impl fmt::Display for LevelType {
    /// MLIR's canonical spelling: `compressed(nonunique, nonordered)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.format.mlir_name())?;
        let mut props = Vec::new();
        if self.properties.nonunique {
            props.push("nonunique");
        }
        if self.properties.nonordered {
            props.push("nonordered");
        }
        if self.properties.soa {
            props.push("soa");
        }
        if !props.is_empty() {
            write!(f, "({})", props.join(", "))?;
        }
        Ok(())
    }
}

/// `a + b` as written ([`AffineExpr::Add`], no simplification: see [`AffineExpr::make_add`]).
impl std::ops::Add for AffineExpr {
    type Output = AffineExpr;
    fn add(self, rhs: AffineExpr) -> AffineExpr {
        AffineExpr::Add(Box::new(self), Box::new(rhs))
    }
}

/// `a * b` as written ([`AffineExpr::Mul`], no simplification: see [`AffineExpr::make_mul`]).
impl std::ops::Mul for AffineExpr {
    type Output = AffineExpr;
    fn mul(self, rhs: AffineExpr) -> AffineExpr {
        AffineExpr::Mul(Box::new(self), Box::new(rhs))
    }
}

/// `a mod b` as written ([`AffineExpr::Mod`], MLIR's non-negative `mod`; no simplification: see
/// [`AffineExpr::make_mod`]).
impl std::ops::Rem for AffineExpr {
    type Output = AffineExpr;
    fn rem(self, rhs: AffineExpr) -> AffineExpr {
        AffineExpr::Mod(Box::new(self), Box::new(rhs))
    }
}

/// An affine expression over the variables of one side of a map (`d0..` on the dimension side,
/// `l0..` on the level side) and symbols `s0..`. Semantics are MLIR's `AffineExpr`:
/// `floordiv` rounds toward negative infinity, `mod` is non-negative for a positive divisor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AffineExpr {
    /// The N-th variable of the map's domain.
    Var(usize),
    /// The N-th symbol.
    Symbol(usize),
    /// An integer constant.
    Constant(i64),
    /// `a + b` (subtraction is `a + b * -1`, as in MLIR).
    Add(Box<AffineExpr>, Box<AffineExpr>),
    /// `a * b` (one side constant or symbolic).
    Mul(Box<AffineExpr>, Box<AffineExpr>),
    /// `a floordiv b`.
    FloorDiv(Box<AffineExpr>, Box<AffineExpr>),
    /// `a ceildiv b`.
    CeilDiv(Box<AffineExpr>, Box<AffineExpr>),
    /// `a mod b`.
    Mod(Box<AffineExpr>, Box<AffineExpr>),
}

impl AffineExpr {
    /// `self floordiv rhs` as written ([`AffineExpr::FloorDiv`], no simplification: see
    /// [`AffineExpr::make_floor_div`]).
    pub fn floor_div(self, rhs: AffineExpr) -> AffineExpr {
        AffineExpr::FloorDiv(Box::new(self), Box::new(rhs))
    }

    /// `self ceildiv rhs` as written ([`AffineExpr::CeilDiv`], no simplification: see
    /// [`AffineExpr::make_ceil_div`]).
    pub fn ceil_div(self, rhs: AffineExpr) -> AffineExpr {
        AffineExpr::CeilDiv(Box::new(self), Box::new(rhs))
    }

    /// Evaluates the expression on concrete variable values (`vars`) and symbol values
    /// (`symbols`). Returns `None` on a division by zero, overflow, or an out-of-range variable.
    pub fn eval(&self, vars: &[i64], symbols: &[i64]) -> Option<i64> {
        Some(match self {
            AffineExpr::Var(v) => *vars.get(*v)?,
            AffineExpr::Symbol(s) => *symbols.get(*s)?,
            AffineExpr::Constant(c) => *c,
            AffineExpr::Add(a, b) => a.eval(vars, symbols)?.checked_add(b.eval(vars, symbols)?)?,
            AffineExpr::Mul(a, b) => a.eval(vars, symbols)?.checked_mul(b.eval(vars, symbols)?)?,
            AffineExpr::FloorDiv(a, b) => {
                let (a, b) = (a.eval(vars, symbols)?, b.eval(vars, symbols)?);
                if b == 0 {
                    return None;
                }
                let q = a.checked_div(b)?;
                if (a % b != 0) && ((a < 0) != (b < 0)) {
                    q - 1
                } else {
                    q
                }
            }
            AffineExpr::CeilDiv(a, b) => {
                let (a, b) = (a.eval(vars, symbols)?, b.eval(vars, symbols)?);
                if b == 0 {
                    return None;
                }
                let q = a.checked_div(b)?;
                if (a % b != 0) && ((a < 0) == (b < 0)) {
                    q + 1
                } else {
                    q
                }
            }
            AffineExpr::Mod(a, b) => {
                let (a, b) = (a.eval(vars, symbols)?, b.eval(vars, symbols)?);
                if b == 0 {
                    return None;
                }
                a.checked_rem_euclid(b)?
            }
        })
    }

    /// The variable this expression is, if it is a bare variable.
    pub fn as_var(&self) -> Option<usize> {
        match self {
            AffineExpr::Var(v) => Some(*v),
            _ => None,
        }
    }

    /// The expression with every variable `Var(v)` renamed to `Var(rename(v))` (symbols,
    /// constants and the shape of the expression unchanged).
    pub fn rename_vars(&self, rename: &impl Fn(usize) -> usize) -> AffineExpr {
        type Binary = fn(Box<AffineExpr>, Box<AffineExpr>) -> AffineExpr;
        let bin = |make: Binary, a: &AffineExpr, b: &AffineExpr| {
            make(
                Box::new(a.rename_vars(rename)),
                Box::new(b.rename_vars(rename)),
            )
        };
        match self {
            AffineExpr::Var(v) => AffineExpr::Var(rename(*v)),
            AffineExpr::Symbol(_) | AffineExpr::Constant(_) => self.clone(),
            AffineExpr::Add(a, b) => bin(AffineExpr::Add, a, b),
            AffineExpr::Mul(a, b) => bin(AffineExpr::Mul, a, b),
            AffineExpr::FloorDiv(a, b) => bin(AffineExpr::FloorDiv, a, b),
            AffineExpr::CeilDiv(a, b) => bin(AffineExpr::CeilDiv, a, b),
            AffineExpr::Mod(a, b) => bin(AffineExpr::Mod, a, b),
        }
    }

    /// `(d, b)` when this expression is `d floordiv b` or `d mod b` with `d` a bare variable and
    /// `b` a nonnegative constant (a block level: BSR's `i floordiv 2`, `i mod 2`).
    pub fn as_block(&self) -> Option<(usize, usize)> {
        match self {
            AffineExpr::FloorDiv(a, b) | AffineExpr::Mod(a, b) => {
                Some((a.as_var()?, usize::try_from(b.as_constant()?).ok()?))
            }
            _ => None,
        }
    }

    /// The constant this expression is, if it is a bare constant.
    pub fn as_constant(&self) -> Option<i64> {
        match self {
            AffineExpr::Constant(c) => Some(*c),
            _ => None,
        }
    }

    /// Writes the expression with variables named `{var_prefix}N` and symbols `sN`, exactly as
    /// MLIR's printer does (`printAffineExprInternal`): the operands of `*`, `floordiv`,
    /// `ceildiv` and `mod` are parenthesized when they are binary expressions
    /// (`d0 * (s0 * 4)`, `(d0 + 1) floordiv 2`), `x * -1` prints as `-x`, and an addition of a
    /// negative constant or of `y * -c` prints as a subtraction (`d0 - 3`, `d0 - d1 * 2`).
    pub fn write(&self, out: &mut String, var_prefix: &str) {
        self.write_mlir(out, var_prefix, false);
    }

    /// `strong`: the enclosing operator binds tightly, so a binary expression needs parentheses.
    fn write_mlir(&self, out: &mut String, p: &str, strong: bool) {
        use std::fmt::Write;
        let (op, a, b) = match self {
            AffineExpr::Var(v) => {
                let _ = write!(out, "{p}{v}");
                return;
            }
            AffineExpr::Symbol(s) => {
                let _ = write!(out, "s{s}");
                return;
            }
            AffineExpr::Constant(c) => {
                let _ = write!(out, "{c}");
                return;
            }
            AffineExpr::Add(a, b) => (" + ", a, b),
            AffineExpr::Mul(a, b) => (" * ", a, b),
            AffineExpr::FloorDiv(a, b) => (" floordiv ", a, b),
            AffineExpr::CeilDiv(a, b) => (" ceildiv ", a, b),
            AffineExpr::Mod(a, b) => (" mod ", a, b),
        };
        if strong {
            out.push('(');
        }
        if !matches!(self, AffineExpr::Add(..)) {
            if matches!(self, AffineExpr::Mul(..)) && b.as_constant() == Some(-1) {
                out.push('-');
                a.write_mlir(out, p, true);
            } else {
                a.write_mlir(out, p, true);
                out.push_str(op);
                b.write_mlir(out, p, true);
            }
        } else {
            match &**b {
                AffineExpr::Mul(x, y) if y.as_constant().is_some_and(|c| c < 0) => {
                    let c = y.as_constant().unwrap_or(-1);
                    a.write_mlir(out, p, false);
                    out.push_str(" - ");
                    if c == -1 {
                        x.write_mlir(out, p, matches!(**x, AffineExpr::Add(..)));
                    } else {
                        x.write_mlir(out, p, true);
                        let _ = write!(out, " * {}", -i128::from(c));
                    }
                }
                AffineExpr::Constant(c) if *c < 0 => {
                    a.write_mlir(out, p, false);
                    let _ = write!(out, " - {}", -i128::from(*c));
                }
                _ => {
                    a.write_mlir(out, p, false);
                    out.push_str(" + ");
                    b.write_mlir(out, p, false);
                }
            }
        }
        if strong {
            out.push(')');
        }
    }

    /// The expression printed with dimension variables `d0..` (as in a `dimToLvl` result).
    pub fn to_mlir_string(&self, var_prefix: &str) -> String {
        let mut s = String::new();
        self.write(&mut s, var_prefix);
        s
    }

    /// `true` if the expression mentions no variable (MLIR's `isSymbolicOrConstant`).
    pub fn is_symbolic_or_constant(&self) -> bool {
        match self {
            AffineExpr::Var(_) => false,
            AffineExpr::Symbol(_) | AffineExpr::Constant(_) => true,
            AffineExpr::Add(a, b)
            | AffineExpr::Mul(a, b)
            | AffineExpr::FloorDiv(a, b)
            | AffineExpr::CeilDiv(a, b)
            | AffineExpr::Mod(a, b) => a.is_symbolic_or_constant() && b.is_symbolic_or_constant(),
        }
    }

    /// The largest integer known to divide every value of the expression (MLIR's
    /// `getLargestKnownDivisor`; products wrap as in MLIR's 64-bit arithmetic).
    fn largest_known_divisor(&self) -> i64 {
        fn gcd(a: i64, b: i64) -> i64 {
            let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a as i64
        }
        match self {
            AffineExpr::Var(_)
            | AffineExpr::Symbol(_)
            | AffineExpr::FloorDiv(..)
            | AffineExpr::CeilDiv(..) => 1,
            AffineExpr::Constant(c) => c.wrapping_abs(),
            AffineExpr::Mul(a, b) => a
                .largest_known_divisor()
                .wrapping_mul(b.largest_known_divisor()),
            AffineExpr::Add(a, b) | AffineExpr::Mod(a, b) => {
                gcd(a.largest_known_divisor(), b.largest_known_divisor())
            }
        }
    }

    fn bin(
        kind: fn(Box<AffineExpr>, Box<AffineExpr>) -> AffineExpr,
        a: AffineExpr,
        b: AffineExpr,
    ) -> AffineExpr {
        kind(Box::new(a), Box::new(b))
    }

    /// `a + b` simplified as MLIR's `AffineExpr::operator+` does (`simplifyAdd`): constants fold
    /// and move to the right (`2 + d0` is `d0 + 2`), a symbolic operand moves to the right of a
    /// non-symbolic one, `x + 0` is `x`, `(x + 2) + 3` is `x + 5`, `(x + 2) + y` is
    /// `(x + y) + 2`, `x * c1 + x * c2` is `x * (c1 + c2)` and `x + (x floordiv c) * -c` is
    /// `x mod c`. `None` on 64-bit overflow.
    pub fn make_add(a: AffineExpr, b: AffineExpr) -> Option<AffineExpr> {
        use AffineExpr::{Add, Constant, FloorDiv, Mul};
        if let (Constant(x), Constant(y)) = (&a, &b) {
            return Some(Constant(x.checked_add(*y)?));
        }
        if matches!(a, Constant(_)) || (a.is_symbolic_or_constant() && !b.is_symbolic_or_constant())
        {
            return Self::make_add(b, a);
        }
        let b_const = b.as_constant();
        if b_const == Some(0) {
            return Some(a);
        }
        if let (Add(x, c1), Some(c2)) = (&a, b_const) {
            if let Some(c1) = c1.as_constant() {
                return Self::make_add((**x).clone(), Constant(c1.checked_add(c2)?));
            }
        }
        // x * c1 + x * c2 (a missing factor counts as 1)
        let split = |e: &AffineExpr| -> (AffineExpr, i64) {
            match e {
                Mul(x, c) if c.as_constant().is_some() => {
                    ((**x).clone(), c.as_constant().unwrap_or(1))
                }
                _ => (e.clone(), 1),
            }
        };
        let ((x1, c1), (x2, c2)) = (split(&a), split(&b));
        if x1 == x2 {
            return Self::make_mul(x1, Constant(c1.checked_add(c2)?));
        }
        if let Add(x, c) = &a {
            if let Some(c) = c.as_constant() {
                let inner = Self::make_add((**x).clone(), b)?;
                return Self::make_add(inner, Constant(c));
            }
        }
        // x + ((x floordiv q) * q) * -1  and  x + (x floordiv c) * -c  ->  x mod q
        if let Mul(l, r) = &b {
            if r.as_constant() == Some(-1) {
                if let Mul(ll, q) = &**l {
                    let FloorDiv(e, q2) = &**ll else {
                        return Some(Self::bin(Add, a, b));
                    };
                    if q2 == q && **e == a {
                        return Self::make_mod(a, (**q).clone());
                    }
                }
            }
            if let FloorDiv(e, q) = &**l {
                if let (Some(q), Some(r)) = (q.as_constant(), r.as_constant()) {
                    if q > 0 && **e == a && Some(q) == r.checked_neg() {
                        return Self::make_mod(a, Constant(q));
                    }
                }
            }
        }
        Some(Self::bin(Add, a, b))
    }

    /// `a * b` simplified as MLIR's `simplifyMul`: constants fold, the constant (or symbolic)
    /// operand goes to the right, `x * 1` is `x`, `x * 0` is `0`, `(x * 2) * 3` is `x * 6` and
    /// `(x * 2) * y` is `(x * y) * 2`. `None` on 64-bit overflow.
    pub fn make_mul(a: AffineExpr, b: AffineExpr) -> Option<AffineExpr> {
        use AffineExpr::{Constant, Mul};
        if let (Constant(x), Constant(y)) = (&a, &b) {
            return Some(Constant(x.checked_mul(*y)?));
        }
        if !a.is_symbolic_or_constant() && !b.is_symbolic_or_constant() {
            return Some(Self::bin(Mul, a, b));
        }
        if !b.is_symbolic_or_constant() || matches!(a, Constant(_)) {
            return Self::make_mul(b, a);
        }
        let b_const = b.as_constant();
        match b_const {
            Some(1) => return Some(a),
            Some(0) => return Some(Constant(0)),
            _ => {}
        }
        if let Mul(x, c1) = &a {
            if let Some(c1) = c1.as_constant() {
                if let Some(c2) = b_const {
                    return Self::make_mul((**x).clone(), Constant(c1.checked_mul(c2)?));
                }
                let inner = Self::make_mul((**x).clone(), b)?;
                return Self::make_mul(inner, Constant(c1));
            }
        }
        Some(Self::bin(Mul, a, b))
    }

    /// `a floordiv b` simplified as MLIR's `simplifyFloorDiv` (only for a constant `b >= 1`):
    /// constants fold, `x floordiv 1` is `x`, `(x * 6) floordiv 3` is `x * 2`, and a sum with a
    /// term divisible by `b` splits into two floordivs.
    pub fn make_floor_div(a: AffineExpr, b: AffineExpr) -> Option<AffineExpr> {
        use AffineExpr::{Add, Constant, FloorDiv, Mul};
        let Some(c) = b.as_constant().filter(|c| *c >= 1) else {
            return Some(Self::bin(FloorDiv, a, b));
        };
        if let Some(x) = a.as_constant() {
            // floor division by a positive divisor
            return Some(Constant(x.div_euclid(c)));
        }
        if c == 1 {
            return Some(a);
        }
        match &a {
            Mul(x, k) if k.as_constant().is_some_and(|k| k % c == 0) => {
                let k = k.as_constant().unwrap_or(0);
                Self::make_mul((**x).clone(), Constant(k / c))
            }
            Add(x, y)
                if x.largest_known_divisor() % c == 0 || y.largest_known_divisor() % c == 0 =>
            {
                let l = Self::make_floor_div((**x).clone(), Constant(c))?;
                let r = Self::make_floor_div((**y).clone(), Constant(c))?;
                Self::make_add(l, r)
            }
            _ => Some(Self::bin(FloorDiv, a, b)),
        }
    }

    /// `a ceildiv b` simplified as MLIR's `simplifyCeilDiv` (only for a constant `b >= 1`).
    pub fn make_ceil_div(a: AffineExpr, b: AffineExpr) -> Option<AffineExpr> {
        use AffineExpr::{CeilDiv, Constant, Mul};
        let Some(c) = b.as_constant().filter(|c| *c >= 1) else {
            return Some(Self::bin(CeilDiv, a, b));
        };
        if let Some(x) = a.as_constant() {
            let q = x.div_euclid(c);
            return Some(Constant(if x.rem_euclid(c) != 0 { q + 1 } else { q }));
        }
        if c == 1 {
            return Some(a);
        }
        match &a {
            Mul(x, k) if k.as_constant().is_some_and(|k| k % c == 0) => {
                let k = k.as_constant().unwrap_or(0);
                Self::make_mul((**x).clone(), Constant(k / c))
            }
            _ => Some(Self::bin(CeilDiv, a, b)),
        }
    }

    /// `a mod b` simplified as MLIR's `simplifyMod` (only for a constant `b >= 1`): constants
    /// fold, a multiple of `b` is `0`, `(x + y) mod b` drops a term divisible by `b`, and
    /// `(x mod a) mod b` is `x mod b` when `b` divides `a`.
    pub fn make_mod(a: AffineExpr, b: AffineExpr) -> Option<AffineExpr> {
        use AffineExpr::{Add, Constant, Mod};
        let Some(c) = b.as_constant().filter(|c| *c >= 1) else {
            return Some(Self::bin(Mod, a, b));
        };
        if let Some(x) = a.as_constant() {
            return Some(Constant(x.rem_euclid(c)));
        }
        if a.largest_known_divisor() % c == 0 {
            return Some(Constant(0));
        }
        match &a {
            Add(x, y) if x.largest_known_divisor() % c == 0 => {
                Self::make_mod((**y).clone(), Constant(c))
            }
            Add(x, y) if y.largest_known_divisor() % c == 0 => {
                Self::make_mod((**x).clone(), Constant(c))
            }
            Mod(x, k) if k.as_constant().is_some_and(|k| k >= 1 && k % c == 0) => {
                Self::make_mod((**x).clone(), Constant(c))
            }
            _ => Some(Self::bin(Mod, a, b)),
        }
    }

    /// Rebuilds the expression bottom-up with MLIR's simplifying constructors. `None` on overflow.
    pub fn simplified(&self) -> Option<AffineExpr> {
        Some(match self {
            AffineExpr::Var(_) | AffineExpr::Symbol(_) | AffineExpr::Constant(_) => self.clone(),
            AffineExpr::Add(a, b) => Self::make_add(a.simplified()?, b.simplified()?)?,
            AffineExpr::Mul(a, b) => Self::make_mul(a.simplified()?, b.simplified()?)?,
            AffineExpr::FloorDiv(a, b) => Self::make_floor_div(a.simplified()?, b.simplified()?)?,
            AffineExpr::CeilDiv(a, b) => Self::make_ceil_div(a.simplified()?, b.simplified()?)?,
            AffineExpr::Mod(a, b) => Self::make_mod(a.simplified()?, b.simplified()?)?,
        })
    }

    /// The canonical form stored in the IR: MLIR's simplified tree, brought to the tree its own
    /// printed text parses back to (MLIR prints `a + (b + c)` as `a + b + c`, which reads back
    /// as `(a + b) + c`), so that printing and parsing again gives the same IR.
    pub fn canonical(self) -> AffineExpr {
        let mut e = self;
        for _ in 0..8 {
            let text = e.to_mlir_string("d");
            match parse_printed(&text) {
                Some(again) if again != e => e = again,
                _ => break,
            }
        }
        e
    }

    /// Depth of the expression tree (a leaf is 1).
    pub fn depth(&self) -> usize {
        match self {
            AffineExpr::Var(_) | AffineExpr::Symbol(_) | AffineExpr::Constant(_) => 1,
            AffineExpr::Add(a, b)
            | AffineExpr::Mul(a, b)
            | AffineExpr::FloorDiv(a, b)
            | AffineExpr::CeilDiv(a, b)
            | AffineExpr::Mod(a, b) => 1 + a.depth().max(b.depth()),
        }
    }
}

/// Reads an expression in the printer's own form (`d0`, `s0`, integers, `+ - *`, `floordiv`,
/// `ceildiv`, `mod`, parentheses) with MLIR's precedence and simplifying constructors. `None` if
/// the text is not in that form or a constant overflows.
fn parse_printed(text: &str) -> Option<AffineExpr> {
    struct P<'a> {
        toks: Vec<&'a str>,
        i: usize,
    }
    impl P<'_> {
        fn peek(&self) -> Option<&str> {
            self.toks.get(self.i).copied()
        }
        fn next(&mut self) -> Option<&str> {
            let t = self.toks.get(self.i).copied();
            self.i += 1;
            t
        }
        fn sum(&mut self) -> Option<AffineExpr> {
            let mut acc = self.term()?;
            while let Some(op @ ("+" | "-")) = self.peek() {
                let neg = op == "-";
                self.i += 1;
                let r = self.term()?;
                let r = if neg {
                    AffineExpr::make_mul(r, AffineExpr::Constant(-1))?
                } else {
                    r
                };
                acc = AffineExpr::make_add(acc, r)?;
            }
            Some(acc)
        }
        fn term(&mut self) -> Option<AffineExpr> {
            let mut acc = self.unary()?;
            while let Some(op @ ("*" | "floordiv" | "ceildiv" | "mod")) = self.peek() {
                let op = op.to_string();
                self.i += 1;
                let r = self.unary()?;
                acc = match op.as_str() {
                    "*" => AffineExpr::make_mul(acc, r)?,
                    "floordiv" => AffineExpr::make_floor_div(acc, r)?,
                    "ceildiv" => AffineExpr::make_ceil_div(acc, r)?,
                    _ => AffineExpr::make_mod(acc, r)?,
                };
            }
            Some(acc)
        }
        fn unary(&mut self) -> Option<AffineExpr> {
            if self.peek() == Some("-") {
                self.i += 1;
                let e = self.unary()?;
                return AffineExpr::make_mul(e, AffineExpr::Constant(-1));
            }
            let t = self.next()?;
            if t == "(" {
                let e = self.sum()?;
                return (self.next()? == ")").then_some(e);
            }
            if let Some(n) = t.strip_prefix('d') {
                return n.parse().ok().map(AffineExpr::Var);
            }
            if let Some(n) = t.strip_prefix('s') {
                return n.parse().ok().map(AffineExpr::Symbol);
            }
            t.parse().ok().map(AffineExpr::Constant)
        }
    }
    let mut toks = Vec::new();
    let bytes = text.as_bytes();
    let mut k = 0;
    while k < bytes.len() {
        let c = bytes[k];
        if c == b' ' {
            k += 1;
        } else if c.is_ascii_alphanumeric() {
            let start = k;
            while k < bytes.len() && bytes[k].is_ascii_alphanumeric() {
                k += 1;
            }
            toks.push(&text[start..k]);
        } else {
            toks.push(&text[k..k + 1]);
            k += 1;
        }
    }
    let mut p = P { toks, i: 0 };
    let e = p.sum()?;
    (p.i == p.toks.len()).then_some(e)
}

/// An affine map `(vars)[symbols] -> (results)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AffineMap {
    /// Number of domain variables.
    pub num_vars: usize,
    /// Number of symbols.
    pub num_symbols: usize,
    /// One expression per result.
    pub results: Vec<AffineExpr>,
}

impl AffineMap {
    /// The map with `num_vars` variables, `num_symbols` symbols and `results`, as given.
    pub fn new(num_vars: usize, num_symbols: usize, results: impl Into<Vec<AffineExpr>>) -> Self {
        AffineMap {
            num_vars,
            num_symbols,
            results: results.into(),
        }
    }

    /// The identity map on `n` variables.
    pub fn identity(n: usize) -> Self {
        AffineMap {
            num_vars: n,
            num_symbols: 0,
            results: (0..n).map(AffineExpr::Var).collect(),
        }
    }

    /// If every result is a distinct bare variable and there are as many results as variables,
    /// returns `perm` with `results[k] == Var(perm[k])`.
    pub fn as_permutation(&self) -> Option<Vec<usize>> {
        if self.results.len() != self.num_vars {
            return None;
        }
        let mut seen = vec![false; self.num_vars];
        let mut perm = Vec::with_capacity(self.num_vars);
        for r in &self.results {
            let v = r.as_var()?;
            if seen[v] {
                return None;
            }
            seen[v] = true;
            perm.push(v);
        }
        Some(perm)
    }

    /// Evaluates every result on the given variables; `None` on overflow or division by zero.
    pub fn eval(&self, vars: &[i64], symbols: &[i64]) -> Option<Vec<i64>> {
        self.results.iter().map(|r| r.eval(vars, symbols)).collect()
    }
}

/// A dimension slice `#sparse_tensor<slice(offset, size, stride)>`; `None` is a dynamic `?`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DimSlice {
    /// Offset into the parent dimension (elements); `None` for `?`.
    pub offset: Option<u64>,
    /// Number of elements of the slice; `None` for `?`.
    pub size: Option<u64>,
    /// Step between elements (elements); `None` for `?`.
    pub stride: Option<u64>,
}

/// The semantic IR of one `#sparse_tensor.encoding<{ ... }>`: MLIR's `SparseTensorEncodingAttr`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Encoding {
    /// One level type per level, outermost first.
    pub lvl_types: Vec<LevelType>,
    /// The dimension-to-level map: `num_vars` = dimension rank, one result per level.
    pub dim_to_lvl: AffineMap,
    /// The level-to-dimension map (inverse): `num_vars` = level rank, one result per dimension.
    pub lvl_to_dim: AffineMap,
    /// Bits per position (`posWidth`): 0 means native (`usize`), else 8, 16, 32 or 64.
    pub pos_width: u32,
    /// Bits per coordinate (`crdWidth`): 0 means native (`usize`), else 8, 16, 32 or 64.
    pub crd_width: u32,
    /// Per-dimension slices, present when any dimension has one (then one per dimension).
    pub dim_slices: Option<Vec<DimSlice>>,
    /// `explicitVal`: the value every stored entry has (e.g. `1.0 : f32` for a pattern matrix),
    /// `None` when not given.
    pub explicit_val: Option<TypedValue>,
    /// `implicitVal`: the value of entries that are not stored; MLIR requires it to be zero
    /// (checked against a tensor type). `None` when not given.
    pub implicit_val: Option<TypedValue>,
}

impl Encoding {
    /// ELL: `(counting level, row level)`, the first level of the form `c * K * i`
    /// ([`AffineExpr::as_counting`]) and the level that stores the dimension `i` it counts
    /// whole; `None` without a counting level or without such a row level. A generated
    /// struct's `validate` checks the ELL slice rules over these two levels (entry `k` of a
    /// row in slice `k`), and its kernels rely on them (a last-level segment under both holds
    /// at most one entry).
    pub fn ell_levels(&self) -> Option<(usize, usize)> {
        let results = &self.dim_to_lvl.results;
        let (counting, (dim, _)) = results
            .iter()
            .enumerate()
            .find_map(|(l, r)| r.as_counting().map(|c| (l, c)))?;
        let row = results.iter().position(|r| r.as_var() == Some(dim))?;
        Some((counting, row))
    }

    /// An encoding of `lvl_types` with the maps `dim_to_lvl` and `lvl_to_dim` and MLIR's
    /// defaults for the rest: native widths (`posWidth = crdWidth = 0`), no dimension slices, no
    /// `explicitVal` / `implicitVal`. Not checked: [`Encoding::verify`] applies the language's
    /// rules.
    pub fn new(lvl_types: Vec<LevelType>, dim_to_lvl: AffineMap, lvl_to_dim: AffineMap) -> Self {
        Encoding {
            lvl_types,
            dim_to_lvl,
            lvl_to_dim,
            pos_width: 0,
            crd_width: 0,
            dim_slices: None,
            explicit_val: None,
            implicit_val: None,
        }
    }

    /// Number of dimensions (rank of the semantic tensor).
    pub fn dim_rank(&self) -> usize {
        self.dim_to_lvl.num_vars
    }

    /// Number of storage levels.
    pub fn lvl_rank(&self) -> usize {
        self.lvl_types.len()
    }

    /// The XLA dense layout this encoding is, if it is one: when every level is `dense` (no
    /// properties), the map permutes the dimensions and nothing is sliced or given an
    /// `explicitVal`, the dimensions fastest-varying first (`minor_to_major`: the levels,
    /// innermost first). `(i, j) -> (i : dense, j : dense)` is `[1, 0]` (row-major), `(i, j)
    /// -> (j : dense, i : dense)` is `[0, 1]` (column-major); MLIR spells a dense layout so,
    /// XLA as `Layout::minor_to_major` (`../shared/reference/dense-layout.md`).
    pub fn dense_minor_to_major(&self) -> Option<Vec<usize>> {
        let plain_dense = self.lvl_types.iter().all(|lt| {
            lt.format == LevelFormat::Dense && lt.properties == LevelProperties::default()
        });
        if !plain_dense || self.dim_slices.is_some() || self.explicit_val.is_some() {
            return None;
        }
        let mut perm = self.dim_to_lvl.as_permutation()?;
        perm.reverse();
        Some(perm)
    }

    /// The encoding of the same levels seen through permuted dimensions: dimension `d` of the
    /// result is dimension `perm[d]` of `self` (NumPy's `transpose(axes)`; `[1, 0]` turns CSR
    /// into CSC and BSR into BSC). The levels, their types and widths are unchanged, so storage
    /// in `self` is storage in the result without moving an element. `None` unless `perm` is
    /// a permutation of `0..dim_rank`.
    pub fn permute_dims(&self, perm: &[usize]) -> Option<Encoding> {
        let rank = self.dim_to_lvl.num_vars;
        let mut inverse = vec![usize::MAX; rank];
        if perm.len() != rank {
            return None;
        }
        for (d, &p) in perm.iter().enumerate() {
            if *inverse.get(p)? != usize::MAX {
                return None;
            }
            inverse[p] = d;
        }
        let mut e = self.clone();
        // a level reads old dimension `p`, which is new dimension `inverse[p]`
        for r in &mut e.dim_to_lvl.results {
            *r = r.rename_vars(&|v| inverse[v]);
        }
        e.lvl_to_dim.results = perm
            .iter()
            .map(|&p| self.lvl_to_dim.results.get(p).cloned())
            .collect::<Option<_>>()?;
        if let Some(slices) = &self.dim_slices {
            e.dim_slices = Some(
                perm.iter()
                    .map(|&p| slices.get(p).cloned())
                    .collect::<Option<_>>()?,
            );
        }
        Some(e)
    }

    /// If `dim_to_lvl` is a permutation, `perm[l]` is the dimension stored at level `l`.
    pub fn dim_permutation(&self) -> Option<Vec<usize>> {
        self.dim_to_lvl.as_permutation()
    }

    /// First level of the COO region that level `l` belongs to, if `l` is part of a COO region:
    /// a (loose_)compressed level with `nonunique` followed by one or more singleton levels.
    /// Returns `Some(start)` for the region's first level and for each of its singleton levels.
    pub fn coo_region_start(&self, l: usize) -> Option<usize> {
        let lt = self.lvl_types.get(l)?;
        let is_start = |k: usize| {
            let t = &self.lvl_types[k];
            t.has_positions()
                && !t.is_unique()
                && self
                    .lvl_types
                    .get(k + 1)
                    .is_some_and(|n| n.format == LevelFormat::Singleton)
        };
        if lt.format != LevelFormat::Singleton {
            return if is_start(l) { Some(l) } else { None };
        }
        let mut k = l;
        while k > 0 {
            k -= 1;
            match self.lvl_types[k].format {
                LevelFormat::Singleton => continue,
                _ => return if is_start(k) { Some(k) } else { None },
            }
        }
        None
    }

    /// Last level (inclusive) of the COO region that starts at `start`.
    pub fn coo_region_end(&self, start: usize) -> usize {
        let mut e = start;
        while self
            .lvl_types
            .get(e + 1)
            .is_some_and(|t| t.format == LevelFormat::Singleton)
        {
            e += 1;
        }
        e
    }

    /// Where level `l`'s coordinates live: `Some((owner, stride, offset))` means coordinate `p` of
    /// level `l` is element `p * stride + offset` of the coordinate buffer owned by level `owner`.
    /// A COO region stored array-of-structs (no `soa` on its singletons) keeps one interleaved
    /// buffer on its first level (MLIR's default, see `sparse_tensor.print`). `None` for levels
    /// that store no coordinates (dense).
    pub fn crd_location(&self, l: usize) -> Option<(usize, usize, usize)> {
        let lt = self.lvl_types.get(l)?;
        if !lt.has_coordinates() {
            return None;
        }
        if let Some(start) = self.coo_region_start(l) {
            let end = self.coo_region_end(start);
            let aos = !self.lvl_types[start + 1..=end]
                .iter()
                .any(|t| t.properties.soa);
            if aos {
                return Some((start, end - start + 1, l - start));
            }
        }
        Some((l, 1, 0))
    }

    /// `true` if level `l` owns a coordinate buffer (its own, or the interleaved one of an AoS
    /// COO region that starts at `l`).
    pub fn owns_crd_buffer(&self, l: usize) -> bool {
        matches!(self.crd_location(l), Some((owner, _, _)) if owner == l)
    }

    /// Level sizes for a dimension shape (`dim_shape.len()` must equal [`Self::dim_rank`]).
    ///
    /// A bare dimension variable takes that dimension's size; `d floordiv b` is `ceil(size / b)`;
    /// `d mod b` is `b`. Returns `None` for an expression whose extent cannot be derived.
    pub fn lvl_sizes(&self, dim_shape: &[usize]) -> Option<Vec<usize>> {
        if dim_shape.len() != self.dim_rank() {
            return None;
        }
        self.dim_to_lvl
            .results
            .iter()
            .map(|r| match r {
                AffineExpr::Var(d) => Some(dim_shape[*d]),
                AffineExpr::FloorDiv(..) => {
                    let (d, b) = r.as_block()?;
                    if b == 0 {
                        return None;
                    }
                    Some(dim_shape[d].div_ceil(b))
                }
                AffineExpr::Mod(..) => r.as_block().map(|(_, b)| b).filter(|&b| b > 0),
                _ => None,
            })
            .collect()
    }

    /// Maps dimension coordinates to level coordinates through `dim_to_lvl`.
    /// Returns `None` if a result is negative or does not evaluate.
    pub fn dim_to_lvl_coords(&self, dim: &[usize], lvl: &mut [usize]) -> Option<()> {
        if let Some(perm) = self.dim_permutation() {
            for (l, d) in perm.iter().enumerate() {
                lvl[l] = *dim.get(*d)?;
            }
            return Some(());
        }
        let vars: Vec<i64> = dim
            .iter()
            .map(|&c| i64::try_from(c).ok())
            .collect::<Option<_>>()?;
        for (l, r) in self.dim_to_lvl.results.iter().enumerate() {
            lvl[l] = usize::try_from(r.eval(&vars, &[])?).ok()?;
        }
        Some(())
    }

    /// Maps level coordinates back to dimension coordinates through `lvl_to_dim`.
    pub fn lvl_to_dim_coords(&self, lvl: &[usize], dim: &mut [usize]) -> Option<()> {
        let vars: Vec<i64> = lvl
            .iter()
            .map(|&c| i64::try_from(c).ok())
            .collect::<Option<_>>()?;
        for (d, r) in self.lvl_to_dim.results.iter().enumerate() {
            dim[d] = usize::try_from(r.eval(&vars, &[])?).ok()?;
        }
        Some(())
    }
}

impl AffineExpr {
    /// ELL counting: `Some((dim, K))` if the expression is a product of `Symbol(0)`, constants
    /// multiplying to `K > 0` (none: `K = 1`) and one variable `dim`, in any order (the
    /// reference's `c * K * i`: symbol `c` counts dimension `i` into `K` slices).
    pub fn as_counting(&self) -> Option<(usize, usize)> {
        fn walk(e: &AffineExpr, sym: &mut u32, k: &mut i64, var: &mut Option<usize>) -> Option<()> {
            match e {
                AffineExpr::Mul(a, b) => {
                    walk(a, sym, k, var)?;
                    walk(b, sym, k, var)
                }
                AffineExpr::Symbol(0) => {
                    *sym += 1;
                    Some(())
                }
                AffineExpr::Constant(c) => {
                    *k = k.checked_mul(*c)?;
                    Some(())
                }
                AffineExpr::Var(v) if var.is_none() => {
                    *var = Some(*v);
                    Some(())
                }
                _ => None,
            }
        }
        let (mut sym, mut k, mut var) = (0, 1i64, None);
        walk(self, &mut sym, &mut k, &mut var)?;
        if sym != 1 || k <= 0 {
            return None;
        }
        Some((var?, usize::try_from(k).ok()?))
    }
}
