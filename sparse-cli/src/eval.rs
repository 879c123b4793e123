//! `sparse eval 'STATEMENT' --tensor NAME=TYPE ... [--input NAME=FILE|NUMBER ...]
//! [--print storage|dense] [--emit loops|rust]`: a kernel in TACO index notation, compiled by the
//! sparsifier and run by its interpreter (issue 9's contract).
//!
//! Output: the left-hand tensor only. Sparse: the `sparse_tensor.print` form `sparse inspect`
//! prints (the output assembled in its own format); dense: MLIR's `vector.print` form, nested
//! parentheses row-major (`( ( 46, 115 ), ( 0, 0 ) )`); 0-d: the number alone. `--print dense`
//! shows a sparse output densely. Values print their shortest round-trip text (Rust's
//! `Display`), integers without a point, `i1` as `1` or `0` (as `vector.print` prints it), a
//! quantized output as its stored integers (see `quantized`). Errors: `error: MESSAGE`, exit
//! status 1.

use std::io::Write;
use std::path::Path;

use sparse_dsl::parse::{parse_declaration, Declared};
use sparse_runtime::frostt::{read_frostt, TnsError};
use sparse_runtime::mmio::{read_matrix_market, read_matrix_market_complex, MmError};
use sparse_runtime::num_complex::Complex;
use sparse_runtime::quant::Quantization;
use sparse_runtime::sparse_ir::types::{ElementType, QuantizedType};
use sparse_runtime::{CooTensor, DynamicStorage, Value};
use sparse_sparsifier::interp::{run, Num, Operand, Output, I1};
use sparse_sparsifier::{compile, print, Program, TensorDecl, ValueType};

use crate::input;

/// The arguments of `sparse eval`.
#[derive(clap::Args)]
pub struct EvalArgs {
    /// The statement in TACO index notation, e.g. `C(i,j) = A(i,k) * B(k,j)`.
    #[arg(allow_hyphen_values = true)]
    statement: String,
    /// `NAME=TYPE`: an MLIR tensor type (`tensor<4x8xf64, #sparse_tensor.encoding<{...}>>`,
    /// `tensor<4x8xf64>` dense row-major, `tensor<f64>` 0-d), or `NAME=@FILE` holding one.
    #[arg(long = "tensor", value_name = "NAME=TYPE")]
    tensors: Vec<String>,
    /// `NAME=FILE` (`.mtx` or SciPy `.npz` rank 2, `.tns` FROSTT any rank, duplicates summed) or `NAME=NUMBER`
    /// for a 0-d tensor. A tensor without input starts empty (all zero).
    #[arg(
        long = "input",
        value_name = "NAME=FILE|NUMBER",
        allow_hyphen_values = true
    )]
    inputs: Vec<String>,
    /// `storage` (default: a sparse output as `sparse_tensor.print`) or `dense`.
    #[arg(long)]
    print: Option<String>,
    /// `loops`: print the loop program instead of running it; `rust`: the generated Rust.
    #[arg(long)]
    emit: Option<String>,
}

/// A value type `sparse eval` reads and prints.
trait Read: Num {
    /// A value read from a file (f64) in this type, if exact.
    fn from_f64(x: f64) -> Option<Self>;
    /// A number written on the command line.
    fn parse(s: &str) -> Option<Self>;
    /// A complex value read from a file, for a complex type (`None` for the others, which a
    /// complex file never reaches: it is read only into complex tensors).
    fn from_complex(_re: f64, _im: f64) -> Option<Self> {
        None
    }
}

