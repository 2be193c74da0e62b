//! CloudPhysics vscsi traces: a golden test on the real sample and
//! hand-made version 1 and version 2 files, including damaged ones.

use std::io::Cursor;
use std::path::PathBuf;

use cloudcache_trace::formats::vscsi::{self, Version, VscsiReader};
use cloudcache_trace::{open, Format, Location, Op, OpenOptions, Request, RequestSource, TraceError};

mod common;
use common::sample;

#[test]
fn sample_trace_golden() {
    let Some(path) = sample() else { return };
    let mut reader = open(&path, &OpenOptions::default()).unwrap();
    assert_eq!(reader.format(), Format::Vscsi);
    assert_eq!(reader.compression(), "none");
    let requests = reader.read_all().unwrap();
    assert_eq!(requests.len(), 113_872);
    // First record: sn 2147483892, len 512, cmd 0x2a, lbn 42932745, ts 5633898368802 us.
    assert_eq!(
        requests[0],
        Request {
            time_ns: 5_633_898_368_802_000,
            volume: 0,
            op: Op::Write,
            offset: 42_932_745 * 512,
            len: 512,
            content: Vec::new(),
        }
    );
    let reads = requests.iter().filter(|r| r.op == Op::Read).count();
    let writes = requests.iter().filter(|r| r.op == Op::Write).count();
    assert_eq!((reads, writes), (46_974, 66_898));
    assert_eq!(reader.volumes().names(), ["cloudPhysicsIO"]);
    assert!(reader.has_timestamps());
    assert!(requests.iter().all(|r| r.volume == 0 && r.offset % 512 == 0));
    let head = std::fs::read(&path).unwrap();
    assert_eq!(vscsi::detect_version(&head[..4096]), Some(Version::V1));
}

/// A version 1 record (32 bytes): sn, len, n_sg, cmd, ver, lbn, ts.
fn v1(sn: u32, len: u32, cmd: u16, lbn: u64, ts_us: u64) -> Vec<u8> {
    let mut r = Vec::with_capacity(32);
    r.extend_from_slice(&sn.to_le_bytes());
    r.extend_from_slice(&len.to_le_bytes());
    r.extend_from_slice(&1u32.to_le_bytes());
    r.extend_from_slice(&cmd.to_le_bytes());
    r.extend_from_slice(&0x0100u16.to_le_bytes());
    r.extend_from_slice(&lbn.to_le_bytes());
    r.extend_from_slice(&ts_us.to_le_bytes());
    assert_eq!(r.len(), 32);
    r
}

/// A version 2 record (40 bytes): cmd, ver, sn, len, n_sg, lbn, ts, rt.
fn v2(sn: u32, len: u32, cmd: u16, lbn: u64, ts_us: u64, rt: u64) -> Vec<u8> {
    let mut r = Vec::with_capacity(40);
    r.extend_from_slice(&cmd.to_le_bytes());
    r.extend_from_slice(&0x0200u16.to_le_bytes());
    r.extend_from_slice(&sn.to_le_bytes());
    r.extend_from_slice(&len.to_le_bytes());
    r.extend_from_slice(&2u32.to_le_bytes());
    r.extend_from_slice(&lbn.to_le_bytes());
    r.extend_from_slice(&ts_us.to_le_bytes());
    r.extend_from_slice(&rt.to_le_bytes());
    assert_eq!(r.len(), 40);
    r
}

fn read(bytes: &[u8]) -> Result<Vec<Request>, TraceError> {
    let mut reader =
        VscsiReader::new(Box::new(Cursor::new(bytes.to_vec())), bytes, PathBuf::from("disk7.vscsi"))?;
    assert_eq!(reader.volumes().names(), ["disk7"]);
    let mut out = Vec::new();
    let mut r = Request::default();
    while reader.next_request(&mut r)? {
        out.push(r.clone());
    }
    Ok(out)
}

fn request(time_us: u64, op: Op, lbn: u64, len: u64) -> Request {
    Request { time_ns: time_us * 1000, volume: 0, op, offset: lbn * 512, len, content: Vec::new() }
}

