//! `sparse compressed check FILE.json`: PyTorch's compressed sparse arguments, checked as
//! `torch.sparse_compressed_tensor` checks them (issue 11's contract).
//!
//! FILE holds `{"layout": L, "compressed_indices": A, "plain_indices": A, "values": A, "size":
//! [d, ...] | null}`, L one of `sparse_csr sparse_csc sparse_bsr sparse_bsc`. An array A is
//! `{"data": D, "dtype": T, "shape": [..], "strides": [..]}`: D nested lists, row-major (a bare
//! number if 0-d; `null` for values only, with "shape"), T a PyTorch dtype name, "shape"
//! optional (agreeing with D; needed where D cannot show it, a 0-length dimension before
//! others), "strides" optional, in elements (default contiguous). Index data are integers.
//!
//! Valid: `ok: L size=[..] batch=[..] blocksize=[..] dense=[..] nnz=N` (+ ` (size
//! estimated)`), exit 0. A violated invariant: `error: invariant N.M: MESSAGE`, exit 1 (the
//! checks and their order: `sparse_runtime::torch::validate_compressed`). A malformed FILE (bad
//! JSON, unknown layout or dtype, missing member, ragged D, shape or strides disagreeing with
//! D): `error: FILE: MESSAGE`, exit 1.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde_json::Value;
use sparse_runtime::torch::{
    format_list, validate_compressed, CompressedArgs, CompressedLayout, IndexTensor, TensorMeta,
    TorchDtype,
};

use crate::input;

/// The subcommands of `sparse compressed`.
#[derive(Subcommand)]
pub enum Command {
    /// Check the arguments of `torch.sparse_compressed_tensor` (JSON) in PyTorch's order; print
    /// `ok: L size=[..] batch=[..] blocksize=[..] dense=[..] nnz=N` or the first violated
    /// invariant.
    Check {
        /// `{"layout", "compressed_indices", "plain_indices", "values", "size"}`; `-` reads
        /// standard input.
        file: PathBuf,
    },
}

/// Runs a `sparse compressed` subcommand; the error is the message after `error: `.
pub fn run(command: Command) -> Result<(), String> {
    match command {
        Command::Check { file } => {
            let line = check(&file)?;
            crate::write_stdout(|w| writeln!(w, "{line}"))
        }
    }
}

/// The output line for FILE, or the error message.
fn check(file: &Path) -> Result<String, String> {
    let name = input::name(file);
    let malformed = |msg: String| format!("{name}: {msg}");
    let text = if input::is_stdin(file) {
        input::read_text(file).map_err(&malformed)?
    } else {
        std::fs::read_to_string(file).map_err(|e| malformed(format!("cannot read: {e}")))?
    };
    let json: Value = serde_json::from_str(&text).map_err(|e| malformed(e.to_string()))?;
    let args = read_args(&json).map_err(malformed)?;
    let s = validate_compressed(&args).map_err(|e| e.to_string())?;
    Ok(format!(
        "ok: {} size={} batch={} blocksize={} dense={} nnz={}{}",
        s.layout.name(),
        format_list(&s.size),
        format_list(&s.batch),
        format_list(&s.blocksize),
        format_list(&s.dense),
        s.nnz,
        if s.size_estimated {
            " (size estimated)"
        } else {
            ""
        }
    ))
}

fn member<'a>(
    obj: &'a serde_json::Map<String, Value>,
    key: &str,
    of: &str,
) -> Result<&'a Value, String> {
    obj.get(key)
        .ok_or_else(|| format!("missing member \"{key}\"{of}"))
}

