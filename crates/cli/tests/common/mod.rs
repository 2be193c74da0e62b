//! Helpers shared by the `cloudcache` binary's end-to-end tests.

// Each test binary uses its own subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Run the binary with `args` to completion.
pub fn cloudcache(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cloudcache")).args(args).output().expect("run cloudcache")
}

/// What a run printed on stderr.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// What a run printed on stdout.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The real CloudPhysics sample, when the shared folder is beside the clone;
/// `None` (and a message saying the test is skipped) otherwise.
pub fn sample_trace() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/cloudPhysicsIO.vscsi");
    if path.exists() {
        Some(path)
    } else {
        eprintln!("skipped: {} not found (no shared/ beside this clone)", path.display());
        None
    }
}

/// A hand-made sample of the trace crate's tests (`crates/trace/tests/data`).
pub fn trace_data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../trace/tests/data").join(name).to_str().unwrap().to_owned()
}

/// An empty scratch directory for one test (per process, so test binaries
/// running side by side do not meet).
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cloudcache-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A JSON file, parsed.
pub fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Whether `program` is installed; if not, says so (the test then passes
/// without checking: the test command installs it where it can).
pub fn have(program: &str) -> bool {
    let found = Command::new("sh").arg("-c").arg(format!("command -v {program}")).output();
    let ok = found.is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipping: {program} is not installed (Debian: nbdkit qemu-utils libnbd-bin fio)");
    }
    ok
}

/// Asks a child process to stop, as an operator's `kill` would.
pub fn sigterm(child: &std::process::Child) {
    // SAFETY: kill(2) on a child's pid has no memory-safety effects.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
}
