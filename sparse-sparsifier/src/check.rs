//! Checks a parsed statement against the declared tensors and normalises it into a
//! [`Kernel`]: operands declared, ranks agree, each index has one extent, one value type (but
//! `f32` and the quantized types mix), bitwise operators only on integers; TACO's einsum rule
//! makes implicit sums explicit.
//!
//! Einsum rule (TACO `einsum`): an index that appears on the right but not on the left, and is
//! not bound by an explicit reduction, is summed over the smallest term that holds all its
//! occurrences: `r(i) = b(i) - A(i,k) * x(k)` is `b(i) - sum(k, A(i,k) * x(k))`. The sum is
//! widened through the products, quotients and negations around it (the term is the whole
//! product/quotient chain), so `y(i) = A(i,j) * x(j) * 2` is one sum over the whole product
//! and `y(i) = 1 / A(i,j)` is `sum(j, 1 / A(i,j))`.
//!
//! Messages name the tensor, index or operator and suit both the CLI (`error: MESSAGE`) and,
//! through their spans, the macro's spanned compile errors.

use std::collections::HashMap;

use sparse_ir::types::{ElementType, FloatKind};
use sparse_ir::verify::VerifiedEncoding;

use crate::error::{Error, Span};
use crate::notation::{self, AssignOp, BinOp, ExprKind, Literal, ReduceOp, Statement};

/// The value types the sparsifier computes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueType {
    /// `f64`.
    F64,
    /// `f32`.
    F32,
    /// `f16` (IEEE half, the `half` crate's `f16`): stored in 16 bits, computed in `f32`.
    F16,
    /// `bf16` (bfloat16, the `half` crate's `bf16`): stored in 16 bits, computed in `f32`.
    BF16,
    /// `i64` (wrapping arithmetic, as MLIR's `arith` integer ops).
    I64,
    /// `i32` (wrapping arithmetic).
    I32,
    /// `i16`: stored in 16 bits, computed in `i32` (wrapping), stored back wrapping.
    I16,
    /// `i8`: stored in 8 bits, computed in `i32` (wrapping), stored back wrapping.
    I8,
    /// `ui64` (`u64`, wrapping arithmetic).
    U64,
    /// `ui32` (`u32`, wrapping arithmetic).
    U32,
    /// `ui16` (`u16`): computed in `i32` (wrapping), stored back wrapping.
    U16,
    /// `ui8` (`u8`): computed in `i32` (wrapping), stored back wrapping.
    U8,
    /// `i1` (MLIR's one-bit integer; the interpreter's `interp::I1`, values 0 and 1):
    /// arithmetic modulo 2 as MLIR's `arith` ops on `i1` (`+` and `-` are exclusive or, `*` is
    /// and, a division by zero an error), ordered `0 < 1` (`min` is and, `max` or).
    I1,
    /// `complex<f32>` (num-complex's `Complex<f32>`): IEEE arithmetic on both parts; not
    /// ordered, so `min`/`max` and the bitwise operators refuse it.
    C32,
    /// `complex<f64>` (`Complex<f64>`).
    C64,
    /// A uniform quantized type whose expressed type is `f32`: `!quant.uniform<i8:f32,
    /// 0.01:50>` per tensor, `!quant.uniform<i8:f32:1, {0.2:20, 0.1:10}>` per axis, with an
    /// optional storage range (`i8<-100:100>`). Only the storage type is here: the scales and
    /// zero points stay with the declared element type (whoever reads and prints the values
    /// quantizes them, `sparse eval` with `sparse_runtime::quant`). Computed in `f32` on the
    /// dequantized values; it mixes with `f32` and with the other quantized types in one
    /// statement ([`ValueType::mixes_with`]).
    Quant {
        /// `true` for `iN` storage, `false` for `uN`.
        signed: bool,
        /// The storage width in bits.
        width: u32,
    },
}

