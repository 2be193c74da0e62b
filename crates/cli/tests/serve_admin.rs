//! `cloudcache serve --admin`: the admin API of a real server process, JSON
//! logs, and a clean exit on SIGTERM.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{cloudcache, stderr, temp_dir};

/// One HTTP/1.0 GET: (status, body).
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    (head.split(' ').nth(1).unwrap().parse().unwrap(), body.to_string())
}

/// A running `cloudcache serve` and the stderr lines it has printed.
struct Serve {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Serve {
    fn start(args: &[&str]) -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cloudcache"))
            .arg("serve")
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start cloudcache serve");
        let (tx, lines) = mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Serve { child, lines, seen: Vec::new() }
    }

    /// Waits for a stderr line starting with `prefix` and returns the rest.
    fn wait_for(&mut self, prefix: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return rest.to_string();
                    }
                }
                Err(_) => break,
            }
        }
        let _ = self.child.kill();
        panic!("no line {prefix:?} from cloudcache serve; it printed:\n{}", self.seen.join("\n"));
    }

    /// Sends SIGTERM and waits for the exit; returns whether it succeeded.
    fn terminate(&mut self) -> bool {
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) }, 0);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                self.seen.extend(self.lines.iter());
                return status.success();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("cloudcache serve did not stop on SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn disk(path: &Path, size: u64) -> String {
    std::fs::File::create(path).unwrap().set_len(size).unwrap();
    path.display().to_string()
}

#[test]
fn serve_answers_the_admin_api_logs_json_and_stops_cleanly_on_sigterm() {
    let dir = temp_dir("serve-admin");
    let vm1 = disk(&dir.join("vm1.img"), 4 << 20);
    let socket = dir.join("nbd.sock");
    let mut serve = Serve::start(&[
        "--listen",
        &format!("unix:{}", socket.display()),
        "--flash",
        dir.join("flash.img").to_str().unwrap(),
        "--flash-size",
        "8MiB",
        "--volume",
        &format!("vm1={vm1}"),
        "--admin",
        "127.0.0.1:0",
        "--log-format",
        "json",
    ]);
    let addr = serve.wait_for("cloudcache serve: admin API on http://");

    let (status, body) = get(&addr, "/volumes");
    assert_eq!(status, 200, "{body}");
    let volumes: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(volumes[0]["name"], "vm1", "{body}");
    assert_eq!(volumes[0]["write_policy"], "write-back", "{body}");

    // A real NBD client's commands show up in the counters.
    let qemu_io = Command::new("qemu-io")
        .args(["-f", "raw", "-c", "write -P 0x5a 0 64k", "-c", "read -P 0x5a 0 64k"])
        .arg(format!("nbd+unix:///vm1?socket={}", socket.display()))
        .output();
    match qemu_io {
        Ok(out) if out.status.success() => {
            let (status, text) = get(&addr, "/metrics");
            assert_eq!(status, 200);
            for series in [
                "cloudcache_requests_total{volume=\"vm1\",op=\"write\"} 1",
                "cloudcache_requests_total{volume=\"vm1\",op=\"read\"} 1",
                "cloudcache_bytes_total{volume=\"vm1\",op=\"write\"} 65536",
                "cloudcache_block_hits_total{volume=\"vm1\"} 16",
                "cloudcache_dirty_blocks{volume=\"vm1\"} 16",
            ] {
                assert!(text.lines().any(|l| l == series), "{series} not in:\n{text}");
            }
        }
        Ok(out) => panic!("qemu-io failed: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => eprintln!("skipped the NBD part: qemu-io not available ({e})"),
    }

    assert!(serve.terminate(), "exit status; stderr:\n{}", serve.seen.join("\n"));
    assert!(serve.seen.iter().any(|l| l == "cloudcache serve: stopped cleanly"), "{:?}", serve.seen);
    // Every log line is one JSON object with ts, level, target and msg.
    let logs: Vec<serde_json::Value> = serve
        .seen
        .iter()
        .filter(|l| !l.starts_with("cloudcache serve:"))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON log line ({e}): {l}")))
        .collect();
    assert!(logs.iter().any(|l| l["msg"].as_str().is_some_and(|m| m.contains("attached volume vm1"))));
    for line in &logs {
        assert!(line["ts"].as_str().is_some_and(|t| t.ends_with('Z')), "{line}");
        assert!(
            ["ERROR", "WARN", "INFO", "DEBUG", "TRACE"].contains(&line["level"].as_str().unwrap()),
            "{line}"
        );
        assert!(line["target"].as_str().is_some_and(|t| t.starts_with("cloudcache")), "{line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_admin_address_is_a_clear_error() {
    let dir = temp_dir("serve-admin-bad");
    let vm1 = disk(&dir.join("vm1.img"), 1 << 20);
    let out = cloudcache(&[
        "serve",
        "--listen",
        &format!("unix:{}", dir.join("nbd.sock").display()),
        "--flash",
        dir.join("flash.img").to_str().unwrap(),
        "--flash-size",
        "4MiB",
        "--volume",
        &format!("vm1={vm1}"),
        "--admin",
        "localhost-only",
    ]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("admin API address localhost-only"), "{err}");
    let out = cloudcache(&["serve", "--log-format", "xml", "--demo"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("xml"), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}
