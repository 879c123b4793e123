//! The shared conformance vectors (`../shared/conformance`), run as project tests: storage cases
//! through the generated structs and through the dynamic storage; encodings through the parser.

mod common;

use common::{assert_print_matches, shared, storage_cases};
use sparse::runtime::mmio::read_matrix_market;
use sparse::runtime::DynamicStorage;
use sparse_dsl::parse::parse_encoding;

sparse::sparse_format! {
    /// csr_west0067
    Csr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed) }>;
    /// dcsc_lp_afiro
    Dcsc = #sparse_tensor.encoding<{ map = (i, j) -> (j : compressed, i : compressed), posWidth = 32, crdWidth = 8 }>;
    /// coo_lp_afiro
    SortedCoo = #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton) }>;
    /// csc_jagmesh7_pattern_symmetric
    Csc = #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), posWidth = 16, crdWidth = 16 }>;
    /// loose_west0067
    LooseCsr = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : loose_compressed) }>;
    /// bsr_2x2_seed and bsr_2x2_cryg2500
    Bsr = #sparse_tensor.encoding<{ map = (i, j) -> (i floordiv 2 : dense, j floordiv 2 : compressed, i mod 2 : dense, j mod 2 : dense) }>;
    /// nv_24_seed
    Nv24 = #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j floordiv 4 : dense, j mod 4 : block2_4), crdWidth = 2 }>;
}

fn generated(case: &str, mtx: &std::path::Path) -> Option<String> {
    let coo = read_matrix_market(mtx).unwrap().tensor;
    Some(match case {
        "csr_west0067" => Csr::from_coo_tensor(&coo).unwrap().to_string(),
        "dcsc_lp_afiro" => Dcsc::from_coo_tensor(&coo).unwrap().to_string(),
        "coo_lp_afiro" => SortedCoo::from_coo_tensor(&coo).unwrap().to_string(),
        "csc_jagmesh7_pattern_symmetric" => Csc::from_coo_tensor(&coo).unwrap().to_string(),
        "loose_west0067" => LooseCsr::from_coo_tensor(&coo).unwrap().to_string(),
        "bsr_2x2_seed" | "bsr_2x2_cryg2500" => Bsr::from_coo_tensor(&coo).unwrap().to_string(),
        "nv_24_seed" => Nv24::from_coo_tensor(&coo).unwrap().to_string(),
        _ => return None,
    })
}

/// Cases whose formats are not stored yet.
const LATER: &[&str] = &[];

#[test]
fn storage_cases_generated() {
    let mut ran = 0;
    for (name, (_, mtx, expected)) in storage_cases() {
        if let Some(got) = generated(&name, &mtx) {
            assert_print_matches(&got, &expected, &name);
            ran += 1;
        } else {
            assert!(
                LATER.contains(&name.as_str()),
                "storage case {name} has no generated format in this test"
            );
        }
    }
    assert!(ran >= 8, "only {ran} cases ran");
}

#[test]
fn storage_cases_dynamic() {
    let mut ran = 0;
    for (name, (enc, mtx, expected)) in storage_cases() {
        if LATER.contains(&name.as_str()) {
            continue;
        }
        let enc = parse_encoding(&enc)
            .unwrap_or_else(|d| panic!("{name}: {d:?}"))
            .encoding;
        let coo = read_matrix_market(&mtx).unwrap().tensor;
        let s = DynamicStorage::from_coo(&enc, &coo).unwrap_or_else(|e| panic!("{name}: {e}"));
        s.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_print_matches(&s.to_string(), &expected, &name);
        ran += 1;
    }
    assert!(ran >= 8);
}

#[test]
fn encodings_valid_and_invalid() {
    let dir = shared().join("conformance/encodings");
    for f in std::fs::read_dir(dir.join("valid")).unwrap() {
        let f = f.unwrap().path();
        let text = std::fs::read_to_string(&f).unwrap();
        let parsed = parse_encoding(&text).unwrap_or_else(|d| panic!("{}: {d:?}", f.display()));
        // the canonical form parses back to the same encoding
        let again = parse_encoding(&parsed.encoding.to_string()).unwrap();
        assert_eq!(again.encoding, parsed.encoding, "{}", f.display());
    }
    for f in std::fs::read_dir(dir.join("invalid")).unwrap() {
        let f = f.unwrap().path();
        let text = std::fs::read_to_string(&f).unwrap();
        let want = text
            .lines()
            .next()
            .unwrap()
            .split_once("expected-error:")
            .unwrap()
            .1
            .trim()
            .to_string();
        let diags = parse_encoding(&text).expect_err(&f.display().to_string());
        assert!(
            diags.iter().any(|d| d.message.contains(&want)),
            "{}: want '{want}', got {diags:?}",
            f.display()
        );
    }
}
