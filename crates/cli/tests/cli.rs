//! End-to-end tests of the `cloudcache` binary: real files in, exit codes,
//! JSON and error messages out.

mod common;

use common::*;

use std::process::Command;

#[test]
fn sim_on_the_sample_trace_writes_every_counter() {
    let Some(trace) = sample_trace() else { return };
    let dir = temp_dir("sim");
    let out_json = dir.join("out.json");
    let out_html = dir.join("report.html");
    let out = cloudcache(&[
        "sim",
        trace.to_str().unwrap(),
        "--html",
        out_html.to_str().unwrap(),
        "--policy",
        "lru,arc",
        "--cache-size",
        "16MiB,64MiB,256MiB,1GiB",
        "--block-size",
        "4KiB",
        "--write-policy",
        "write-back",
        "--mode",
        "block",
        "--json",
        out_json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary.contains("113872 requests"), "{summary}");
    let doc = json(&out_json);
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 8);
    for field in [
        "policy",
        "mode",
        "write_policy",
        "block_size",
        "cache_size_bytes",
        "requests",
        "request_hits",
        "block_accesses",
        "block_hits",
        "read_block_accesses",
        "read_block_hits",
        "write_block_accesses",
        "write_block_hits",
        "backend_read_blocks",
        "backend_write_blocks",
        "flash_write_blocks",
        "evictions",
        "dirty_evictions",
        "dirty_blocks_at_end",
        "request_hit_ratio",
        "block_hit_ratio",
        "read_block_hit_ratio",
        "write_block_hit_ratio",
        "flash_write_ratio",
    ] {
        assert!(results[0].get(field).is_some(), "missing {field}");
    }
    let lru: Vec<&serde_json::Value> = results.iter().filter(|r| r["policy"] == "lru").collect();
    for r in &lru {
        assert_eq!(r["requests"], 113_872);
        assert_eq!(r["mode"], "block");
        // Write-back with no watermarks: every write miss and write hit is a flash write.
        let n = |f: &str| r[f].as_u64().unwrap();
        assert_eq!(n("block_accesses"), n("read_block_accesses") + n("write_block_accesses"));
        assert_eq!(
            n("flash_write_blocks"),
            n("read_block_accesses") - n("read_block_hits") + n("write_block_accesses")
        );
        // Dirty blocks leave by eviction only, so each backend write is a dirty eviction.
        assert_eq!(n("backend_write_blocks"), n("dirty_evictions"));
    }
    // LRU is a stack algorithm: a larger cache never hits less.
    for pair in lru.windows(2) {
        assert!(pair[1]["block_hits"].as_u64() >= pair[0]["block_hits"].as_u64());
    }
    // The sample's mix: 46,974 reads and 66,898 writes.
    assert_eq!(lru[0]["volumes"][0]["read_requests"], 46_974);
    assert_eq!(lru[0]["volumes"][0]["write_requests"], 66_898);
    let html = std::fs::read_to_string(&out_html).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    assert_eq!(html.matches("<svg").count(), html.matches("</svg>").count());
    assert!(html.matches("<svg").count() >= 6, "one chart per metric");
    assert!(html.contains("cloudPhysicsIO") && html.contains("113,872"));
}

#[test]
fn bad_cache_sizes_are_rejected_with_the_value_named() {
    for (size, expected) in [("0", "zero"), ("-1GiB", "negative"), ("12XB", "unknown size unit")] {
        let out = cloudcache(&["sim", "nonexistent.trace", "--cache-size", size]);
        assert!(!out.status.success());
        let err = stderr(&out);
        assert!(err.contains(expected) && err.contains(size), "{size}: {err}");
    }
}

