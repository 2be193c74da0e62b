//! The admin HTTP API against a real server: a flash file, file-backed
//! volumes, data written through the core, and a plain HTTP/1.0 client.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cloudcache_engine::WritePolicy;
use cloudcache_server::config::{ServerConfig, VolumeConfig};
use cloudcache_server::core::Scratch;
use cloudcache_server::nbd::stream::ListenAddr;
use cloudcache_server::server::Server;
use serde_json::Value;

const BLOCK: u64 = 4096;

/// A fresh directory for one test.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cloudcache-admin-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn disk(path: &Path, size: u64) -> String {
    std::fs::File::create(path).unwrap().set_len(size).unwrap();
    path.display().to_string()
}

/// One HTTP/1.0 exchange with a JSON body: (status, content type, body).
fn http(addr: &str, method: &str, path: &str, body: Option<&str>) -> (u16, String, String) {
    let body = body.unwrap_or("");
    raw(
        addr,
        &format!(
            "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
}

/// Sends `request` as it is: (status, content type, body).
fn raw(addr: &str, request: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status code");
    let content_type = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-type:").map(|v| v.trim().to_string()))
        .unwrap_or_default();
    (status, content_type, body.to_string())
}

/// A JSON answer with the expected status.
fn json(addr: &str, method: &str, path: &str, body: Option<&str>, status: u16) -> Value {
    let (got, content_type, text) = http(addr, method, path, body);
    assert_eq!(got, status, "{method} {path}: {text}");
    assert!(content_type.starts_with("application/json"), "{method} {path}: {content_type}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method} {path}: {e}: {text}"))
}

/// The error message of a failed request.
fn error(addr: &str, method: &str, path: &str, body: Option<&str>, status: u16) -> String {
    json(addr, method, path, body, status)["error"].as_str().expect("an error message").to_string()
}

/// Parses the Prometheus text format line by line into `name{labels}` -> value,
/// checking that every sample's family was announced by HELP and TYPE lines.
fn parse_metrics(text: &str) -> HashMap<String, f64> {
    let mut typed = HashMap::new();
    let mut helped = std::collections::HashSet::new();
    let mut samples = HashMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            helped.insert(rest.split(' ').next().unwrap().to_string());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(["counter", "gauge"].contains(&kind), "{line}");
            assert_eq!(
                kind == "counter",
                name.ends_with("_total"),
                "counters and only counters end in _total: {line}"
            );
            typed.insert(name.to_string(), kind.to_string());
        } else {
            let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample: {line:?}"));
            let name = series.split('{').next().unwrap();
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "bad metric name in {line:?}"
            );
            if let Some(labels) = series.strip_prefix(name).filter(|l| !l.is_empty()) {
                let inner = labels.strip_prefix('{').and_then(|l| l.strip_suffix('}')).expect(line);
                for pair in inner.split("\",") {
                    let (key, value) =
                        pair.split_once("=\"").unwrap_or_else(|| panic!("bad label in {line:?}"));
                    assert!(["volume", "op"].contains(&key), "{line}");
                    assert!(!value.trim_end_matches('"').is_empty(), "{line}");
                }
            }
            assert!(typed.contains_key(name) && helped.contains(name), "no HELP/TYPE before {line:?}");
            let value: f64 = value.parse().unwrap_or_else(|e| panic!("{line:?}: {e}"));
            assert!(samples.insert(series.to_string(), value).is_none(), "duplicate series {series}");
        }
    }
    samples
}

struct Fixture {
    dir: PathBuf,
    server: Arc<Server>,
    admin: String,
}

fn start(name: &str) -> Fixture {
    let dir = temp_dir(name);
    let vm1 = disk(&dir.join("vm1.img"), 4 << 20);
    let config = ServerConfig {
        listen: vec![ListenAddr::Unix(dir.join("nbd.sock"))],
        flash: dir.join("flash.img"),
        flash_size: 8 << 20,
        block_size: BLOCK,
        volumes: vec![VolumeConfig {
            name: "vm1".into(),
            backend: vm1,
            write_policy: WritePolicy::WriteBack,
        }],
        // The cleaner stays out of the way: these tests count dirty blocks.
        dirty_high: 0.95,
        dirty_low: 0.9,
        ..ServerConfig::default()
    };
    let server = Server::start(config).unwrap();
    let admin = cloudcache_server::admin::spawn(server.clone(), "127.0.0.1:0").unwrap();
    assert!(!admin.ends_with(":0"), "port 0 resolved: {admin}");
    Fixture { dir, server, admin }
}