impl Read for f64 {
    fn from_f64(x: f64) -> Option<Self> {
        Some(x)
    }
    fn parse(s: &str) -> Option<Self> {
        s.trim().parse().ok()
    }
}
impl Read for f32 {
    fn from_f64(x: f64) -> Option<Self> {
        Some(x as f32)
    }
    fn parse(s: &str) -> Option<Self> {
        s.trim().parse().ok()
    }
}
impl Read for i64 {
    fn from_f64(x: f64) -> Option<Self> {
        (x.fract() == 0.0 && (-9.223372036854776e18..9.223372036854776e18).contains(&x))
            .then_some(x as i64)
    }
    fn parse(s: &str) -> Option<Self> {
        s.trim().parse().ok()
    }
}
impl Read for i32 {
    fn from_f64(x: f64) -> Option<Self> {
        (x.fract() == 0.0 && x >= i32::MIN as f64 && x <= i32::MAX as f64).then_some(x as i32)
    }
    fn parse(s: &str) -> Option<Self> {
        s.trim().parse().ok()
    }
}
impl Read for u64 {
    fn from_f64(x: f64) -> Option<Self> {
        (x.fract() == 0.0 && (0.0..1.8446744073709552e19).contains(&x)).then_some(x as u64)
    }
    fn parse(s: &str) -> Option<Self> {
        s.trim().parse().ok()
    }
}
impl Read for u32 {
    fn from_f64(x: f64) -> Option<Self> {
        (x.fract() == 0.0 && x >= 0.0 && x <= u32::MAX as f64).then_some(x as u32)
    }
    fn parse(s: &str) -> Option<Self> {
        s.trim().parse().ok()
    }
}
/// `i1`: a file's value must be 0 or 1 (a `pattern` file gives 1); on the command line `0`,
/// `1`, `false` or `true`; printed `1` or `0`.
impl Read for I1 {
    fn from_f64(x: f64) -> Option<Self> {
        match x {
            0.0 => Some(I1(false)),
            1.0 => Some(I1(true)),
            _ => None,
        }
    }
    fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "0" | "false" => Some(I1(false)),
            "1" | "true" => Some(I1(true)),
            _ => None,
        }
    }
}
/// Complex values: a real value read from a file is `x + 0i`; on the command line num-complex's
/// form (`1.5`, `2i`, `1.5-2i`); printed the same way (`1.5-2i`, as the storage prints them).
macro_rules! complex_read {
    ($($t:ty),*) => {$(
        impl Read for Complex<$t> {
            fn from_f64(x: f64) -> Option<Self> {
                Some(Complex::new(x as $t, 0.0))
            }
            fn parse(s: &str) -> Option<Self> {
                s.trim().parse().ok()
            }
            fn from_complex(re: f64, im: f64) -> Option<Self> {
                Some(Complex::new(re as $t, im as $t))
            }
        }
    )*};
}
complex_read!(f64, f32);

/// A value type `sparse eval` stores in its tensors: read from files and the command line,
/// widened to the type the kernel computes in ([`ValueType::compute`]), stored back and
/// printed. The types the interpreter computes in directly store themselves.
trait Stored: Copy {
    /// The type the kernel computes in.
    type Compute: Read;
    /// A value read from a file (as `f64`) in this type: exact for integers (`None` when not
    /// representable), rounded to nearest for floats.
    fn from_f64(x: f64) -> Option<Self>;
    /// A number written on the command line.
    fn parse(s: &str) -> Option<Self>;
    /// A complex value read from a file (`None` unless this type is complex).
    fn from_complex(_re: f64, _im: f64) -> Option<Self> {
        None
    }
    /// The value in the compute type (exact).
    fn widen(self) -> Self::Compute;
    /// A computed value stored in this type: rounded to nearest for floats, wrapping for
    /// integers (as Rust's `as` and MLIR's `arith.truncf`/`arith.trunci`).
    fn narrow(c: Self::Compute) -> Self;
    /// The shortest text that reads back to the same value (integers without a point).
    fn text(self) -> String;
}

impl<T: Read> Stored for T {
    type Compute = T;
    fn from_f64(x: f64) -> Option<Self> {
        <T as Read>::from_f64(x)
    }
    fn parse(s: &str) -> Option<Self> {
        <T as Read>::parse(s)
    }
    fn from_complex(re: f64, im: f64) -> Option<Self> {
        <T as Read>::from_complex(re, im)
    }
    fn widen(self) -> T {
        self
    }
    fn narrow(c: T) -> Self {
        c
    }
    fn text(self) -> String {
        self.to_string()
    }
}

/// 8- and 16-bit integers: computed in `i32`, stored back wrapping.
macro_rules! narrow_int {
    ($($t:ty),*) => {$(
        impl Stored for $t {
            type Compute = i32;
            fn from_f64(x: f64) -> Option<Self> {
                (x.fract() == 0.0 && x >= <$t>::MIN as f64 && x <= <$t>::MAX as f64)
                    .then_some(x as $t)
            }
            fn parse(s: &str) -> Option<Self> {
                s.trim().parse().ok()
            }
            fn widen(self) -> i32 {
                i32::from(self)
            }
            fn narrow(c: i32) -> Self {
                c as $t
            }
            fn text(self) -> String {
                self.to_string()
            }
        }
    )*};
}
narrow_int!(i8, i16, u8, u16);

