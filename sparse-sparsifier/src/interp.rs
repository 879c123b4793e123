//! The interpreter: walks the loop IR over [`DynamicStorage`] operands (the CLI's `sparse eval`
//! and the oracle of the tests). It reads levels one at a time through
//! [`DynamicStorage::level_segment`] and [`DynamicStorage::level_coordinate`], exactly as the
//! loop IR says; a sparse output is assembled in its own format from entries that arrive in
//! level order (append, workspace) or from a coordinate buffer sorted once, through
//! [`DynamicStorage::from_coo`], never through a dense intermediate.
//!
//! Arithmetic: floats as IEEE; integers wrap (MLIR's `arith` ops), an integer division by zero
//! is an [`Error`], never a panic. Sums of `f64`/`f32` values add in the order the Rust back
//! end adds them ([`Program::reassociates`]): a row's segment in four interleaved partial sums
//! ([`Program::partial_sum`]), a block's row summed before it is added to the output
//! ([`Program::block_sum`]), the segments of an n:m level in four partial sums across them
//! ([`Program::nm_sum`]), so generated code and interpreter agree bit for bit.

use sparse_runtime::num_complex::Complex;
use sparse_runtime::{CooTensor, DynamicStorage, SparseStorage, Value};

use crate::check::Expr;
use crate::error::Error;
use crate::loops::{Combine, Driver, Loop, NmSum, Program, Stmt, Strategy, Target, PARTIAL_SUMS};
use crate::notation::{BinOp, Literal, ReduceOp};
use crate::order::{Extent, IndexLoops};

/// A value type the interpreter computes in: `f64`, `f32`, `i64`, `i32`, `u64`, `u32`, [`I1`],
/// `Complex<f64>`, `Complex<f32>` ([`crate::ValueType::compute`]: the narrower types are
/// computed in `f32` or `i32`).
pub trait Num: Value {
    /// The literal as a value. Errors: a float literal for an integer type, or an integer
    /// literal out of the type's range.
    fn literal(l: &Literal) -> Result<Self, Error>;
    /// `a + b` (wrapping for integers).
    fn plus(self, b: Self) -> Self;
    /// `a - b` (wrapping for integers).
    fn minus(self, b: Self) -> Self;
    /// `a * b` (wrapping for integers).
    fn times(self, b: Self) -> Self;
    /// `a / b`; an integer division by zero is an error.
    fn over(self, b: Self) -> Result<Self, Error>;
    /// `-a` (wrapping for integers).
    fn negate(self) -> Self;
    /// Bitwise `&`, `|`, `^` (integers; the checks reject them for floats).
    fn bit(self, op: BinOp, b: Self) -> Self;
    /// `a < b` (`min`/`max`; `false` for complex values, which the checks refuse there).
    fn less(self, b: Self) -> bool;
}

macro_rules! float_num {
    ($t:ty) => {
        impl Num for $t {
            fn literal(l: &Literal) -> Result<Self, Error> {
                Ok(match l {
                    Literal::Int(v) => *v as $t,
                    Literal::Float(v) => *v as $t,
                })
            }
            fn plus(self, b: Self) -> Self {
                self + b
            }
            fn minus(self, b: Self) -> Self {
                self - b
            }
            fn times(self, b: Self) -> Self {
                self * b
            }
            fn over(self, b: Self) -> Result<Self, Error> {
                Ok(self / b)
            }
            fn negate(self) -> Self {
                -self
            }
            fn bit(self, _op: BinOp, _b: Self) -> Self {
                self
            }
            fn less(self, b: Self) -> bool {
                self < b
            }
        }
    };
}
float_num!(f64);
float_num!(f32);

macro_rules! complex_num {
    ($t:ty) => {
        impl Num for Complex<$t> {
            /// A real literal: `2` is `2 + 0i`.
            fn literal(l: &Literal) -> Result<Self, Error> {
                Ok(Complex::new(<$t as Num>::literal(l)?, 0.0))
            }
            fn plus(self, b: Self) -> Self {
                self + b
            }
            fn minus(self, b: Self) -> Self {
                self - b
            }
            fn times(self, b: Self) -> Self {
                self * b
            }
            /// num-complex's division (a zero divisor gives NaN or infinite parts, as a float
            /// division does).
            fn over(self, b: Self) -> Result<Self, Error> {
                Ok(self / b)
            }
            fn negate(self) -> Self {
                -self
            }
            fn bit(self, _op: BinOp, _b: Self) -> Self {
                self
            }
            fn less(self, _b: Self) -> bool {
                false
            }
        }
    };
}
complex_num!(f64);
complex_num!(f32);