/// Writes `len` bytes of `byte` at `offset` of `name` through the core.
fn write(server: &Server, name: &str, offset: u64, len: usize, byte: u8) {
    let export = server.exports().into_iter().find(|e| e.volume.name == name).unwrap();
    server.core().write(&export.volume, offset, &vec![byte; len], false, &mut Scratch::default()).unwrap();
}

fn read(server: &Server, name: &str, offset: u64, len: u64) {
    let export = server.exports().into_iter().find(|e| e.volume.name == name).unwrap();
    server.core().read(&export.volume, offset, len, &mut Scratch::default()).unwrap();
}

#[test]
fn volumes_policy_flush_attach_detach_through_the_admin_api() {
    let f = start("ops");
    let addr = f.admin.as_str();
    // 16 written blocks (dirty), read back (16 hits), then 4 blocks that miss.
    write(&f.server, "vm1", 0, 16 * BLOCK as usize, 0xab);
    read(&f.server, "vm1", 0, 16 * BLOCK);
    read(&f.server, "vm1", 1 << 20, 4 * BLOCK);

    let volumes = json(addr, "GET", "/volumes", None, 200);
    let list = volumes.as_array().unwrap();
    assert_eq!(list.len(), 1);
    let vm1 = &list[0];
    assert_eq!(vm1["name"], "vm1");
    assert_eq!(vm1["size_bytes"], 4 << 20);
    assert_eq!(vm1["write_policy"], "write-back");
    assert!(vm1["backend"].as_str().unwrap().ends_with("vm1.img"), "{vm1}");
    let cache = &vm1["cache"];
    assert_eq!(cache["dirty_blocks"], 16, "{cache}");
    assert_eq!(cache["cached_blocks"], 20, "{cache}");
    assert_eq!(cache["block_hits"], 16, "{cache}");
    assert_eq!(cache["block_misses"], 20, "{cache}");
    assert_eq!(cache["flash_read_blocks"], 16, "{cache}");
    assert_eq!(cache["backend_read_blocks"], 4, "{cache}");
    let ratio = cache["block_hit_ratio"].as_f64().unwrap();
    assert!((ratio - 16.0 / 36.0).abs() < 1e-9, "{cache}");
    assert!(vm1["stats"]["reads"].is_u64(), "{vm1}");
    assert!(vm1["share_blocks"].is_null(), "no allocation window: no shares");
    assert_eq!(json(addr, "GET", "/volumes/vm1", None, 200)["cache"], *cache);

    // Flush writes the 16 dirty blocks back: the backend file has the data.
    let flushed = json(addr, "POST", "/volumes/vm1/flush", None, 200);
    assert_eq!(flushed["written_back_blocks"], 16, "{flushed}");
    let on_disk = std::fs::read(f.dir.join("vm1.img")).unwrap();
    assert!(on_disk[..16 * BLOCK as usize].iter().all(|&b| b == 0xab));
    assert_eq!(json(addr, "GET", "/volumes/vm1", None, 200)["cache"]["dirty_blocks"], 0);

    // Leaving write-back writes back first.
    write(&f.server, "vm1", 64 * BLOCK, 8 * BLOCK as usize, 0xcd);
    assert_eq!(json(addr, "GET", "/volumes/vm1", None, 200)["cache"]["dirty_blocks"], 8);
    let doc =
        json(addr, "PUT", "/volumes/vm1/write-policy", Some(r#"{"write_policy":"write-through"}"#), 200);
    assert_eq!((&doc["write_policy"], &doc["cache"]["dirty_blocks"]), (&"write-through".into(), &0.into()));
    let on_disk = std::fs::read(f.dir.join("vm1.img")).unwrap();
    assert!(on_disk[64 * BLOCK as usize..72 * BLOCK as usize].iter().all(|&b| b == 0xcd));
    write(&f.server, "vm1", 128 * BLOCK, BLOCK as usize, 0xef);
    assert_eq!(json(addr, "GET", "/volumes/vm1", None, 200)["cache"]["dirty_blocks"], 0, "write-through");

    // Attach a second volume, use it, detach it.
    let vm2 = disk(&f.dir.join("vm2.img"), 1 << 20);
    let body = format!(r#"{{"name":"vm2","backend":"{vm2}","write_policy":"write-back"}}"#);
    let doc = json(addr, "POST", "/volumes", Some(&body), 201);
    assert_eq!((&doc["name"], &doc["size_bytes"]), (&"vm2".into(), &(1 << 20).into()));
    assert_eq!(json(addr, "GET", "/volumes", None, 200).as_array().unwrap().len(), 2);
    let e = error(addr, "POST", "/volumes", Some(&body), 409);
    assert!(e.contains("vm2") && e.contains("already attached"), "{e}");
    write(&f.server, "vm2", 0, 4 * BLOCK as usize, 0x42);
    assert_eq!(json(addr, "GET", "/volumes/vm2", None, 200)["cache"]["dirty_blocks"], 4);
    let doc = json(addr, "DELETE", "/volumes/vm2", None, 200);
    assert_eq!(doc["detached"], true);
    let on_disk = std::fs::read(f.dir.join("vm2.img")).unwrap();
    assert!(on_disk[..4 * BLOCK as usize].iter().all(|&b| b == 0x42), "detach wrote back first");
    assert_eq!(json(addr, "GET", "/volumes", None, 200).as_array().unwrap().len(), 1);

    f.server.shutdown().unwrap();
    // Once shutting down, volumes cannot change.
    let e = error(addr, "DELETE", "/volumes/vm1", None, 503);
    assert!(e.contains("shutting down"), "{e}");
    let _ = std::fs::remove_dir_all(&f.dir);
}

#[test]
fn bad_requests_get_json_errors_naming_what_is_wrong() {
    let f = start("errors");
    let addr = f.admin.as_str();
    for (method, path) in
        [("GET", "/volumes/nosuch"), ("DELETE", "/volumes/nosuch"), ("POST", "/volumes/nosuch/flush")]
    {
        let e = error(addr, method, path, None, 404);
        assert!(e.contains("no volume named \"nosuch\""), "{method} {path}: {e}");
    }
    let e = error(addr, "PUT", "/volumes/nosuch/write-policy", Some(r#"{"write_policy":"write-back"}"#), 404);
    assert!(e.contains("nosuch"), "{e}");
    let e =
        error(addr, "PUT", "/volumes/vm1/write-policy", Some(r#"{"write_policy":"write-sideways"}"#), 400);
    assert!(e.contains("write_policy") && e.contains("write-sideways"), "{e}");
    let e = error(addr, "PUT", "/volumes/vm1/write-policy", Some(r#"{"policy":"write-back"}"#), 422);
    assert!(e.contains("policy"), "{e}");
    let e = error(addr, "PUT", "/volumes/vm1/write-policy", Some("{not json"), 400);
    assert!(e.contains("request body"), "{e}");
    let missing = f.dir.join("missing.img");
    let body = format!(r#"{{"name":"vm3","backend":"{}"}}"#, missing.display());
    let e = error(addr, "POST", "/volumes", Some(&body), 400);
    assert!(e.contains("vm3") && e.contains("missing.img"), "{e}");
    let e = error(addr, "POST", "/volumes", Some(r#"{"name":"","backend":"x"}"#), 400);
    assert!(e.contains("name"), "{e}");
    let body = r#"{"name":"vm4","backend":"/x"}"#;
    let request = format!("POST /volumes HTTP/1.0\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    let (status, content_type, text) = raw(addr, &request);
    assert_eq!((status, content_type.as_str()), (415, "application/json"), "{text}");
    assert!(text.contains("Content-Type"), "{text}");
    let e = error(addr, "GET", "/volumes/%FF", None, 400);
    assert!(e.contains("volume name"), "{e}");
    let e = error(addr, "GET", "/nowhere", None, 404);
    assert!(e.contains("/nowhere"), "{e}");
    let e = error(addr, "DELETE", "/metrics", None, 405);
    assert!(e.contains("/metrics") && e.contains("DELETE"), "{e}");
    // Nothing changed.
    let volumes = json(addr, "GET", "/volumes", None, 200);
    assert_eq!(volumes.as_array().unwrap().len(), 1);
    assert_eq!(volumes[0]["write_policy"], "write-back");
    f.server.shutdown().unwrap();
    let _ = std::fs::remove_dir_all(&f.dir);
}

#[test]
fn metrics_allocation_and_cache_report_the_counters() {
    let f = start("metrics");
    let addr = f.admin.as_str();
    write(&f.server, "vm1", 0, 8 * BLOCK as usize, 0x11);
    read(&f.server, "vm1", 0, 8 * BLOCK);
    read(&f.server, "vm1", 1 << 20, 2 * BLOCK);

    let (status, content_type, text) = http(addr, "GET", "/metrics", None);
    assert_eq!(status, 200);
    assert!(content_type.starts_with("text/plain; version=0.0.4"), "{content_type}");
    let m = parse_metrics(&text);
    let get = |series: &str| *m.get(series).unwrap_or_else(|| panic!("{series} missing from:\n{text}"));
    assert_eq!(get("cloudcache_block_hits_total{volume=\"vm1\"}"), 8.0);
    assert_eq!(get("cloudcache_block_misses_total{volume=\"vm1\"}"), 10.0);
    assert_eq!(get("cloudcache_dirty_blocks{volume=\"vm1\"}"), 8.0);
    assert_eq!(get("cloudcache_cached_blocks{volume=\"vm1\"}"), 10.0);
    assert_eq!(get("cloudcache_flash_blocks_total{volume=\"vm1\",op=\"read\"}"), 8.0);
    assert_eq!(get("cloudcache_backend_blocks_total{volume=\"vm1\",op=\"read\"}"), 2.0);
    assert_eq!(get("cloudcache_volume_size_bytes{volume=\"vm1\"}"), (4 << 20) as f64);
    // Request counters are the NBD commands (none came over NBD here).
    assert_eq!(get("cloudcache_requests_total{volume=\"vm1\",op=\"read\"}"), 0.0);
    assert_eq!(get("cloudcache_bytes_total{volume=\"vm1\",op=\"write\"}"), 0.0);
    assert_eq!(get("cloudcache_flash_errors_total"), 0.0);
    assert_eq!(get("cloudcache_backend_errors_total"), 0.0);
    assert_eq!(get("cloudcache_degraded"), 0.0);
    assert_eq!(get("cloudcache_used_blocks"), 10.0);
    let capacity = get("cloudcache_capacity_blocks");
    assert!(capacity > 0.0 && capacity <= (8 << 20) as f64 / BLOCK as f64, "{capacity}");
    assert!(!m.contains_key("cloudcache_share_blocks{volume=\"vm1\"}"), "no shares without allocation");

    let allocation = json(addr, "GET", "/allocation", None, 200);
    assert_eq!(allocation["block_size"], BLOCK);
    assert_eq!(allocation["capacity_blocks"].as_f64().unwrap(), capacity);
    assert_eq!(allocation["shares_set"], false);
    assert!(allocation["window_ms"].is_null());
    let v = &allocation["volumes"][0];
    assert_eq!((&v["name"], &v["cached_blocks"], &v["dirty_blocks"]), (&"vm1".into(), &10.into(), &8.into()));
    assert!(v["share_blocks"].is_null());

    let cache = json(addr, "GET", "/cache", None, 200);
    assert_eq!(cache["capacity_blocks"].as_f64().unwrap(), capacity);
    assert_eq!((&cache["used_blocks"], &cache["dirty_blocks"]), (&10.into(), &8.into()));
    assert_eq!((&cache["held_blocks"], &cache["degraded"]), (&0.into(), &false.into()));
    assert_eq!((&cache["flash_errors"], &cache["backend_errors"]), (&0.into(), &0.into()));
    assert_eq!(cache["recovery"]["blocks"], 0, "a new store: {cache}");
    assert!(cache["store_error"].is_null());
    assert_eq!(cache["counters"]["block_hits"], 8);
    f.server.shutdown().unwrap();
    let _ = std::fs::remove_dir_all(&f.dir);
}

#[test]
fn a_busy_address_is_a_clear_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let f = start("busy");
    let e = cloudcache_server::admin::spawn(f.server.clone(), &addr).unwrap_err();
    assert!(e.contains(&addr), "{e}");
    let e = cloudcache_server::admin::spawn(f.server.clone(), "not-an-address").unwrap_err();
    assert!(e.contains("not-an-address"), "{e}");
    f.server.shutdown().unwrap();
    let _ = std::fs::remove_dir_all(&f.dir);
}