/// `f16` and `bf16`: computed in `f32`, stored back rounded to nearest (ties to even).
macro_rules! narrow_float {
    ($($t:ty),*) => {$(
        impl Stored for $t {
            type Compute = f32;
            fn from_f64(x: f64) -> Option<Self> {
                Some(<$t>::from_f64(x))
            }
            fn parse(s: &str) -> Option<Self> {
                s.trim().parse::<f64>().ok().map(<$t>::from_f64)
            }
            fn widen(self) -> f32 {
                self.to_f32()
            }
            fn narrow(c: f32) -> Self {
                <$t>::from_f32(c)
            }
            fn text(self) -> String {
                shortest(self.to_f64(), |x| <$t>::from_f64(x).to_bits() == self.to_bits())
            }
        }
    )*};
}
narrow_float!(half::f16, half::bf16);

/// The shortest decimal text of `x` that `same` accepts (reads back to the same narrow
/// float), printed as Rust prints an `f64` (`0.1`, `65504`, `-0`, `inf`, `NaN`).
fn shortest(x: f64, same: impl Fn(f64) -> bool) -> String {
    if x.is_finite() {
        for digits in 0..17 {
            let text = format!("{x:.digits$e}");
            if let Ok(y) = text.parse::<f64>() {
                if same(y) {
                    return y.to_string();
                }
            }
        }
    }
    x.to_string()
}

/// A value printed as text (what [`Stored::text`] gives), for the printers of storage.
struct Text(String);

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn split_arg<'a>(flag: &str, arg: &'a str, what: &str) -> Result<(&'a str, &'a str), String> {
    match arg.split_once('=') {
        Some((n, v)) if !n.trim().is_empty() => Ok((n.trim(), v)),
        _ => Err(format!("{flag} {arg}: expected NAME={what}")),
    }
}

/// The declared tensor, and its quantized element type if it has one (the scales and zero
/// points [`ValueType::Quant`] leaves out).
fn declare(arg: &str) -> Result<(TensorDecl, Option<QuantizedType>), String> {
    let (name, ty) = split_arg("--tensor", arg, "TYPE")?;
    let (from, text) = match ty.strip_prefix('@') {
        Some(path) => (input::name(path.as_ref()), input::read_text(path.as_ref())?),
        None => (format!("--tensor {name}"), ty.to_string()),
    };
    let parsed = parse_declaration(&text).map_err(|d| match d.first() {
        Some(d) => format!("{from}: {d}"),
        None => format!("{from}: not a tensor type"),
    })?;
    let Declared::Tensor(t) = parsed.declared else {
        return Err(format!(
            "{from}: expected a tensor type such as tensor<4x8xf64, #sparse_tensor.encoding<{{...}}>>, found an encoding"
        ));
    };
    let value = ValueType::from_element(&t.element).ok_or_else(|| {
        format!(
            "{from}: value type {} is not supported by sparse eval (f64, f32, f16, bf16, i64, i32, i16, i8, ui64, ui32, ui16, ui8, i1, complex<f32>, complex<f64>, !quant.uniform<...:f32, ...>)",
            t.element
        )
    })?;
    let shape = t
        .shape
        .iter()
        .map(|d| match d {
            None => Ok(None),
            Some(n) => usize::try_from(*n)
                .map(Some)
                .map_err(|_| format!("{from}: size {n} does not fit this machine")),
        })
        .collect::<Result<Vec<Option<usize>>, String>>()?;
    let quant = match &t.element {
        ElementType::Quant(q) => {
            // a slice's input holds its parent: its coordinates are not the slice's
            if q.axis.is_some() && t.encoding.as_ref().is_some_and(|e| e.dim_slices.is_some()) {
                return Err(format!(
                    "--tensor {name}: a slice cannot be quantized per axis (quantize it per tensor)"
                ));
            }
            // a static shape is checked now, a dynamic one once its input gives the sizes
            if let Some(sizes) = shape.iter().copied().collect::<Option<Vec<usize>>>() {
                quantization(name, q, &sizes)?;
            }
            Some((**q).clone())
        }
        _ => None,
    };
    let decl = TensorDecl {
        name: name.to_string(),
        shape,
        value,
        encoding: t.encoding,
    };
    Ok((decl, quant))
}

/// The quantization of tensor `name` of type `q` and shape `shape`; an error names the tensor
/// (an axis past the rank, a per-axis pair count other than the quantized dimension's size, a
/// scale that is not positive in `f32`, a zero point outside the storage range, storage wider
/// than 32 bits).
fn quantization(
    name: &str,
    q: &QuantizedType,
    shape: &[usize],
) -> Result<Quantization<f32>, String> {
    Quantization::new(q, shape).map_err(|e| format!("--tensor {name}: {e}"))
}