macro_rules! int_num {
    ($t:ty) => {
        impl Num for $t {
            fn literal(l: &Literal) -> Result<Self, Error> {
                match l {
                    Literal::Int(v) => <$t>::try_from(*v).map_err(|_| {
                        Error::plain(format!("the literal {v} does not fit {}", stringify!($t)))
                    }),
                    Literal::Float(_) => Err(Error::plain(format!(
                        "the literal {l} is not an integer, but the values are {}",
                        stringify!($t)
                    ))),
                }
            }
            fn plus(self, b: Self) -> Self {
                self.wrapping_add(b)
            }
            fn minus(self, b: Self) -> Self {
                self.wrapping_sub(b)
            }
            fn times(self, b: Self) -> Self {
                self.wrapping_mul(b)
            }
            fn over(self, b: Self) -> Result<Self, Error> {
                if b == 0 {
                    Err(Error::plain("integer division by zero"))
                } else {
                    Ok(self.wrapping_div(b))
                }
            }
            fn negate(self) -> Self {
                self.wrapping_neg()
            }
            fn bit(self, op: BinOp, b: Self) -> Self {
                match op {
                    BinOp::And => self & b,
                    BinOp::Or => self | b,
                    _ => self ^ b,
                }
            }
            fn less(self, b: Self) -> bool {
                self < b
            }
        }
    };
}
int_num!(i64);
int_num!(i32);
int_num!(u64);
int_num!(u32);

/// MLIR's `i1` (the runtime's [`sparse_runtime::value::I1`]): computed modulo 2, as its
/// operators and `wrapping_*` methods compute.
pub use sparse_runtime::value::I1;

impl Num for I1 {
    /// `0` or `1`; any other integer does not fit, a float literal is refused.
    fn literal(l: &Literal) -> Result<Self, Error> {
        match l {
            Literal::Int(0) => Ok(I1(false)),
            Literal::Int(1) => Ok(I1(true)),
            Literal::Int(v) => Err(Error::plain(format!("the literal {v} does not fit i1"))),
            Literal::Float(_) => Err(Error::plain(format!(
                "the literal {l} is not an integer, but the values are i1"
            ))),
        }
    }
    fn plus(self, b: Self) -> Self {
        self.wrapping_add(b)
    }
    fn minus(self, b: Self) -> Self {
        self.wrapping_sub(b)
    }
    fn times(self, b: Self) -> Self {
        self.wrapping_mul(b)
    }
    fn over(self, b: Self) -> Result<Self, Error> {
        if b.0 {
            Ok(self)
        } else {
            Err(Error::plain("integer division by zero"))
        }
    }
    fn negate(self) -> Self {
        self.wrapping_neg()
    }
    fn bit(self, op: BinOp, b: Self) -> Self {
        I1(match op {
            BinOp::And => self.0 & b.0,
            BinOp::Or => self.0 | b.0,
            _ => self.0 ^ b.0,
        })
    }
    fn less(self, b: Self) -> bool {
        !self.0 & b.0
    }
}

/// An operand of [`run`], one per tensor of the kernel (`Program::kernel.tensors`, the output
/// first: pass its previous value, or an empty tensor).
#[derive(Clone, Debug, PartialEq)]
pub enum Operand<V> {
    /// A tensor with an encoding.
    Storage(Box<DynamicStorage<V>>),
    /// A slice (`#sparse_tensor<slice(offset, size, stride)>` dimensions): a strided view of
    /// `parent` (stored in the encoding without the slices), dimension by dimension: view
    /// coordinate `c` of dimension `d` is parent coordinate `offset[d] + c * stride[d]`,
    /// `c < size[d]`. Build it with [`Operand::slice`].
    Slice {
        /// The parent storage.
        parent: Box<DynamicStorage<V>>,
        /// Per dimension: offset into the parent.
        offset: Vec<usize>,
        /// Per dimension: the slice's size (its shape).
        size: Vec<usize>,
        /// Per dimension: stride.
        stride: Vec<usize>,
    },
    /// A dense row-major tensor (`tensor<4x8xf64>`): shape and values.
    Dense {
        /// Dimension sizes.
        shape: Vec<usize>,
        /// `product(shape)` values, row-major.
        values: Vec<V>,
    },
}

impl<V> Operand<V> {
    /// Dimension sizes.
    pub fn shape(&self) -> &[usize] {
        match self {
            Operand::Storage(s) => s.shape(),
            Operand::Slice { size, .. } => size,
            Operand::Dense { shape, .. } => shape,
        }
    }
}

