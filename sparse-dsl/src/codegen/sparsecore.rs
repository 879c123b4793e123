//! `SPARSECORE`: the associated constant of a declaration with a `sparsecore(...)` clause.
//!
//! The parser has already read the clause and checked it with the runtime lookup's TileSpmem
//! rule with the partition buffers its limits size
//! (`sparse_ir::sparsecore::tile_spmem_plan_with_limits`, a compile error when it does not
//! fit); this
//! module spells the resulting [`SparseCoreConfig`] out as a constant of the runtime's
//! re-exported type, numbers as literals and the chip as a reference to its preset constant, on
//! the struct at its default value type (`impl Name { ... }`, so `Name::SPARSECORE` needs no
//! type argument). Nothing is emitted without the clause.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use sparse_ir::sparsecore::SparseCoreConfig;

use super::Ctx;

/// The `impl` block holding `SPARSECORE` (empty without a clause). `rt` is the runtime path the
/// block's code uses.
pub(super) fn emit(cx: &Ctx) -> TokenStream {
    let Some(c) = &cx.decl.sparsecore else {
        return quote!();
    };
    let (name, v, rt) = (&cx.name, &cx.value_type, &cx.rt);
    let SparseCoreConfig {
        chip,
        max_ids_per_partition,
        max_unique_ids_per_partition,
        feature_width,
        padded_width,
        batch,
        tile_spmem: t,
    } = c;
    // the preset constants are named after the presets: `v5p` is `V5P`
    let preset = format_ident!("{}", chip.name.to_ascii_uppercase());
    let (spmem, spt, row, gather, fixed, staging, partition) = (
        t.tile_spmem_bytes,
        t.samples_per_tile,
        t.row_bytes,
        t.gather_operand_bytes,
        t.fixed_allocation_bytes,
        t.staging_rows,
        t.partition_bytes,
    );
    let docs = [
        format!(
            " The SparseCore configuration of this format's `sparsecore(...)` clause, checked at \
             compile time: chip `{}` ({} SparseCores per device, {} tiles per SparseCore, {spmem} \
             bytes of TileSpmem per tile); at most {max_ids_per_partition} ids and \
             {max_unique_ids_per_partition} distinct ids per partition and step (preprocessing's \
             limits); embedding rows of {feature_width} `f32` values ({padded_width} padded, \
             {row} bytes); {batch} samples per SparseCore per step.",
            chip.name, chip.sparsecores_per_device, chip.tiles_per_sc
        ),
        String::new(),
        format!(
            " TileSpmem of one tile, the runtime lookup's rule with the limits \
             (`tile_spmem_plan_with_limits`): {spt} output rows, {gather} bytes (the gather \
             operand); the tile's share of one partition, {partition} bytes; fixed allocations \
             {fixed} bytes (the output rows, one staged row per buffer and the partition share); \
             two staging buffers of {staging} rows; peak {} of {spmem} bytes.",
            t.max_peak_bytes()
        ),
        String::new(),
        " Run the lookup with `ChipModel::from(Self::SPARSECORE.chip)` and \
         `LookupConfig::from_sparsecore(&Self::SPARSECORE, global_device_count)` on a table \
         `padded_width` values wide."
            .to_string(),
    ];
    quote! {
        impl #name<#v> {
            #(#[doc = #docs])*
            pub const SPARSECORE: #rt::sparsecore::SparseCoreConfig =
                #rt::sparsecore::SparseCoreConfig {
                    chip: &#rt::sparsecore::chip::#preset,
                    max_ids_per_partition: #max_ids_per_partition,
                    max_unique_ids_per_partition: #max_unique_ids_per_partition,
                    feature_width: #feature_width,
                    padded_width: #padded_width,
                    batch: #batch,
                    tile_spmem: #rt::sparsecore::TileSpmemPlan {
                        tile_spmem_bytes: #spmem,
                        samples_per_tile: #spt,
                        row_bytes: #row,
                        gather_operand_bytes: #gather,
                        fixed_allocation_bytes: #fixed,
                        staging_rows: #staging,
                        partition_bytes: #partition,
                    },
                };
        }
    }
}