/// The arguments in FILE's JSON.
fn read_args(json: &Value) -> Result<CompressedArgs, String> {
    let obj = json.as_object().ok_or(
        "expected a JSON object with layout, compressed_indices, plain_indices, values, size",
    )?;
    let layout_name = member(obj, "layout", "")?
        .as_str()
        .ok_or("\"layout\" must be a string")?;
    let layout = CompressedLayout::from_name(layout_name).ok_or_else(|| {
        format!(
            "unknown layout \"{layout_name}\" (expected one of sparse_csr, sparse_csc, \
             sparse_bsr, sparse_bsc)"
        )
    })?;
    let cname = layout.compressed_indices_name();
    let pname = layout.plain_indices_name();
    let compressed_indices = read_index(member(obj, "compressed_indices", "")?, cname)?;
    let plain_indices = read_index(member(obj, "plain_indices", "")?, pname)?;
    let values = read_values(member(obj, "values", "")?)?;
    let size = match member(obj, "size", "")? {
        Value::Null => None,
        Value::Array(items) => Some(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_u64()
                        .and_then(|n| usize::try_from(n).ok())
                        .ok_or_else(|| format!("size[{i}] = {v} is not a non-negative integer"))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        other => {
            return Err(format!(
                "\"size\" must be a list of integers or null, not {other}"
            ))
        }
    };
    Ok(CompressedArgs {
        layout,
        compressed_indices,
        plain_indices,
        values,
        size,
    })
}

/// dtype, optional shape and optional strides of array member `name`.
struct ArrayHeader<'a> {
    dtype: TorchDtype,
    shape: Option<Vec<usize>>,
    strides: Option<Vec<i64>>,
    data: &'a Value,
}