impl<V: Value> Operand<V> {
    /// The slice of `parent` that `sliced` (the parent's encoding plus static `dim_slices`)
    /// describes.
    ///
    /// Errors: as [`DynamicStorage::slice`] (an encoding that differs from the parent's in more
    /// than the slices, a slice outside the parent, a dynamic `?` value), as an [`Error`].
    pub fn slice(
        parent: DynamicStorage<V>,
        sliced: &sparse_ir::ir::Encoding,
    ) -> Result<Self, Error> {
        let view = parent
            .slice(sliced, &[])
            .map_err(|e| Error::plain(format!("cannot slice: {e}")))?;
        let (offset, size, stride) = (
            view.offsets().to_vec(),
            view.shape().to_vec(),
            view.strides().to_vec(),
        );
        Ok(Operand::Slice {
            parent: Box::new(parent),
            offset,
            size,
            stride,
        })
    }
}

/// The result of [`run`]: the output tensor.
#[derive(Clone, Debug, PartialEq)]
pub enum Output<V> {
    /// A sparse output, assembled in its own format.
    Sparse(Box<DynamicStorage<V>>),
    /// A dense (or 0-d: one value, empty shape) output.
    Dense {
        /// Dimension sizes.
        shape: Vec<usize>,
        /// Row-major values.
        values: Vec<V>,
    },
}

struct It {
    p: usize,
    end: usize,
    crd: usize,
    next: usize,
}

struct St<'a, V> {
    p: &'a Program,
    ops: &'a [Operand<V>],
    var: Vec<usize>,
    pos: Vec<(usize, usize)>,
    temps: Vec<(V, bool)>,
    extents: Vec<usize>,
    dense: Vec<V>,
    visited: Vec<bool>,
    coo: Vec<(Vec<usize>, V)>,
    ws: Vec<V>,
    ws_visited: Vec<bool>,
    touched: Vec<usize>,
    out_op: ReduceOp,
}

fn combine<V: Num>(op: ReduceOp, a: V, b: V) -> V {
    match op {
        ReduceOp::Sum => a.plus(b),
        ReduceOp::Prod => a.times(b),
        ReduceOp::Min => {
            if b.less(a) {
                b
            } else {
                a
            }
        }
        ReduceOp::Max => {
            if a.less(b) {
                b
            } else {
                a
            }
        }
        ReduceOp::And => a.bit(BinOp::And, b),
        ReduceOp::Or => a.bit(BinOp::Or, b),
        ReduceOp::Xor => a.bit(BinOp::Xor, b),
    }
}

fn store<V: Num>(slot: &mut V, visited: &mut bool, c: Combine, v: V) {
    match c {
        Combine::Reduce(op) if *visited => *slot = combine(op, *slot, v),
        _ => *slot = v,
    }
    *visited = true;
}

