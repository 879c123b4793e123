//! Fuzz target: the declaration parsers on arbitrary UTF-8.
//!
//! Asserts: no panic; every `Err` has at least one diagnostic with `start <= end <= len` on
//! character boundaries; every `Ok` round-trips through the canonical printer (and the pretty
//! printer for encodings).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sparse_dsl::diag::Diagnostic;
use sparse_dsl::parse::{parse_declaration, parse_declarations, parse_encoding, Declared};

fn check_diags(text: &str, diags: &[Diagnostic]) {
    assert!(!diags.is_empty(), "{text:?}: Err without diagnostics");
    for d in diags {
        assert!(d.start <= d.end && d.end <= text.len(), "{text:?}: {d:?}");
        assert!(
            text.is_char_boundary(d.start) && text.is_char_boundary(d.end),
            "{text:?}: {d:?}"
        );
        assert!(d.line >= 1 && d.column >= 1, "{text:?}: {d:?}");
    }
}

fn round_trip(text: &str, declared: &Declared) {
    let printed = declared.to_string();
    let again = parse_declaration(&printed)
        .unwrap_or_else(|d| panic!("{text:?} printed as {printed:?}, which fails: {d:?}"));
    assert_eq!(&again.declared, declared, "{text:?} -> {printed:?}");
    assert_eq!(
        again.declared.to_string(),
        printed,
        "{text:?}: printing is not stable"
    );
    if let Some(e) = declared.encoding() {
        let pretty = e.to_pretty_string();
        let p = parse_encoding(&pretty)
            .unwrap_or_else(|d| panic!("{text:?}: pretty {pretty:?} fails: {d:?}"));
        assert_eq!(&p.encoding, e, "{text:?}: pretty {pretty:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_declaration(text) {
        Ok(p) => {
            assert!(p.start <= p.end && p.end <= text.len());
            round_trip(text, &p.declared);
        }
        Err(d) => check_diags(text, &d),
    }
    match parse_declarations(text) {
        Ok(ps) => {
            for p in &ps {
                assert!(p.start <= p.end && p.end <= text.len());
                round_trip(text, &p.declared);
            }
        }
        Err(d) => check_diags(text, &d),
    }
});