/// `--emit rust`: the function `sparse_format!` generates for the statement, as `sparse expand`
/// prints it. The kernel is named `kernel`; its parameters are the statement's tensors in
/// `--tensor` order (the output `&mut`): rank 1 dense as slices, 0-d by value, any other as a
/// format struct named after the tensor (`A` → `AFormat`), listed in a comment above with its
/// encoding (all-dense row-major for a dense tensor).
///
/// A quantized tensor (`quants`) is always a format struct (a dense one all-dense), declared in
/// the comment with its tensor type: the kernel dequantizes its loads through the struct's
/// `dequantize_value` (and quantizes a quantized output through `quantize_value`).
fn rust_text(
    statement: &str,
    decls: &[TensorDecl],
    quants: &[(String, QuantizedType)],
    program: &Program,
) -> Result<String, String> {
    use sparse_dsl::kernel::{expand_kernel_to_string, KernelDecl, KernelParam, ParamKind};
    let ident = |n: &str| {
        syn::parse_str::<syn::Ident>(n)
            .map_err(|_| format!("--emit rust: `{n}` is not a Rust identifier"))
    };
    let out = &program.kernel.tensors[program.kernel.output.tensor].name;
    let mut header = String::new();
    let mut params = Vec::new();
    for d in decls {
        if !program.kernel.tensors.iter().any(|t| t.name == d.name) {
            continue;
        }
        let mutable = d.name == *out;
        let quant = match quants.iter().find(|(n, _)| *n == d.name) {
            Some((_, q)) if d.value.is_quantized() => {
                let shape: Vec<Option<u64>> = d.shape.iter().map(|s| s.map(|n| n as u64)).collect();
                let info = sparse_dsl::codegen::quant::QuantInfo::new(q, &shape)
                    .map_err(|e| format!("--emit rust: --tensor {}: {e}", d.name))?;
                Some((q, info))
            }
            _ => None,
        };
        let kind = match (&d.encoding, d.shape.len()) {
            (None, 0) if quant.is_some() => {
                return Err(format!(
                    "--emit rust: a quantized 0-d tensor (`{}`) has no generated struct",
                    d.name
                ))
            }
            (None, 0) => ParamKind::Scalar { mutable },
            (None, 1) if quant.is_none() => ParamKind::Slice { mutable },
            (enc, rank) => {
                let encoding = match enc {
                    Some(e) => e.clone(),
                    None => all_dense(rank)?,
                };
                let mut cap = d.name.chars();
                let format = match cap.next() {
                    Some(c) => format!("{}{}Format", c.to_uppercase(), cap.as_str()),
                    None => String::from("Format"),
                };
                match &quant {
                    Some((q, _)) => {
                        let dims: String = d
                            .shape
                            .iter()
                            .map(|s| s.map_or("?x".to_string(), |n| format!("{n}x")))
                            .collect();
                        let element = sparse_dsl::types::ElementType::Quant(Box::new((*q).clone()));
                        header.push_str(&format!(
                            "// {format} = tensor<{dims}{element}, {}>\n",
                            &*encoding
                        ));
                    }
                    None => header.push_str(&format!("// {format} = {}\n", &*encoding)),
                }
                ParamKind::Format {
                    mutable,
                    format: ident(&format)?,
                    encoding: Box::new(encoding),
                    shape: None,
                    quant: quant.map(|(_, info)| info),
                }
            }
        };
        params.push(KernelParam {
            name: ident(&d.name)?,
            kind,
            value: d.value,
        });
    }
    let k = KernelDecl {
        vis: quote::quote!(pub),
        name: ident("kernel")?,
        params,
        statement: statement.to_string(),
        method: None,
    };
    let code = expand_kernel_to_string(&k, &quote::quote!(::sparse::runtime))
        .map_err(|e| format!("--emit rust: {e}"))?;
    Ok(format!("{header}{code}"))
}

/// The all-dense row-major encoding of a dense tensor of `rank` dimensions.
fn all_dense(rank: usize) -> Result<sparse_dsl::ir::VerifiedEncoding, String> {
    let dims: Vec<String> = (0..rank).map(|d| format!("d{d}")).collect();
    let levels: Vec<String> = dims.iter().map(|d| format!("{d} : dense")).collect();
    let text = format!(
        "#sparse_tensor.encoding<{{ map = ({}) -> ({}) }}>",
        dims.join(", "),
        levels.join(", ")
    );
    match parse_declaration(&text).map(|p| p.declared) {
        Ok(Declared::Encoding(e)) => Ok(e),
        _ => Err(format!("--emit rust: no all-dense encoding of rank {rank}")),
    }
}

