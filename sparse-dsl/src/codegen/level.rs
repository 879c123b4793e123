//! The interface every level format implements on the codegen side (TACO's level functions,
//! MLIR's `SparseTensorLevel`): which arrays it stores, how assembly appends to it and closes its
//! segments, how a segment is iterated, and how a coordinate is located.
//!
//! Variable conventions in the emitted code: `p{l}` is the position at level `l`, `c{l}` its
//! coordinate; the parent position of level 0 is the literal `0usize` ([`is_root`]). Assembly
//! code runs in a method of the generated builder (`self` is the builder, fields named as in the
//! struct, plus `values`, `cursor` and `count`, and `pending` / `loose_start` when an n:m /
//! loose compressed level needs them), with `full`, `count` and `crd` in scope as the method's
//! parameters; the runtime's `generated::insert_sorted` drives these methods. The builder lives
//! in a `const _` block that names the runtime `rt`.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::ir::{LevelFormat, LevelType};

/// Where a level's coordinates live.
#[derive(Clone, Debug)]
pub struct CrdLoc {
    /// The buffer's field name (`crd_{owner}`).
    pub field: Ident,
    /// Elements per stored position (the AoS COO region length, else 1).
    pub stride: usize,
    /// This level's element within a stride.
    pub offset: usize,
    /// `true` if this level owns the buffer (is the region's first level, or not in AoS).
    pub owner: bool,
}

/// Everything a level format needs to know about its place in the format.
#[derive(Clone, Debug)]
pub struct LevelCtx {
    /// Level index.
    pub l: usize,
    /// Level rank of the format.
    pub lvl_rank: usize,
    /// The level type.
    pub lt: LevelType,
    /// Level size, as an expression over the struct/builder field `lvl_sizes`.
    pub size: TokenStream,
    /// Positions field (`pos_{l}`), when the level stores positions.
    pub pos_field: Option<Ident>,
    /// Coordinates, when the level stores any.
    pub crd: Option<CrdLoc>,
    /// Position element type (`u32`, `usize`, ...).
    pub pos_ty: TokenStream,
    /// Coordinate element type (`u8` nominally for the packed widths).
    pub crd_ty: TokenStream,
    /// `crdWidth` in bits (0 = native).
    pub crd_width: u32,
    /// Path of the runtime crate (`::sparse::runtime`).
    pub rt: TokenStream,
    /// The format has leading `batch` levels: stored positions are local to each batch and
    /// segments are found through the struct's `counts` and `batches` (see the runtime's batch
    /// layout).
    pub batched: bool,
    /// What the arrays are read from: `self` in the struct's methods, the operand's name in a
    /// kernel.
    pub base: TokenStream,
    /// Coordinate reads use `get_unchecked` (kernels over validated operands, inside their
    /// `unsafe` block).
    pub unchecked: bool,
}

