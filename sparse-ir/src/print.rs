//! MLIR's canonical one-line text form of an [`Encoding`].
//!
//! ```text
//! #sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed), posWidth = 32, crdWidth = 8 }>
//! ```
//! Dimensions are renamed `d0..`, symbols `s0..` (printed as `[s0, s1]` before the dimensions),
//! level-variable names are dropped and so is the inverse map when it is the one the parser infers.
//! When the inverse cannot be inferred from `dim_to_lvl` (or differs from the inferred one), it is
//! printed explicitly with level variables `l0..`: `{l0, l1}(d0 = l0 + l1, ...) -> (l0 = ..., ...)`, so that
//! parsing the printed text always gives back the same [`Encoding`]. Slices, when present, are
//! printed on every dimension (`d0 : #sparse_tensor<slice(0, 4, 1)>`, `?` for dynamic values);
//! widths only when non-zero, then `explicitVal` / `implicitVal` in MLIR's typed-value form.
//! [`Encoding::to_pretty_string`] gives the same text on several lines.

use std::fmt;

use crate::infer::infer_lvl_to_dim;
use crate::ir::{AffineExpr, DimSlice, Encoding};

fn slice_val(v: Option<u64>) -> String {
    v.map_or_else(|| "?".to_string(), |v| v.to_string())
}

impl Encoding {
    /// The `map = ...` value in canonical form (`(d0, d1) -> (d0 : dense, d1 : compressed)`).
    pub fn map_to_string(&self) -> String {
        let (head, lvls) = self.map_parts();
        format!("{head} -> ({})", lvls.join(", "))
    }

    /// The map split for printing: `[symbols]{levels}(dimensions)` and one `expr : type` per level.
    fn map_parts(&self) -> (String, Vec<String>) {
        let mut out = String::new();
        let n_sym = self.dim_to_lvl.num_symbols;
        if n_sym > 0 {
            out.push('[');
            out.push_str(
                &(0..n_sym)
                    .map(|s| format!("s{s}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            out.push(']');
        }
        let explicit = match infer_lvl_to_dim(&self.dim_to_lvl) {
            Some(inv) => inv.results != self.lvl_to_dim.results,
            None => true,
        } && self.lvl_to_dim.results.len() == self.dim_rank();
        if explicit {
            out.push('{');
            out.push_str(
                &(0..self.lvl_rank())
                    .map(|l| format!("l{l}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            out.push('}');
        }
        out.push('(');
        for d in 0..self.dim_rank() {
            if d > 0 {
                out.push_str(", ");
            }
            out.push_str(&format!("d{d}"));
            if explicit {
                out.push_str(" = ");
                self.lvl_to_dim.results[d].write(&mut out, "l");
            }
            if let Some(slices) = &self.dim_slices {
                let s = slices.get(d).copied().unwrap_or(DimSlice {
                    offset: Some(0),
                    size: None,
                    stride: Some(1),
                });
                out.push_str(&format!(
                    " : #sparse_tensor<slice({}, {}, {})>",
                    slice_val(s.offset),
                    slice_val(s.size),
                    slice_val(s.stride)
                ));
            }
        }
        out.push(')');
        let lvls = self
            .lvl_types
            .iter()
            .enumerate()
            .map(|(l, lt)| {
                let mut s = String::new();
                if explicit {
                    // MLIR requires a binding on every level once level variables are declared
                    s.push_str(&format!("l{l} = "));
                }
                match self.dim_to_lvl.results.get(l) {
                    Some(e) => e.write(&mut s, "d"),
                    None => AffineExpr::Constant(0).write(&mut s, "d"),
                }
                s.push_str(" : ");
                s.push_str(&lt.to_string());
                s
            })
            .collect();
        (out, lvls)
    }

    /// The entries after `map` (`posWidth = 32`, `explicitVal = ...`), only non-default ones.
    fn other_entries(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.pos_width != 0 {
            out.push(format!("posWidth = {}", self.pos_width));
        }
        if self.crd_width != 0 {
            out.push(format!("crdWidth = {}", self.crd_width));
        }
        if let Some(v) = &self.explicit_val {
            out.push(format!("explicitVal = {v}"));
        }
        if let Some(v) = &self.implicit_val {
            out.push(format!("implicitVal = {v}"));
        }
        out
    }

    /// The canonical form laid out on several lines, one level per line (as `sparse fmt
    /// --pretty` prints it); it parses back to the same encoding:
    /// ```text
    /// #sparse_tensor.encoding<{
    ///   map = (d0, d1) -> (
    ///     d0 : dense,
    ///     d1 : compressed
    ///   ),
    ///   posWidth = 32
    /// }>
    /// ```
    pub fn to_pretty_string(&self) -> String {
        let (head, lvls) = self.map_parts();
        let mut out = format!("#sparse_tensor.encoding<{{\n  map = {head} -> (\n");
        out.push_str(
            &lvls
                .iter()
                .map(|l| format!("    {l}"))
                .collect::<Vec<_>>()
                .join(",\n"),
        );
        out.push_str("\n  )");
        for e in self.other_entries() {
            out.push_str(",\n  ");
            out.push_str(&e);
        }
        out.push_str("\n}>");
        out
    }
}

impl fmt::Display for Encoding {
    /// MLIR's canonical one-line form, e.g.
    /// `#sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed), posWidth = 32 }>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "#sparse_tensor.encoding<{{ map = {}",
            self.map_to_string()
        )?;
        for e in self.other_entries() {
            write!(f, ", {e}")?;
        }
        f.write_str(" }>")
    }
}