/// Runs `sparse eval`.
pub fn eval(
    args: &EvalArgs,
    write_stdout: impl FnOnce(&str) -> Result<(), String>,
) -> Result<(), String> {
    let dense_print = match args.print.as_deref() {
        None | Some("storage") => false,
        Some("dense") => true,
        Some(o) => return Err(format!("--print {o}: expected storage or dense")),
    };
    let mut decls: Vec<TensorDecl> = Vec::new();
    let mut quants: Vec<(String, QuantizedType)> = Vec::new();
    for a in &args.tensors {
        let (d, quant) = declare(a)?;
        if decls.iter().any(|x| x.name == d.name) {
            return Err(format!("--tensor {}: declared twice", d.name));
        }
        if let Some(q) = quant {
            quants.push((d.name.clone(), q));
        }
        decls.push(d);
    }
    // dynamic sizes come from the inputs: compile after reading them
    let mut inputs: Vec<(String, String)> = Vec::new();
    for a in &args.inputs {
        let (n, v) = split_arg("--input", a, "FILE|NUMBER")?;
        if inputs.iter().any(|(m, _)| m == n) {
            return Err(format!("--input {n}: given twice"));
        }
        if !decls.iter().any(|d| d.name == n) {
            return Err(format!(
                "--input {n}: no tensor {n} is declared (add --tensor {n}=TYPE)"
            ));
        }
        inputs.push((n.to_string(), v.to_string()));
    }
    let program = compile(&args.statement, &decls).map_err(|e| match e.span {
        // the statement is one line: its column names the place
        Some(sp) => {
            let col = args
                .statement
                .get(..sp.start)
                .map_or(0, |s| s.chars().count())
                + 1;
            format!("<statement>:1:{col}: {e}")
        }
        None => e.to_string(),
    })?;
    match args.emit.as_deref() {
        None => {}
        Some("loops") => return write_stdout(&print::print(&program)),
        Some("rust") => {
            return write_stdout(&rust_text(&args.statement, &decls, &quants, &program)?)
        }
        Some(o) => return Err(format!("--emit {o}: expected loops or rust")),
    }
    let quantized_kernel = program
        .kernel
        .tensors
        .iter()
        .any(|t| t.value.is_quantized());
    let text = match program.kernel.value {
        _ if quantized_kernel => quantized(&program, &inputs, &quants, dense_print)?,
        ValueType::F64 => typed::<f64>(&program, &inputs, dense_print)?,
        ValueType::F32 => typed::<f32>(&program, &inputs, dense_print)?,
        ValueType::F16 => typed::<half::f16>(&program, &inputs, dense_print)?,
        ValueType::BF16 => typed::<half::bf16>(&program, &inputs, dense_print)?,
        ValueType::I64 => typed::<i64>(&program, &inputs, dense_print)?,
        ValueType::I32 => typed::<i32>(&program, &inputs, dense_print)?,
        ValueType::I16 => typed::<i16>(&program, &inputs, dense_print)?,
        ValueType::I8 => typed::<i8>(&program, &inputs, dense_print)?,
        ValueType::U64 => typed::<u64>(&program, &inputs, dense_print)?,
        ValueType::U32 => typed::<u32>(&program, &inputs, dense_print)?,
        ValueType::U16 => typed::<u16>(&program, &inputs, dense_print)?,
        ValueType::U8 => typed::<u8>(&program, &inputs, dense_print)?,
        ValueType::I1 => typed::<I1>(&program, &inputs, dense_print)?,
        ValueType::C64 => typed::<Complex<f64>>(&program, &inputs, dense_print)?,
        ValueType::C32 => typed::<Complex<f32>>(&program, &inputs, dense_print)?,
        ValueType::Quant { .. } => unreachable!("a quantized kernel runs through `quantized`"),
    };
    write_stdout(&text)
}