impl<V: Num> St<'_, V> {
    fn storage(&self, a: usize) -> Option<&DynamicStorage<V>> {
        match &self.ops[self.p.kernel.accesses[a].tensor] {
            Operand::Storage(s) => Some(s),
            Operand::Slice { parent, .. } => Some(parent),
            Operand::Dense { .. } => None,
        }
    }

    /// `(offset, size, stride)` of the slice dimension of iterator `it`, if it reads a slice.
    fn slice_of(&self, it: usize) -> Option<(usize, usize, usize)> {
        let li = &self.p.levels.iters[it];
        let d = li.slice_dim?;
        match &self.ops[self.p.kernel.accesses[li.access].tensor] {
            Operand::Slice {
                offset,
                size,
                stride,
                ..
            } => Some((offset[d], size[d], stride[d].max(1))),
            _ => None,
        }
    }

    fn index_value(&self, ix: usize) -> usize {
        match self.p.levels.index_loops[ix] {
            IndexLoops::Plain(v) => self.var[v],
            IndexLoops::Split { hi, lo, block } => block * self.var[hi] + self.var[lo],
        }
    }

    fn parent(&self, it: usize) -> (usize, usize) {
        let li = &self.p.levels.iters[it];
        if li.level == 0 {
            (0, 1)
        } else {
            let its = self.p.levels.access_iters[li.access]
                .as_ref()
                .expect("an iterator's access has iterators");
            self.pos[its[li.level - 1]]
        }
    }

    fn segment(&self, it: usize) -> (usize, usize) {
        let li = &self.p.levels.iters[it];
        let s = self
            .storage(li.access)
            .expect("iterated operand is a storage");
        let (plo, phi) = self.parent(it);
        if phi <= plo {
            (0, 0)
        } else if phi == plo + 1 {
            s.level_segment(li.level, plo)
        } else {
            (
                s.level_segment(li.level, plo).0,
                s.level_segment(li.level, phi - 1).1,
            )
        }
    }

    fn start(&self, it: usize) -> It {
        let (lo, hi) = self.segment(it);
        let mut x = It {
            p: lo,
            end: hi,
            crd: 0,
            next: lo,
        };
        self.settle(it, &mut x);
        x
    }

    /// Reads the coordinate at `x.p` and the end of its group of equal coordinates.
    fn settle(&self, it: usize, x: &mut It) {
        if x.p >= x.end {
            return;
        }
        let li = &self.p.levels.iters[it];
        let s = self
            .storage(li.access)
            .expect("iterated operand is a storage");
        let parent = self.parent(it).0;
        let slice = self.slice_of(it);
        let lt = s.encoding().lvl_types[li.level];
        loop {
            let raw = s.level_coordinate(li.level, parent, x.p);
            x.next = x.p + 1;
            if !lt.is_unique() {
                while x.next < x.end && s.level_coordinate(li.level, parent, x.next) == raw {
                    x.next += 1;
                }
            }
            // a slice keeps the coordinates offset + c * stride, c < size
            match slice {
                None => {
                    x.crd = raw;
                    return;
                }
                Some((off, size, stride)) => {
                    if raw >= off
                        && (raw - off).is_multiple_of(stride)
                        && (raw - off) / stride < size
                    {
                        x.crd = (raw - off) / stride;
                        return;
                    }
                }
            }
            x.p = x.next;
            if x.p >= x.end {
                return;
            }
        }
    }

    fn run(&mut self, body: &[Stmt]) -> Result<(), Error> {
        for s in body {
            match s {
                Stmt::Loop(l) => self.run_loop(l)?,
                Stmt::Locate(it) => {
                    let li = &self.p.levels.iters[*it];
                    let (lo, hi) = self.segment(*it);
                    let mut c = self.var[li.var];
                    if let Some((off, _, stride)) = self.slice_of(*it) {
                        c = off + c * stride;
                    }
                    self.pos[*it] = if lo + c < hi {
                        (lo + c, lo + c + 1)
                    } else {
                        (0, 0)
                    };
                }
                Stmt::InitTemp(t) => self.temps[*t] = (V::zero(), false),
                Stmt::AppendTemp(t) => {
                    let (v, seen) = self.temps[*t];
                    if seen {
                        let c = self.out_coords();
                        self.coo.push((c, v));
                    }
                }
                Stmt::Expand => {
                    for &j in &self.touched {
                        self.ws_visited[j] = false;
                    }
                    self.touched.clear();
                }
                Stmt::Compress => {
                    let Strategy::Workspace { var } = self.p.strategy else {
                        return Err(Error::plain("compress without a workspace"));
                    };
                    let mut touched = std::mem::take(&mut self.touched);
                    touched.sort_unstable();
                    let saved = self.var[var];
                    for &j in &touched {
                        self.var[var] = j;
                        let c = self.out_coords();
                        self.coo.push((c, self.ws[j]));
                        self.ws_visited[j] = false;
                    }
                    self.var[var] = saved;
                }
                Stmt::Compute {
                    target,
                    combine: c,
                    expr,
                } => {
                    let v = self.eval(expr)?;
                    match target {
                        Target::Output => {
                            let at = self.out_flat();
                            store(&mut self.dense[at], &mut self.visited[at], *c, v);
                        }
                        Target::Temp(t) => {
                            let (slot, seen) = &mut self.temps[*t];
                            store(slot, seen, *c, v);
                        }
                        Target::Append | Target::Buffer => {
                            let coords = self.out_coords();
                            self.coo.push((coords, v));
                        }
                        Target::Workspace => {
                            let Strategy::Workspace { var } = self.p.strategy else {
                                return Err(Error::plain("workspace without a strategy"));
                            };
                            let j = self.var[var];
                            if !self.ws_visited[j] {
                                self.touched.push(j);
                            }
                            store(&mut self.ws[j], &mut self.ws_visited[j], *c, v);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn run_loop(&mut self, l: &Loop) -> Result<(), Error> {
        if self.p.reassociates() {
            if let Some((t, expr)) = self.p.partial_sum(l) {
                return self.run_partial_sum(l, t, expr);
            }
            if let Some((locates, expr)) = self.p.block_sum(l) {
                return self.run_block_sum(l, locates, expr);
            }
            if let Some(sum) = self.p.nm_sum(l) {
                return self.run_nm_sum(l, sum);
            }
        }
        let mut its: Vec<(usize, It)> = l.iters.iter().map(|&i| (i, self.start(i))).collect();
        let mut c = 0usize;
        let extent = self.extents[l.var];
        loop {
            match l.driver {
                Driver::Range => {
                    if c >= extent {
                        return Ok(());
                    }
                    for (i, x) in its.iter_mut() {
                        while x.p < x.end && x.crd < c {
                            x.p = x.next;
                            self.settle(*i, x);
                        }
                    }
                }
                Driver::Merge => {
                    let alive = |i: usize| its.iter().any(|(j, x)| *j == i && x.p < x.end);
                    if !l.cases.iter().any(|k| k.iters.iter().all(|&i| alive(i))) {
                        return Ok(());
                    }
                    c = match its
                        .iter()
                        .filter(|(_, x)| x.p < x.end)
                        .map(|(_, x)| x.crd)
                        .min()
                    {
                        Some(m) => m,
                        None => return Ok(()),
                    };
                }
            }
            let here: Vec<usize> = its
                .iter()
                .filter(|(_, x)| x.p < x.end && x.crd == c)
                .map(|(i, _)| *i)
                .collect();
            if let Some(case) = l
                .cases
                .iter()
                .find(|k| k.iters.iter().all(|i| here.contains(i)))
            {
                for (i, x) in &its {
                    if case.iters.contains(i) {
                        self.pos[*i] = (x.p, x.next);
                    }
                }
                self.var[l.var] = c;
                self.run(&case.body)?;
            }
            for (i, x) in its.iter_mut() {
                if here.contains(i) {
                    x.p = x.next;
                    self.settle(*i, x);
                }
            }
            if l.driver == Driver::Range {
                c += 1;
            }
        }
    }

    /// A loop summing into temporary `t` over one segment or a dense range, in the partial
    /// sums the Rust back end runs ([`Program::partial_sum`]): position `lo + k` (coordinate
    /// `k`) of each whole step of [`PARTIAL_SUMS`] into lane `k`, the rest into lane 0 (the
    /// temporary, from zero if not yet visited, as the generated register starts), then
    /// `(l1 + l2) + l3` added to it.
    fn run_partial_sum(&mut self, l: &Loop, t: usize, expr: &Expr) -> Result<(), Error> {
        let (value, seen) = self.temps[t];
        let mut lanes = [V::zero(); PARTIAL_SUMS];
        if seen {
            lanes[0] = value;
        }
        let Some(&it) = l.iters.first() else {
            // a dense range: coordinate `c` is the position
            let n = self.extents[l.var];
            let whole = n / PARTIAL_SUMS * PARTIAL_SUMS;
            for c in 0..n {
                self.var[l.var] = c;
                let v = self.eval(expr)?;
                let lane = if c < whole { c % PARTIAL_SUMS } else { 0 };
                lanes[lane] = lanes[lane].plus(v);
            }
            self.temps[t] = (Self::lanes_sum(lanes), seen || n > 0);
            return Ok(());
        };
        let mut x = self.start(it);
        let (lo, hi) = (x.p, x.end);
        let whole = lo + (hi.saturating_sub(lo) / PARTIAL_SUMS) * PARTIAL_SUMS;
        while x.p < x.end {
            self.pos[it] = (x.p, x.next);
            self.var[l.var] = x.crd;
            let v = self.eval(expr)?;
            let lane = if x.p < whole {
                (x.p - lo) % PARTIAL_SUMS
            } else {
                0
            };
            lanes[lane] = lanes[lane].plus(v);
            x.p = x.next;
            self.settle(it, &mut x);
        }
        self.temps[t] = (Self::lanes_sum(lanes), seen || hi > lo);
        Ok(())
    }

    /// A sum across an n:m level's segments in partial sums, as the Rust back end runs it
    /// ([`Program::nm_sum`]): the `e`-th position visited goes to lane `e % 4` within the whole
    /// steps, to lane 0 after.
    fn run_nm_sum(&mut self, l: &Loop, sum: NmSum<'_>) -> Result<(), Error> {
        let (value, seen) = self.temps[sum.temp];
        let mut lanes = [V::zero(); PARTIAL_SUMS];
        if seen {
            lanes[0] = value;
        }
        let extent = self.extents[l.var];
        let whole = extent * sum.n / PARTIAL_SUMS * PARTIAL_SUMS;
        let mut e = 0;
        for c in 0..extent {
            self.var[l.var] = c;
            self.run(sum.locates)?;
            let mut x = self.start(sum.iter);
            while x.p < x.end {
                self.pos[sum.iter] = (x.p, x.next);
                self.var[sum.inner.var] = x.crd;
                let v = self.eval(sum.expr)?;
                let lane = if e < whole { e % PARTIAL_SUMS } else { 0 };
                lanes[lane] = lanes[lane].plus(v);
                e += 1;
                x.p = x.next;
                self.settle(sum.iter, &mut x);
            }
        }
        self.temps[sum.temp] = (Self::lanes_sum(lanes), seen || e > 0);
        Ok(())
    }

    /// Lane 0 plus `(l1 + l2) + l3`, as the generated code combines its partial sums.
    fn lanes_sum(lanes: [V; PARTIAL_SUMS]) -> V {
        let rest = lanes[1..]
            .iter()
            .copied()
            .reduce(|a, b| a.plus(b))
            .unwrap_or_else(V::zero);
        lanes[0].plus(rest)
    }

    /// A loop summing a block's row into the output, as the Rust back end runs it
    /// ([`Program::block_sum`]): the row's terms summed from the first, then added to the
    /// output once (to zero at its first visit).
    fn run_block_sum(&mut self, l: &Loop, locates: &[Stmt], expr: &Expr) -> Result<(), Error> {
        let mut sum: Option<V> = None;
        for c in 0..self.extents[l.var] {
            self.var[l.var] = c;
            self.run(locates)?;
            let v = self.eval(expr)?;
            sum = Some(sum.map_or(v, |s| s.plus(v)));
        }
        if let Some(sum) = sum {
            // added to the output, which the generated code clears to zero first (a block of
            // `-0.0` terms then gives `+0.0`, as there)
            let at = self.out_flat();
            let start = if self.visited[at] {
                self.dense[at]
            } else {
                V::zero()
            };
            self.dense[at] = start.plus(sum);
            self.visited[at] = true;
        }
        Ok(())
    }

    fn out_coords(&self) -> Vec<usize> {
        self.p
            .kernel
            .output
            .indices
            .iter()
            .map(|&ix| self.index_value(ix))
            .collect()
    }

    fn out_flat(&self) -> usize {
        let shape = self.ops[self.p.kernel.output.tensor].shape();
        self.out_coords()
            .iter()
            .zip(shape)
            .fold(0, |acc, (c, s)| acc * s + c)
    }

    fn load(&self, a: usize) -> V {
        let acc = &self.p.kernel.accesses[a];
        if let Some(its) = &self.p.levels.access_iters[a] {
            let s = self.storage(a).expect("iterated operand is a storage");
            let (lo, hi) = match its.last() {
                Some(&last) => self.pos[last],
                None => (0, 1),
            };
            // a pattern (`explicitVal`) gives its constant at every stored position; the sum
            // of a group of duplicates starts from its first value, so that a stored `-0.0`
            // reads as itself (`0.0 + -0.0` would be `+0.0`)
            let mut v: Option<V> = None;
            for p in lo..hi.min(s.nse()) {
                if let Some(&x) = s.value_at(p) {
                    v = Some(match v {
                        Some(sum) => sum + x,
                        None => x,
                    });
                }
            }
            return v.unwrap_or_else(V::zero);
        }
        let coords: Vec<usize> = acc.indices.iter().map(|&ix| self.index_value(ix)).collect();
        match &self.ops[acc.tensor] {
            Operand::Dense { shape, values } => {
                let at = coords.iter().zip(shape).fold(0, |acc, (c, s)| acc * s + c);
                values.get(at).copied().unwrap_or_else(V::zero)
            }
            // a slice is never read by random access (its levels are iterated)
            Operand::Slice { .. } => V::zero(),
            Operand::Storage(s) => {
                let mut lc = vec![0; s.encoding().lvl_rank()];
                if s.encoding().dim_to_lvl_coords(&coords, &mut lc).is_none() {
                    return V::zero();
                }
                let at = lc
                    .iter()
                    .zip(s.lvl_sizes())
                    .fold(0, |acc, (c, n)| acc * n + c);
                s.value_at(at).copied().unwrap_or_else(V::zero)
            }
        }
    }

    fn eval(&self, e: &Expr) -> Result<V, Error> {
        Ok(match e {
            Expr::Access(a) => self.load(*a),
            Expr::Literal(l) => V::literal(l)?,
            Expr::Temp(t) => {
                let (v, seen) = self.temps[*t];
                if seen {
                    v
                } else {
                    V::zero()
                }
            }
            Expr::Zero => V::zero(),
            Expr::Neg(a) => self.eval(a)?.negate(),
            Expr::Binary(op, a, b) => {
                let (a, b) = (self.eval(a)?, self.eval(b)?);
                match op {
                    BinOp::Add => a.plus(b),
                    BinOp::Sub => a.minus(b),
                    BinOp::Mul => a.times(b),
                    BinOp::Div => a.over(b)?,
                    op => a.bit(*op, b),
                }
            }
            Expr::Reduce(..) => return Err(Error::plain("a reduction left in a compute")),
        })
    }
}

/// Reserves room for `n` elements, or an error naming `what` (a huge declared shape must not
/// abort the process).
fn reserve<T>(v: &mut Vec<T>, n: usize, what: &str) -> Result<(), Error> {
    v.try_reserve_exact(n)
        .map_err(|_| Error::plain(format!("cannot allocate {what}: {n} elements")))
}

/// Runs the program on `operands` (one per `p.kernel.tensors`, in that order; the output's
/// entry gives its shape and, for `+=` into a dense output or when the output is also read,
/// its previous values).
///
/// Errors: a wrong number of operands, an operand whose rank or shape disagrees with its
/// declaration, a dense operand given for an encoded tensor or the reverse, an index whose
/// extents disagree at run time (each naming the tensor); an integer division by zero; a
/// storage error while assembling the sparse output (naming it).
pub fn run<V: Num>(p: &Program, operands: &[Operand<V>]) -> Result<Output<V>, Error> {
    let k = &p.kernel;
    if operands.len() != p.inputs() {
        return Err(Error::plain(format!(
            "{} operands for {} tensors",
            operands.len(),
            p.inputs()
        )));
    }
    let mut all = operands.to_vec();
    for c in &p.conversions {
        let to = &k.tensors[c.to];
        let enc = to
            .encoding
            .as_ref()
            .ok_or_else(|| Error::plain("conversion to no format"))?;
        let coo = match &operands[c.from] {
            Operand::Storage(s) => s.to_coo(),
            Operand::Slice {
                parent,
                offset,
                size,
                stride,
            } => {
                let slices: Vec<sparse_ir::ir::DimSlice> = (0..offset.len())
                    .map(|d| sparse_ir::ir::DimSlice {
                        offset: Some(offset[d] as u64),
                        size: Some(size[d] as u64),
                        stride: Some(stride[d] as u64),
                    })
                    .collect();
                parent
                    .slice_dims(&slices, &[])
                    .map_err(|e| Error::plain(format!("cannot slice `{}`: {e}", to.name)))?
                    .to_coo()
            }
            Operand::Dense { .. } => {
                return Err(Error::plain(format!("`{}` is not stored", to.name)))
            }
        };
        let conv = DynamicStorage::from_coo(enc, &coo)
            .map_err(|e| Error::plain(format!("cannot convert `{}`: {e}", to.name)))?;
        all.push(Operand::Storage(Box::new(conv)));
    }
    let operands = &all[..];
    for (t, op) in k.tensors.iter().zip(operands) {
        if op.shape().len() != t.shape.len() {
            return Err(Error::plain(format!(
                "`{}` has {} dimensions but its operand has {}",
                t.name,
                t.shape.len(),
                op.shape().len()
            )));
        }
        for (d, (want, got)) in t.shape.iter().zip(op.shape()).enumerate() {
            if want.is_some_and(|w| w != *got) {
                return Err(Error::plain(format!(
                    "`{}` has size {} in dimension {d} but its operand has {got}",
                    t.name,
                    want.unwrap_or(0)
                )));
            }
        }
        let sliced = t.encoding.as_ref().is_some_and(|e| e.dim_slices.is_some());
        match (op, &t.encoding) {
            (Operand::Storage(_), Some(_)) if sliced => {
                return Err(Error::plain(format!(
                    "`{}` is a slice: its operand is an Operand::Slice",
                    t.name
                )))
            }
            (Operand::Storage(_) | Operand::Slice { .. }, None)
            | (Operand::Dense { .. }, Some(_)) => {
                return Err(Error::plain(format!(
                    "`{}`: the operand's kind (dense or encoded) differs from its declaration",
                    t.name
                )))
            }
            _ => {}
        }
    }
    // extents: every use of an index agrees
    let mut index_extent: Vec<Option<usize>> = vec![None; k.indices.len()];
    let uses = k.accesses.iter().chain(std::iter::once(&k.output));
    for acc in uses {
        for (d, &ix) in acc.indices.iter().enumerate() {
            let n = operands[acc.tensor].shape()[d];
            match index_extent[ix] {
                Some(m) if m != n => {
                    return Err(Error::plain(format!(
                        "index `{}` has extent {m} but `{}` has size {n} in dimension {d}",
                        k.indices[ix].name, k.tensors[acc.tensor].name
                    )))
                }
                _ => index_extent[ix] = Some(n),
            }
        }
    }
    let extents: Vec<usize> = p
        .levels
        .vars
        .iter()
        .map(|v| match v.extent {
            Extent::Const(c) => c,
            Extent::Index { index, div, .. } => index_extent[index].unwrap_or(0) / div.max(1),
        })
        .collect();
    let out_shape = operands[k.output.tensor].shape().to_vec();
    let (mut dense, mut visited) = (Vec::new(), Vec::new());
    if p.strategy == Strategy::InPlace {
        let n = out_shape
            .iter()
            .try_fold(1usize, |a, &s| a.checked_mul(s))
            .ok_or_else(|| {
                Error::plain(format!("the shape {out_shape:?} of the output overflows"))
            })?;
        reserve(&mut dense, n, "the output")?;
        reserve(&mut visited, n, "the output")?;
        if k.accumulate {
            match &operands[k.output.tensor] {
                Operand::Dense { values, .. } => dense.extend_from_slice(values),
                // an all-dense storage: its values in dimension order
                Operand::Storage(s) => {
                    dense.extend(s.to_dense().map_err(|e| {
                        Error::plain(format!("cannot read the output's values: {e}"))
                    })?)
                }
                Operand::Slice { .. } => dense.resize(n, V::zero()),
            }
            visited.resize(n, true);
        } else {
            dense.resize(n, V::zero());
            visited.resize(n, false);
        }
    }
    let (mut ws, mut ws_visited) = (Vec::new(), Vec::new());
    if let Strategy::Workspace { var } = p.strategy {
        reserve(&mut ws, extents[var], "the workspace")?;
        reserve(&mut ws_visited, extents[var], "the workspace")?;
        ws.resize(extents[var], V::zero());
        ws_visited.resize(extents[var], false);
    }
    let out_op = match &k.expr {
        Expr::Reduce(op, ..) => *op,
        _ => ReduceOp::Sum,
    };
    let mut st = St {
        p,
        ops: operands,
        var: vec![0; p.levels.vars.len()],
        pos: vec![(0, 0); p.levels.iters.len()],
        temps: vec![(V::zero(), false); p.temps],
        extents,
        dense,
        visited,
        coo: Vec::new(),
        ws,
        ws_visited,
        touched: Vec::new(),
        out_op,
    };
    st.run(&p.body)?;
    if p.strategy == Strategy::InPlace {
        let out_t = &k.tensors[k.output.tensor];
        let Some(enc) = out_t.encoding.as_ref() else {
            return Ok(Output::Dense {
                shape: out_shape,
                values: st.dense,
            });
        };
        // an all-dense storage output, written in place: stored in its own format
        let mut coo = CooTensor::new(out_shape.clone());
        let mut idx = vec![0; out_shape.len()];
        for (f, v) in st.dense.iter().enumerate() {
            if *v != V::zero() {
                sparse_runtime::dynamic::unflatten(f, &out_shape, &mut idx);
                coo.push(&idx, *v);
            }
        }
        return DynamicStorage::from_coo(enc, &coo)
            .map(|s| Output::Sparse(Box::new(s)))
            .map_err(|e| Error::plain(format!("cannot assemble `{}`: {e}", out_t.name)));
    }
    let mut entries = std::mem::take(&mut st.coo);
    if p.strategy == Strategy::Buffer {
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut merged: Vec<(Vec<usize>, V)> = Vec::with_capacity(entries.len());
        for (c, v) in entries {
            match merged.last_mut() {
                Some((lc, lv)) if *lc == c => *lv = combine(st.out_op, *lv, v),
                _ => merged.push((c, v)),
            }
        }
        entries = merged;
    }
    let mut coo = CooTensor::new(out_shape);
    for (c, v) in &entries {
        coo.push(c, *v);
    }
    let out_t = &k.tensors[k.output.tensor];
    let enc = out_t
        .encoding
        .as_ref()
        .expect("a sparse output has an encoding");
    DynamicStorage::from_coo(enc, &coo)
        .map(|s| Output::Sparse(Box::new(s)))
        .map_err(|e| Error::plain(format!("cannot assemble `{}`: {e}", out_t.name)))
}
