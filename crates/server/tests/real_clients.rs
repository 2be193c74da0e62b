//! `cloudcache serve` driven by real NBD clients: qemu-io, nbdcopy,
//! nbdinfo and fio (each test skips with a message if its client is not
//! installed; CI installs them).

mod common;

use std::process::Command;

use cloudcache_engine::WritePolicy;
use common::{have, qemu_io, random_bytes, run, TestServer};

const MIB: u64 = 1 << 20;

#[test]
fn qemu_io_patterns_read_back_in_every_write_policy() {
    if !have(&["qemu-io"]) {
        return;
    }
    for policy in WritePolicy::ALL {
        let t = TestServer::start("qemu-io", policy, 64 * MIB, 16 * MIB);
        let uri = t.uri("vm1");
        qemu_io(
            &uri,
            &[
                "write -P 0xab 0 1M",
                // Misaligned, partial blocks on both ends (read-modify-write).
                "write -P 0x11 1000k 7000",
                "write -f -P 0x22 4M 4k",
                "aio_write -P 0x33 8M 64k",
                "aio_flush",
                "write -z 2M 1M",
                "discard 3M 1M",
                "flush",
            ],
        );
        // Read back through the cache, twice (miss, then hit).
        for _ in 0..2 {
            qemu_io(
                &uri,
                &[
                    "read -P 0xab 0 1000k",
                    "read -P 0x11 1000k 7000",
                    "read -P 0xab 1031000 17576",
                    "read -P 0x22 4M 4k",
                    "read -P 0x33 8M 64k",
                    "read -P 0 2M 1M",
                ],
            );
        }
        // What went around or through the cache is on the backend now;
        // write-back data is after a flush of the volume.
        t.server.flush_volume("vm1").unwrap();
        let disk = std::fs::read(&t.disk).unwrap();
        assert!(disk[..1000 * 1024].iter().all(|&b| b == 0xab), "{policy}");
        assert!(disk[1000 * 1024..1000 * 1024 + 7000].iter().all(|&b| b == 0x11), "{policy}");
        assert!(disk[(4 * MIB) as usize..(4 * MIB) as usize + 4096].iter().all(|&b| b == 0x22), "{policy}");
        assert!(disk[(2 * MIB) as usize..(3 * MIB) as usize].iter().all(|&b| b == 0), "{policy}");
    }
}

#[test]
fn nbdcopy_round_trip_with_and_without_extents() {
    if !have(&["nbdcopy"]) {
        return;
    }
    // Write-back over a sparse backend: the copied data lives only in the
    // cache (dirty), so a server that passed block status through to the
    // backend would report holes and nbdcopy would copy zeros (nbdkit's
    // cache filter does).
    let t = TestServer::start("nbdcopy", WritePolicy::WriteBack, 64 * MIB, 32 * MIB);
    let uri = t.uri("vm1");
    let mut source = random_bytes((12 * MIB) as usize, 7);
    source.resize((64 * MIB) as usize, 0);
    // A hole in the middle of the data, so extents matter both ways.
    source[(5 * MIB) as usize..(6 * MIB) as usize].fill(0);
    // A sparse file: nbdcopy writes the data and zeroes the rest, so the
    // dirty data (11 MiB) stays under the cleaner's high watermark.
    let input = t.dir.join("in.img");
    std::fs::write(&input, &source[..(12 * MIB) as usize]).unwrap();
    std::fs::OpenOptions::new().write(true).open(&input).unwrap().set_len(64 * MIB).unwrap();
    run(Command::new("nbdcopy").args(["-C", "4", "-R", "16"]).arg(&input).arg(&uri));
    // Before reading back, the backend holds nothing: all the data is dirty cache
    // (reading it all back later evicts, and so writes back, some of it).
    let disk = std::fs::read(&t.disk).unwrap();
    assert!(disk.iter().all(|&b| b == 0), "write-back should not have reached the backend yet");
    for extents in [true, false] {
        let output = t.dir.join(&format!("out-{extents}.img"));
        let mut command = Command::new("nbdcopy");
        if !extents {
            command.arg("--no-extents");
        }
        run(command.arg(&uri).arg(&output));
        let copied = std::fs::read(&output).unwrap();
        assert!(copied == source, "nbdcopy (extents: {extents}) did not copy what was written");
    }
}

#[test]
fn nbdinfo_lists_exports_and_maps_cached_data() {
    if !have(&["nbdinfo", "qemu-io"]) {
        return;
    }
    let t = TestServer::start("nbdinfo", WritePolicy::WriteBack, 64 * MIB, 16 * MIB);
    let list = run(Command::new("nbdinfo").arg("--list").arg(t.uri(""))).stdout;
    let list = String::from_utf8_lossy(&list);
    assert!(list.contains("export=\"vm1\""), "{list}");
    let info = String::from_utf8_lossy(&run(Command::new("nbdinfo").arg(t.uri("vm1"))).stdout).into_owned();
    for expected in [
        "can_multi_conn: true",
        "can_flush: true",
        "can_fua: true",
        "base:allocation",
        "export-size: 67108864",
    ] {
        assert!(info.contains(expected), "missing {expected:?} in {info}");
    }
    qemu_io(&t.uri("vm1"), &["write -P 0x5a 8M 1M"]);
    let map = String::from_utf8_lossy(&run(Command::new("nbdinfo").arg("--map").arg(t.uri("vm1"))).stdout)
        .into_owned();
    // Offset, length, type: the dirty megabyte is data, the rest a hole.
    let rows: Vec<(u64, u64, u32)> = map
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].parse().unwrap(), f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    assert!(rows.contains(&(8 * MIB, MIB, 0)), "{map}");
    assert_eq!(rows.iter().map(|r| r.1).sum::<u64>(), 64 * MIB, "{map}");
    // An unknown export is refused by name.
    let unknown = Command::new("nbdinfo").arg(t.uri("nope")).output().unwrap();
    assert!(!unknown.status.success());
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("nope"),
        "{}",
        String::from_utf8_lossy(&unknown.stderr)
    );
}

/// fio with crc32c verification; a flash store far smaller than the disk
/// keeps replacement, dirty write-back and read-modify-write busy.
fn fio_verify(policy: WritePolicy, flash: u64) {
    let t = TestServer::start("fio", policy, 64 * MIB, flash);
    let output = run(Command::new("fio").args([
        "--name=verify",
        "--ioengine=nbd",
        &format!("--uri={}", t.uri("vm1")),
        "--rw=randrw",
        "--bs=4k",
        "--iodepth=16",
        "--size=48M",
        "--io_size=24M",
        "--verify=crc32c",
        "--do_verify=1",
        "--verify_fatal=1",
        "--fsync=64",
        "--verify_state_save=0",
        "--output-format=terse",
    ]));
    let terse = String::from_utf8_lossy(&output.stdout);
    // Terse field 5 is the error count.
    let error = terse.split(';').nth(4).unwrap_or("?");
    assert_eq!(error, "0", "fio reported errors: {terse}");
}

#[test]
fn fio_verifies_under_eviction_pressure() {
    if !have(&["fio"]) {
        return;
    }
    fio_verify(WritePolicy::WriteBack, 4 * MIB);
    fio_verify(WritePolicy::WriteThrough, 4 * MIB);
}
