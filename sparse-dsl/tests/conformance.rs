//! The shared conformance vectors: every valid encoding parses and round-trips through the
//! canonical printer; every invalid one is rejected with the expected message.

use std::fs;
use std::path::PathBuf;

use sparse_dsl::parse::parse_encoding;

fn dir(kind: &str) -> Vec<PathBuf> {
    let d = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/conformance/encodings/"
    );
    let mut files: Vec<PathBuf> = fs::read_dir(format!("{d}{kind}"))
        .expect("conformance directory")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "mlir"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no {kind} conformance files");
    files
}

#[test]
fn valid_files_parse_and_round_trip() {
    for f in dir("valid") {
        let text = fs::read_to_string(&f).unwrap();
        let parsed = parse_encoding(&text).unwrap_or_else(|d| {
            panic!(
                "{}: {:?}",
                f.display(),
                d.iter().map(|d| d.to_string()).collect::<Vec<_>>()
            )
        });
        let printed = parsed.encoding.to_string();
        println!("{}: {printed}", f.display());
        let again = parse_encoding(&printed)
            .unwrap_or_else(|d| panic!("{}: reparse of {printed}: {:?}", f.display(), d));
        assert_eq!(
            again.encoding,
            parsed.encoding,
            "{}: round trip of {printed}",
            f.display()
        );
        assert_eq!(again.encoding.to_string(), printed);
    }
}

#[test]
fn invalid_files_are_rejected_with_expected_message() {
    for f in dir("invalid") {
        let text = fs::read_to_string(&f).unwrap();
        let expected = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("// expected-error:"))
            .map(str::trim)
            .unwrap_or_else(|| panic!("{}: no expected-error line", f.display()));
        match parse_encoding(&text) {
            Ok(p) => panic!("{}: accepted as {}", f.display(), p.encoding),
            Err(diags) => {
                println!(
                    "{}: {:?}",
                    f.display(),
                    diags.iter().map(|d| d.to_string()).collect::<Vec<_>>()
                );
                assert!(
                    diags.iter().any(|d| d.message.contains(expected)),
                    "{}: expected {expected:?}, got {:?}",
                    f.display(),
                    diags
                );
                for d in &diags {
                    assert!(d.start <= d.end && d.end <= text.len());
                }
            }
        }
    }
}