#[test]
fn block_size_must_be_a_power_of_two() {
    let dir = temp_dir("blocksize");
    let trace = dir.join("t.csv");
    std::fs::write(&trace, "128166372003061629,hm,0,Read,0,4096,26\n").unwrap();
    let out = cloudcache(&["sim", trace.to_str().unwrap(), "--block-size", "3000", "-q"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("block size 3000 is not a power of two"), "{}", stderr(&out));
}

#[test]
fn malformed_line_names_file_line_and_field_and_can_be_skipped() {
    let dir = temp_dir("badline");
    let trace = dir.join("msr.csv");
    std::fs::write(
        &trace,
        "128166372003061629,hm,0,Read,0,4096,26\n\
         128166372003061630,hm,0,Write,8192,4096,26\n\
         128166372003061631,hm,0,Read,notanumber,4096,26\n\
         128166372003061632,hm,0,Read,0,4096,26\n",
    )
    .unwrap();
    let out = cloudcache(&["sim", trace.to_str().unwrap(), "-q"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("msr.csv:3") && err.contains("Offset") && err.contains("notanumber"), "{err}");

    let out_json = dir.join("out.json");
    let out = cloudcache(&[
        "sim",
        trace.to_str().unwrap(),
        "--skip-bad-lines",
        "--cache-size",
        "1MiB",
        "--json",
        out_json.to_str().unwrap(),
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json(&out_json);
    assert_eq!(doc["trace"]["sources"][0]["skipped_lines"], 1);
    assert_eq!(doc["results"][0]["requests"], 3);
    assert_eq!(doc["results"][0]["request_hits"], 1);
}

#[test]
fn unknown_format_and_truncated_binary_are_clear_errors() {
    let dir = temp_dir("formats");
    let unknown = dir.join("mystery.txt");
    std::fs::write(&unknown, "hello world\nthis is not a trace\n").unwrap();
    let out = cloudcache(&["sim", unknown.to_str().unwrap(), "-q"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("unknown trace format"), "{}", stderr(&out));

    // Two whole vscsi v1 records and 10 bytes of a third.
    let mut bytes = Vec::new();
    for i in 0..2u64 {
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.extend_from_slice(&4096u32.to_le_bytes());
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.extend_from_slice(&0x28u16.to_le_bytes());
        bytes.extend_from_slice(&0x100u16.to_le_bytes());
        bytes.extend_from_slice(&(i * 8).to_le_bytes());
        bytes.extend_from_slice(&(1000 + i).to_le_bytes());
    }
    bytes.extend_from_slice(&[1, 0, 0, 0, 0, 16, 0, 0, 1, 0]);
    let truncated = dir.join("cut.vscsi");
    std::fs::write(&truncated, &bytes).unwrap();
    let out = cloudcache(&["sim", truncated.to_str().unwrap(), "-q"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("cut.vscsi") && err.contains("byte offset 64") && err.contains("truncated"),
        "{err}"
    );
}

#[test]
fn object_mode_counts_requests_as_objects() {
    let dir = temp_dir("object");
    let trace = dir.join("msr.csv");
    // Same offset with another length is a hit (first-seen size kept).
    std::fs::write(
        &trace,
        "128166372003061629,hm,0,Read,0,4096,26\n\
         128166372003061630,hm,0,Read,0,65536,26\n\
         128166372003061631,hm,0,Write,4096,4096,26\n",
    )
    .unwrap();
    let out_json = dir.join("out.json");
    let out = cloudcache(&[
        "sim",
        trace.to_str().unwrap(),
        "--mode",
        "object",
        "--cache-size",
        "1MiB",
        "--json",
        out_json.to_str().unwrap(),
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &json(&out_json)["results"][0];
    assert_eq!((r["requests"].as_u64(), r["request_hits"].as_u64()), (Some(3), Some(1)));
    assert_eq!(r["write_policy"], "none");
}

#[test]
fn several_traces_are_merged_by_time_and_keep_their_volumes() {
    let dir = temp_dir("merge");
    let a = dir.join("a.csv");
    let b = dir.join("b.csv");
    // Both name their volume hm_0: the second becomes hm_0#2. Interleaved times.
    std::fs::write(&a, "128166372000000000,hm,0,Read,0,4096,1\n128166372000000020,hm,0,Read,0,4096,1\n")
        .unwrap();
    std::fs::write(&b, "128166372000000010,hm,0,Read,0,4096,1\n128166372000000030,hm,0,Read,0,4096,1\n")
        .unwrap();
    let out_json = dir.join("out.json");
    let out = cloudcache(&[
        "sim",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--cache-size",
        "1MiB",
        "--json",
        out_json.to_str().unwrap(),
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json(&out_json);
    assert_eq!(doc["trace"]["volumes"], serde_json::json!(["hm_0", "hm_0#2"]));
    assert_eq!(doc["trace"]["sources"].as_array().unwrap().len(), 2);
    assert_eq!(doc["trace"]["duration_ns"], 3000);
    let r = &doc["results"][0];
    // Same offset on two volumes: two distinct blocks, each hit once.
    assert_eq!((r["requests"].as_u64(), r["request_hits"].as_u64()), (Some(4), Some(2)));
    assert_eq!(r["volumes"][1]["name"], "hm_0#2");
    assert_eq!(r["volumes"][1]["request_hits"], 1);
}

#[test]
fn an_impossible_request_length_is_an_error_not_a_hang() {
    let dir = temp_dir("hugelen");
    let trace = dir.join("msr.csv");
    std::fs::write(
        &trace,
        "128166372003061629,hm,0,Read,0,4096,26\n128166372003061630,hm,0,Read,0,1000000000000000,26\n",
    )
    .unwrap();
    let out = cloudcache(&["sim", trace.to_str().unwrap(), "-q"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("msr.csv") && err.contains("request 2") && err.contains("1000000000000000"),
        "{err}"
    );
}

#[test]
fn allocation_runs_every_method_and_writes_window_series() {
    let Some(trace) = sample_trace() else { return };
    let dir = temp_dir("allocation");
    let out_json = dir.join("alloc.json");
    let out_html = dir.join("alloc.html");
    let out = cloudcache(&[
        "sim",
        trace.to_str().unwrap(),
        "--cache-size",
        "64MiB",
        "--allocation",
        "none,static,wss,rwss,hec,larc",
        "--rws-n",
        "1,2",
        "--window",
        "10min",
        "--spare",
        "idle",
        "--enforcement",
        "strict",
        "--json",
        out_json.to_str().unwrap(),
        "--html",
        out_html.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json(&out_json);
    let results = doc["results"].as_array().unwrap();
    let labels: Vec<&str> = results.iter().map(|r| r["allocation"].as_str().unwrap()).collect();
    assert_eq!(labels, ["none", "static", "wss", "rwss1", "rwss2", "hec", "larc"]);
    for r in results {
        for field in [
            "mean_allocated_bytes",
            "mean_allocated_after_warmup_bytes",
            "peak_allocated_bytes",
            "mean_occupied_bytes",
            "peak_occupied_bytes",
            "flash_write_ratio",
        ] {
            assert!(r[field].is_number(), "{field} missing in {}", r["allocation"]);
        }
        let volume = &r["volumes"][0];
        assert!(volume["mean_allocated_bytes"].is_number());
        let windows = volume["windows"].as_array().unwrap();
        // About two hours in 10-minute windows, the last one partial.
        let span = doc["trace"]["duration_ns"].as_u64().unwrap();
        assert_eq!(windows.len() as u64, span / 600_000_000_000 + 1, "{}", r["allocation"]);
        assert!(windows[1]["observed_demand_bytes"].is_number());
    }
    // RWSS_1 writes far less to flash than WSS on this trace.
    let ratio = |label: &str| {
        results.iter().find(|r| r["allocation"] == label).unwrap()["flash_write_ratio"].as_f64().unwrap()
    };
    assert!(ratio("rwss1") < ratio("wss") / 2.0, "{} vs {}", ratio("rwss1"), ratio("wss"));
    let html = std::fs::read_to_string(&out_html).unwrap();
    assert!(html.contains("Demand and allocation"));
}

#[test]
fn allocation_bad_input_is_named() {
    let msr = trace_data("msr.csv");
    let run = |extra: &[&str]| {
        let mut args = vec!["sim", msr.as_str(), "--quiet", "--cache-size", "1MiB"];
        args.extend_from_slice(extra);
        let out = cloudcache(&args);
        assert!(!out.status.success(), "{extra:?} should fail");
        stderr(&out)
    };
    assert!(run(&["--allocation", "rwss", "--rws-n", "-1"]).contains("0 or more"));
    assert!(run(&["--allocation", "rwss", "--rws-n", "15"]).contains("at most 14"));
    assert!(run(&["--allocation", "rwss", "--window", "1ns"]).contains("time resolution"));
    assert!(run(&["--allocation", "rwss", "--staging-size", "2MiB"]).contains("larger than the cache"));
    assert!(run(&["--allocation", "rwss", "--policy", "arc"]).contains("cannot be partitioned"));
    assert!(run(&["--allocation", "bogus"]).contains("unknown allocation"));
    assert!(run(&["--allocation", "wss", "--window", "0s"]).contains("zero"));
    // fio v2 logs carry no timestamps: time windows cannot work.
    let fio = trace_data("fio_v2.log");
    let out = cloudcache(&["sim", &fio, "--quiet", "--allocation", "rwss", "--cache-size", "1MiB"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no timestamps"), "{}", stderr(&out));
}

#[test]
fn window_profile_picks_one_of_the_windows() {
    let Some(trace) = sample_trace() else { return };
    let dir = temp_dir("profile");
    let out_json = dir.join("profile.json");
    let out = cloudcache(&[
        "window-profile",
        trace.to_str().unwrap(),
        "--windows",
        "40min,5min,10min,20min",
        "--cache-size",
        "64MiB",
        "--json",
        out_json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("chosen window:"));
    let doc = json(&out_json);
    let windows: Vec<f64> =
        doc["points"].as_array().unwrap().iter().map(|p| p["window_seconds"].as_f64().unwrap()).collect();
    assert_eq!(windows, [300.0, 600.0, 1200.0, 2400.0], "sorted shortest first");
    assert!(windows.contains(&doc["chosen_window_seconds"].as_f64().unwrap()));
    assert!(["knee", "flat", "no-knee"].contains(&doc["reason"].as_str().unwrap()));
    let fio = trace_data("fio_v2.log");
    let out = cloudcache(&["window-profile", &fio, "--quiet", "--cache-size", "1MiB"]);
    assert!(stderr(&out).contains("no timestamps"), "{}", stderr(&out));
}

#[test]
fn time_shift_moves_each_trace_before_the_merge() {
    let msr = trace_data("msr.csv");
    let dir = temp_dir("shift");
    let run = |shift: &str, name: &str| {
        let out_json = dir.join(name);
        let out = cloudcache(&[
            "sim",
            &msr,
            &msr,
            "--time-shift",
            shift,
            "--cache-size",
            "1MiB",
            "--quiet",
            "--json",
            out_json.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        json(&out_json)["trace"]["duration_ns"].as_u64().unwrap()
    };
    let unshifted = run("0", "a.json");
    let shifted = run("0,1h", "b.json");
    assert_eq!(shifted, unshifted + 3_600_000_000_000);
    let out = cloudcache(&["sim", &msr, "--time-shift", "0,1h", "--quiet"]);
    assert!(stderr(&out).contains("2 values for 1 trace"), "{}", stderr(&out));
    let out = cloudcache(&["sim", &msr, "--time-shift", "-1h", "--quiet"]);
    assert!(stderr(&out).contains("negative"), "{}", stderr(&out));
}

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let Some(trace) = sample_trace() else { return };
    let mut child = Command::new(env!("CARGO_BIN_EXE_cloudcache"))
        .args(["mrc", trace.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    // The reader (like `head -1`) is gone; the dense curve has hundreds of lines left.
    let out = child.wait_with_output().unwrap();
    assert!(first.contains("exact LRU"), "{first}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"), "{}", stderr(&out));
    assert_ne!(out.status.code(), Some(101));
}
