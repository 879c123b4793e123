//! `inspect --summary`: the shape of a storage and the size of each of its arrays, instead of
//! every element.

use std::fmt::Write;

use sparse_dsl::ir::LevelFormat;
use sparse_runtime::storage::SparseStorage;
use sparse_runtime::IndexView;

/// One line per fact, in the order of `sparse_tensor.print` (`nse`, `dim`, `lvl`, then `pos[l]`
/// before `crd[l]` in level order, values last), each array as `LENGTH x TYPE = BYTES bytes`:
/// ```text
/// nse = 290378
/// dim = ( 4884, 4884 )
/// lvl = ( 4884, 4884 )
/// pos[1] : 4885 x u32 = 19540 bytes
/// crd[1] : 290378 x u32 = 1161512 bytes
/// values : 290378 x f64 = 2323024 bytes
/// total = 3504076 bytes
/// ```
/// TYPE is the element type: `u8` .. `u64` for the `posWidth`/`crdWidth` in bits, `usize` for
/// width 0, `u1`/`u2`/`u4` for packed coordinates (BYTES counts the packed bytes), and the value
/// type. `nse` is what the print shows (per batch with batch levels); lengths are of the whole
/// arrays. A format with `explicitVal` stores no values array: its last line before the total is
/// `values : none (explicitVal = C)`.
pub fn summary<S>(s: &S) -> String
where
    S: SparseStorage + ?Sized,
    S::Value: std::fmt::Display,
{
    let sizes = s.lvl_sizes();
    let batch_levels = s
        .lvl_types()
        .iter()
        .take_while(|t| t.format == LevelFormat::Batch)
        .count()
        .min(sizes.len());
    let batches: usize = sizes[..batch_levels].iter().product();
    let values = s.value_slice();
    let nse = sparse_runtime::storage::stored_entries(s)
        .checked_div(batches)
        .unwrap_or(0);
    let list = |xs: &[usize]| {
        let items: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
        format!("( {} )", items.join(", "))
    };
    let mut out = String::new();
    let mut total = 0u128;
    let mut array = |out: &mut String, name: &str, len: usize, ty: &str, bytes: usize| {
        total += bytes as u128;
        // Writing to a String cannot fail.
        let _ = writeln!(out, "{name} : {len} x {ty} = {bytes} bytes");
    };
    let _ = writeln!(out, "nse = {nse}");
    let _ = writeln!(out, "dim = {}", list(s.dim_shape()));
    let _ = writeln!(out, "lvl = {}", list(sizes));
    for l in 0..s.lvl_types().len() {
        if let Some(p) = s.position_buffer(l) {
            let view = IndexView::Plain(p);
            array(
                &mut out,
                &format!("pos[{l}]"),
                p.len(),
                &index_type(&view),
                p.bytes(),
            );
        }
        if let Some(c) = s.coordinate_view(l) {
            array(
                &mut out,
                &format!("crd[{l}]"),
                c.len(),
                &index_type(&c),
                c.bytes(),
            );
        }
    }
    match s.explicit_value() {
        Some(c) => {
            let _ = writeln!(out, "values : none (explicitVal = {c})");
        }
        None => {
            let value_type = std::any::type_name::<S::Value>();
            let value_bytes = std::mem::size_of_val(values);
            array(&mut out, "values", values.len(), value_type, value_bytes);
        }
    }
    let _ = writeln!(out, "total = {total} bytes");
    out
}

/// `u8`, `u16`, `u32`, `u64`, `usize` (width 0), or `u1`/`u2`/`u4` (packed).
fn index_type(view: &IndexView<'_>) -> String {
    match view.width() {
        0 => "usize".to_string(),
        bits => format!("u{bits}"),
    }
}
