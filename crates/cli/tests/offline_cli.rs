//! End-to-end tests of `cloudcache offline`: the sample trace in, the
//! issue's JSON fields out, and clear errors for bad settings.

mod common;

use common::*;

#[test]
fn offline_on_the_sample_trace_writes_the_issue_fields() {
    let Some(trace) = sample_trace() else { return };
    let out_path = std::env::temp_dir().join(format!("cloudcache-offline-{}.json", std::process::id()));
    let out = cloudcache(&[
        "offline",
        trace.to_str().unwrap(),
        "--algorithms",
        "lru,min,m+,c,c5",
        "--cache-size",
        "2.5%,64MiB",
        "--erase-unit",
        "128KiB",
        "--json",
        out_path.to_str().unwrap(),
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 10);
    let fields = [
        "algorithm",
        "cache_size_bytes",
        "read_hit_ratio",
        "erasures",
        "epbpd",
        "flash_write_blocks",
        "copy_forward_blocks",
        "write_amplification",
        "fue",
    ];
    for r in results {
        for f in fields {
            assert!(!r[f].is_null(), "{f} missing in {r}");
        }
        assert!(r["write_amplification"].as_f64().unwrap() >= 1.0);
        assert_eq!(r["ghost_hits"].as_u64(), Some(0));
    }
    // 2.5 % of the 269,210-block working set, in whole blocks.
    assert_eq!(results[0]["cache_size_bytes"].as_u64(), Some(6730 * 4096));
    assert_eq!(results[5]["cache_size_bytes"].as_u64(), Some(64 << 20));
    let by = |size: usize, name: &str| {
        results[size * 5..size * 5 + 5].iter().find(|r| r["algorithm"] == name).unwrap().clone()
    };
    for size in 0..2 {
        // C makes M+'s decisions: the same hit ratio, exactly.
        assert_eq!(by(size, "c")["read_hit_ratio"], by(size, "m+")["read_hit_ratio"]);
        let rhr = |n: &str| by(size, n)["read_hit_ratio"].as_f64().unwrap();
        assert!(rhr("min") > rhr("lru"));
    }
    let _ = std::fs::remove_file(out_path);
}

#[test]
fn offline_bad_settings_are_named() {
    let Some(trace) = sample_trace() else { return };
    let t = trace.to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["--algorithms", "mt", "--erasure-budget", "0"], "erasure budget 0 EPBPD"),
        (&["--over-provisioning", "1.2"], "over-provisioning 1.2 is outside (0, 1)"),
        (&["--erase-unit", "6KiB"], "not a positive multiple of the block size"),
        (&["--algorithms", "lru,m0"], "unknown algorithm \"m0\""),
        (&["--cache-size", "1%"], "too little spare space"),
    ];
    for (extra, expected) in cases {
        let mut args = vec!["offline", t, "-q"];
        args.extend_from_slice(extra);
        let out = cloudcache(&args);
        assert!(!out.status.success(), "{extra:?} should fail");
        assert!(stderr(&out).contains(expected), "{extra:?}: {}", stderr(&out));
    }
}
