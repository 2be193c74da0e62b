//! `cloudcache sim --flash-model` and the timed `study raid` end to end.

mod common;

use common::*;

#[test]
fn flash_options_are_checked_before_the_trace_is_read() {
    let cases: [(&[&str], &str); 6] = [
        (&["--flash-model", "nand"], "expected ftl, log or none"),
        (&["--flash-model", "log", "--no-trim"], "--no-trim applies to --flash-model ftl"),
        (&["--no-trim"], "--no-trim needs --flash-model ftl"),
        (&["--flash-model", "ftl", "--over-provisioning", "1.5"], "outside (0, 1)"),
        (&["--flash-model", "ftl", "--cache-size", "8MiB"], "cache size 8MiB"),
        (&["--flash-model", "ftl", "--mode", "object", "--cache-size", "1GiB"], "needs block mode"),
    ];
    for (args, expected) in cases {
        let mut all = vec!["sim", "missing.vscsi"];
        all.extend_from_slice(args);
        let out = cloudcache(&all);
        assert!(!out.status.success(), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains(expected), "{args:?}: {err}");
        assert!(!err.contains("missing.vscsi"), "{args:?} was checked after opening the trace: {err}");
    }
}

#[test]
fn sim_with_a_flash_model_reports_wear_per_result() {
    let Some(trace) = sample_trace() else { return };
    let dir = temp_dir("sim");
    let out_json = dir.join("out.json");
    let out = cloudcache(&[
        "sim",
        trace.to_str().unwrap(),
        "--policy",
        "lru,s3fifo",
        "--cache-size",
        "16MiB",
        "--flash-model",
        "ftl",
        "--erase-unit",
        "128KiB",
        "--json",
        out_json.to_str().unwrap(),
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("flash device (ftl, erase unit 128KiB"), "{text}");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    for r in doc["results"].as_array().unwrap() {
        assert_eq!(r["flash_model"], "ftl");
        assert!(r["erasures"].as_u64().unwrap() > 0);
        assert!(r["write_amplification"].as_f64().unwrap() >= 1.0);
        assert!(r["epbpd"].as_f64().unwrap() > 0.0);
        assert!(r["fue"].as_f64().unwrap() > 0.0);
        assert!(r["endurance_days"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn raid_study_times_each_layout() {
    let Some(trace) = sample_trace() else { return };
    let dir = temp_dir("raid");
    let out_json = dir.join("raid.json");
    let out = cloudcache(&[
        "study",
        "raid",
        trace.to_str().unwrap(),
        "--cache-size",
        "64MiB",
        "--speedup",
        "20",
        "--json",
        out_json.to_str().unwrap(),
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("latency in ms at 20x"));
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    for r in doc["results"].as_array().unwrap() {
        let l = &r["latency"];
        assert_eq!(l["speedup"], 20.0);
        assert_eq!(l["latency"]["requests"], 113_872);
        assert!(l["read_latency"]["p90_us"].as_f64().unwrap() > 0.0);
        assert!(l["flash_ops"][0].as_u64().unwrap() > 0 && l["flash_ops"][1].as_u64().unwrap() > 0);
    }
}
