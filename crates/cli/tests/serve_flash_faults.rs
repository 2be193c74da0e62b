//! Flash faults for real: the server runs under a file-size limit
//! (`ulimit -f`, with SIGXFSZ ignored), so writes to the flash file past
//! the limit fail with EFBIG, as writes to a failing or full device would.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{have, sigterm};

const MIB: u64 = 1 << 20;

/// `cloudcache serve` under a file-size limit of `limit_kib` (0: none).
fn serve(dir: &Path, limit_kib: u64, log: &str) -> Child {
    let socket = dir.join("nbd.sock");
    let _ = std::fs::remove_file(&socket);
    let limit = if limit_kib > 0 { format!("ulimit -f {limit_kib}; ") } else { String::new() };
    let script = format!(
        "trap '' XFSZ; {limit}exec \"$0\" serve --listen unix:{} --flash {} --flash-size 64MiB \
         --volume filler={}:write-through --volume vm1={}:write-back 2>{}",
        socket.display(),
        dir.join("flash.img").display(),
        dir.join("filler.img").display(),
        dir.join("vm1.img").display(),
        dir.join(log).display(),
    );
    let child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_cloudcache"))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(
            Instant::now() < deadline,
            "server did not start: {}",
            std::fs::read_to_string(dir.join(log)).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn stop(child: &mut Child) {
    sigterm(child);
    child.wait().unwrap();
}

fn qemu_io(dir: &Path, export: &str, commands: &[&str]) -> String {
    let mut command = Command::new("qemu-io");
    command.args(["-f", "raw"]);
    for c in commands {
        command.args(["-c", c]);
    }
    let uri = format!("nbd+unix:///{export}?socket={}", dir.join("nbd.sock").display());
    let out = command.arg(uri).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn flash_write_errors_fall_back_to_the_backend_and_lose_nothing() {
    if !have("qemu-io") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("cc-flash-faults-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::File::create(dir.join("filler.img")).unwrap().set_len(24 * MIB).unwrap();
    std::fs::File::create(dir.join("vm1.img")).unwrap().set_len(8 * MIB).unwrap();
    // First run, no limit: the filler's 24 MiB take the first slots (up to
    // about 25 MiB into the flash file).
    let mut server = serve(&dir, 0, "first.log");
    let out = qemu_io(&dir, "filler", &["read 0 24M"]);
    assert!(out.contains("read 25165824/25165824"), "{out}");
    stop(&mut server);
    // Second run, files limited to 16 MiB: vm1's new blocks go to slots past
    // the limit, and every flash write of them fails.
    let mut server = serve(&dir, 16 * 1024, "second.log");
    let out = qemu_io(
        &dir,
        "vm1",
        &[
            "write -P 0x3c 0 2M",
            "write -P 0x3d 1M 4k",
            "flush",
            "read -P 0x3c 0 1M",
            "read -P 0x3d 1M 4k",
            "read -P 0x3c 1052672 1044480",
        ],
    );
    assert!(!out.contains("error") && !out.contains("failed"), "{out}");
    // The cached filler data is still served from flash.
    let out = qemu_io(&dir, "filler", &["read -P 0 0 1M"]);
    assert!(!out.contains("failed"), "{out}");
    stop(&mut server);
    let log = std::fs::read_to_string(dir.join("second.log")).unwrap();
    assert!(log.contains("flash I/O error"), "the fault was not logged: {log}");
    // Nothing acknowledged was lost: it is all on the backend.
    let image = std::fs::read(dir.join("vm1.img")).unwrap();
    assert!(image[..MIB as usize].iter().all(|&b| b == 0x3c));
    assert!(image[MIB as usize..MIB as usize + 4096].iter().all(|&b| b == 0x3d));
    assert!(image[MIB as usize + 4096..2 * MIB as usize].iter().all(|&b| b == 0x3c));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_flash_store_that_cannot_be_reserved_is_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("cc-flash-full-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let script = format!(
        "trap '' XFSZ; ulimit -f 8192; exec \"$0\" serve --listen unix:{} --flash {} --flash-size 64MiB",
        dir.join("s.sock").display(),
        dir.join("flash.img").display()
    );
    let out =
        Command::new("sh").arg("-c").arg(script).arg(env!("CARGO_BIN_EXE_cloudcache")).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("flash.img") && stderr.contains("cannot reserve"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}