/// The entries of `path` for tensor `decl`: the real parts, and the imaginary parts (one per
/// entry) of a complex Matrix Market file read into a complex tensor.
fn read_entries(
    path: &str,
    decl: &TensorDecl,
) -> Result<(CooTensor<f64>, Option<Vec<f64>>), String> {
    let p = Path::new(path);
    let ext = p
        .extension()
        .map(|x| x.to_string_lossy().to_ascii_lowercase());
    if matches!(ext.as_deref(), Some("mtx" | "npz")) && decl.shape.len() != 2 {
        return Err(format!(
            "--input {}: {path} is a matrix, but `{}` has {} dimensions",
            decl.name,
            decl.name,
            decl.shape.len()
        ));
    }
    let mm_error = |e: MmError| match e {
        MmError::Open { .. } => e.to_string(),
        _ => format!("{path}: {e}"),
    };
    let mut imaginary = None;
    let coo = match ext.as_deref() {
        Some("mtx") if decl.value.is_complex() => {
            let t = read_matrix_market_complex(p).map_err(mm_error)?.tensor;
            imaginary = Some(t.values.iter().map(|v| v.im).collect());
            CooTensor {
                shape: t.shape,
                coords: t.coords,
                values: t.values.iter().map(|v| v.re).collect(),
            }
        }
        Some("mtx") => read_matrix_market(p).map_err(mm_error)?.tensor,
        Some("npz") => {
            // SciPy's save_npz (CSR, CSC, COO, BSR); its message names the path
            sparse_runtime::npz::read_npz(p)
                .map_err(|e| e.to_string())?
                .1
        }
        Some("tns") => {
            let shape: Option<Vec<usize>> = if decl
                .encoding
                .as_ref()
                .is_some_and(|e| e.dim_slices.is_some())
            {
                None
            } else {
                decl.shape.iter().copied().collect()
            };
            read_frostt(p, shape.as_deref()).map_err(|e| match e {
                TnsError::Open { .. } => e.to_string(),
                _ => format!("{path}: {e}"),
            })?
        }
        _ => {
            return Err(format!(
                "--input {}: {path}: unknown file type (expected .mtx, .tns or .npz)",
                decl.name
            ))
        }
    };
    if coo.shape.len() != decl.shape.len() {
        return Err(format!(
            "--input {}: {path} has {} dimensions, but `{}` has {}",
            decl.name,
            coo.shape.len(),
            decl.name,
            decl.shape.len()
        ));
    }
    let sliced = decl
        .encoding
        .as_ref()
        .is_some_and(|e| e.dim_slices.is_some());
    // a slice's file holds its parent tensor
    for (d, (want, got)) in decl
        .shape
        .iter()
        .zip(&coo.shape)
        .enumerate()
        .filter(|_| !sliced)
    {
        if want.is_some_and(|w| w != *got) {
            return Err(format!(
                "--input {}: {path} has size {got} in dimension {d}, but `{}` has {}",
                decl.name,
                decl.name,
                want.unwrap_or(0)
            ));
        }
    }
    Ok((coo, imaginary))
}

/// Entries of a tensor: coordinates and value.
type Entries<V> = Vec<(Vec<usize>, V)>;

/// Tensor `decl` as an operand computed in `S`'s compute type, holding what a tensor of `S`
/// values holds (duplicates summed, then stored as `S`).
fn operand<S: Stored>(
    decl: &TensorDecl,
    input: Option<&str>,
) -> Result<Operand<S::Compute>, String> {
    let (shape, merged) = entries::<S>(decl, input)?;
    build(decl, shape, merged, input.is_some())
}

/// The shape and entries of tensor `decl` read from `input` as `S` values (sorted by
/// coordinates, duplicates summed and the sum stored as `S`), in `S`'s compute type.
fn entries<S: Stored>(
    decl: &TensorDecl,
    input: Option<&str>,
) -> Result<(Vec<usize>, Entries<S::Compute>), String> {
    let name = &decl.name;
    let (shape, entries): (Vec<usize>, Entries<S::Compute>) = match input {
        Some(num) if decl.shape.is_empty() => {
            let v = S::parse(num).map(S::widen).ok_or_else(|| {
                format!(
                    "--input {name}={num}: not a number of type {}",
                    decl.value.name()
                )
            })?;
            (Vec::new(), vec![(Vec::new(), v)])
        }
        Some(path) => {
            let (coo, imaginary) = read_entries(path, decl)?;
            let mut entries = Vec::with_capacity(coo.len());
            for (k, (c, x)) in coo.iter().enumerate() {
                let v = match imaginary.as_ref().and_then(|im| im.get(k)) {
                    Some(&im) => S::from_complex(*x, im),
                    None => S::from_f64(*x),
                };
                let v = v.map(S::widen).ok_or_else(|| {
                    format!(
                        "--input {name}: {path}: value {x} is not an exact {}",
                        decl.value.name()
                    )
                })?;
                entries.push((c.to_vec(), v));
            }
            (coo.shape.clone(), entries)
        }
        None => {
            let shape = decl
                .shape
                .iter()
                .map(|d| {
                    d.ok_or_else(|| {
                        format!("`{name}` has a dynamic size (?) and no --input to take it from")
                    })
                })
                .collect::<Result<Vec<usize>, String>>()?;
            (shape, Vec::new())
        }
    };
    // duplicates summed
    let mut entries = entries;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut merged: Entries<S::Compute> = Vec::with_capacity(entries.len());
    for (c, v) in entries {
        match merged.last_mut() {
            Some((lc, lv)) if *lc == c => *lv += v,
            _ => merged.push((c, v)),
        }
    }
    // a sum of duplicates is stored in the tensor's own type
    for (_, v) in &mut merged {
        *v = S::narrow(*v).widen();
    }
    Ok((shape, merged))
}