impl ValueType {
    /// The value type of an MLIR element type: `f64`, `f32`, `f16`, `bf16`; `i64`/`si64`,
    /// `i32`, `i16`, `i8` (signless and signed alike); `ui64`, `ui32`, `ui16`, `ui8`; `i1`
    /// (signless only); `complex<f32>`, `complex<f64>`. `None` for the others (index, other
    /// widths, complex of another element type); a uniform quantized type expressed in `f32`
    /// ([`ValueType::Quant`], quantized types expressed in another float type are `None`).
    pub fn from_element(e: &ElementType) -> Option<ValueType> {
        use sparse_ir::types::Signedness;
        Some(match e {
            ElementType::Float(FloatKind::F64) => ValueType::F64,
            ElementType::Float(FloatKind::F32) => ValueType::F32,
            ElementType::Float(FloatKind::F16) => ValueType::F16,
            ElementType::Float(FloatKind::BF16) => ValueType::BF16,
            ElementType::Int {
                width: 1,
                signedness: Signedness::Signless,
            } => ValueType::I1,
            ElementType::Int { width, signedness } => {
                let unsigned = *signedness == Signedness::Unsigned;
                match (width, unsigned) {
                    (64, false) => ValueType::I64,
                    (32, false) => ValueType::I32,
                    (16, false) => ValueType::I16,
                    (8, false) => ValueType::I8,
                    (64, true) => ValueType::U64,
                    (32, true) => ValueType::U32,
                    (16, true) => ValueType::U16,
                    (8, true) => ValueType::U8,
                    _ => return None,
                }
            }
            ElementType::Complex(t) => match **t {
                ElementType::Float(FloatKind::F64) => ValueType::C64,
                ElementType::Float(FloatKind::F32) => ValueType::C32,
                _ => return None,
            },
            ElementType::Quant(q) if q.expressed == FloatKind::F32 => ValueType::Quant {
                signed: q.storage_signed,
                width: q.storage_width,
            },
            _ => return None,
        })
    }
    /// `true` for the integer types (not the quantized types: they compute in `f32`).
    pub fn is_integer(self) -> bool {
        !matches!(
            self,
            ValueType::F64
                | ValueType::F32
                | ValueType::F16
                | ValueType::BF16
                | ValueType::C32
                | ValueType::C64
                | ValueType::Quant { .. }
        )
    }
    /// `true` for the uniform quantized types ([`ValueType::Quant`]).
    pub fn is_quantized(self) -> bool {
        matches!(self, ValueType::Quant { .. })
    }
    /// `true` if tensors of types `self` and `other` may meet in one statement: the same type,
    /// or both among `f32` and the quantized types expressed in `f32` (the kernel computes in
    /// `f32` on dequantized values).
    pub fn mixes_with(self, other: ValueType) -> bool {
        let f32_like = |t: ValueType| t == ValueType::F32 || t.is_quantized();
        self == other || (f32_like(self) && f32_like(other))
    }
    /// `true` for `complex<f32>` and `complex<f64>`.
    pub fn is_complex(self) -> bool {
        matches!(self, ValueType::C32 | ValueType::C64)
    }
    /// The type a kernel computes in: `f32` for `f16` and `bf16`, `i32` for the 8- and 16-bit
    /// integers (a narrow type would lose in sums: the issue's rule "accumulating in a wider
    /// type where the narrow one would lose") and the quantized types (their expressed type),
    /// the type itself otherwise. Values are widened
    /// when read and converted back (rounded to nearest, or wrapping) when stored.
    pub fn compute(self) -> ValueType {
        match self {
            ValueType::F16 | ValueType::BF16 => ValueType::F32,
            ValueType::I16 | ValueType::I8 | ValueType::U16 | ValueType::U8 => ValueType::I32,
            ValueType::Quant { .. } => ValueType::F32,
            t => t,
        }
    }
    /// MLIR's name (`f64`, `ui8`, ...); a quantized type without its scales and zero points
    /// (`!quant.uniform<i8:f32>`).
    pub fn name(self) -> std::borrow::Cow<'static, str> {
        let name = match self {
            ValueType::F64 => "f64",
            ValueType::F32 => "f32",
            ValueType::F16 => "f16",
            ValueType::BF16 => "bf16",
            ValueType::I64 => "i64",
            ValueType::I32 => "i32",
            ValueType::I16 => "i16",
            ValueType::I8 => "i8",
            ValueType::U64 => "ui64",
            ValueType::U32 => "ui32",
            ValueType::U16 => "ui16",
            ValueType::U8 => "ui8",
            ValueType::I1 => "i1",
            ValueType::C32 => "complex<f32>",
            ValueType::C64 => "complex<f64>",
            ValueType::Quant { signed, width } => {
                let sign = if signed { "i" } else { "u" };
                return format!("!quant.uniform<{sign}{width}:f32>").into();
            }
        };
        name.into()
    }
}

