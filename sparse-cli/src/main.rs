//! The `sparse` command line: check encodings, inspect storage, run SpMV, expand generated code.
//!
//! Contract: `../shared/conformance/README.md`.
//!
//! Conventions: a file argument `-` (and `--encoding @-`) reads standard input, at most once per
//! command; errors go to stderr as `error: ...` naming the file (encoding errors as
//! `FILE:LINE:COL: MESSAGE` with the source line and a caret, see `render.rs`), except
//! `check`, whose contract lines go to stdout; nothing aborts or panics, whatever the input (a
//! huge declared shape is an allocation error, a closed stdout ends the output).

mod advise;
mod compressed;
mod eval;
mod input;
mod quant;
mod render;
mod sparsecore;
mod summary;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use quote::format_ident;
use sparse_dsl::codegen::{expand_to_string, Declaration};
use sparse_dsl::parse::{parse_declaration, parse_encoding, Declared, ParsedEncoding};
use sparse_runtime::frostt::{read_frostt, TnsError};
use sparse_runtime::mmio::{parse_matrix_market, read_matrix_market, MmError};
use sparse_runtime::DynamicStorage;

#[derive(Parser)]
#[command(
    name = "sparse",
    version,
    about = "Sparse tensor formats from MLIR's encoding language"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Verify the encoding in FILE; print `ok: <canonical form>` or one `error: LINE:COL: MESSAGE` per problem.
    Check {
        /// A file holding one encoding (`#Name = ` prefix and `//` comments allowed); `-` reads
        /// standard input.
        file: PathBuf,
    },
    /// Build the storage of a tensor in an encoding and print it as `sparse_tensor.print` does.
    Inspect {
        /// The encoding: `@FILE` (`@-`: standard input) or the encoding text itself.
        #[arg(long)]
        encoding: String,
        /// The tensor: a Matrix Market matrix (`.mtx`, coordinate format) or a FROSTT tensor
        /// (`.tns`, any order; its shape is the largest coordinate per mode unless `--shape`),
        /// or a SciPy sparse matrix (`.npz` from `scipy.sparse.save_npz`: CSR, CSC, COO, BSR);
        /// `-` reads a Matrix Market matrix from standard input.
        matrix: PathBuf,
        /// Dimension sizes for a `.tns` tensor, comma-separated (e.g. `10,10,10`).
        #[arg(long, value_delimiter = ',')]
        shape: Option<Vec<usize>>,
        /// Print nse, the shapes and each array's length, element type and bytes (one line
        /// each, e.g. `crd[1] : 290378 x u32 = 1161512 bytes`) instead of every element.
        #[arg(long)]
        summary: bool,
    },
    /// Compute y = A·x for a Matrix Market matrix stored in an encoding; print y, one value per line.
    Spmv {
        /// The encoding: `@FILE` (`@-`: standard input) or the encoding text itself.
        #[arg(long)]
        encoding: String,
        /// The matrix (`.mtx`, coordinate format); `-` reads it from standard input.
        matrix: PathBuf,
        /// x, one number per column: a file holding the numbers, `-` (standard input), or the
        /// numbers themselves; separated by whitespace and/or commas (e.g. `--x 1,2,0.5`).
        /// Default: `x[j] = 1 + (j % 7)`.
        #[arg(long, allow_hyphen_values = true, value_name = "FILE|-|NUMBERS")]
        x: Option<String>,
    },
    /// Print the encoding (or tensor type) in FILE in MLIR's canonical form.
    Fmt {
        /// A file holding one encoding or tensor type; `-` reads standard input.
        file: PathBuf,
        /// Multi-line form.
        #[arg(long)]
        pretty: bool,
    },
    /// Print the Rust code `sparse_format!` generates for the encoding in FILE.
    Expand {
        /// A file holding one encoding (the alias, if any, names the struct); `-` reads standard
        /// input.
        file: PathBuf,
    },
    /// Run a kernel in TACO index notation through the sparsifier's interpreter; print the
    /// left-hand tensor (`sparse_tensor.print` form if sparse, `vector.print` form if dense).
    ///
    /// Value types: f64, f32, f16, bf16, i64, i32, i16, i8, ui64, ui32, ui16, ui8, i1,
    /// complex<f32>, complex<f64>, one type for every tensor of the statement; f16 and bf16
    /// compute in f32, 8- and 16-bit integers in i32; integers wrap. i1 holds 0 and 1 (a file
    /// value other than 0 or 1 is an error), computes modulo 2 (+, - and ^ are exclusive or, *
    /// and & are and, | is or, min and max are and and or) and prints 1 or 0.
    ///
    /// Uniform quantized types expressed in f32: `!quant.uniform<i8:f32, 0.01:50>` (per tensor:
    /// scale 0.01, zero point 50), `!quant.uniform<i8:f32:1, {0.2:20, 0.1:10}>` (per axis: one
    /// scale:zero_point per slice along dimension 1), with an optional storage range
    /// (`i8<-100:100>`); they mix with f32 tensors in one statement. An input holds the real
    /// values, quantized once as it is read (StableHLO's uniform_quantize: value / scale +
    /// zero point, clamped to the storage range, rounded half to even; duplicates summed
    /// first); a missing entry is a real 0 (the zero point stored). The kernel computes in f32
    /// on the dequantized values, scale * (stored - zero point). A quantized output is
    /// quantized once, at the end, and printed as its stored integers: the storage's values,
    /// and with --print dense every element (the zero point where nothing is stored); an f32
    /// output prints its f32 values.
    Eval(eval::EvalArgs),
    /// PyTorch's compressed sparse layouts: check `torch.sparse_compressed_tensor` arguments
    /// (JSON) in PyTorch's order.
    #[command(arg_required_else_help = false)]
    Compressed {
        #[command(subcommand)]
        command: compressed::Command,
    },
    /// Uniform quantized values with StableHLO's semantics: quantize, dequantize, requantize.
    #[command(arg_required_else_help = false)]
    Quant {
        #[command(subcommand)]
        command: quant::Command,
    },
    /// Measure the candidate formats for a matrix on this machine (CSR at the narrowest widths,
    /// BSR, ELL, 2:4, DCSR as its structure suggests); print a table and the fastest's encoding.
    Advise(advise::AdviseArgs),
    /// SparseCore: host preprocessing as jax-tpu-embedding does it, minibatch splits (JSON).
    #[command(arg_required_else_help = false)]
    Sparsecore {
        #[command(subcommand)]
        command: sparsecore::Command,
    },
}

