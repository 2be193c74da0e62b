//! End-to-end tests of `cloudcache latency` and `cloudcache study`: the
//! sample trace in, JSON and tables out, and clear errors on bad input.

mod common;

use common::*;

#[test]
fn latency_on_the_sample_trace_reports_percentiles_and_server_load() {
    let Some(trace) = sample_trace() else { return };
    let out_json = temp_dir("latency").join("latency.json");
    let out = cloudcache(&[
        "latency",
        trace.to_str().unwrap(),
        "--cache-size",
        "256MiB",
        "--write-policy",
        "write-through",
        "--bucket",
        "10min",
        "--json",
        out_json.to_str().unwrap(),
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("p99"), "{}", stdout(&out));
    let doc = json(&out_json);
    assert_eq!(doc["requests"], 113_872);
    assert_eq!(doc["write_policy"], "write-through");
    let lat = &doc["latency"];
    assert_eq!(lat["requests"], 113_872);
    let q = |k: &str| lat[k].as_f64().unwrap();
    assert!(q("p50_us") <= q("p90_us") && q("p90_us") <= q("p95_us") && q("p95_us") <= q("p99_us"));
    assert!(q("p99_us") <= q("max_us") && q("p50_us") > 0.0);
    assert_eq!(doc["volumes"][0]["all"]["requests"], 113_872);
    // Write-through sends every client write to the server: 66,898 writes.
    assert_eq!(doc["server"]["writes"]["ops"], 66_898);
    assert_eq!(doc["server"]["write_backs"]["ops"], 0);
    // Two hours in ten-minute buckets; bucket server ops add up to the total.
    let buckets = doc["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 13, "12 full buckets and the last request's");
    let ops: u64 = buckets.iter().map(|b| b["server"]["writes"]["ops"].as_u64().unwrap()).sum();
    assert_eq!(ops, 66_898);
    assert!(doc["model"]["backend"]["servers"].as_u64().is_some());
}

#[test]
fn write_policy_study_cuts_server_load_with_write_back() {
    let Some(trace) = sample_trace() else { return };
    let out_json = temp_dir("wp").join("wp.json");
    let out = cloudcache(&[
        "study",
        "write-policy",
        trace.to_str().unwrap(),
        "--cache-size",
        "120%",
        "--json",
        out_json.to_str().unwrap(),
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json(&out_json);
    let results = doc["results"].as_array().unwrap();
    let labels: Vec<&str> = results.iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["no cache", "write-invalidate", "write-through", "write-back"]);
    let server_ops = |i: usize| {
        let s = &results[i]["server"];
        ["reads", "writes", "write_backs", "trims"].iter().map(|k| s[k]["ops"].as_u64().unwrap()).sum::<u64>()
    };
    // A cache larger than the working set never evicts: write-back sends no
    // write to the server, write-through sends all of them.
    assert_eq!(results[3]["server"]["writes"]["ops"], 0);
    assert_eq!(results[3]["server"]["write_backs"]["ops"], 0);
    assert!(server_ops(3) < server_ops(2) / 2);
    assert_eq!(results[0]["server"]["reads"]["ops"], 46_974);
    assert_eq!(results[2]["read_hit_ratio"], results[3]["read_hit_ratio"]);
}

#[test]
fn restart_study_compares_warm_dirty_only_and_cold() {
    let Some(trace) = sample_trace() else { return };
    let out_json = temp_dir("restart").join("restart.json");
    let out = cloudcache(&[
        "study",
        "restart",
        trace.to_str().unwrap(),
        "--reboot-at",
        "40min,1h20min",
        "--cache-size",
        "50%",
        "--json",
        out_json.to_str().unwrap(),
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json(&out_json);
    let r = doc["results"].as_array().unwrap();
    assert_eq!(r.len(), 3);
    let hit = |i: usize| r[i]["read_hit_ratio"].as_f64().unwrap();
    assert!(hit(0) > hit(1) && hit(1) > hit(2), "warm {} dirty-only {} cold {}", hit(0), hit(1), hit(2));
    for result in r {
        assert_eq!(result["reboots"].as_array().unwrap().len(), 2);
    }
    // Cold: everything flushed, nothing kept; warm: nothing flushed.
    let reboot = &r[2]["reboots"][0];
    assert_eq!(reboot["flushed_blocks"], reboot["dirty_blocks"]);
    assert_eq!(reboot["kept_blocks"], 0);
    assert_eq!(r[0]["reboots"][0]["flushed_blocks"], 0);
    assert_eq!(r[1]["reboots"][0]["kept_blocks"], r[1]["reboots"][0]["dirty_blocks"]);
}

#[test]
fn raid_study_reports_capacity_writes_and_loss() {
    let Some(trace) = sample_trace() else { return };
    let out = cloudcache(&["study", "raid", trace.to_str().unwrap(), "--cache-size", "64MiB", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for layout in ["raid-0", "raid-1", "cache-optimized"] {
        assert!(text.contains(layout), "{text}");
    }
}

#[test]
fn a_reboot_past_the_end_is_refused() {
    let Some(trace) = sample_trace() else { return };
    let out = cloudcache(&["study", "restart", trace.to_str().unwrap(), "--reboot-at", "1h,6h", "-q"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("reboot at 6 h is past the end of the trace, which lasts 2 h"), "{err}");
}

#[test]
fn timed_replay_refuses_a_trace_without_timestamps() {
    let dir = temp_dir("notime");
    let trace = dir.join("untimed.csv");
    std::fs::write(&trace, "R,0,4096\nW,4096,4096\n").unwrap();
    let out = cloudcache(&[
        "latency",
        trace.to_str().unwrap(),
        "--format",
        "csv",
        "--columns",
        "op=0,offset=1,len=2",
        "--cache-size",
        "1MiB",
        "-q",
    ]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("timed replay needs request timestamps") && err.contains("untimed.csv"), "{err}");
}

#[test]
fn bad_arguments_are_named() {
    let dir = temp_dir("badargs");
    let trace = dir.join("t.csv");
    std::fs::write(&trace, "128166372003061629,hm,0,Read,0,4096,26\n").unwrap();
    let t = trace.to_str().unwrap();
    for (args, expected) in [
        (vec!["latency", t, "--speedup", "0"], "speed-up \"0\" is not a positive number"),
        (vec!["latency", t, "--cache-size", "0%"], "must be a percentage above 0"),
        (vec!["latency", t, "--bucket", "0s"], "duration \"0s\" is zero"),
        (vec!["latency", t, "--write-policy", "sometimes"], "unknown write policy"),
        (vec!["study", "restart", t, "--reboot-at", "soon"], "soon"),
    ] {
        let out = cloudcache(&args);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr(&out).contains(expected), "{args:?}: {}", stderr(&out));
    }
    let model = dir.join("model.toml");
    std::fs::write(&model, "[flash]\nservers = 0\n").unwrap();
    let out = cloudcache(&["latency", t, "--model", model.to_str().unwrap(), "-q"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("model.toml"), "{}", stderr(&out));
}