/// A declared tensor: `tensor<4x8xf64, #enc>` bound to a name.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorDecl {
    /// The name the statement uses.
    pub name: String,
    /// Dimension sizes, `None` for a size known only at run time (`?`).
    pub shape: Vec<Option<usize>>,
    /// The value type.
    pub value: ValueType,
    /// The encoding; `None` for a dense row-major tensor (`tensor<4x8xf64>`) or a 0-d one.
    pub encoding: Option<VerifiedEncoding>,
}

impl TensorDecl {
    /// `true` if every level is full and locatable (dense, batch) or there is no encoding, and
    /// the tensor is not a slice: the tensor is read by computing a position from its
    /// coordinates (random access), and adds no edge to the iteration graph.
    pub fn is_random_access(&self) -> bool {
        match &self.encoding {
            None => true,
            Some(e) => {
                e.dim_slices.is_none()
                    && e.dim_to_lvl.results.iter().all(|r| !has_symbol(r))
                    && e.lvl_types.iter().all(|lt| {
                        let c = lt.capabilities();
                        c.full && c.locate
                    })
            }
        }
    }
}

pub(crate) fn has_symbol(e: &sparse_ir::ir::AffineExpr) -> bool {
    use sparse_ir::ir::AffineExpr as A;
    match e {
        A::Symbol(_) => true,
        A::Var(_) | A::Constant(_) => false,
        A::Add(a, b) | A::Mul(a, b) | A::FloorDiv(a, b) | A::CeilDiv(a, b) | A::Mod(a, b) => {
            has_symbol(a) || has_symbol(b)
        }
    }
}

/// An index variable of the kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexVar {
    /// Its name.
    pub name: String,
    /// Its extent, when a static shape fixes it.
    pub extent: Option<usize>,
    /// A tensor dimension it indexes, `(tensor, dimension)`: where the extent is read at run
    /// time.
    pub source: (usize, usize),
}

/// One occurrence of a tensor in the statement (each occurrence iterates on its own).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// The tensor (index into [`Kernel::tensors`]).
    pub tensor: usize,
    /// One index variable per dimension.
    pub indices: Vec<usize>,
    /// Where it is written.
    pub span: Span,
}

/// The checked expression: accesses by id, explicit reductions everywhere (einsum applied).
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// An access (index into [`Kernel::accesses`]).
    Access(usize),
    /// A literal.
    Literal(Literal),
    /// Unary minus.
    Neg(Box<Expr>),
    /// A binary operation.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// A reduction over index variables (ids).
    Reduce(ReduceOp, Vec<usize>, Box<Expr>),
    /// Nothing stored (a lattice case where an operand is absent).
    Zero,
    /// The value of a reduction computed by an inner loop nest (temporary id).
    Temp(usize),
}

