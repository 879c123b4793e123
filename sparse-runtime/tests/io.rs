//! FROSTT `.tns` and Matrix Market writer: exact output, round trips, line-numbered errors.

use proptest::prelude::*;
use sparse_runtime::frostt::{parse_frostt, write_frostt, TnsError};
use sparse_runtime::mmio::{parse_matrix_market, write_matrix_market};
use sparse_runtime::CooTensor;

#[test]
fn frostt_reads_comments_and_infers_shape() {
    let t = parse_frostt(
        "# a comment\n1 2 3 1.5\n\n  # another\n2 1 1 -2\r\n2 4 1 1e-3".as_bytes(),
        None,
    )
    .unwrap();
    assert_eq!(t.shape, vec![2, 4, 3]);
    assert_eq!(t.coords, vec![0, 1, 2, 1, 0, 0, 1, 3, 0]);
    assert_eq!(t.values, vec![1.5, -2.0, 0.001]);
    let t = parse_frostt("1 1 5\n".as_bytes(), Some(&[3, 3])).unwrap();
    assert_eq!(t.shape, vec![3, 3]);
    let t = parse_frostt("# nothing\n".as_bytes(), Some(&[3, 3])).unwrap();
    assert!(t.is_empty());
}

fn err_at(s: &str, shape: Option<&[usize]>, line: usize, fragment: &str) {
    let e = parse_frostt(s.as_bytes(), shape).unwrap_err();
    let msg = e.to_string();
    assert_eq!(e.line(), Some(line), "{msg}");
    assert!(msg.starts_with(&format!("line {line}: ")), "{msg}");
    assert!(msg.contains(fragment), "{msg} lacks {fragment}");
}

#[test]
fn frostt_errors_name_lines() {
    err_at("1 1 1\n1 1\n", None, 2, "expected 3 fields");
    err_at("1 1 1\n0 1 1\n", None, 2, "coordinate 0 `0`");
    err_at("1 1 1\n1 x 1\n", None, 2, "coordinate 1 `x`");
    err_at("# c\n1 1 y\n", None, 2, "value `y`");
    err_at("1 4 1\n", Some(&[3, 3]), 1, "1..=3");
    err_at("# only a comment\n", None, 2, "no entries");
    err_at("7\n", None, 1, "expected 2 fields");
    err_at("1 99999999999999999999999 1\n", None, 1, "not an integer");
    assert!(matches!(
        parse_frostt("1 1 1\n".as_bytes(), Some(&[2, 2, 2])),
        Err(TnsError::FieldCount {
            line: 1,
            expected: 4,
            found: 3
        })
    ));
}

#[test]
fn writers_exact() {
    let mut t = CooTensor::new(vec![2, 3]);
    t.push(&[1, 2], 0.1);
    t.push(&[0, 0], -3.0);
    let mut out = Vec::new();
    write_frostt(&mut out, &t).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "2 3 0.1\n1 1 -3\n");
    let mut out = Vec::new();
    write_matrix_market(&mut out, &t).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "%%MatrixMarket matrix coordinate real general\n2 3 2\n2 3 0.1\n1 1 -3\n"
    );
    let t3 = CooTensor::<f64>::new(vec![1, 1, 1]);
    assert!(write_matrix_market(Vec::new(), &t3).is_err());
}

proptest! {
    #[test]
    fn frostt_round_trip(shape in proptest::collection::vec(1usize..6, 1..5), raw in proptest::collection::vec((any::<u64>(), -1e6f64..1e6), 0..30)) {
        let mut t = CooTensor::new(shape.clone());
        for (seed, v) in raw {
            let c: Vec<usize> = shape.iter().enumerate().map(|(d, &s)| (seed as usize >> (d * 8)) % s).collect();
            t.push(&c, v);
        }
        let mut out = Vec::new();
        write_frostt(&mut out, &t).unwrap();
        let back = parse_frostt(out.as_slice(), Some(&shape)).unwrap();
        prop_assert_eq!(back, t);
    }

    #[test]
    fn matrix_market_round_trip(m in 1usize..9, n in 1usize..9, raw in proptest::collection::vec((any::<u32>(), any::<f64>().prop_filter("finite", |v| v.is_finite())), 0..30)) {
        let mut t = CooTensor::new(vec![m, n]);
        for (seed, v) in raw {
            t.push(&[seed as usize % m, (seed as usize >> 8) % n], v);
        }
        let mut out = Vec::new();
        write_matrix_market(&mut out, &t).unwrap();
        let back = parse_matrix_market(out.as_slice()).unwrap();
        prop_assert_eq!(back.tensor, t);
    }

    #[test]
    fn frostt_never_panics(s in "[0-9 #.\\-e\n]{0,60}") {
        let _ = parse_frostt(s.as_bytes(), None);
        let _ = parse_frostt(s.as_bytes(), Some(&[3, 2]));
    }
}