fn main() -> ExitCode {
    // A usage error exits 1 like every other error (the issues' contracts: `error: MESSAGE`,
    // exit status 1); `--help` and `--version` print and exit 0.
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 1 } else { 0 };
            // clap renders `error: ...` with its usage; a failure to print is ignored.
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    if let Err(msg) = stdin_once(&cli.command) {
        report(&msg);
        return ExitCode::FAILURE;
    }
    let result = match cli.command {
        Command::Check { file } => return check(&file),
        Command::Inspect {
            encoding,
            matrix,
            shape,
            summary,
        } => inspect(&encoding, &matrix, shape.as_deref(), summary),
        Command::Spmv {
            encoding,
            matrix,
            x,
        } => spmv(&encoding, &matrix, x.as_deref()),
        Command::Fmt { file, pretty } => fmt(&file, pretty),
        Command::Expand { file } => expand(&file),
        Command::Eval(args) => eval::eval(&args, eval::stdout_text),
        Command::Compressed { command } => compressed::run(command),
        Command::Quant { command } => quant::run(command),
        Command::Sparsecore { command } => sparsecore::run(command),
        Command::Advise(args) => advise::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            report(&msg);
            ExitCode::FAILURE
        }
    }
}

/// Prints `error: MSG` on standard error (a failure to write it is ignored: there is nowhere
/// left to report it).
fn report(msg: &str) {
    let _ = writeln!(std::io::stderr().lock(), "error: {msg}");
}

/// Runs `f` on standard output, buffered. A reader that stops early (`sparse ... | head`) ends
/// the output quietly, as a success; any other write error is an error naming standard output.
fn write_stdout(f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), String> {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match f(&mut out).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(format!("cannot write to standard output: {e}")),
    }
}

/// At most one input of `command` may read standard input.
fn stdin_once(command: &Command) -> Result<(), String> {
    let (encoding, matrix, x) = match command {
        Command::Inspect {
            encoding, matrix, ..
        } => (encoding, matrix, None),
        Command::Spmv {
            encoding,
            matrix,
            x,
        } => (encoding, matrix, x.as_deref()),
        _ => return Ok(()),
    };
    let mut uses = Vec::new();
    if encoding == "@-" {
        uses.push("--encoding @-");
    }
    if input::is_stdin(matrix) {
        uses.push("the matrix -");
    }
    if x == Some("-") {
        uses.push("--x -");
    }
    input::stdin_once(&uses)
}