impl Expr {
    /// `true` if a [`Expr::Reduce`] occurs in the expression.
    pub fn has_reduce(&self) -> bool {
        match self {
            Expr::Reduce(..) => true,
            Expr::Neg(a) => a.has_reduce(),
            Expr::Binary(_, a, b) => a.has_reduce() || b.has_reduce(),
            _ => false,
        }
    }
    /// The accesses in the expression, in order.
    pub fn accesses(&self, out: &mut Vec<usize>) {
        match self {
            Expr::Access(a) => out.push(*a),
            Expr::Neg(a) => a.accesses(out),
            Expr::Binary(_, a, b) => {
                a.accesses(out);
                b.accesses(out);
            }
            Expr::Reduce(_, _, b) => b.accesses(out),
            _ => {}
        }
    }
}

/// A checked kernel: what the iteration order, the lattices and the loop builder read.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The tensors of the statement (output first).
    pub tensors: Vec<TensorDecl>,
    /// The index variables, in order of first appearance.
    pub indices: Vec<IndexVar>,
    /// Every tensor occurrence on the right-hand side.
    pub accesses: Vec<Access>,
    /// The output access (its tensor is `tensors[0]`).
    pub output: Access,
    /// The right-hand side.
    pub expr: Expr,
    /// `+=` into a random-access output: the result starts from the output's values.
    pub accumulate: bool,
    /// The value type of the output, which every tensor shares, except that `f32` and the
    /// quantized types mix ([`ValueType::mixes_with`]: the tensors hold their own types).
    pub value: ValueType,
}

struct Cx<'a> {
    decls: &'a [TensorDecl],
    tensors: Vec<TensorDecl>,
    by_name: HashMap<String, usize>,
    indices: Vec<IndexVar>,
    index_at: HashMap<String, usize>,
    /// Per index: the access and dimension that fixed its extent (for messages).
    fixed_by: Vec<Option<(String, usize, usize)>>,
    accesses: Vec<Access>,
    value: Option<(ValueType, String)>,
}

