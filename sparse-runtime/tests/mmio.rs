//! Tests of the Matrix Market reader: exact small cases, the real matrices in shared/data,
//! one test per malformed case (line number and message), and no-panic property tests.

/// Everything in one module so that `cargo test -p sparse-runtime mmio` selects these tests.
mod mmio {
    use proptest::prelude::*;
    use sparse_runtime::mmio::{
        parse_matrix_market, read_matrix_market, Axis, Field, MatrixMarket, MmError, Symmetry,
    };

    fn parse(s: &str) -> Result<MatrixMarket, MmError> {
        parse_matrix_market(s.as_bytes())
    }

    fn ok(s: &str) -> MatrixMarket {
        match parse(s) {
            Ok(m) => m,
            Err(e) => panic!("unexpected error: {e}"),
        }
    }

    /// Asserts an error at `line` whose message contains `fragment`; returns it.
    fn err_at(s: &str, line: usize, fragment: &str) -> MmError {
        let e = match parse(s) {
            Ok(m) => panic!("expected an error at line {line}, got {m:?}"),
            Err(e) => e,
        };
        let msg = e.to_string();
        assert_eq!(e.line(), Some(line), "wrong line in `{msg}`");
        assert!(
            msg.starts_with(&format!("line {line}: ")),
            "message `{msg}` does not start with the line"
        );
        assert!(msg.contains(fragment), "message `{msg}` lacks `{fragment}`");
        e
    }

    const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data/");

