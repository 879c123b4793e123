//! `sparse sparsecore preprocess` and `sparse sparsecore split` against the contract of issue 10:
//! exact stdout, and every error as `error: MESSAGE` on stderr with exit status 1.

use std::process::Command;

use tempfile::TempDir;

mod run;
use run::{sparse, write as file};

/// A fresh directory `sparse-sc-{test}-*` for one test's fixtures, removed when dropped.
fn dir(test: &str) -> TempDir {
    run::temp_dir("sc", test)
}

const P: &str = "2147483647";

fn config(extra: &str) -> String {
    format!(
        r#"{{"num_sc_per_device": 1, "local_device_count": 1, "global_device_count": 1,
            "max_ids_per_partition": 2, "max_unique_ids_per_partition": 2{extra}}}"#
    )
}

/// Runs `preprocess` on a config and a batch; returns (status, stdout, stderr).
fn preprocess(test: &str, config: &str, batch: &str) -> (i32, String, String) {
    let d = dir(test);
    let c = file(&d, "config.json", config);
    let b = file(&d, "batch.json", batch);
    sparse(&["sparsecore", "preprocess", &c, &b])
}

/// Asserts a failure: exit 1, nothing on stdout, `error: ` + a message containing `want`.
fn fails(r: (i32, String, String), want: &str) {
    let (code, out, err) = r;
    assert_eq!(code, 1, "stderr: {err}");
    assert_eq!(out, "");
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains(want), "{err:?} lacks {want:?}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn preprocess_drops_and_prints_the_buffers() {
    let batch =
        r#"{"features": [{"name": "f", "samples": [[1, 2, 3, 1], [1, 3]], "weights": null}]}"#;
    let (code, out, err) = preprocess("drop", &config(r#", "allow_id_dropping": true"#), batch);
    assert_eq!((code, err.as_str()), (0, ""));
    let want = format!(
        concat!(
            r#"{{"devices":[{{"row_pointers":[2,8,8,8,8,8,8,8],"#,
            r#""embedding_ids":[1,1,{p},{p},{p},{p},{p},{p}],"#,
            r#""sample_ids":[0,1,{p},{p},{p},{p},{p},{p}],"#,
            r#""gains":[2.0,1.0,null,null,null,null,null,null],"#,
            r#""coo":[[[0,1,2.0],[1,1,1.0]]],"#,
            r#""max_ids_per_partition":[5],"max_unique_ids_per_partition":[3],"#,
            r#""required_buffer_size":[8]}}],"dropped_id_count":3,"num_minibatches":1}}"#,
            "\n"
        ),
        p = P
    );
    assert_eq!(out, want);
}

#[test]
fn preprocess_public_check_and_mean_gains() {
    let c = r#"{"num_sc_per_device": 4, "local_device_count": 1, "global_device_count": 1,
                "max_ids_per_partition": 8, "max_unique_ids_per_partition": 8}"#;
    let b = format!(
        r#"{{"features": [{{"name": "f", "samples": [{}]}}]}}"#,
        ["[0,1,2,3]"; 8].join(",")
    );
    let (code, out, _) = preprocess("public", c, &b);
    assert_eq!(code, 0);
    let rp = ["2,10,18,26,32,32,32,32"; 4].join(",");
    assert!(out.starts_with(&format!(
        r#"{{"devices":[{{"row_pointers":[{rp}],"embedding_ids":[0,0,{P},"#
    )));
    assert!(out.ends_with(
        r#""max_ids_per_partition":[2,2,2,2],"max_unique_ids_per_partition":[1,1,1,1],"required_buffer_size":[32,32,32,32]}],"dropped_id_count":0,"num_minibatches":1}
"#
    ));

    // Mean over weights 1 and 2: gains 1/3 and 2/3 as f32 (shortest round trip).
    let b = r#"{"features": [{"name": "f", "samples": [[4, 5]], "weights": [[1, 2]]}]}"#;
    let (code, out, _) = preprocess("mean", &config(r#", "combiner": "mean""#), b);
    assert_eq!(code, 0);
    assert!(
        out.contains(r#""coo":[[[0,4,0.33333334],[0,5,0.6666667]]]"#),
        "{out}"
    );
}

#[test]
fn preprocess_caller_minibatches() {
    let b = r#"{"minibatches": [{"features": [{"name": "f", "samples": [[0, 1]]}]},
                                {"features": [{"name": "f", "samples": [[5]]}]}]}"#;
    let (code, out, err) = preprocess("mbs", &config(r#", "minibatching": true"#), b);
    assert_eq!((code, err.as_str()), (0, ""));
    let want = format!(
        concat!(
            r#"{{"devices":[{{"row_pointers":[2,8,8,8,8,8,8,8,9,16,16,16,16,16,16,16],"#,
            r#""embedding_ids":[0,1,{p},{p},{p},{p},{p},{p},5,{p},{p},{p},{p},{p},{p},{p}],"#,
            r#""sample_ids":[0,0,{p},{p},{p},{p},{p},{p},0,{p},{p},{p},{p},{p},{p},{p}],"#,
            r#""gains":[1.0,1.0,null,null,null,null,null,null,1.0,null,null,null,null,null,null,null],"#,
            r#""coo":[[[0,0,1.0],[0,1,1.0],[0,5,1.0]]],"#,
            r#""max_ids_per_partition":[2],"max_unique_ids_per_partition":[2],"#,
            r#""required_buffer_size":[16]}}],"dropped_id_count":0,"num_minibatches":2}}"#,
            "\n"
        ),
        p = P
    );
    assert_eq!(out, want);
}

#[test]
fn preprocess_computed_minibatching() {
    // 4 ids in one partition, limit 2: buckets 0, 1 | 2, 3 (node 32 split).
    let b = r#"{"features": [{"name": "f", "samples": [[3, 2, 1, 0]]}]}"#;
    let (code, out, _) = preprocess("computed", &config(r#", "minibatching": true"#), b);
    assert_eq!(code, 0);
    assert!(out.contains(r#""row_pointers":[2,8,8,8,8,8,8,8,10,16,16,16,16,16,16,16],"#));
    assert!(out.ends_with(
        r#""dropped_id_count":0,"num_minibatches":2}
"#
    ));
}

#[test]
fn preprocess_highway_hash() {
    use sparse_runtime::sparsecore::{
        preprocess_with_hash, Feature, HighwayHash, PreprocessConfig,
    };
    // 32 distinct ids in one partition, limit 4: the split follows the HighwayHash buckets.
    let ids: Vec<i64> = (0..32).collect();
    let b = format!(r#"{{"features": [{{"name": "f", "samples": [{ids:?}]}}]}}"#);
    let c = r#"{"num_sc_per_device": 1, "local_device_count": 1, "global_device_count": 1,
                "max_ids_per_partition": 4, "max_unique_ids_per_partition": 4,
                "minibatching": true, "minibatch_hash": "highway"}"#;
    let (code, out, err) = preprocess("highway", c, &b);
    assert_eq!((code, err.as_str()), (0, ""));
    let mut cfg = PreprocessConfig::new(1, 1, 1, 4, 4);
    cfg.minibatching = true;
    let f = Feature::from_samples("f", &[ids], None).unwrap();
    let want = preprocess_with_hash(&cfg, &[f], &HighwayHash).unwrap();
    assert!(want.num_minibatches > 1);
    assert!(out.ends_with(&format!(
        r#""num_minibatches":{}}}
"#,
        want.num_minibatches
    )));
    let rp: Vec<String> = want.devices[0]
        .row_pointers
        .iter()
        .map(|p| p.to_string())
        .collect();
    assert!(out.starts_with(&format!(
        r#"{{"devices":[{{"row_pointers":[{}],"#,
        rp.join(",")
    )));
}

#[test]
fn split_public_checks() {
    let d = dir("split");
    for (counts, limit, want) in [
        ("[10,10,10,10,10,10,10,10]", "100", 0),
        ("[100,100,100,100,100,100,100,100]", "150", 0b1111111),
        ("[10,20,30,40,50,60,70,80]", "100", 0b1101100),
        ("[50,50,20,80,10,10,70,10]", "100", 0b1010000),
        ("[90,10,90,10,90,10,90,10]", "100", 0b1110000),
    ] {
        let f = file(&d, "counts.json", counts);
        let (code, out, err) = sparse(&["sparsecore", "split", &f, "--limit", limit]);
        assert_eq!((code, err.as_str()), (0, ""));
        let n = u32::count_ones(want) + 1;
        assert_eq!(
            out,
            format!("{{\"split\":{want},\"num_minibatches\":{n}}}\n")
        );
    }
    let mut c = vec!["0"; 64];
    c[0] = "5";
    c[63] = "5";
    let f = file(&d, "c64.json", &format!("[{}]", c.join(",")));
    let (_, out, _) = sparse(&["sparsecore", "split", &f, "--limit", "9"]);
    assert_eq!(
        out,
        format!("{{\"split\":{},\"num_minibatches\":2}}\n", 1u64 << 62)
    );
}

#[test]
fn split_sums_saturate_instead_of_panicking() {
    // The largest counts and limit JSON and --limit take: sums saturate at u64::MAX.
    let d = dir("split-max");
    let max = u64::MAX.to_string();
    let f = file(&d, "max.json", &format!("[{max},{max},{max},{max}]"));
    let (code, out, err) = sparse(&["sparsecore", "split", &f, "--limit", &max]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(out, "{\"split\":0,\"num_minibatches\":1}\n");
    let (code, out, err) = sparse(&["sparsecore", "split", &f, "--limit", "1"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(out, "{\"split\":7,\"num_minibatches\":4}\n");
}

#[test]
fn split_errors() {
    let d = dir("split-errors");
    let three = file(&d, "three.json", "[1,2,3]");
    fails(
        sparse(&["sparsecore", "split", &three, "--limit", "1"]),
        "3 counts; their number must be a power of two from 1 to 64",
    );
    let obj = file(&d, "obj.json", r#"{"counts": [1, 2]}"#);
    fails(
        sparse(&["sparsecore", "split", &obj, "--limit", "1"]),
        "obj.json: invalid type: map",
    );
    let neg = file(&d, "neg.json", "[1, -2]");
    fails(
        sparse(&["sparsecore", "split", &neg, "--limit", "1"]),
        "neg.json: invalid value: integer `-2`",
    );
    let ok = file(&d, "ok.json", "[1, 2]");
    fails(
        sparse(&["sparsecore", "split", &ok]),
        "sparsecore split needs --limit N",
    );
    fails(
        sparse(&["sparsecore", "split", &ok, "--limit", "-1"]),
        "--limit -1: not a non-negative integer",
    );
    fails(
        sparse(&[
            "sparsecore",
            "split",
            &d.path().join("none.json").to_string_lossy(),
            "--limit",
            "1",
        ]),
        "cannot read",
    );
}

#[test]
fn preprocess_errors() {
    let batch = r#"{"features": [{"name": "f", "samples": [[1], [2]]}]}"#;
    let cfg = |s: i64, l: i64, g: i64, extra: &str| {
        format!(
            r#"{{"num_sc_per_device": {s}, "local_device_count": {l}, "global_device_count": {g},
                "max_ids_per_partition": 4, "max_unique_ids_per_partition": 4{extra}}}"#
        )
    };
    let cases: Vec<(String, String, &str)> = vec![
        (cfg(1, 0, 1, ""), batch.into(), "local_device_count must be greater than 0"),
        (cfg(1, 1, 0, ""), batch.into(), "global_device_count must be greater than 0"),
        (
            cfg(1, 2, 1, ""),
            batch.into(),
            "global_device_count must be greater than or equal to local_device_count",
        ),
        (cfg(0, 1, 1, ""), batch.into(), "num_sc_per_device must be greater than 0"),
        (cfg(-2, 1, 1, ""), batch.into(), "num_sc_per_device must be greater than 0, but got -2"),
        (cfg(3, 1, 1, ""), batch.into(), "Total number of SparseCores (3) must be a power of 2."),
        (
            cfg(1, 1, 1, ""),
            r#"{"features": []}"#.into(),
            "input_batches cannot be empty",
        ),
        (
            cfg(1, 1, 1, r#", "suggested_coo_buffer_size": 9"#),
            batch.into(),
            "Suggested Coo Buffer Size is larger than the theoretical max for table table: 16 vs 8",
        ),
        (
            // the largest suggestion JSON holds: rounding saturates, no overflow panic
            cfg(1, 1, 1, r#", "suggested_coo_buffer_size": 18446744073709551615"#),
            batch.into(),
            "Suggested Coo Buffer Size is larger than the theoretical max for table table: 18446744073709551615 vs 8",
        ),
        (
            cfg(1, 1, 1, r#", "table": "tbl""#),
            r#"{"features": [{"name": "f", "samples": [[1, 3, 5, 7, 9]]}]}"#.into(),
            "Observed max ids per partition: 5 for table: tbl is greater than the set max ids per partition: 4",
        ),
        (
            cfg(1, 1, 1, "").replace(r#""max_ids_per_partition": 4"#, r#""max_ids_per_partition": 100"#),
            r#"{"features": [{"name": "f", "samples": [[1], [1, 3, 5, 7, 9, 9, 9]]}]}"#.into(),
            "Observed max unique ids per partition: 5 for table: table is greater than the set max unique ids per partition: 4",
        ),
        (
            cfg(1, 1, 1, r#", "check_id_bounds": true"#),
            r#"{"features": [{"name": "f", "samples": [[1, 9]], "vocab_size": 9}]}"#.into(),
            "feature f, sample 0: id 9 is out of bounds of its table (9 rows)",
        ),
        (cfg(1, 1, 1, ""), "{".into(), "batch.json: EOF while parsing"),
        (
            r#"{"num_sc_per_device": 1, "local_device_count": 1, "global_device_count": 1, "max_unique_ids_per_partition": 4}"#.into(),
            batch.into(),
            "config.json: missing field `max_ids_per_partition`",
        ),
        (cfg(1, 1, 1, ""), r#"{"feature": []}"#.into(), "batch.json: missing field `features`"),
        (
            cfg(1, 1, 1, ""),
            r#"{"features": [{"name": "f", "samples": [[1, 2]], "weights": [[1]]}]}"#.into(),
            "feature f: weights must have the shape of samples: sample 0 has 2 ids but 1 weights",
        ),
        (
            cfg(1, 1, 1, ""),
            r#"{"features": [{"name": "f", "samples": [[1, -2]]}]}"#.into(),
            "feature f, sample 0: id -2 is negative",
        ),
        (
            cfg(1, 1, 1, r#", "combiner": "max""#),
            batch.into(),
            "unknown combiner 'max' (expected sum, mean or sqrtn)",
        ),
        (
            cfg(1, 1, 1, r#", "minibatch_hash": "murmur""#),
            batch.into(),
            "unknown minibatch_hash 'murmur' (expected identity or highway)",
        ),
        (
            cfg(2, 1, 1, ""),
            r#"{"features": [{"name": "f", "samples": [[1], [2], [3]]}]}"#.into(),
            "feature f has 3 samples, which do not split evenly over local_device_count * num_sc_per_device = 2 slices",
        ),
        (
            cfg(1, 1, 1, ""),
            r#"{"minibatches": [{"features": [{"name": "f", "samples": [[1]]}]}]}"#.into(),
            "minibatches given, but minibatching is false",
        ),
    ];
    for (i, (c, b, want)) in cases.into_iter().enumerate() {
        fails(preprocess(&format!("err{i}"), &c, &b), want);
    }
    fails(
        sparse(&[
            "sparsecore",
            "preprocess",
            "/nonexistent/c.json",
            "/nonexistent/b.json",
        ]),
        "cannot read /nonexistent/c.json",
    );
}

/// The errors of the contract `preprocess_errors` leaves out: the largest observed count over
/// partitions, SparseCores and devices; limits per bucket with computed minibatching; the
/// shapes of BATCH (minibatches, keys, weight rows).
#[test]
fn preprocess_more_errors() {
    let cfg = |s: u32, l: u32, g: u32, extra: &str| {
        format!(
            r#"{{"num_sc_per_device": {s}, "local_device_count": {l}, "global_device_count": {g},
                "max_ids_per_partition": 4, "max_unique_ids_per_partition": 4{extra}}}"#
        )
    };
    let ids = |n: usize| {
        let v: Vec<String> = (0..n).map(|i| (4 * i).to_string()).collect();
        format!("[{}]", v.join(","))
    };
    let observed = |x: u32| {
        format!(
            "Observed max ids per partition: {x} for table: table is greater than the set max \
             ids per partition: 4"
        )
    };
    let one = r#"{"features": [{"name": "f", "samples": [[1]]}]}"#;
    let cases: Vec<(String, String, String)> = vec![
        // 2 devices of 2 SCs: slices of 5, 1, 7 and 1 ids of partition 0; X is the largest, 7,
        // wherever it is
        (
            cfg(2, 2, 2, ""),
            format!(
                r#"{{"features": [{{"name": "f", "samples": [{}, [1], {}, [2]]}}]}}"#,
                ids(5),
                ids(7)
            ),
            observed(7),
        ),
        (
            cfg(2, 2, 2, ""),
            format!(
                r#"{{"features": [{{"name": "f", "samples": [{}, [1], {}, [2]]}}]}}"#,
                ids(7),
                ids(5)
            ),
            observed(7),
        ),
        // computed minibatching without dropping: 0, 64 and 128 share bucket 0, which no split
        // can shrink, so the limit is exceeded per bucket
        (
            cfg(1, 1, 1, r#", "minibatching": true"#),
            r#"{"features": [{"name": "f", "samples": [[0, 64, 128, 192, 256]]}]}"#.into(),
            observed(5),
        ),
        (
            cfg(1, 1, 1, r#", "minibatching": true"#),
            r#"{"minibatches": []}"#.into(),
            "minibatches cannot be empty".into(),
        ),
        (
            cfg(1, 1, 1, r#", "minibatching": true"#),
            r#"{"minibatches": [{"features": []}]}"#.into(),
            "input_batches cannot be empty".into(),
        ),
        (
            cfg(1, 1, 1, r#", "minibatching": true"#),
            format!(
                r#"{{"features": [{{"name": "f", "samples": [[1]]}}], "minibatches": [{one}]}}"#
            ),
            r#"batch.json: holds both "features" and "minibatches"; give one"#.into(),
        ),
        (
            cfg(1, 1, 1, ""),
            r#"{"features": [{"samples": [[1]]}]}"#.into(),
            "batch.json: missing field `name`".into(),
        ),
        (
            cfg(1, 1, 1, ""),
            r#"{"features": [{"name": "f"}]}"#.into(),
            "batch.json: missing field `samples`".into(),
        ),
        (
            cfg(1, 1, 1, ""),
            r#"{"features": [{"name": "f", "samples": [[1]], "weights": [[1], [2]]}]}"#.into(),
            "feature f: weights must have the shape of samples: 2 weight rows for 1 samples".into(),
        ),
        (
            cfg(1, 1, 1, ""),
            r#"{"features": [{"name": "f", "samples": [[1.5]]}]}"#.into(),
            "batch.json: invalid type: floating point `1.5`".into(),
        ),
        (
            cfg(1, 1, 1, r#", "suggested_coo_buffer_size": -8"#),
            one.into(),
            "config.json: invalid value: integer `-8`".into(),
        ),
        (
            cfg(1, 1, 2, ""),
            r#"{"features": [{"name": "f", "samples": [[1]], "col_offset": 3}]}"#.into(),
            "feature f: col_offset 3 is not a non-negative multiple of num_scs (2)".into(),
        ),
    ];
    for (i, (c, b, want)) in cases.into_iter().enumerate() {
        fails(preprocess(&format!("more{i}"), &c, &b), &want);
    }
}

#[test]
fn preprocess_reads_standard_input_and_feature_keys() {
    use std::io::Write;
    // Two devices of one SC each (num_scs 2), two features: "b" (row_offset 0) is taken before
    // "a" (row_offset 2: b's 2 samples in all, so a's rows start at 2 / (2 * 1) = 1 on each SC);
    // "a" has col_shift 1 and col_offset 2.
    let d = dir("stdin");
    let c = file(
        &d,
        "config.json",
        r#"{"num_sc_per_device": 1, "local_device_count": 2, "global_device_count": 2,
            "max_ids_per_partition": 4, "max_unique_ids_per_partition": 4}"#,
    );
    let batch = r#"{"features": [
        {"name": "a", "samples": [[0], [1]], "row_offset": 2, "col_shift": 1, "col_offset": 2},
        {"name": "b", "samples": [[2], [3]], "weights": null}]}"#;
    let mut child = Command::new(env!("CARGO_BIN_EXE_sparse"))
        .args(["sparsecore", "preprocess", &c, "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(batch.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let text = String::from_utf8(out.stdout).unwrap();
    // Device 0: b's sample 0 (id 2, row 0) and a's sample 0 (id 0 -> col 1 + 2 = 3, row 1);
    // device 1: b's sample 1 (id 3, row 0) and a's sample 1 (id 1 -> col 0 + 2 = 2, row 1).
    assert!(text.contains(r#""coo":[[[0,2,1.0],[1,3,1.0]]]"#), "{text}");
    assert!(text.contains(r#""coo":[[[1,2,1.0],[0,3,1.0]]]"#), "{text}");
    fails(
        sparse(&["sparsecore", "preprocess", "-", "-"]),
        "standard input can be read only once",
    );
}

/// Runs `preprocess` with the address space limited to 4 GiB (`sh -c 'ulimit -v ...'`), so a
/// configuration that slipped past the host-memory check aborts here (status -1 or 134)
/// instead of taking the test machine's memory; returns (status, stdout, stderr).
fn preprocess_limited(test: &str, config: &str, batch: &str) -> (i32, String, String) {
    let d = dir(test);
    let c = file(&d, "config.json", config);
    let b = file(&d, "batch.json", batch);
    let out = Command::new("sh")
        .args([
            "-c",
            "ulimit -v 4194304 && exec \"$0\" sparsecore preprocess \"$1\" \"$2\"",
            env!("CARGO_BIN_EXE_sparse"),
            &c,
            &b,
        ])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// Huge counts in CONFIG (issue 10: `global_device_count` 134217728 was an out-of-memory kill,
/// status 137 and nothing on stderr): each is `error: ` naming the bytes and the keys they
/// come from, exit status 1, at once.
#[test]
fn preprocess_huge_configs_are_errors_not_out_of_memory() {
    let batch = r#"{"features": [{"name": "f", "samples": [[1], [2]]}]}"#;
    let cfg = |s: u64, l: u64, g: u64, max_ids: u64, extra: &str| {
        format!(
            r#"{{"num_sc_per_device": {s}, "local_device_count": {l}, "global_device_count": {g},
                "max_ids_per_partition": {max_ids}, "max_unique_ids_per_partition": 8{extra}}}"#
        )
    };
    let head = |needed: u64| {
        format!(
            "table table: preprocessing would allocate {needed} bytes of host memory, more than \
             max_host_bytes = 1073741824: "
        )
    };
    let cases: Vec<(String, String)> =
        vec![
        // the issue's case: 2^27 devices, buffers of 2^30 entries
        (
            cfg(1, 1, 1 << 27, 8, ""),
            format!(
                "{}12884901888 bytes of output buffers (local_device_count 1 x buffer length \
                 1073741824 x 12 bytes; buffer length = roundup8(max_ids_per_partition = 8) x \
                 num_sc_per_device x num_scs), 536870912 bytes of row pointers",
                head(15_569_256_448)
            ),
        ),
        // minibatching's factor 64 on 2^20 SparseCores
        (
            cfg(1, 1, 1 << 20, 8, r#", "minibatching": true"#),
            format!(
                "{}6442450944 bytes of output buffers (local_device_count 1 x buffer length \
                 536870912 x 12 bytes; buffer length = roundup8(max_ids_per_partition = 8) x \
                 num_sc_per_device x num_scs x minibatches 64)",
                head(6_442_450_944 + 268_435_456 + 545_259_520)
            ),
        ),
        // num_sc_per_device 4096 (checked before the batch's 4096 slices)
        (
            cfg(4096, 1, 1, 8, ""),
            format!(
                "{}1610612736 bytes of output buffers (local_device_count 1 x buffer length \
                 134217728 x 12 bytes",
                head(1_610_612_736 + 4096 * 4096 * 4 + 4096 * 8 * 4097)
            ),
        ),
        // max_ids_per_partition 2 * 10^8 on one SparseCore
        (
            cfg(1, 1, 1, 200_000_000, ""),
            format!(
                "{}2400000000 bytes of output buffers (local_device_count 1 x buffer length \
                 200000000 x 12 bytes; buffer length = roundup8(max_ids_per_partition = \
                 200000000) x num_sc_per_device x num_scs), 32 bytes of row pointers",
                head(2_400_000_048)
            ),
        ),
        // max_ids_per_partition 8 * 10^6 with minibatching
        (
            cfg(1, 1, 1, 8_000_000, r#", "minibatching": true"#),
            format!(
                "{}6144000000 bytes of output buffers (local_device_count 1 x buffer length \
                 512000000 x 12 bytes",
                head(6_144_000_000 + 64 * 8 * 4 + 8 * 65)
            ),
        ),
        // a suggested size within the theoretical max (2^16 * 2048) is still 1.2 GB
        (
            cfg(1, 1, 1 << 16, 2048, r#", "suggested_coo_buffer_size": 100000000"#),
            "1200000000 bytes of output buffers (local_device_count 1 x buffer length \
             100000000 x 12 bytes; buffer length = suggested_coo_buffer_size = 100000000 \
             rounded up to 8 x num_sc_per_device)"
                .to_string(),
        ),
        // 2^16 local devices
        (
            cfg(1, 1 << 16, 1 << 16, 8, ""),
            "412316860416 bytes of output buffers (local_device_count 65536 x buffer length \
             524288 x 12 bytes"
                .to_string(),
        ),
        // caller minibatches multiply by their number
        (
            cfg(1, 1, 1 << 25, 8, r#", "minibatching": true"#),
            "bytes of output buffers (local_device_count 1 x buffer length 805306368 x 12 bytes; \
             buffer length = roundup8(max_ids_per_partition = 8) x num_sc_per_device x num_scs x \
             minibatches 3)"
                .to_string(),
        ),
        // the cap is a CONFIG key: the 1-SparseCore batch needs 8 * 12 + 8 * 4 + 8 * 2 bytes
        (
            cfg(1, 1, 1, 8, r#", "max_host_bytes": 143"#),
            "table table: preprocessing would allocate 144 bytes of host memory, more than \
             max_host_bytes = 143: 96 bytes of output buffers"
                .to_string(),
        ),
    ];
    let one = r#"{"features": [{"name": "f", "samples": [[1]]}]}"#;
    let three = format!(r#"{{"minibatches": [{one}, {one}, {one}]}}"#);
    for (i, (c, want)) in cases.into_iter().enumerate() {
        let b = if c.contains("33554432") {
            three.as_str()
        } else {
            batch
        };
        let start = std::time::Instant::now();
        fails(preprocess_limited(&format!("huge{i}"), &c, b), &want);
        assert!(
            start.elapsed().as_secs() < 10,
            "case {i}: {:?}",
            start.elapsed()
        );
    }
    // ... and just enough is enough
    let (code, out, err) = preprocess(
        "huge-ok",
        &cfg(1, 1, 1, 8, r#", "max_host_bytes": 144"#),
        batch,
    );
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        out,
        format!(
            concat!(
                r#"{{"devices":[{{"row_pointers":[2,8,8,8,8,8,8,8],"#,
                r#""embedding_ids":[1,2,{p},{p},{p},{p},{p},{p}],"#,
                r#""sample_ids":[0,1,{p},{p},{p},{p},{p},{p}],"#,
                r#""gains":[1.0,1.0,null,null,null,null,null,null],"#,
                r#""coo":[[[0,1,1.0],[1,2,1.0]]],"#,
                r#""max_ids_per_partition":[2],"max_unique_ids_per_partition":[2],"#,
                r#""required_buffer_size":[8]}}],"dropped_id_count":0,"num_minibatches":1}}"#,
                "\n"
            ),
            p = P
        )
    );
}