impl Cx<'_> {
    fn tensor(&mut self, name: &notation::Ident) -> Result<usize, Error> {
        if let Some(&t) = self.by_name.get(&name.name) {
            return Ok(t);
        }
        let Some(d) = self.decls.iter().find(|d| d.name == name.name) else {
            return Err(Error::new(
                name.span,
                format!("unknown tensor `{}`: it is not declared", name.name),
            )
            .with_help(format!(
                "declare it, e.g. --tensor {}=tensor<...>",
                name.name
            )));
        };
        match &self.value {
            None => self.value = Some((d.value, d.name.clone())),
            Some((v, first)) if !v.mixes_with(d.value) => {
                return Err(Error::new(
                    name.span,
                    format!(
                        "value type mismatch: `{}` holds {} but `{first}` holds {}",
                        d.name,
                        d.value.name(),
                        v.name()
                    ),
                ))
            }
            _ => {}
        }
        let t = self.tensors.len();
        self.tensors.push(d.clone());
        self.by_name.insert(name.name.clone(), t);
        Ok(t)
    }

    fn index(&mut self, id: &notation::Ident, tensor: usize, dim: usize) -> Result<usize, Error> {
        let extent = self.tensors[tensor].shape[dim];
        let tname = self.tensors[tensor].name.clone();
        let v = match self.index_at.get(&id.name) {
            Some(&v) => v,
            None => {
                let v = self.indices.len();
                self.indices.push(IndexVar {
                    name: id.name.clone(),
                    extent: None,
                    source: (tensor, dim),
                });
                self.fixed_by.push(None);
                self.index_at.insert(id.name.clone(), v);
                v
            }
        };
        if let Some(e) = extent {
            match (&self.indices[v].extent, &self.fixed_by[v]) {
                (Some(old), Some((t0, d0, _))) if *old != e => {
                    return Err(Error::new(
                        id.span,
                        format!(
                            "index `{}` has extent {old} in `{t0}` (dimension {d0}) but {e} in `{tname}` (dimension {dim})",
                            id.name
                        ),
                    ))
                }
                (None, _) => {
                    self.indices[v].extent = Some(e);
                    self.indices[v].source = (tensor, dim);
                    self.fixed_by[v] = Some((tname, dim, e));
                }
                _ => {}
            }
        }
        Ok(v)
    }

    fn access(&mut self, a: &notation::Access) -> Result<(usize, Vec<usize>), Error> {
        let t = self.tensor(&a.name)?;
        let rank = self.tensors[t].shape.len();
        if a.indices.len() != rank {
            let msg = if a.indices.is_empty() {
                format!(
                    "`{}` has {rank} dimensions but is written without indices",
                    a.name.name
                )
            } else {
                format!(
                    "`{}` has {rank} dimension{} but is indexed with {} ind{}",
                    a.name.name,
                    if rank == 1 { "" } else { "s" },
                    a.indices.len(),
                    if a.indices.len() == 1 { "ex" } else { "ices" }
                )
            };
            return Err(Error::new(a.span, msg));
        }
        let mut idx = Vec::with_capacity(rank);
        for (d, id) in a.indices.iter().enumerate() {
            if a.indices[..d].iter().any(|p| p.name == id.name) {
                return Err(Error::new(
                    id.span,
                    format!(
                        "index `{}` appears twice in `{a}`: diagonal accesses are not supported",
                        id.name
                    ),
                ));
            }
            idx.push(self.index(id, t, d)?);
        }
        Ok((t, idx))
    }

    fn expr(&mut self, e: &notation::Expr, bound: &mut Vec<usize>) -> Result<Expr, Error> {
        Ok(match &e.kind {
            ExprKind::Access(a) => {
                let (tensor, indices) = self.access(a)?;
                self.accesses.push(Access {
                    tensor,
                    indices,
                    span: a.span,
                });
                Expr::Access(self.accesses.len() - 1)
            }
            ExprKind::Literal(l) => {
                if let (Literal::Float(_), Some((v, name))) = (l, &self.value) {
                    if v.is_integer() {
                        return Err(Error::new(
                            e.span,
                            format!(
                                "the literal `{l}` is not an integer, but `{name}` holds {}",
                                v.name()
                            ),
                        ));
                    }
                }
                Expr::Literal(l.clone())
            }
            ExprKind::Neg(a) => Expr::Neg(Box::new(self.expr(a, bound)?)),
            ExprKind::Binary(op, a, b) => {
                let a = self.expr(a, bound)?;
                let b = self.expr(b, bound)?;
                if op.is_bitwise() {
                    self.integer_only(e.span, &format!("the operator `{}`", op.symbol()))?;
                }
                Expr::Binary(*op, Box::new(a), Box::new(b))
            }
            ExprKind::Reduce(op, vars, body) => {
                if op.is_bitwise() {
                    self.integer_only(e.span, &format!("the reduction `{}`", op.name()))?;
                }
                if matches!(op, ReduceOp::Min | ReduceOp::Max) {
                    self.ordered_only(e.span, &format!("the reduction `{}`", op.name()))?;
                }
                let mut ids = Vec::new();
                for v in vars {
                    if vars.iter().filter(|w| w.name == v.name).count() > 1 {
                        return Err(Error::new(
                            v.span,
                            format!("index `{}` is listed twice in `{}`", v.name, op.name()),
                        ));
                    }
                }
                let before = self.accesses.len();
                let mark = bound.len();
                // the ids of the reduction's vars are known only once the body names them
                let body_e = self.expr(body, bound)?;
                for v in vars {
                    let used = self.index_at.get(&v.name).copied().filter(|id| {
                        self.accesses[before..]
                            .iter()
                            .any(|a| a.indices.contains(id))
                    });
                    match used {
                        Some(id) => ids.push(id),
                        None => {
                            return Err(Error::new(
                                v.span,
                                format!(
                                    "reduction index `{}` is not used in the expression of `{}`",
                                    v.name,
                                    op.name()
                                ),
                            ))
                        }
                    }
                }
                bound.truncate(mark);
                Expr::Reduce(*op, ids, Box::new(body_e))
            }
        })
    }

    fn ordered_only(&self, span: Span, what: &str) -> Result<(), Error> {
        match &self.value {
            Some((v, name)) if v.is_complex() => Err(Error::new(
                span,
                format!(
                    "{what} needs ordered values, but `{name}` holds {}",
                    v.name()
                ),
            )),
            _ => Ok(()),
        }
    }

    fn integer_only(&self, span: Span, what: &str) -> Result<(), Error> {
        match &self.value {
            Some((v, name)) if !v.is_integer() => Err(Error::new(
                span,
                format!(
                    "{what} needs integer values, but `{name}` holds {}",
                    v.name()
                ),
            )),
            _ => Ok(()),
        }
    }
}

