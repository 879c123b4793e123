//! Kernels declared in `sparse_format!` (`pub kernel spmv(y: &mut [f64], a: &Csr<f64>, x: &[f64])
//! { y(i) = a(i, j) * x(j) }`): the parameters become the sparsifier's tensor declarations, the
//! statement is compiled by `sparse-sparsifier` to its loop IR, and [`emit`] turns the loop IR
//! into Rust that reads the generated storage structs' arrays directly (TACO's code generator,
//! MLIR's sparsifier lowering to loops).

pub mod emit;

use proc_macro2::{Ident, TokenStream};
use sparse_ir::verify::VerifiedEncoding;
use sparse_sparsifier::{Error, TensorDecl, ValueType};

/// How a kernel parameter is passed.
#[derive(Clone, Debug)]
pub enum ParamKind {
    /// `&[T]` or `&mut [T]`: a dense rank-1 operand.
    Slice {
        /// `&mut`.
        mutable: bool,
    },
    /// `T` by value (an input) or `&mut T` (the output): a 0-d operand.
    Scalar {
        /// `&mut`.
        mutable: bool,
    },
    /// A dense rank-2 operand in a slice, row-major or column-major, its dimension sizes given
    /// as expressions (the built-in `spmm`'s `B` and `C`).
    Matrix {
        /// `&mut`.
        mutable: bool,
        /// Column-major (the first dimension fastest) instead of row-major.
        col_major: bool,
        /// The two dimension sizes, as expressions over the other parameters.
        dims: [TokenStream; 2],
    },
    /// `&DenseArray<T, O>` or `&mut DenseArray<T, O>` (the runtime's `layout::DenseArray`): a
    /// dense operand in an XLA layout whose order `O` is a format declared in the same block
    /// with all levels `dense` and a permutation map, so the loops are compiled for that order
    /// (the fastest dimension's stride is 1, the others are read once from the array, its
    /// padding included); the padding is never read or written. In a built-in method `O` may
    /// be a type parameter (`StaticOrder`): the fastest dimension is then chosen by a constant
    /// of `O`, folded when the method is instantiated.
    DenseArray {
        /// `&mut`.
        mutable: bool,
        /// The format naming the order, or the method's type parameter.
        order: Ident,
        /// Dimensions fastest-varying first (its levels, innermost first); `None` for a type
        /// parameter.
        minor_to_major: Option<Vec<usize>>,
        /// The number of dimensions.
        rank: usize,
    },
    /// `par: Par`: how the kernel runs (`sparse::Par`, faer's parallelism argument); not an
    /// operand. Allowed when the outermost loop runs over the rows of a dense output slice
    /// (its first index is not reduced).
    Par,
    /// `&Fmt<T>` or `&mut Fmt<T>`: a storage struct declared in the same block.
    Format {
        /// `&mut`.
        mutable: bool,
        /// The struct name.
        format: Ident,
        /// Its verified encoding.
        encoding: Box<VerifiedEncoding>,
        /// The static dimension sizes of a tensor-type declaration (`tensor<4x?xf64, ...>`
        /// gives `[Some(4), None]`); `None` for a bare encoding.
        shape: Option<Vec<Option<u64>>>,
        /// The quantization of a format declared with a uniform quantized element type and
        /// passed with its storage type (`&Q<i8>`): the kernel dequantizes its loads (and
        /// quantizes the output) through the struct's `dequantize_value` / `quantize_value`.
        quant: Option<crate::codegen::quant::QuantInfo>,
    },
}

/// One kernel parameter.
#[derive(Clone, Debug)]
pub struct KernelParam {
    /// The operand name the statement uses.
    pub name: Ident,
    /// How it is passed.
    pub kind: ParamKind,
    /// Its value type.
    pub value: ValueType,
}

/// A kernel item: `vis kernel name(params) { statement }`.
#[derive(Clone, Debug)]
pub struct KernelDecl {
    /// Visibility tokens (`pub`, or empty).
    pub vis: TokenStream,
    /// The function name.
    pub name: Ident,
    /// The parameters, in order.
    pub params: Vec<KernelParam>,
    /// The statement in TACO's index notation (byte spans of errors index it).
    pub statement: String,
    /// `Some` for a built-in kernel generated as a method of a storage struct.
    pub method: Option<Method>,
}

