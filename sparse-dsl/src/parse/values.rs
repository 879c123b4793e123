//! Literals and element types: untyped numbers, builtin element type names, unsigned integer
//! literals and the reference's `blockN_M` level format names.

use super::*;

/// A numeric literal before it is given a type.
#[derive(Clone, Copy, Debug)]
pub(super) enum Number {
    Int { value: i128, hex: bool },
    Float(f64),
}

impl Number {
    pub(super) fn as_f64(self) -> f64 {
        match self {
            Number::Int { value, .. } => value as f64,
            Number::Float(v) => v,
        }
    }
}

/// A builtin element type by name: `iN`, `siN`, `uiN`, `index`, `f16`, `bf16`, `f32`, `f64`.
pub(super) fn builtin_type(s: &str) -> Option<ElementType> {
    let int = |w: &str, signedness| {
        if w.is_empty() || !w.bytes().all(|b| b.is_ascii_digit()) || w.starts_with('0') {
            return None;
        }
        let width = w
            .parse::<u32>()
            .ok()
            .filter(|w| (1..=16_777_215).contains(w))?;
        Some(ElementType::Int { width, signedness })
    };
    Some(match s {
        "index" => ElementType::Index,
        "f16" => ElementType::Float(FloatKind::F16),
        "bf16" => ElementType::Float(FloatKind::BF16),
        "f32" => ElementType::Float(FloatKind::F32),
        "f64" => ElementType::Float(FloatKind::F64),
        _ => {
            if let Some(w) = s.strip_prefix("si") {
                int(w, Signedness::Signed)?
            } else if let Some(w) = s.strip_prefix("ui") {
                int(w, Signedness::Unsigned)?
            } else if let Some(w) = s.strip_prefix('i') {
                int(w, Signedness::Signless)?
            } else {
                return None;
            }
        }
    })
}

/// Decimal or `0x` hexadecimal unsigned integer literal.
pub(super) fn parse_uint(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

/// `blockN_M` -> `Some(Some((N, M)))`; `blockX` with a malformed or huge N/M -> `Some(None)`;
/// any other name -> `None`.
pub(super) fn parse_block_name(s: &str) -> Option<Option<(u64, u64)>> {
    let rest = s.strip_prefix("block")?;
    let (n, m) = rest.split_once('_')?;
    if n.is_empty()
        || m.is_empty()
        || !n.bytes().all(|b| b.is_ascii_digit())
        || !m.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    match (n.parse::<u32>(), m.parse::<u32>()) {
        (Ok(n), Ok(m)) => Some(Some((u64::from(n), u64::from(m)))),
        _ => Some(None),
    }
}
