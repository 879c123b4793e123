//! `sparse quant quantize|dequantize|requantize`: uniform quantized values with StableHLO's
//! semantics (issue 11's contract; the arithmetic is `sparse_runtime::quant`).
//!
//! `sparse quant quantize TYPE VALUES...`, `sparse quant dequantize TYPE INTS...`,
//! `sparse quant requantize FROM_TYPE TO_TYPE INTS...`. TYPE is an MLIR tensor type with a
//! static shape and a `!quant.uniform` element type (per tensor or per axis). One VALUE or INT
//! per element, row-major; an argument starting with `-` is a value, never an option. Output:
//! one line, the results separated by single spaces, in the shortest text that reads back to the
//! same value (integers without a point). Errors: `error: MESSAGE`, exit status 1.

use clap::Subcommand;
use sparse_dsl::parse::{parse_declaration, Declared};
use sparse_dsl::types::{ElementType, FloatKind, QuantizedType};
use sparse_runtime::quant::{float_name, Expressed, Quantization};

/// The subcommands of `sparse quant`.
#[derive(Subcommand)]
pub enum Command {
    /// Quantize expressed values to storage integers:
    /// `round_nearest_even(clamp(storage_min, x / scale + zero_point, storage_max))`.
    Quantize {
        /// A static quantized tensor type, e.g. `tensor<2x3x!quant.uniform<i8:f32, 0.1:-30>>`.
        #[arg(value_name = "TYPE")]
        ty: String,
        /// One value per element, row-major (`-2.5`, `1e-45`, `inf`, `nan`, any case).
        #[arg(allow_hyphen_values = true, trailing_var_arg = true, num_args = 0..)]
        values: Vec<String>,
    },
    /// Dequantize storage integers: `convert(q - zero_point) * scale`.
    Dequantize {
        /// A static quantized tensor type.
        #[arg(value_name = "TYPE")]
        ty: String,
        /// One integer per element, row-major.
        #[arg(allow_hyphen_values = true, trailing_var_arg = true, num_args = 0..)]
        ints: Vec<String>,
    },
    /// Requantize: `quantize(dequantize(q, FROM_TYPE), TO_TYPE)`; the shapes must be equal.
    Requantize {
        /// The type the integers are in.
        #[arg(value_name = "FROM_TYPE")]
        from: String,
        /// The type to requantize to.
        #[arg(value_name = "TO_TYPE")]
        to: String,
        /// One integer per element, row-major.
        #[arg(allow_hyphen_values = true, trailing_var_arg = true, num_args = 0..)]
        ints: Vec<String>,
    },
}

/// Runs a `sparse quant` subcommand; the error is the message after `error: `.
pub fn run(command: Command) -> Result<(), String> {
    let line = match command {
        Command::Quantize { ty, values } => {
            let (shape, q) = quant_type(&ty)?;
            match q.expressed {
                FloatKind::F32 => quantize::<f32>(&q, &shape, &ty, &values)?,
                FloatKind::F64 => quantize::<f64>(&q, &shape, &ty, &values)?,
                other => return Err(expressed_error(other)),
            }
        }
        Command::Dequantize { ty, ints } => {
            let (shape, q) = quant_type(&ty)?;
            let stored = parse_ints(&ints, &shape, &ty)?;
            match q.expressed {
                FloatKind::F32 => join(
                    checked::<f32>(&q, &shape)?
                        .dequantize(&stored)
                        .map_err(err)?,
                ),
                FloatKind::F64 => join(
                    checked::<f64>(&q, &shape)?
                        .dequantize(&stored)
                        .map_err(err)?,
                ),
                other => return Err(expressed_error(other)),
            }
        }
        Command::Requantize { from, to, ints } => {
            let (from_shape, fq) = quant_type(&from)?;
            let (to_shape, tq) = quant_type(&to)?;
            if from_shape != to_shape {
                return Err(format!(
                    "the shapes of FROM_TYPE and TO_TYPE differ: {from_shape:?} vs {to_shape:?}"
                ));
            }
            let stored = parse_ints(&ints, &from_shape, &from)?;
            match (fq.expressed, tq.expressed) {
                (FloatKind::F32, FloatKind::F32) => {
                    requantize::<f32>(&fq, &tq, &from_shape, &stored)?
                }
                (FloatKind::F64, FloatKind::F64) => {
                    requantize::<f64>(&fq, &tq, &from_shape, &stored)?
                }
                (FloatKind::F32 | FloatKind::F64, FloatKind::F32 | FloatKind::F64) => {
                    return Err("FROM_TYPE and TO_TYPE must have the same expressed type".into())
                }
                (FloatKind::F32 | FloatKind::F64, other) | (other, _) => {
                    return Err(expressed_error(other))
                }
            }
        }
    };
    crate::write_stdout(|w| writeln!(w, "{line}"))
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn expressed_error(kind: FloatKind) -> String {
    format!(
        "expressed type {} is not supported (f32 or f64)",
        float_name(kind)
    )
}

/// The static shape and quantized element type of TYPE.
fn quant_type(text: &str) -> Result<(Vec<usize>, QuantizedType), String> {
    let parsed = parse_declaration(text).map_err(|diags| {
        let first = diags.first().map_or("invalid", |d| d.message.as_str());
        format!("cannot parse TYPE `{text}`: {first}")
    })?;
    let Declared::Tensor(t) = parsed.declared else {
        return Err(format!("`{text}` is an encoding, not a tensor type"));
    };
    let ElementType::Quant(q) = &t.element else {
        return Err(format!(
            "`{text}` does not have a quantized element type (!quant.uniform<...>)"
        ));
    };
    let shape = t
        .shape
        .iter()
        .map(|d| d.and_then(|n| usize::try_from(n).ok()))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| format!("`{text}` does not have a static shape"))?;
    Ok((shape, (**q).clone()))
}