/// A kernel generated as a method of the storage struct `impl<V: Value> Fmt<V>` (the built-in
/// `spmv`, `spmv_transpose`, `spmm`): values are the struct's generic `V`.
#[derive(Clone, Debug)]
pub struct Method {
    /// The parameter that is `self` (its name is the statement's name for it).
    pub receiver: usize,
    /// The row-range form of `spmv_par`'s tasks: an extra `row0: usize` parameter; the output
    /// slice holds the outermost loop's units `row0 .. row0 + len / unit` only (a unit is a
    /// block row for a blocked index); no operand checks (the caller made them).
    pub rows: bool,
    /// The doc comment lines (without `///`).
    pub doc: Vec<String>,
    /// Extra parameters after the operands (`n: usize`, read by a matrix's dimension
    /// expressions).
    pub extra: Vec<TokenStream>,
    /// A sum over the innermost compressed segment into a register runs in
    /// [`REASSOCIATE_LANES`] interleaved partial sums (positions `p`, `p + 1`, ... each into its
    /// own), combined pairwise after the segment: the additions are reassociated, as MLIR's
    /// sparsifier reassociates a vectorized reduction, so the loop is not bound by one chain of
    /// dependent additions; a BSR block's row is summed before it is added to the output
    /// (`sparse_sparsifier::Program::partial_sum`, `Program::block_sum`). Floating-point
    /// results may then differ from the statement's order in the last bits. The built-in
    /// `spmv`, `spmv_par` and `spmv_transpose` use it for any value type (a column format's
    /// `spmv_transpose` sums each element of `y` as `spmv` sums a row: CSC's of
    /// `kron(I_40, bcsstk16)` 11.3-11.7 -> 8.1-8.5 ms, of bcsstk16 in cache 191 -> 120 µs, Zen
    /// 2; a row format's scatters, unchanged) (user kernels of `f64` and `f32`
    /// values always reassociate, as `Program::reassociates` says, and so does the
    /// interpreter for them).
    pub reassociate: bool,
    /// Type parameters of the method (`OB: StaticOrder`), the orders of its `DenseArray`
    /// operands.
    pub generics: Vec<TokenStream>,
}

/// The partial sums of a reassociated innermost sum ([`Method::reassociate`]): the
/// sparsifier's, which the interpreter follows for user kernels.
pub const REASSOCIATE_LANES: usize = sparse_sparsifier::loops::PARTIAL_SUMS;

impl KernelDecl {
    /// The sparsifier's tensor declarations of the parameters (dimension sizes known at run
    /// time unless a tensor-type declaration fixes them; a slice has rank 1, a scalar rank 0).
    pub fn tensor_decls(&self) -> Vec<TensorDecl> {
        self.params
            .iter()
            .filter(|p| !matches!(p.kind, ParamKind::Par))
            .map(|p| {
                let (shape, encoding) = match &p.kind {
                    ParamKind::Slice { .. } => (vec![None], None),
                    ParamKind::Matrix { .. } => (vec![None, None], None),
                    ParamKind::DenseArray { rank, .. } => (vec![None; *rank], None),
                    ParamKind::Par => (Vec::new(), None),
                    ParamKind::Scalar { .. } => (Vec::new(), None),
                    ParamKind::Format {
                        encoding, shape, ..
                    } => {
                        let dims = match shape {
                            Some(s) => s
                                .iter()
                                .map(|d| d.and_then(|d| usize::try_from(d).ok()))
                                .collect(),
                            None => vec![None; encoding.dim_rank()],
                        };
                        (dims, Some((**encoding).clone()))
                    }
                };
                TensorDecl {
                    name: p.name.to_string(),
                    shape,
                    value: p.value,
                    encoding,
                }
            })
            .collect()
    }
}

/// Compiles the kernel with the sparsifier and emits its Rust function; `rt` names the runtime.
///
/// Errors: the sparsifier's (unknown operand, rank or value-type mismatch, an order no strategy
/// serves), with a byte span into [`KernelDecl::statement`]; a parameter passed in a way the
/// statement cannot use (an input by `&mut`, the output by `&`); a loop form the Rust back end
/// does not generate yet (named in the message).
pub fn generate_kernel(k: &KernelDecl, rt: &TokenStream) -> Result<TokenStream, Error> {
    let program =
        sparse_sparsifier::compile(&k.statement, &k.tensor_decls()).map_err(|mut e| {
            // the sparsifier's help names the CLI's `--tensor`: here operands are parameters
            if e.help
                .as_deref()
                .is_some_and(|h| h.starts_with("declare it"))
            {
                let name = e
                    .span
                    .and_then(|s| k.statement.get(s.start..s.end))
                    .unwrap_or("x");
                e.help = Some(format!(
                    "add a parameter for it: `{name}: &[T]`, `{name}: &Format<T>` or `{name}: T`"
                ));
            }
            e
        })?;
    emit::emit(k, &program, rt)
}

/// The kernel function formatted as `sparse expand` prints generated code (`prettyplease`,
/// `// SAFETY:` comments); what `sparse eval --emit rust` prints.
///
/// Errors: as [`generate_kernel`].
pub fn expand_kernel_to_string(k: &KernelDecl, rt: &TokenStream) -> Result<String, Error> {
    let tokens = generate_kernel(k, rt)?;
    let file: syn::File = syn::parse2(tokens)
        .map_err(|e| Error::plain(format!("generated code does not parse: {e}")))?;
    Ok(crate::codegen::print(&file))
}
