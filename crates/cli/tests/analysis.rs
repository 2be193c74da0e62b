//! End-to-end tests of `cloudcache mrc` and `cloudcache analyze`: real
//! files in, JSON, reports and error messages out.

mod common;

use common::*;

use std::path::{Path, PathBuf};

/// A small MSR Cambridge trace: two volumes, reads and writes, reuse.
fn msr_trace(dir: &Path) -> PathBuf {
    let mut text = String::new();
    for i in 0..400u64 {
        let disk = i % 2;
        let block = (i * 7) % 50;
        let op = if i % 3 == 0 { "Write" } else { "Read" };
        text.push_str(&format!(
            "{},web,{disk},{op},{},{},100\n",
            128_166_372_000_000_000u64 + i * 10_000_000,
            block * 4096,
            4096 * (1 + i % 3)
        ));
    }
    let path = dir.join("small.csv");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn mrc_json_has_the_documented_shape_and_equals_sim() {
    let Some(trace) = sample_trace() else { return };
    let dir = temp_dir("mrc");
    let (mrc_json, sim_json) = (dir.join("mrc.json"), dir.join("sim.json"));
    let sizes = "16MiB,64MiB,256MiB,1GiB";
    let t = trace.to_str().unwrap();
    let out = cloudcache(&[
        "mrc",
        t,
        "--method",
        "exact",
        "--sizes",
        sizes,
        "--json",
        mrc_json.to_str().unwrap(),
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cloudcache(&[
        "sim",
        t,
        "--policy",
        "lru",
        "--cache-size",
        sizes,
        "--json",
        sim_json.to_str().unwrap(),
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (mrc, sim) = (json(&mrc_json), json(&sim_json));
    assert_eq!(mrc["method"], "exact");
    let points = mrc["points"].as_array().unwrap();
    assert_eq!(points.len(), 4);
    for (p, r) in points.iter().zip(sim["results"].as_array().unwrap()) {
        assert_eq!(p["cache_size_bytes"], r["cache_size_bytes"]);
        let (miss, hit) = (p["miss_ratio"].as_f64().unwrap(), p["hit_ratio"].as_f64().unwrap());
        assert!((miss + hit - 1.0).abs() < 1e-12);
        assert!(
            (hit - r["block_hit_ratio"].as_f64().unwrap()).abs() < 1e-12,
            "{p} vs {}",
            r["block_hit_ratio"]
        );
    }
    // --reads-only is the read hit ratio of the same cache.
    let out =
        cloudcache(&["mrc", t, "--sizes", sizes, "--reads-only", "--json", mrc_json.to_str().unwrap(), "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mrc = json(&mrc_json);
    for (p, r) in mrc["points"].as_array().unwrap().iter().zip(sim["results"].as_array().unwrap()) {
        let hit = p["hit_ratio"].as_f64().unwrap();
        assert!((hit - r["read_block_hit_ratio"].as_f64().unwrap()).abs() < 1e-12);
    }
}

#[test]
fn shards_with_compare_reports_its_error_and_a_dense_curve() {
    let dir = temp_dir("shards");
    let trace = msr_trace(&dir);
    let out_json = dir.join("s.json");
    let out = cloudcache(&[
        "mrc",
        trace.to_str().unwrap(),
        "--method",
        "shards",
        "--rate",
        "1",
        "--compare-exact",
        "--json",
        out_json.to_str().unwrap(),
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json(&out_json);
    assert_eq!(doc["method"], "shards");
    // At rate 1 SHARDS is exact.
    assert_eq!(doc["mean_absolute_error"].as_f64(), Some(0.0));
    // Dense: up to the footprint (2 volumes x 50 blocks + spill of multi-block requests).
    let points = doc["points"].as_array().unwrap();
    assert!(points.len() > 10);
    assert_eq!(points.last().unwrap()["cache_size_bytes"].as_u64(), doc["footprint_bytes"].as_u64());
    // Volumes sharing a cache are selected by name.
    let out = cloudcache(&["mrc", trace.to_str().unwrap(), "--volumes", "web_0,nope", "-q"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no volume named \"nope\""), "{}", stderr(&out));
}

#[test]
fn shards_without_a_rate_samples_enough_blocks_and_a_given_rate_is_kept() {
    let dir = temp_dir("default-rate");
    let trace = msr_trace(&dir);
    let out_json = dir.join("d.json");
    let run = |extra: &[&str]| {
        let mut args = vec!["mrc", trace.to_str().unwrap(), "--method", "shards", "--compare-exact", "-q"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--json", out_json.to_str().unwrap()]);
        let out = cloudcache(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        (String::from_utf8_lossy(&out.stdout).into_owned(), json(&out_json))
    };
    // A trace of a few hundred blocks: the default rate samples all of them,
    // so the curve is exact.
    let (text, doc) = run(&[]);
    assert_eq!(doc["default_rate"], true);
    assert_eq!(doc["sampling_rate"].as_f64(), Some(1.0));
    assert_eq!(doc["mean_absolute_error"].as_f64(), Some(0.0));
    assert!(text.contains("the default: 1 %, or enough to sample 32768 blocks"), "{text}");
    // --rate means that rate.
    let (_, doc) = run(&["--rate", "0.01"]);
    assert_eq!(doc["sampling_rate"].as_f64(), Some(0.01));
    assert!(doc.get("default_rate").is_none());
}

#[test]
fn bad_input_gets_clear_messages() {
    let dir = temp_dir("bad");
    let trace = msr_trace(&dir);
    let t = trace.to_str().unwrap();
    for rate in ["0", "1.5", "-0.1", "nan"] {
        let out = cloudcache(&["mrc", t, "--method", "shards", "--rate", rate]);
        assert_eq!(out.status.code(), Some(1), "rate {rate}");
        assert!(stderr(&out).contains("outside (0, 1]"), "{}", stderr(&out));
    }
    let out = cloudcache(&["mrc", t, "--sizes", "16MiB,2KiB"]);
    assert!(stderr(&out).contains("2 KiB is smaller than one block (4 KiB)"), "{}", stderr(&out));
    let out = cloudcache(&["analyze", t, "--rate", "2", "--out", dir.join("x").to_str().unwrap()]);
    assert!(stderr(&out).contains("outside (0, 1]"), "{}", stderr(&out));
    assert!(!dir.join("x").exists());

    let empty = dir.join("empty.csv");
    std::fs::write(&empty, "").unwrap();
    let out = cloudcache(&[
        "analyze",
        empty.to_str().unwrap(),
        "--format",
        "msr",
        "--out",
        dir.join("e").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("empty"), "{}", stderr(&out));
    assert!(!dir.join("e").exists());

    // A directory holding other files is refused before any work.
    let busy = dir.join("busy");
    std::fs::create_dir_all(&busy).unwrap();
    std::fs::write(busy.join("notes.txt"), "mine").unwrap();
    let out = cloudcache(&["analyze", t, "--out", busy.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("holds other files (notes.txt)"), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(&busy).unwrap().count(), 1);
}

#[test]
fn analyze_writes_a_complete_directory() {
    let dir = temp_dir("analyze");
    let trace = msr_trace(&dir);
    let out_dir = dir.join("report");
    let out = cloudcache(&[
        "analyze",
        trace.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--window",
        "1s",
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary = json(&out_dir.join("summary.json"));
    assert_eq!(summary["requests"], 400);
    assert_eq!(summary["volumes"].as_array().unwrap().len(), 2);
    assert!(summary["curves"]["shards_mean_absolute_error"].as_f64().unwrap() < 1.0);
    assert_eq!(summary["working_sets"]["window_ns"], 1_000_000_000u64);
    // Every file summary.json lists is there, every CSV has a header and rows.
    for f in summary["files"].as_array().unwrap() {
        let path = out_dir.join(f.as_str().unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        let name = f.as_str().unwrap();
        if name.ends_with(".csv") {
            assert!(text.lines().count() >= 2, "{} has no rows", path.display());
        } else if name.ends_with(".svg") {
            assert!(
                text.starts_with("<svg") && text.trim_end().ends_with("</svg>"),
                "{} is not an SVG",
                path.display()
            );
        }
    }
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(
        html.contains("<svg") && html.contains("Miss-ratio curves") && !html.contains("http://")
            || html.contains("xmlns")
    );
    // No temporary directory is left beside it.
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty());
    // Again: refused without --force, replaced with it.
    let again = cloudcache(&["analyze", trace.to_str().unwrap(), "--out", out_dir.to_str().unwrap(), "-q"]);
    assert!(stderr(&again).contains("--force"), "{}", stderr(&again));
    let again = cloudcache(&[
        "analyze",
        trace.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--force",
        "-q",
    ]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(out_dir.join("summary.json").exists());
}

#[test]
fn a_one_request_trace_is_analyzed_with_a_warning() {
    let dir = temp_dir("one");
    let trace = dir.join("one.csv");
    std::fs::write(&trace, "128166372003061629,web,0,Read,3221225472,4096,1331\n").unwrap();
    let out_dir = dir.join("out");
    let out = cloudcache(&[
        "analyze",
        trace.to_str().unwrap(),
        "--format",
        "msr",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("only one request"), "{}", stderr(&out));
    let summary = json(&out_dir.join("summary.json"));
    assert!(summary["warnings"][0].as_str().unwrap().contains("only one request"));
    assert_eq!(summary["curves"]["exact"][0]["miss_ratio"], 1.0);
}