/// Checks `stmt` against the declared tensors `decls` and returns the kernel.
///
/// Errors (each at the offending token): an unknown tensor; a rank that differs from the
/// declaration; an index written twice in one access; an index with two extents; a value type
/// that differs from the first tensor's (but for `f32` and quantized types, which mix); a float literal or a bitwise operator / reduction with
/// float values; a reduction index that also indexes the output, is listed twice, is reduced by
/// an enclosing reduction, or is not used in its expression; an output index written twice.
pub fn check(stmt: &Statement, decls: &[TensorDecl]) -> Result<Kernel, Error> {
    let mut cx = Cx {
        decls,
        tensors: Vec::new(),
        by_name: HashMap::new(),
        indices: Vec::new(),
        index_at: HashMap::new(),
        fixed_by: Vec::new(),
        accesses: Vec::new(),
        value: None,
    };
    let (out_t, out_idx) = cx.access(&stmt.lhs)?;
    let output = Access {
        tensor: out_t,
        indices: out_idx.clone(),
        span: stmt.lhs.span,
    };
    if cx.tensors[out_t]
        .encoding
        .as_ref()
        .is_some_and(|e| e.dim_slices.is_some())
    {
        return Err(Error::new(
            stmt.lhs.span,
            format!(
                "the output `{}` is a slice: write into a tensor of its own",
                stmt.lhs.name.name
            ),
        ));
    }
    let out_random = cx.tensors[out_t].is_random_access() && cx.tensors[out_t].encoding.is_none();
    let mut bound = Vec::new();
    let mut rhs = cx.expr(&stmt.rhs, &mut bound)?;
    // reductions must not reduce an output index, nor an index an enclosing one reduces
    check_reduce_vars(&rhs, &out_idx, &cx.indices, &stmt.rhs, &mut Vec::new())?;
    let accumulate = stmt.op == AssignOp::AddAssign && out_random;
    if stmt.op == AssignOp::AddAssign && !out_random {
        // a sparse output keeps its old entries where the right side stores nothing: C + E
        cx.accesses.push(output.clone());
        let old = Expr::Access(cx.accesses.len() - 1);
        rhs = Expr::Binary(BinOp::Add, Box::new(old), Box::new(rhs));
    }
    let expr = einsum(rhs, &out_idx, &cx.accesses);
    let value = cx.value.map(|v| v.0).unwrap_or(ValueType::F64);
    Ok(Kernel {
        tensors: cx.tensors,
        indices: cx.indices,
        accesses: cx.accesses,
        output,
        expr,
        accumulate,
        value,
    })
}

fn check_reduce_vars(
    e: &Expr,
    out: &[usize],
    indices: &[IndexVar],
    src: &notation::Expr,
    bound: &mut Vec<usize>,
) -> Result<(), Error> {
    match e {
        Expr::Reduce(op, vars, body) => {
            for v in vars {
                if out.contains(v) {
                    return Err(Error::new(
                        src.span,
                        format!(
                            "reduction index `{}` of `{}` also indexes the output",
                            indices[*v].name,
                            op.name()
                        ),
                    ));
                }
                if bound.contains(v) {
                    return Err(Error::new(
                        src.span,
                        format!(
                            "index `{}` is already reduced by an enclosing reduction",
                            indices[*v].name
                        ),
                    ));
                }
            }
            let mark = bound.len();
            bound.extend(vars);
            check_reduce_vars(body, out, indices, src, bound)?;
            bound.truncate(mark);
            Ok(())
        }
        Expr::Neg(a) => check_reduce_vars(a, out, indices, src, bound),
        Expr::Binary(_, a, b) => {
            check_reduce_vars(a, out, indices, src, bound)?;
            check_reduce_vars(b, out, indices, src, bound)
        }
        _ => Ok(()),
    }
}

