//! `cloudcache serve` as a user starts it: the demo, TCP with a directory of
//! disk images, and bad configurations.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{cloudcache, have, sigterm, stderr};

/// Reads lines from `reader` until one contains `needle`; returns it.
fn line_with(reader: &mut impl BufRead, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut line = String::new();
    while Instant::now() < deadline {
        line.clear();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if line.contains(needle) {
            return line;
        }
    }
    panic!("no line with {needle:?}");
}

fn qemu_io(uri: &str, commands: &[&str]) -> String {
    let mut command = Command::new("qemu-io");
    command.args(["-f", "raw"]);
    for c in commands {
        command.args(["-c", c]);
    }
    let out = command.arg(uri).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success() && !text.contains("verification failed"), "qemu-io: {text}");
    text
}

#[test]
fn the_demo_starts_and_prints_how_to_connect() {
    if !have("qemu-io") {
        return;
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_cloudcache"))
        .args(["serve", "--demo"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let line = line_with(&mut stdout, "qemu-io");
    let uri = line.split('\'').rev().nth(1).expect("a quoted URI").to_string();
    assert!(uri.starts_with("nbd+unix:///demo?socket="), "{line}");
    qemu_io(&uri, &["write -P 0x5c 0 256k", "read -P 0x5c 0 256k"]);
    sigterm(&child);
    assert!(child.wait().unwrap().success());
    let socket = uri.split("socket=").nth(1).unwrap();
    let _ = std::fs::remove_dir_all(std::path::Path::new(socket).parent().unwrap());
}

#[test]
fn tcp_and_a_disk_directory() {
    if !have("qemu-io") || !have("nbdinfo") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("cc-serve-tcp-{}", std::process::id()));
    let disks = dir.join("disks");
    std::fs::create_dir_all(&disks).unwrap();
    for name in ["vm1.img", "vm2.img"] {
        std::fs::File::create(disks.join(name)).unwrap().set_len(8 << 20).unwrap();
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_cloudcache"))
        .args(["serve", "--listen", "tcp:127.0.0.1:0", "--flash"])
        .arg(dir.join("flash.img"))
        .args(["--flash-size", "4MiB", "--disk-dir"])
        .arg(format!("{}:write-through", disks.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr_lines = BufReader::new(child.stderr.take().unwrap());
    let line = line_with(&mut stderr_lines, "listening on tcp:");
    let address = line.trim().rsplit("tcp:").next().unwrap().to_string();
    let list = Command::new("nbdinfo").arg("--list").arg(format!("nbd://{address}")).output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(list.contains("export=\"vm1\"") && list.contains("export=\"vm2\""), "{list}");
    qemu_io(&format!("nbd://{address}/vm2"), &["write -P 0x77 4096 8192", "read -P 0x77 4096 8192"]);
    // Write-through: the image file has it at once.
    let image = std::fs::read(disks.join("vm2.img")).unwrap();
    assert!(image[4096..12288].iter().all(|&b| b == 0x77));
    sigterm(&child);
    assert!(child.wait().unwrap().success());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_configurations_are_named() {
    let dir = std::env::temp_dir().join(format!("cc-serve-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Each case its own (never created) flash file: a store left by one
    // case must not let the next one start.
    let flash_of = |i: usize| dir.join(format!("flash-{i}.img")).display().to_string();
    let (f0, f1, f2, f3, f4) = (flash_of(0), flash_of(1), flash_of(2), flash_of(3), flash_of(4));
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["serve", "--flash", &f0, "--volume", "a=/x"], "no listen address"),
        (vec!["serve", "--listen", "udp:1.2.3.4:5", "--flash", &f1], "expected unix:PATH or tcp:HOST:PORT"),
        (
            vec!["serve", "--listen", "unix:/tmp/x.sock", "--flash", &f2, "--volume", "novalue"],
            "NAME=BACKEND",
        ),
        (
            vec![
                "serve",
                "--listen",
                "unix:/tmp/cc-bad.sock",
                "--flash",
                &f3,
                "--flash-size",
                "4MiB",
                "--volume",
                "a=/does/not/exist.img",
            ],
            "/does/not/exist.img",
        ),
        (
            vec!["serve", "--listen", "unix:/tmp/cc-bad.sock", "--flash", &f4, "--flash-size", "1MiB"],
            "too small",
        ),
    ];
    for (args, expected) in cases {
        let out = cloudcache(&args);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(stderr(&out).contains(expected), "{args:?}: {}", stderr(&out));
    }
    let config = dir.join("host.toml");
    std::fs::write(&config, "listen = [\"unix:/tmp/x.sock\"]\n[cache]\nshutdown = \"later\"\n").unwrap();
    let out = cloudcache(&["serve", "--config", config.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("host.toml") && stderr(&out).contains("later"), "{}", stderr(&out));
    std::fs::remove_dir_all(&dir).unwrap();
}