/// Tensor `decl` of shape `shape` holding `merged` (sorted, no duplicates) as an operand: dense
/// values, or stored in its format (a slice: in its parent's format, which the input holds).
fn build<V: Value>(
    decl: &TensorDecl,
    shape: Vec<usize>,
    merged: Entries<V>,
    has_input: bool,
) -> Result<Operand<V>, String> {
    let name = &decl.name;
    match &decl.encoding {
        None => {
            let n = shape
                .iter()
                .try_fold(1usize, |a, &s| a.checked_mul(s))
                .ok_or_else(|| format!("`{name}`: the shape overflows"))?;
            let mut values = Vec::new();
            values
                .try_reserve_exact(n)
                .map_err(|_| format!("cannot allocate `{name}`: {n} values"))?;
            values.resize(n, V::zero());
            for (c, v) in merged {
                let at = c.iter().zip(&shape).fold(0, |a, (c, s)| a * s + c);
                values[at] += v;
            }
            Ok(Operand::Dense { shape, values })
        }
        Some(enc) => {
            let mut coo = CooTensor::new(shape);
            for (c, v) in &merged {
                coo.push(c, *v);
            }
            if enc.dim_slices.is_some() {
                if !has_input {
                    return Err(format!(
                        "`{name}` is a slice: give its parent tensor with --input {name}=FILE"
                    ));
                }
                let mut plain = (**enc).clone();
                plain.dim_slices = None;
                // Removing the slices keeps every rule of a verified encoding.
                let plain = plain.verify().map_err(|errs| {
                    let first = errs.first().map_or("invalid", |e| e.message.as_str());
                    format!("`{name}`'s parent format: {first}")
                })?;
                let parent = DynamicStorage::from_coo(&plain, &coo)
                    .map_err(|e| format!("cannot store `{name}`'s parent in its format: {e}"))?;
                return Operand::slice(parent, enc).map_err(|e| format!("`{name}`: {e}"));
            }
            DynamicStorage::from_coo(enc, &coo)
                .map(|s| Operand::Storage(Box::new(s)))
                .map_err(|e| format!("cannot store `{name}` in its format: {e}"))
        }
    }
}

/// The `--input` value given for tensor `name`, if any.
fn input_of<'a>(inputs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    inputs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// Errors with `--input NAME: ...` for an input naming no tensor of the statement.
fn check_inputs(p: &Program, inputs: &[(String, String)]) -> Result<(), String> {
    for (n, _) in inputs {
        if !p.kernel.tensors.iter().any(|t| &t.name == n) {
            return Err(format!(
                "--input {n}: `{n}` does not appear in the statement"
            ));
        }
    }
    Ok(())
}

/// Runs `p` on tensors of `S` values (computed in `S::Compute`) and prints the output.
fn typed<S: Stored>(
    p: &Program,
    inputs: &[(String, String)],
    dense_print: bool,
) -> Result<String, String> {
    check_inputs(p, inputs)?;
    let mut ops = Vec::new();
    for t in &p.kernel.tensors[..p.inputs()] {
        let input = input_of(inputs, &t.name);
        ops.push(operand::<S>(t, input)?);
    }
    let out = run(p, &ops).map_err(|e| e.to_string())?;
    output_text(out, dense_print, |v: S::Compute| Text(S::narrow(v).text()))
}

/// The printed output: a sparse one in the `sparse_tensor.print` form, or with `dense_print`
/// (and a dense one) in the `vector.print` form, each value printed by `text`.
fn output_text<C: Value>(
    out: Output<C>,
    dense_print: bool,
    text: impl Fn(C) -> Text,
) -> Result<String, String> {
    Ok(match out {
        Output::Sparse(s) if !dense_print => s.map_values(text).to_string(),
        Output::Sparse(s) => {
            let values = s.to_dense().map_err(|e| e.to_string())?;
            let values: Vec<Text> = values.into_iter().map(text).collect();
            dense_text(s.shape(), &values)
        }
        Output::Dense { shape, values } => {
            let values: Vec<Text> = values.into_iter().map(text).collect();
            dense_text(&shape, &values)
        }
    })
}