/// Free (unreduced) occurrences of each index in `e`.
fn free_counts(e: &Expr, accesses: &[Access], bound: &mut Vec<usize>, out: &mut Vec<usize>) {
    match e {
        Expr::Access(a) => {
            for &v in &accesses[*a].indices {
                if !bound.contains(&v) {
                    if out.len() <= v {
                        out.resize(v + 1, 0);
                    }
                    out[v] += 1;
                }
            }
        }
        Expr::Neg(a) => free_counts(a, accesses, bound, out),
        Expr::Binary(_, a, b) => {
            free_counts(a, accesses, bound, out);
            free_counts(b, accesses, bound, out);
        }
        Expr::Reduce(_, vars, body) => {
            let mark = bound.len();
            bound.extend(vars);
            free_counts(body, accesses, bound, out);
            bound.truncate(mark);
        }
        _ => {}
    }
}

/// Applies the einsum rule (see the module docs).
fn einsum(e: Expr, out: &[usize], accesses: &[Access]) -> Expr {
    let mut total = Vec::new();
    free_counts(&e, accesses, &mut Vec::new(), &mut total);
    let implicit: Vec<usize> = (0..total.len())
        .filter(|v| total[*v] > 0 && !out.contains(v))
        .collect();
    if implicit.is_empty() {
        return e;
    }
    let (e, pending) = place(e, &implicit, &total, accesses);
    wrap(e, pending)
}

fn wrap(e: Expr, mut vars: Vec<usize>) -> Expr {
    if vars.is_empty() {
        return e;
    }
    vars.sort_unstable();
    Expr::Reduce(ReduceOp::Sum, vars, Box::new(e))
}

/// Returns the node with the sums placed below it, and the implicit indices whose occurrences
/// are all inside it but whose sum is not placed yet (it may widen through a product).
fn place(e: Expr, implicit: &[usize], total: &[usize], accesses: &[Access]) -> (Expr, Vec<usize>) {
    let complete = |e: &Expr| -> Vec<usize> {
        let mut c = Vec::new();
        free_counts(e, accesses, &mut Vec::new(), &mut c);
        implicit
            .iter()
            .copied()
            .filter(|&v| c.get(v).copied().unwrap_or(0) == total[v])
            .collect()
    };
    match e {
        Expr::Access(_) => {
            let p = complete(&e);
            (e, p)
        }
        Expr::Neg(a) => {
            let (a, p) = place(*a, implicit, total, accesses);
            (Expr::Neg(Box::new(a)), p)
        }
        Expr::Binary(op, a, b) => {
            let (a, pa) = place(*a, implicit, total, accesses);
            let (b, pb) = place(*b, implicit, total, accesses);
            if matches!(op, BinOp::Mul | BinOp::Div) {
                let node = Expr::Binary(op, Box::new(a), Box::new(b));
                let p = complete(&node);
                (node, p)
            } else {
                let node = Expr::Binary(op, Box::new(wrap(a, pa)), Box::new(wrap(b, pb)));
                let mut p = complete(&node);
                // the children's complete indices are placed already
                p.retain(|v| {
                    let mut c = Vec::new();
                    free_counts(&node, accesses, &mut Vec::new(), &mut c);
                    c.get(*v).copied().unwrap_or(0) > 0
                });
                (node, p)
            }
        }
        Expr::Reduce(op, vars, body) => {
            let (body, p) = place(*body, implicit, total, accesses);
            (Expr::Reduce(op, vars, Box::new(wrap(body, p))), Vec::new())
        }
        other => (other, Vec::new()),
    }
}