fn check(file: &std::path::Path) -> ExitCode {
    let text = match input::read_text(file) {
        Ok(t) => t,
        Err(e) => return check_verdict(&format!("error: {e}\n"), ExitCode::FAILURE),
    };
    match parse_declaration(&text) {
        Ok(p) => {
            let out = match p.declared {
                Declared::Encoding(e) => format!("ok: {e}\n"),
                Declared::Tensor(t) => format!("ok: {t}\n"),
            };
            check_verdict(&out, ExitCode::SUCCESS)
        }
        Err(diags) => {
            // The contract's lines on stdout; the same problems with the file name, the source
            // line and a caret on stderr.
            let out: String = diags.iter().map(|d| format!("error: {d}\n")).collect();
            let code = check_verdict(&out, ExitCode::FAILURE);
            report(&render::render_all(&input::name(file), &text, &diags));
            code
        }
    }
}

/// Prints `out` (the lines of `check`) and returns `verdict`, or failure if they could not be
/// written.
fn check_verdict(out: &str, verdict: ExitCode) -> ExitCode {
    match write_stdout(|w| w.write_all(out.as_bytes())) {
        Ok(()) => verdict,
        Err(e) => {
            report(&e);
            ExitCode::FAILURE
        }
    }
}

/// Parses `--encoding`: `@FILE` or the text itself.
fn load_encoding(arg: &str) -> Result<ParsedEncoding, String> {
    if arg == "@" {
        return Err("--encoding @ names no file (write @FILE, or @- for standard input)".into());
    }
    let (name, text) = match arg.strip_prefix('@') {
        Some(path) => (input::name(path.as_ref()), input::read_text(path.as_ref())?),
        None => ("<--encoding>".to_string(), arg.to_string()),
    };
    parse_encoding(&text).map_err(|diags| {
        let mut msg = render::render_all(&name, &text, &diags);
        if !arg.starts_with('@') && std::path::Path::new(arg).is_file() {
            msg.push_str(&format!(
                "\nhelp: did you mean @{arg}? (--encoding takes @FILE or the encoding text; \
                 the file {arg} exists)"
            ));
        }
        msg
    })
}

fn build(
    encoding: &str,
    matrix: &std::path::Path,
    shape: Option<&[usize]>,
) -> Result<DynamicStorage<f64>, String> {
    let enc = load_encoding(encoding)?;
    if enc.encoding.dim_slices.is_some() {
        return Err("the encoding has dimension slices, so it is a view of a parent tensor, not a storage: inspect the parent encoding (the same without slices)".into());
    }
    let tensor = if input::is_stdin(matrix) {
        parse_matrix_market(std::io::stdin().lock())
            .map_err(|e| format!("{}: {e}", input::STDIN))?
            .tensor
    } else if matrix
        .extension()
        .is_some_and(|x| x.eq_ignore_ascii_case("npz"))
    {
        // SciPy's save_npz (CSR, CSC, COO, BSR); its message names the path
        sparse_runtime::npz::read_npz(matrix)
            .map_err(|e| e.to_string())?
            .1
    } else if matrix
        .extension()
        .is_some_and(|x| x.eq_ignore_ascii_case("tns"))
    {
        read_frostt(matrix, shape).map_err(|e| match e {
            // Its message names the path already.
            TnsError::Open { .. } => e.to_string(),
            _ => format!("{}: {e}", matrix.display()),
        })?
    } else {
        read_matrix_market(matrix)
            .map_err(|e| match e {
                MmError::Open { .. } => e.to_string(),
                _ => format!("{}: {e}", matrix.display()),
            })?
            .tensor
    };
    DynamicStorage::from_coo(&enc.encoding, &tensor).map_err(|e| {
        let shape: Vec<String> = tensor.shape.iter().map(|n| n.to_string()).collect();
        let of = match encoding.strip_prefix('@') {
            Some(path) => format!(" of {}", input::name(path.as_ref())),
            None => String::new(),
        };
        format!(
            "cannot store {} ({}) in the encoding{of}: {e}",
            input::name(matrix),
            shape.join(" x ")
        )
    })
}

fn inspect(
    encoding: &str,
    matrix: &std::path::Path,
    shape: Option<&[usize]>,
    summary: bool,
) -> Result<(), String> {
    let s = build(encoding, matrix, shape)?;
    write_stdout(|w| {
        if summary {
            w.write_all(summary::summary(&s).as_bytes())
        } else {
            write!(w, "{s}")
        }
    })
}