/// Runs `p`, whose tensors are `f32` and quantized (expressed in `f32`; `quants` holds their
/// types by name), in `f32` and prints the output.
///
/// A quantized operand is quantized once as it is read (StableHLO's `uniform_quantize`: the
/// file's values are the expressed values, duplicates summed in `f32`, divided by the scale,
/// shifted by the zero point, clamped to the storage range and rounded half to even) and the
/// kernel reads the dequantized value of each stored integer (`scale * (q - zero_point)`);
/// a missing entry is a real 0 (the stored zero point). A quantized output is quantized once,
/// at the end, and printed as its stored integers (a dense print of a sparse output shows the
/// zero point where nothing is stored); an `f32` output prints its `f32` values.
fn quantized(
    p: &Program,
    inputs: &[(String, String)],
    quants: &[(String, QuantizedType)],
    dense_print: bool,
) -> Result<String, String> {
    check_inputs(p, inputs)?;
    let quant_of = |t: &TensorDecl| {
        quants
            .iter()
            .find(|(n, _)| *n == t.name)
            .map(|(_, q)| q)
            .filter(|_| t.value.is_quantized())
    };
    let mut ops = Vec::new();
    for t in &p.kernel.tensors[..p.inputs()] {
        let input = input_of(inputs, &t.name);
        let (shape, mut merged) = entries::<f32>(t, input)?;
        if let Some(q) = quant_of(t) {
            let qz = quantization(&t.name, q, &shape)?;
            for (c, v) in &mut merged {
                let stored = qz.quantize_at(*v, c);
                *v = qz
                    .dequantize_at(stored, c)
                    .map_err(|e| format!("--tensor {}: {e}", t.name))?;
            }
        }
        ops.push(build(t, shape, merged, input.is_some())?);
    }
    let out_t = &p.kernel.tensors[p.kernel.output.tensor];
    let out = run(p, &ops).map_err(|e| e.to_string())?;
    let Some(q) = quant_of(out_t) else {
        return output_text(out, dense_print, |v: f32| Text(v.to_string()));
    };
    Ok(match out {
        Output::Sparse(s) if !dense_print => {
            let qz = quantization(&out_t.name, q, s.shape())?;
            // each stored value with the dimension coordinates of its position (a per-axis
            // type picks its pair by them); a position no entry reaches (padding) holds a
            // real 0 and takes the first pair
            let mut coords: Vec<Vec<usize>> = vec![Vec::new(); s.values().len()];
            if qz.axis.is_some() {
                let mut k = 0;
                let positions = (*s).clone().map_values(|_| {
                    k += 1;
                    k - 1
                });
                for (c, &p) in positions.iter() {
                    coords[p] = c;
                }
            }
            let mut k = 0;
            s.map_values(|v| {
                k += 1;
                qz.quantize_at(v, &coords[k - 1])
            })
            .to_string()
        }
        Output::Sparse(s) => {
            let qz = quantization(&out_t.name, q, s.shape())?;
            let values = s.to_dense().map_err(|e| e.to_string())?;
            dense_text(s.shape(), &qz.quantize(&values))
        }
        Output::Dense { shape, values } => {
            let qz = quantization(&out_t.name, q, &shape)?;
            dense_text(&shape, &qz.quantize(&values))
        }
    })
}

/// MLIR's `vector.print` form: `( ( 46, 115 ), ( 0, 0 ) )`; 0-d: the number alone.
fn dense_text<V: std::fmt::Display>(shape: &[usize], values: &[V]) -> String {
    fn rec<V: std::fmt::Display>(out: &mut String, shape: &[usize], values: &[V]) {
        match shape.split_first() {
            None => out.push_str(&values.first().map(|v| v.to_string()).unwrap_or_default()),
            Some((0, _)) => out.push_str("( )"),
            Some((&n, rest)) => {
                let chunk: usize = rest.iter().product();
                out.push_str("( ");
                for i in 0..n {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    rec(out, rest, &values[i * chunk..(i + 1) * chunk]);
                }
                out.push_str(" )");
            }
        }
    }
    let mut out = String::new();
    rec(&mut out, shape, values);
    out.push('\n');
    out
}

/// Writes `text` to standard output (for [`eval`]).
pub fn stdout_text(text: &str) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(format!("cannot write to standard output: {e}")),
    }
}