fn checked<E: Expressed>(q: &QuantizedType, shape: &[usize]) -> Result<Quantization<E>, String> {
    Quantization::<E>::new(q, shape).map_err(err)
}

fn count(shape: &[usize], got: usize, what: &str, ty: &str) -> Result<(), String> {
    let n = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| format!("`{ty}` has too many elements"))?;
    if n == got {
        Ok(())
    } else {
        Err(format!(
            "`{ty}` has {n} elements, but {got} {what} were given"
        ))
    }
}

fn parse_ints(ints: &[String], shape: &[usize], ty: &str) -> Result<Vec<i64>, String> {
    count(shape, ints.len(), "INTS", ty)?;
    ints.iter()
        .enumerate()
        .map(|(i, s)| {
            s.trim()
                .parse::<i64>()
                .map_err(|_| format!("INT {} `{s}` is not a decimal integer", i + 1))
        })
        .collect()
}

/// Parses VALUES in the expressed type (rounded to nearest from the decimal text).
trait ParseValue: Sized {
    fn parse_value(s: &str) -> Option<Self>;
}

impl ParseValue for f32 {
    fn parse_value(s: &str) -> Option<Self> {
        s.trim().parse().ok()
    }
}

impl ParseValue for f64 {
    fn parse_value(s: &str) -> Option<Self> {
        s.trim().parse().ok()
    }
}

fn quantize<E: Expressed + ParseValue>(
    q: &QuantizedType,
    shape: &[usize],
    ty: &str,
    values: &[String],
) -> Result<String, String> {
    let quant = checked::<E>(q, shape)?;
    count(shape, values.len(), "VALUES", ty)?;
    let xs = values
        .iter()
        .enumerate()
        .map(|(i, s)| {
            E::parse_value(s).ok_or_else(|| format!("VALUE {} `{s}` is not a number", i + 1))
        })
        .collect::<Result<Vec<E>, _>>()?;
    Ok(join_ints(&quant.quantize(&xs)))
}

fn requantize<E: Expressed + Shortest>(
    from: &QuantizedType,
    to: &QuantizedType,
    shape: &[usize],
    stored: &[i64],
) -> Result<String, String> {
    let from = checked::<E>(from, shape)?;
    let to = checked::<E>(to, shape)?;
    let xs = from.dequantize(stored).map_err(err)?;
    Ok(join_ints(&to.quantize(&xs)))
}

fn join_ints(q: &[i64]) -> String {
    q.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The shortest text that reads back to the same value: the shorter of Rust's `Display`
/// (shortest round-trip digits, no exponent) and `LowerExp` forms (`4`, `-0.5014068`, `1e-45`).
trait Shortest {
    fn shortest(&self) -> String;
}

impl<T: std::fmt::Display + std::fmt::LowerExp> Shortest for T {
    fn shortest(&self) -> String {
        let plain = self.to_string();
        let exp = format!("{self:e}");
        if exp.len() < plain.len() {
            exp
        } else {
            plain
        }
    }
}

fn join<E: Shortest>(xs: Vec<E>) -> String {
    xs.iter()
        .map(Shortest::shortest)
        .collect::<Vec<_>>()
        .join(" ")
}