fn read_header<'a>(v: &'a Value, name: &str) -> Result<ArrayHeader<'a>, String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("{name} must be an object {{\"data\", \"dtype\", ...}}"))?;
    let of = format!(" in {name}");
    let dtype_name = member(obj, "dtype", &of)?
        .as_str()
        .ok_or_else(|| format!("{name}.dtype must be a string"))?;
    let dtype = TorchDtype::from_name(dtype_name).ok_or_else(|| {
        let known: Vec<&str> = TorchDtype::ALL.iter().map(|d| d.name()).collect();
        format!(
            "{name}: unknown dtype \"{dtype_name}\" (expected one of {})",
            known.join(" ")
        )
    })?;
    let data = member(obj, "data", &of)?;
    let ints = |key: &str| -> Result<Option<Vec<i64>>, String> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    x.as_i64()
                        .ok_or_else(|| format!("{name}.{key}[{i}] = {x} is not an integer"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(format!(
                "{name}.{key} must be a list of integers, not {other}"
            )),
        }
    };
    let shape = match ints("shape")? {
        None => None,
        Some(s) => Some(
            s.iter()
                .enumerate()
                .map(|(i, &d)| {
                    usize::try_from(d).map_err(|_| format!("{name}.shape[{i}] = {d} is negative"))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    let strides = ints("strides")?;
    Ok(ArrayHeader {
        dtype,
        shape,
        strides,
        data,
    })
}

/// The shape D shows, checked not ragged; `leaf(value, depth)` says whether a value is an
/// element (else it must be a list).
fn data_shape(
    d: &Value,
    name: &str,
    leaf: &dyn Fn(&Value, usize) -> bool,
) -> Result<Vec<usize>, String> {
    fn walk(
        d: &Value,
        depth: usize,
        path: &mut Vec<usize>,
        name: &str,
        leaf: &dyn Fn(&Value, usize) -> bool,
    ) -> Result<Vec<usize>, String> {
        if leaf(d, depth) {
            return Ok(vec![]);
        }
        let Value::Array(items) = d else {
            return Err(format!(
                "{name}.data{} = {d} is not an element or a list",
                at(path)
            ));
        };
        let mut shape: Option<Vec<usize>> = None;
        for (i, item) in items.iter().enumerate() {
            path.push(i);
            let s = walk(item, depth + 1, path, name, leaf)?;
            path.pop();
            match &shape {
                None => shape = Some(s),
                Some(first) if *first != s => {
                    return Err(format!(
                        "{name}.data is ragged: {name}.data{} has shape {} but {name}.data{} \
                         has shape {}",
                        at(&[path.as_slice(), &[0]].concat()),
                        format_list(first),
                        at(&[path.as_slice(), &[i]].concat()),
                        format_list(&s)
                    ))
                }
                Some(_) => {}
            }
        }
        let mut out = vec![items.len()];
        out.extend(shape.unwrap_or_default());
        Ok(out)
    }
    walk(d, 0, &mut Vec::new(), name, leaf)
}

fn at(path: &[usize]) -> String {
    path.iter().map(|i| format!("[{i}]")).collect()
}

/// The shape of an array: D's, checked against the given one. D with a 0-length dimension
/// shows only the dimensions up to it; the given shape may continue past it.
fn agree(shown: Vec<usize>, given: Option<Vec<usize>>, name: &str) -> Result<Vec<usize>, String> {
    let Some(given) = given else {
        return Ok(shown);
    };
    let prefix_ok =
        shown.last() == Some(&0) && given.len() >= shown.len() && given[..shown.len()] == shown[..];
    if given == shown || prefix_ok {
        Ok(given)
    } else {
        Err(format!(
            "{name}.shape = {} disagrees with its data, which has shape {}",
            format_list(&given),
            format_list(&shown)
        ))
    }
}

fn strides_for(strides: Option<Vec<i64>>, shape: &[usize], name: &str) -> Result<Vec<i64>, String> {
    match strides {
        None => Ok(TensorMeta::contiguous_strides(shape)),
        Some(s) if s.len() == shape.len() => Ok(s),
        Some(s) => Err(format!(
            "{name}.strides has {} entries but {name} has {} dimensions",
            s.len(),
            shape.len()
        )),
    }
}

/// An index member: integer data.
fn read_index(v: &Value, name: &str) -> Result<IndexTensor, String> {
    let h = read_header(v, name)?;
    if h.data.is_null() {
        return Err(format!("{name}.data is null: index data must be listed"));
    }
    let shown = data_shape(h.data, name, &|x, _| !x.is_array())?;
    let shape = agree(shown, h.shape, name)?;
    let strides = strides_for(h.strides, &shape, name)?;
    let mut data = Vec::new();
    let mut err = None;
    flatten(h.data, &mut |x| {
        if err.is_some() {
            return;
        }
        match x.as_i64() {
            Some(n) => {
                if let Some((lo, hi)) = h.dtype.integer_range() {
                    if n < lo || n > hi {
                        err = Some(format!(
                            "{name}: element {} = {n} does not fit {}",
                            data.len(),
                            h.dtype
                        ));
                    }
                }
                data.push(n);
            }
            None => {
                err = Some(format!(
                    "{name}: element {} = {x} is not an integer (index data are integers)",
                    data.len()
                ))
            }
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    Ok(IndexTensor {
        meta: TensorMeta {
            dtype: h.dtype,
            shape,
            strides,
        },
        data,
    })
}

fn flatten(v: &Value, f: &mut dyn FnMut(&Value)) {
    match v {
        Value::Array(items) => items.iter().for_each(|x| flatten(x, f)),
        x => f(x),
    }
}

/// The values member: only its metadata matters to the checks.
fn read_values(v: &Value) -> Result<TensorMeta, String> {
    let name = "values";
    let h = read_header(v, name)?;
    let shape = if h.data.is_null() {
        h.shape
            .ok_or("values.data is null, so values.shape is needed")?
    } else {
        let complex = h.dtype.is_complex();
        let rank = h.shape.as_ref().map(Vec::len);
        // a complex element may be written [re, im] where the given shape says it is an element
        let leaf = move |x: &Value, depth: usize| match x {
            Value::Array(items) => {
                complex
                    && rank == Some(depth)
                    && items.len() == 2
                    && items.iter().all(Value::is_number)
            }
            Value::Number(_) | Value::Bool(_) | Value::String(_) | Value::Object(_) => true,
            Value::Null => true,
        };
        let shown = data_shape(h.data, name, &leaf)?;
        agree(shown, h.shape, name)?
    };
    let strides = strides_for(h.strides, &shape, name)?;
    Ok(TensorMeta {
        dtype: h.dtype,
        shape,
        strides,
    })
}