    /// Complex files into complex values: `RE IM` per entry, the mirrors of symmetric,
    /// skew-symmetric and hermitian files (the conjugate), real fields as `x + 0i`; the
    /// `hermitian` symmetry of a real field and a short complex entry are errors.
    #[test]
    fn complex_fields_and_hermitian_mirrors() {
        use sparse_runtime::mmio::parse_matrix_market_complex;
        use sparse_runtime::num_complex::Complex;
        let c = |re: f64, im: f64| Complex::new(re, im);
        let read = |s: &str| parse_matrix_market_complex(s.as_bytes());
        let m = read(
            "%%MatrixMarket matrix coordinate complex hermitian\n3 3 3\n1 1 2 0\n2 1 1.5 -2\n3 2 0 1e1\n",
        )
        .unwrap();
        assert_eq!(
            (m.field, m.symmetry, m.stored),
            (Field::Complex, Symmetry::Hermitian, 3)
        );
        assert_eq!(m.tensor.coords, [0, 0, 1, 0, 2, 1, 0, 1, 1, 2]);
        assert_eq!(
            m.tensor.values,
            [
                c(2.0, 0.0),
                c(1.5, -2.0),
                c(0.0, 10.0),
                c(1.5, 2.0),
                c(0.0, -10.0)
            ]
        );
        let sym =
            read("%%MatrixMarket matrix coordinate complex symmetric\n2 2 1\n2 1 1 2\n").unwrap();
        assert_eq!(sym.tensor.values, [c(1.0, 2.0), c(1.0, 2.0)]);
        let skew =
            read("%%MatrixMarket matrix coordinate complex skew-symmetric\n2 2 1\n2 1 1 2\n")
                .unwrap();
        assert_eq!(skew.tensor.values, [c(1.0, 2.0), c(-1.0, -2.0)]);
        let real =
            read("%%MatrixMarket matrix coordinate integer general\n1 2 1\n1 2 -7\n").unwrap();
        assert_eq!(
            (real.field, real.tensor.values),
            (Field::Integer, vec![c(-7.0, 0.0)])
        );
        let e = read("%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 1: bad banner: symmetry `hermitian` needs the complex field, not `real`"
        );
        let e =
            read("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 3\n").unwrap_err();
        assert_eq!(e.line(), Some(3));
        assert!(e.to_string().contains("I J RE IM"), "{e}");
        // the real readers still refuse complex files, naming the complex readers' support
        let e = parse("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n")
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("complex and hermitian into complex values"),
            "{e}"
        );
    }

    #[test]
    fn general_real_exact() {
        let m = ok("%%MatrixMarket matrix coordinate real general\n\
                % a comment\n\
                \n\
                3 4 5\n\
                1 1 1E1\n\
                % comment among entries\n\
                2 3 -1.06\n\
                \n\
                3 4 .5\n\
                3 1 1e-3\n\
                1 4 0\n\
                % trailing comment\n\
                \n");
        assert_eq!(m.field, Field::Real);
        assert_eq!(m.symmetry, Symmetry::General);
        assert_eq!(m.stored, 5);
        assert_eq!(m.tensor.shape, vec![3, 4]);
        assert_eq!(m.tensor.coords, vec![0, 0, 1, 2, 2, 3, 2, 0, 0, 3]);
        assert_eq!(m.tensor.values, vec![10.0, -1.06, 0.5, 0.001, 0.0]);
    }

    #[test]
    fn banner_case_insensitive_crlf_and_integer() {
        let m =
            ok("%%matrixmarket MATRIX Coordinate INTEGER General\r\n2 2 2\r\n1 2 -7\r\n2 1 +3\r\n");
        assert_eq!(m.field, Field::Integer);
        assert_eq!(m.tensor.coords, vec![0, 1, 1, 0]);
        assert_eq!(m.tensor.values, vec![-7.0, 3.0]);
    }

    #[test]
    fn no_trailing_newline_and_empty_matrix() {
        let m = ok("%%MatrixMarket matrix coordinate real general\n2 2 1\n2 2 4.5");
        assert_eq!(m.tensor.values, vec![4.5]);
        let m = ok("%%MatrixMarket matrix coordinate real general\n0 0 0\n");
        assert_eq!(m.tensor.shape, vec![0, 0]);
        assert!(m.tensor.is_empty());
    }

    #[test]
    fn inf_nan_accepted() {
        let m = ok(
        "%%MatrixMarket matrix coordinate real general\n1 3 3\n1 1 inf\n1 2 -Infinity\n1 3 nan\n",
    );
        assert_eq!(m.tensor.values[0], f64::INFINITY);
        assert_eq!(m.tensor.values[1], f64::NEG_INFINITY);
        assert!(m.tensor.values[2].is_nan());
    }

    #[test]
    fn symmetric_mirrors_appended_in_file_order() {
        let m = ok("%%MatrixMarket matrix coordinate real symmetric\n\
                3 3 4\n\
                1 1 1.0\n\
                2 1 2.0\n\
                3 3 3.0\n\
                3 2 4.0\n");
        assert_eq!(m.symmetry, Symmetry::Symmetric);
        assert_eq!(m.stored, 4);
        assert_eq!(m.tensor.shape, vec![3, 3]);
        // File entries first, then the mirrors of (2,1) and (3,2).
        assert_eq!(m.tensor.coords, vec![0, 0, 1, 0, 2, 2, 2, 1, 0, 1, 1, 2]);
        assert_eq!(m.tensor.values, vec![1.0, 2.0, 3.0, 4.0, 2.0, 4.0]);
    }

    #[test]
    fn skew_symmetric_mirrors_negated() {
        let m = ok("%%MatrixMarket matrix coordinate real skew-symmetric\n\
                3 3 2\n\
                2 1 5.0\n\
                3 1 -1.5\n");
        assert_eq!(m.symmetry, Symmetry::SkewSymmetric);
        assert_eq!(m.stored, 2);
        assert_eq!(m.tensor.coords, vec![1, 0, 2, 0, 0, 1, 0, 2]);
        assert_eq!(m.tensor.values, vec![5.0, -1.5, -5.0, 1.5]);
    }

    #[test]
    fn pattern_gets_ones() {
        let m = ok("%%MatrixMarket matrix coordinate pattern general\n2 3 3\n1 1\n2 3\n1 2\n");
        assert_eq!(m.field, Field::Pattern);
        assert_eq!(m.tensor.coords, vec![0, 0, 1, 2, 0, 1]);
        assert_eq!(m.tensor.values, vec![1.0; 3]);

        let m = ok("%%MatrixMarket matrix coordinate pattern symmetric\n2 2 2\n1 1\n2 1\n");
        assert_eq!(m.tensor.coords, vec![0, 0, 1, 0, 0, 1]);
        assert_eq!(m.tensor.values, vec![1.0; 3]);
    }

    #[test]
    fn jagmesh7() {
        let m = read_matrix_market(format!("{DATA}jagmesh7.mtx")).expect("jagmesh7");
        assert_eq!(m.field, Field::Pattern);
        assert_eq!(m.symmetry, Symmetry::Symmetric);
        assert_eq!(m.tensor.shape, vec![1138, 1138]);
        assert_eq!(m.stored, 4294);
        assert_eq!(m.tensor.len(), 7450);
        assert_eq!(m.tensor.coords.len(), 2 * 7450);
    }

    #[test]
    fn bcsstk16() {
        let m = read_matrix_market(format!("{DATA}bcsstk16.mtx")).expect("bcsstk16");
        assert_eq!(m.field, Field::Real);
        assert_eq!(m.symmetry, Symmetry::Symmetric);
        assert_eq!(m.tensor.shape, vec![4884, 4884]);
        assert_eq!(m.stored, 147_631);
        assert_eq!(m.tensor.len(), 290_378);
        // First entry of the file: `1 1 285559874.9195`; second `2 1 26666666.66228`, mirrored.
        assert_eq!(m.tensor.entry_coords(0), &[0, 0]);
        assert_eq!(m.tensor.values[0], 285559874.9195);
        assert_eq!(m.tensor.entry_coords(147_631), &[0, 1]);
        assert_eq!(m.tensor.values[147_631], 26666666.66228);
    }

    #[test]
    fn other_shared_matrices() {
        // (file, shape, stored, expanded) from shared/data/SOURCES.md.
        let cases = [
            ("west0067.mtx", [67, 67], 294, 294),
            ("lp_afiro.mtx", [27, 51], 102, 102),
            ("cryg2500.mtx", [2500, 2500], 12_349, 12_349),
            ("bcsstk13.mtx", [2003, 2003], 42_943, 83_883),
            ("bayer10.mtx", [13436, 13436], 94_926, 94_926),
        ];
        for (file, shape, stored, expanded) in cases {
            let m = read_matrix_market(format!("{DATA}{file}"))
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(m.tensor.shape, shape.to_vec(), "{file}");
            assert_eq!(m.stored, stored, "{file}");
            assert_eq!(m.tensor.len(), expanded, "{file}");
        }
    }

    #[test]
    fn missing_file_is_open_error() {
        let e = read_matrix_market("/nonexistent/x.mtx").unwrap_err();
        assert!(matches!(e, MmError::Open { .. }));
        assert_eq!(e.line(), None);
        assert!(e.to_string().contains("/nonexistent/x.mtx"));
    }

    // ---- malformed input: each names the right line ----

    const GEN: &str = "%%MatrixMarket matrix coordinate real general\n";

    #[test]
    fn bad_banners() {
        err_at("", 1, "empty input");
        err_at("3 3 1\n1 1 1\n", 1, "bad banner");
        err_at(
            "%%MatrixMarket matrix coordinate real\n1 1 0\n",
            1,
            "found 4 words",
        );
        err_at(
            "%%MatrixMarket matrix coordinate real general extra\n",
            1,
            "found 6 words",
        );
        err_at(
            "%%MatrixMarket matrix coordinate float general\n",
            1,
            "unknown field `float`",
        );
        err_at(
            "%%MatrixMarket matrix coordinate real upper\n",
            1,
            "unknown symmetry `upper`",
        );
        err_at(
            "%%MatrixMarket matrix sparse real general\n",
            1,
            "unknown format `sparse`",
        );
        err_at(
            "%%MatrixMarket grid coordinate real general\n",
            1,
            "unknown object `grid`",
        );
    }

    #[test]
    fn unsupported_kinds() {
        let e = err_at(
            "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n",
            1,
            "unsupported",
        );
        assert!(
            matches!(e, MmError::Unsupported { what: "field", .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("complex"));
        let e = err_at(
            "%%MatrixMarket matrix coordinate real hermitian\n",
            1,
            "hermitian",
        );
        assert!(
            matches!(
                e,
                MmError::Unsupported {
                    what: "symmetry",
                    ..
                }
            ),
            "{e:?}"
        );
        let e = err_at(
            "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n",
            1,
            "array",
        );
        assert!(
            matches!(e, MmError::Unsupported { what: "format", .. }),
            "{e:?}"
        );
        let e = err_at(
            "%%MatrixMarket vector coordinate real general\n",
            1,
            "unsupported",
        );
        assert!(
            matches!(e, MmError::Unsupported { what: "object", .. }),
            "{e:?}"
        );
    }

    #[test]
    fn bad_size_lines() {
        err_at(
            &format!("{GEN}% c\n\n"),
            4,
            "end of input before the size line",
        );
        err_at(&format!("{GEN}% c\n3 3\n"), 3, "missing NNZ");
        err_at(&format!("{GEN}3 3 1 1\n"), 2, "more than 3 fields");
        err_at(
            &format!("{GEN}3 x 1\n"),
            2,
            "COLS `x` is not a non-negative integer",
        );
        err_at(&format!("{GEN}-3 3 1\n"), 2, "ROWS `-3`");
        err_at(&format!("{GEN}3 3 1.5\n"), 2, "NNZ `1.5`");
        err_at(&format!("{GEN}3 3 99999999999999999999999999\n"), 2, "NNZ");
        err_at(
            "%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n",
            2,
            "must be square, found 3x4",
        );
    }

    #[test]
    fn wrong_field_counts() {
        err_at(
            &format!("{GEN}3 3 2\n1 1 1\n2 2\n"),
            4,
            "expected 3 fields (`I J VALUE`), found 2",
        );
        err_at(&format!("{GEN}3 3 2\n1 1 1\n2 2 1 0\n"), 4, "found 4");
        err_at(
            "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 1 1\n",
            3,
            "expected 2 fields (`I J`), found 3",
        );
        err_at(
            "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1\n",
            3,
            "found 1",
        );
    }

    #[test]
    fn bad_indices() {
        let e = err_at(
            &format!("{GEN}8 8 2\n% c\n1 1 1\n\n1 9 1\n"),
            6,
            "column index 9 out of range 1..=8",
        );
        assert!(matches!(
            e,
            MmError::IndexOutOfRange {
                axis: Axis::Column,
                index: 9,
                size: 8,
                ..
            }
        ));
        let e = err_at(
            &format!("{GEN}8 8 1\n0 1 1\n"),
            3,
            "row index 0 out of range 1..=8",
        );
        assert!(matches!(
            e,
            MmError::IndexOutOfRange {
                axis: Axis::Row,
                index: 0,
                ..
            }
        ));
        err_at(
            &format!("{GEN}3 5 1\n4 1 1\n"),
            3,
            "row index 4 out of range 1..=3",
        );
        err_at(
            &format!("{GEN}3 5 1\n1 0 1\n"),
            3,
            "column index 0 out of range 1..=5",
        );
        err_at(
            &format!("{GEN}3 3 1\n1.5 1 1\n"),
            3,
            "row index `1.5` is not an integer",
        );
        err_at(
            &format!("{GEN}3 3 1\n1 -1 1\n"),
            3,
            "column index `-1` is not an integer",
        );
        err_at(
            &format!("{GEN}3 3 1\n1 99999999999999999999999 1\n"),
            3,
            "column index `99999999999999999999999`",
        );
    }

    #[test]
    fn bad_values() {
        err_at(
            &format!("{GEN}3 3 2\n1 1 1\n2 2 abc\n"),
            4,
            "value `abc` is not a real number",
        );
        err_at(&format!("{GEN}3 3 1\n1 1 1.0D+00\n"), 3, "value `1.0D+00`");
        err_at(
            "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 1.5\n",
            3,
            "value `1.5` is not an integer",
        );
        err_at(
            "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 -\n",
            3,
            "is not an integer",
        );
    }

    #[test]
    fn skew_diagonal_is_error() {
        err_at(
            "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1\n2 2 1\n",
            4,
            "diagonal entry (2, 2)",
        );
    }

    #[test]
    fn entry_count_mismatch() {
        let e = err_at(
            &format!("{GEN}3 3 3\n1 1 1\n2 2 2\n% c\n"),
            6,
            "end of input after 2 of the 3 entries",
        );
        assert!(matches!(
            e,
            MmError::TooFewEntries {
                found: 2,
                declared: 3,
                ..
            }
        ));
        err_at(&format!("{GEN}3 3 1\n"), 3, "after 0 of the 1");
        let e = err_at(
            &format!("{GEN}3 3 1\n1 1 1\n% c\n\n2 2 2\n"),
            6,
            "more entries than the 1 declared",
        );
        assert!(matches!(e, MmError::TooManyEntries { declared: 1, .. }));
    }

    #[test]
    fn huge_declared_nnz_does_not_allocate_or_panic() {
        let e = err_at(
            &format!("{GEN}3 3 {}\n1 1 1\n", usize::MAX),
            4,
            "after 1 of the",
        );
        assert!(matches!(e, MmError::TooFewEntries { .. }));
        err_at(
            &format!(
                "%%MatrixMarket matrix coordinate real symmetric\n3 3 {}\n1 1 1\n",
                usize::MAX
            ),
            4,
            "after 1",
        );
    }

    #[test]
    fn io_error_names_line() {
        struct Failing(usize);
        impl std::io::Read for Failing {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let text = b"%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n";
                if self.0 >= text.len() {
                    return Err(std::io::Error::other("disk on fire"));
                }
                let n = buf.len().min(text.len() - self.0);
                buf[..n].copy_from_slice(&text[self.0..self.0 + n]);
                self.0 += n;
                Ok(n)
            }
        }
        let e = parse_matrix_market(std::io::BufReader::new(Failing(0))).unwrap_err();
        assert!(matches!(e, MmError::Io { line: 4, .. }), "{e:?}");
        assert!(
            e.to_string().starts_with("line 4: I/O error: disk on fire"),
            "{e}"
        );
    }

    #[test]
    fn invalid_utf8_in_comment_is_fine_and_in_value_is_error() {
        let bytes =
            b"%%MatrixMarket matrix coordinate real general\n% caf\xe9\n1 1 1\n1 1 2\n".to_vec();
        let m = parse_matrix_market(&bytes[..]).expect("latin-1 comment");
        assert_eq!(m.tensor.values, vec![2.0]);
        let bad = b"%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 \xff\n";
        let e = parse_matrix_market(&bad[..]).unwrap_err();
        assert_eq!(e.line(), Some(3));
        assert!(matches!(e, MmError::BadValue { .. }));
    }

    // ---- no panic on any input ----

    const VALID: &str = "%%MatrixMarket matrix coordinate real symmetric\n\
                     % comment\n\
                     4 4 5\n\
                     1 1 1.5\n\
                     2 1 -2e3\n\
                     \n\
                     3 2 .25\n\
                     4 4 7\n\
                     4 1 0\n";

    const VALID_PATTERN: &str =
        "%%MatrixMarket matrix coordinate pattern skew-symmetric\n3 3 2\n2 1\n3 2\n";

    fn check_no_panic(bytes: &[u8]) {
        match parse_matrix_market(bytes) {
            Ok(m) => {
                assert_eq!(m.tensor.shape.len(), 2);
                assert_eq!(m.tensor.coords.len(), 2 * m.tensor.values.len());
                assert!(m.tensor.len() >= m.stored);
                for (c, _) in m.tensor.iter() {
                    assert!(c[0] < m.tensor.shape[0] && c[1] < m.tensor.shape[1]);
                }
            }
            Err(e) => {
                let msg = e.to_string();
                let line = e.line().expect("content errors have a line");
                assert!(line >= 1);
                assert!(msg.starts_with(&format!("line {line}: ")), "{msg}");
            }
        }
    }

    #[derive(Debug, Clone)]
    enum Mutation {
        Truncate(usize),
        Delete(usize),
        Insert(usize, u8),
        Replace(usize, u8),
        DuplicateLine(usize),
        DeleteLine(usize),
    }

    fn mutation() -> impl Strategy<Value = Mutation> {
        // Bytes mostly from the file's own alphabet, sometimes anything.
        let byte = prop_oneof![
            4 => prop::sample::select(b"0123456789 .-+eE\n%\r\tinfa".to_vec()),
            1 => any::<u8>(),
        ];
        prop_oneof![
            any::<usize>().prop_map(Mutation::Truncate),
            any::<usize>().prop_map(Mutation::Delete),
            (any::<usize>(), byte.clone()).prop_map(|(i, b)| Mutation::Insert(i, b)),
            (any::<usize>(), byte).prop_map(|(i, b)| Mutation::Replace(i, b)),
            any::<usize>().prop_map(Mutation::DuplicateLine),
            any::<usize>().prop_map(Mutation::DeleteLine),
        ]
    }

    fn apply(mut v: Vec<u8>, m: &Mutation) -> Vec<u8> {
        let n = v.len();
        match *m {
            Mutation::Truncate(i) => v.truncate(i % (n + 1)),
            Mutation::Delete(i) if n > 0 => {
                v.remove(i % n);
            }
            Mutation::Insert(i, b) => v.insert(i % (n + 1), b),
            Mutation::Replace(i, b) if n > 0 => v[i % n] = b,
            Mutation::DuplicateLine(i) | Mutation::DeleteLine(i) => {
                let mut lines: Vec<Vec<u8>> =
                    v.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
                let k = i % lines.len();
                if matches!(m, Mutation::DuplicateLine(_)) {
                    let l = lines[k].clone();
                    lines.insert(k, l);
                } else {
                    lines.remove(k);
                }
                v = lines.join(&b'\n');
            }
            _ => {}
        }
        v
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn mutated_valid_file_never_panics(
            pattern in any::<bool>(),
            muts in prop::collection::vec(mutation(), 1..6),
        ) {
            let mut v = if pattern { VALID_PATTERN } else { VALID }.as_bytes().to_vec();
            for m in &muts {
                v = apply(v, m);
            }
            check_no_panic(&v);
        }

        #[test]
        fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            check_no_panic(&bytes);
        }

        #[test]
        fn random_body_after_valid_banner_never_panics(
            banner in prop::sample::select(vec![
                "%%MatrixMarket matrix coordinate real general\n",
                "%%MatrixMarket matrix coordinate integer symmetric\n",
                "%%MatrixMarket matrix coordinate pattern skew-symmetric\n",
            ]),
            body in "[0-9 .eE+\\-%\n]{0,200}",
        ) {
            let text = format!("{banner}{body}");
            check_no_panic(text.as_bytes());
        }
    }
}