/// Shortest round-trip text of `v`, in scientific form when the plain form would be long.
fn fmt_value(v: f64) -> String {
    let a = v.abs();
    if a != 0.0 && a.is_finite() && !(1e-5..1e16).contains(&a) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

fn spmv(encoding: &str, matrix: &std::path::Path, x_arg: Option<&str>) -> Result<(), String> {
    let s = build(encoding, matrix, None)?;
    let shape = s.shape().to_vec();
    if shape.len() != 2 {
        return Err(format!(
            "spmv needs a matrix, the encoding has {} dimensions",
            shape.len()
        ));
    }
    let (rows, cols) = (shape[0], shape[1]);
    let name = input::name(matrix);
    let x: Vec<f64> = match x_arg {
        None => {
            let mut x = alloc("x", cols, || {
                format!("one per column of {name} ({rows} x {cols})")
            })?;
            x.extend((0..cols).map(|j| 1.0 + (j % 7) as f64));
            x
        }
        Some(arg) => {
            let (x, from) = read_x(arg)?;
            if x.len() != cols {
                return Err(format!(
                    "{from} holds {}, but {name} is {rows} x {cols}: x needs {cols}, one per column",
                    count(x.len(), "number")
                ));
            }
            x
        }
    };
    let mut y = alloc("y", rows, || {
        format!("one per row of {name} ({rows} x {cols})")
    })?;
    y.resize(rows, 0.0);
    s.spmv(&x, &mut y).map_err(|e| e.to_string())?;
    write_stdout(|w| {
        for v in y {
            writeln!(w, "{}", fmt_value(v))?;
        }
        Ok(())
    })
}

/// The numbers of `--x`: the file it names if it exists, standard input for `-`, else the
/// value itself; numbers separated by whitespace and/or commas. Also returns how messages name
/// them: `--x FILE`, `--x -` or `--x`.
fn read_x(arg: &str) -> Result<(Vec<f64>, String), String> {
    let path = std::path::Path::new(arg);
    let inline = arg != "-" && !path.exists();
    let (text, from) = if inline {
        (arg.to_string(), "--x".to_string())
    } else {
        (input::read_text(path)?, format!("--x {arg}"))
    };
    let words: Vec<&str> = text
        .split(|c: char| c == ',' || c.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .collect();
    let mut x = Vec::new();
    for (k, w) in words.iter().enumerate() {
        match w.parse::<f64>() {
            Ok(v) => x.push(v),
            // A single word that is not a number was most likely meant as a file.
            Err(_) if inline && words.len() == 1 => {
                return Err(format!(
                    "--x {arg}: no such file, and not a list of numbers"
                ))
            }
            Err(_) if inline => return Err(format!("--x: x[{k}] = '{w}' is not a number")),
            Err(_) => {
                let name = input::name(path);
                return Err(format!("{name}: x[{k}] = '{w}' is not a number"));
            }
        }
    }
    Ok((x, from))
}

/// An empty vector with room for `n` values, or an error naming `what` and the size: a small file
/// may declare a huge shape, and the allocation must fail as an error, not abort the process.
fn alloc(what: &str, n: usize, why: impl FnOnce() -> String) -> Result<Vec<f64>, String> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        let bytes = n as u128 * std::mem::size_of::<f64>() as u128;
        format!(
            "cannot allocate {what}: {n} values of f64 ({bytes} bytes), {}",
            why()
        )
    })?;
    Ok(v)
}

/// `1 number`, `2 numbers`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn fmt(file: &std::path::Path, pretty: bool) -> Result<(), String> {
    let text = input::read_text(file)?;
    let name = input::name(file);
    let parsed =
        parse_declaration(&text).map_err(|diags| render::render_all(&name, &text, &diags))?;
    let mut body = match &parsed.declared {
        Declared::Encoding(e) if pretty => e.to_pretty_string(),
        Declared::Encoding(e) => e.to_string(),
        Declared::Tensor(t) => t.to_string(),
    };
    if let Some(c) = parsed.sparsecore {
        body = format!("{body} {c}");
    }
    write_stdout(|w| match parsed.alias {
        Some(a) => writeln!(w, "#{a} = {body}"),
        None => writeln!(w, "{body}"),
    })
}

fn expand(file: &std::path::Path) -> Result<(), String> {
    let text = input::read_text(file)?;
    let name = input::name(file);
    let parsed =
        parse_declaration(&text).map_err(|diags| render::render_all(&name, &text, &diags))?;
    let name = parsed.alias.clone().unwrap_or_else(|| "Format".into());
    let name = syn::parse_str::<syn::Ident>(&name).unwrap_or_else(|_| format_ident!("Format"));
    let mut decl = Declaration::from_declared(quote::quote!(pub), name, parsed.declared)
        .map_err(|e| e.to_string())?;
    decl.sparsecore = parsed.sparsecore;
    let code =
        expand_to_string(&decl, &quote::quote!(::sparse::runtime)).map_err(|e| e.to_string())?;
    write_stdout(|w| w.write_all(code.as_bytes()))
}