#[test]
fn version_1_by_hand() {
    let bytes = [
        v1(1, 4096, 0x28, 63, 1_000),
        v1(2, 512, 0x2a, 64, 1_250),
        v1(3, 0, 0x00, 0, 1_300), // control record: skipped
        v1(4, 65_536, 0x88, 1 << 33, 2_000),
        v1(5, 8192, 0x8a, 7, 2_500),
    ]
    .concat();
    assert_eq!(vscsi::detect_version(&bytes), Some(Version::V1));
    assert_eq!(
        read(&bytes).unwrap(),
        [
            request(1_000, Op::Read, 63, 4096),
            request(1_250, Op::Write, 64, 512),
            request(2_000, Op::Read, 1 << 33, 65_536),
            request(2_500, Op::Write, 7, 8192),
        ]
    );
}

#[test]
fn version_2_by_hand() {
    let bytes =
        [v2(10, 4096, 0x2a, 100, 5, 77), v2(11, 1024, 0x28, 200, 9, 12), v2(12, 2048, 0xa8, 300, 11, 1)]
            .concat();
    assert_eq!(vscsi::detect_version(&bytes), Some(Version::V2));
    assert_eq!(
        read(&bytes).unwrap(),
        [request(5, Op::Write, 100, 4096), request(9, Op::Read, 200, 1024), request(11, Op::Read, 300, 2048)]
    );
}

#[test]
fn detected_through_open() {
    let dir = std::env::temp_dir().join(format!("vscsi-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("vm.vscsi");
    std::fs::write(&path, [v2(1, 512, 0x28, 1, 1, 1), v2(2, 512, 0x2a, 2, 2, 1)].concat()).unwrap();
    let mut reader = open(&path, &OpenOptions::default()).unwrap();
    assert_eq!(reader.format(), Format::Vscsi);
    assert_eq!(reader.read_all().unwrap().len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn expect_at(result: Result<Vec<Request>, TraceError>, at: u64, needle: &str) {
    let err = result.expect_err("damaged file read without error");
    assert_eq!(err.location, Location::ByteOffset(at), "{err}");
    assert!(err.to_string().contains(needle), "expected {needle:?} in: {err}");
    assert!(err.to_string().contains("disk7.vscsi"), "{err}");
}

#[test]
fn truncated_files_name_the_byte_offset() {
    let whole = [v1(1, 512, 0x28, 1, 1), v1(2, 512, 0x2a, 2, 2), v1(3, 512, 0x28, 3, 3)].concat();
    expect_at(read(&whole[..80]), 64, "truncated record: 16 of 32 bytes");
    let whole = [v2(1, 512, 0x28, 1, 1, 0), v2(2, 512, 0x2a, 2, 2, 0), v2(3, 512, 0x28, 3, 3, 0)].concat();
    expect_at(read(&whole[..119]), 80, "truncated record: 39 of 40 bytes");
    // Cut anywhere: an error or the complete records before the cut, never a panic.
    for len in 0..whole.len() {
        match read(&whole[..len]) {
            Ok(requests) => assert_eq!(requests.len() * 40, len),
            Err(e) => assert!(matches!(e.location, Location::ByteOffset(at) if at as usize <= len), "{e}"),
        }
    }
}

#[test]
fn a_version_change_mid_file_is_reported() {
    let mut bytes = [v1(1, 512, 0x28, 1, 1), v1(2, 512, 0x2a, 2, 2), v1(3, 512, 0x28, 3, 3)].concat();
    bytes[64 + 15] = 0x02;
    expect_at(read(&bytes), 64 + 14, "record version 2");
}

#[test]
fn not_vscsi() {
    assert!(!vscsi::sniff(b"Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n"));
    assert!(!vscsi::sniff(&[]));
    let err = VscsiReader::new(Box::new(Cursor::new(vec![0u8; 64])), &[0u8; 64], PathBuf::from("zero.bin"))
        .err()
        .unwrap();
    assert_eq!(err.location, Location::ByteOffset(0));
}