impl LevelCtx {
    /// `true` when coordinates are packed below a byte (`crdWidth` 1, 2 or 4, n:m levels only).
    pub fn packed(&self) -> bool {
        matches!(self.crd_width, 1 | 2 | 4)
    }
    /// The full type of a coordinate buffer field.
    pub fn crd_field_type(&self) -> TokenStream {
        let (rt, ty) = (&self.rt, &self.crd_ty);
        if self.packed() {
            quote!(#rt::packed::PackedBuffer)
        } else {
            quote!(::std::vec::Vec<#ty>)
        }
    }
    /// The full type of a positions field.
    pub fn pos_field_type(&self) -> TokenStream {
        let ty = &self.pos_ty;
        quote!(::std::vec::Vec<#ty>)
    }
    /// `true` for the innermost level.
    pub fn is_last(&self) -> bool {
        self.l + 1 == self.lvl_rank
    }
    /// `p{l}`.
    pub fn p(&self) -> Ident {
        format_ident!("p{}", self.l)
    }
    /// `c{l}`.
    pub fn c(&self) -> Ident {
        format_ident!("c{}", self.l)
    }
    /// The parent position expression (`p{l-1}`, or `0usize` at level 0).
    pub fn parent(&self) -> TokenStream {
        if self.l == 0 {
            quote!(0usize)
        } else {
            let p = format_ident!("p{}", self.l - 1);
            quote!(#p)
        }
    }
    /// `base.f[i]` (bounds-checked), or `base.f.get_unchecked(i)` when [`LevelCtx::unchecked`],
    /// as `usize`: a read of a positions array.
    pub fn pos_at(&self, f: &Ident, i: TokenStream) -> TokenStream {
        let base = &self.base;
        if self.unchecked {
            quote!(#base.#f.get_unchecked(#i).index())
        } else {
            quote!(#base.#f[#i].index())
        }
    }
    /// Expression reading this level's coordinate at position expression `p` from `base`
    /// (`self` or `b`), widened to `usize`.
    pub fn read_crd(&self, base: &TokenStream, p: &TokenStream) -> TokenStream {
        let loc = self.crd.as_ref().expect("level stores coordinates");
        let f = &loc.field;
        let (stride, offset) = (loc.stride, loc.offset);
        let idx = if stride == 1 {
            quote!(#p)
        } else {
            quote!(#p * #stride + #offset)
        };
        if self.packed() {
            return quote!(#base.#f.get(#idx).unwrap_or(usize::MAX));
        }
        if self.unchecked {
            return quote!(#base.#f.get_unchecked(#idx).index());
        }
        quote!(#base.#f[#idx].index())
    }
    /// Expression reading this level's coordinates at positions `p` and `p + 1` from `base` as
    /// a `(usize, usize)` pair with one load where the width allows it (the runtime's
    /// `Index::pair_unchecked`), for unchecked reads of a byte-aligned buffer this level owns
    /// alone (stride 1); `None` otherwise. The caller guarantees `p + 1` lies in the segment.
    pub fn read_crd_pair(&self, base: &TokenStream, p: &TokenStream) -> Option<TokenStream> {
        let loc = self.crd.as_ref()?;
        if loc.stride != 1 || self.packed() || !self.unchecked {
            return None;
        }
        let (f, rt) = (&loc.field, &self.rt);
        Some(quote!(#rt::Index::pair_unchecked(&#base.#f, #p)))
    }
}

/// `true` for the parent position of level 0 (the literal `0usize` of [`LevelCtx::parent`]):
/// segment code folds it instead of emitting `0usize + 1`.
pub fn is_root(parent: &TokenStream) -> bool {
    parent.to_string() == "0usize"
}

/// One level format's code generator. A new level format is one new implementation of this trait
/// (one file) plus its line in [`level_gen`].
pub trait LevelGen {
    /// Fields this level owns in the struct: `(name, full type)`.
    fn fields(&self, cx: &LevelCtx) -> Vec<(Ident, TokenStream)>;
    /// Expression `(lo, hi)` of the segment under `parent`, reading fields from `self`.
    fn segment(&self, cx: &LevelCtx, parent: TokenStream) -> TokenStream;
    /// A loop over the segment under the parent position, binding `p{l}` and `c{l}` around `body`.
    fn emit_loop(&self, cx: &LevelCtx, body: TokenStream) -> TokenStream;
    /// Code that finds the position(s) of coordinate `c{l}` under the parent, binding `p{l}`
    /// around `body` for each match (random access where the format allows it).
    fn emit_locate(&self, cx: &LevelCtx, body: TokenStream) -> TokenStream;
    /// In-order insertion into a kernel's output (MLIR's `sparse_tensor.insert` into a tensor
    /// filled in level order, closed by its `load ... hasInserts`): the code that keeps this
    /// level's buffers for entries arriving in lexicographic level order, each coordinate once.
    /// `None` when the level cannot be filled that way (the kernel then collects entries and
    /// assembles them with the runtime).
    fn insert(&self, _cx: &LevelCtx, _names: &InsertNames) -> Option<Insert> {
        None
    }
}

/// The names a level's [`LevelGen::insert`] code uses in the kernel.
#[derive(Clone, Debug)]
pub struct InsertNames {
    /// The local positions buffer (`c_pos_1`), when the level stores positions.
    pub pos: Option<Ident>,
    /// The local coordinate buffer the level writes to (its region owner's, `c_crd_1`).
    pub crd: Option<Ident>,
    /// Binds this level's position of the entry (`c_q1`); the next level's parent.
    pub q: Ident,
    /// The parent's position (`0usize` at level 0).
    pub parent: TokenStream,
    /// This level's coordinate of the entry (`usize`).
    pub c: TokenStream,
    /// How many positions the parent level holds once every entry is in (`1usize` at level 0).
    pub parents: TokenStream,
    /// A `&[usize]` of coordinates of this level under one parent, ascending, each once: what
    /// [`Insert::extend`] appends (a workspace's sorted touched coordinates).
    pub coords: Ident,
    /// The `bool` the kernel computed before the buffers (`reuse`): the output's own arrays
    /// are emptied and refilled ([`output_buffer`]) when it holds; `None`: the kernel never
    /// refills them (its loops can fail, or read the output), and each buffer is a new vector.
    pub reuse: Option<Ident>,
}

/// The declaration of an output buffer `local` (element type `ty`) in place of the output's
/// array `base.field`: the array itself, emptied, when `reuse` names the kernel's flag and it
/// holds at run time (`generated::output_buffer`: no allocation, so no fresh pages), else a
/// new vector with as much room as the array holds.
pub fn output_buffer(
    rt: &TokenStream,
    local: &Ident,
    ty: &TokenStream,
    base: &TokenStream,
    field: &Ident,
    reuse: Option<&Ident>,
) -> TokenStream {
    match reuse {
        Some(reuse) => quote! {
            let mut #local: ::std::vec::Vec<#ty> = #rt::generated::output_buffer(&mut #base.#field, #reuse);
        },
        None => quote! {
            let mut #local: ::std::vec::Vec<#ty> = ::std::vec::Vec::with_capacity(#base.#field.len());
        },
    }
}

/// A level's part of in-order insertion: statements, in the kernel's function body.
#[derive(Clone, Debug, Default)]
pub struct Insert {
    /// Before any level's buffers: the level's checks (a width too narrow for its coordinates
    /// is an error before the output is touched).
    pub check: TokenStream,
    /// Before the loops: declares the level's buffers.
    pub init: TokenStream,
    /// For each entry, before [`Insert::step`]: closes the segments of the parents before the
    /// entry's parent. Reads the parent's position alone and may run again for the same
    /// parent, so a workspace's compress loop runs it once per parent, not per entry.
    pub open: TokenStream,
    /// For each entry: appends its coordinate where it is new and binds [`InsertNames::q`]
    /// (not bound at the last level, whose positions follow the values, unless it is dense).
    pub step: TokenStream,
    /// At the last level, where the level can take them at once: appends the coordinates of
    /// [`InsertNames::coords`] under the parent [`Insert::open`] opened, as [`Insert::step`]
    /// would one by one (one capacity check for them all).
    pub extend: Option<TokenStream>,
    /// After the last entry: closes the segments of parents with no entry after it.
    pub finish: TokenStream,
    /// How many positions the level holds after `finish` (an expression).
    pub count: TokenStream,
    /// The entry's position as an expression, when `step` binds none (a dense root level's
    /// position is its coordinate; a singleton's is its parent's).
    pub position: Option<TokenStream>,
}

/// `x` converted to index type `ty` (`x as u32`), or `x` alone when `ty` is `usize`.
pub fn to_index(ty: &TokenStream, x: TokenStream) -> TokenStream {
    if ty.to_string() == "usize" {
        return x;
    }
    // `as` binds tighter than the arithmetic operators
    let compound = x
        .clone()
        .into_iter()
        .any(|t| matches!(t, proc_macro2::TokenTree::Punct(p) if "+-*/%".contains(p.as_char())));
    if compound {
        quote!((#x) as #ty)
    } else {
        quote!(#x as #ty)
    }
}

/// The generator for a level format; `None` for formats the generator does not handle.
pub fn level_gen(format: LevelFormat) -> Option<&'static dyn LevelGen> {
    match format {
        // a batch level assembles and iterates like a dense one; only the stored positions of
        // the levels below it are batch-local (handled by the (loose_)compressed units)
        LevelFormat::Dense | LevelFormat::Batch => Some(&super::dense::Dense),
        LevelFormat::Compressed => Some(&super::compressed::Compressed),
        LevelFormat::LooseCompressed => Some(&super::loose_compressed::LooseCompressed),
        LevelFormat::Singleton => Some(&super::singleton::Singleton),
        LevelFormat::NOutOfM { .. } => Some(&super::n_out_of_m::NOutOfM),
    }
}
