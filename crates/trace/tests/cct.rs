//! The `.cct` format: round trips, every kind of damage reported with its
//! byte offset (never a panic, never wrong requests), and conversion of the
//! real sample trace.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use cloudcache_trace::formats::cct::{self, CctOptions, CctReader, CctWriter};
use cloudcache_trace::{
    open, Format, Location, Op, OpenOptions, Request, RequestSource, TraceError, VolumeTable,
};
use proptest::prelude::*;

mod common;
use common::sample;

/// A directory under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("cct-test-{}-{tag}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn table(names: &[&str]) -> VolumeTable {
    let mut t = VolumeTable::new();
    for n in names {
        t.intern(n);
    }
    t
}

fn req(time_ns: u64, volume: u32, op: Op, offset: u64, len: u64) -> Request {
    Request { time_ns, volume, op, offset, len, content: Vec::new() }
}

fn hash(seed: u8) -> [u8; 16] {
    let mut h = [0u8; 16];
    for (i, b) in h.iter_mut().enumerate() {
        *b = seed.wrapping_mul(31).wrapping_add(i as u8);
    }
    h
}

fn write_cct(requests: &[Request], names: &[&str], options: CctOptions) -> Vec<u8> {
    let mut writer = CctWriter::with_options(Vec::new(), &table(names), options).unwrap();
    for r in requests {
        writer.write(r).unwrap();
    }
    writer.finish().unwrap().0
}

struct ReadBack {
    requests: Vec<Request>,
    names: Vec<String>,
    has_timestamps: bool,
}

fn read_cct(bytes: &[u8]) -> Result<ReadBack, TraceError> {
    let mut reader = CctReader::new(Box::new(Cursor::new(bytes.to_vec())), PathBuf::from("t.cct"))?;
    let mut requests = Vec::new();
    let mut r = Request::default();
    while reader.next_request(&mut r)? {
        requests.push(r.clone());
    }
    // The end is sticky.
    assert!(!reader.next_request(&mut r)?);
    Ok(ReadBack {
        requests,
        names: reader.volumes().names().to_vec(),
        has_timestamps: reader.has_timestamps(),
    })
}

fn small_blocks(block_records: u32) -> CctOptions {
    CctOptions { block_records, ..CctOptions::default() }
}

fn sample_requests(n: usize, volumes: u32, content_every: usize) -> Vec<Request> {
    (0..n)
        .map(|i| {
            let op = [Op::Read, Op::Write, Op::Trim][i % 3];
            let mut r = req(
                1_000_000_000 + (i as u64 * 7919) % 100_000 * 1000,
                (i as u32 * 7) % volumes,
                op,
                (i as u64 * 104_729) % (1 << 30) * 512,
                512 * (1 + i as u64 % 64),
            );
            if content_every > 0 && i % content_every == 0 {
                r.content = (0..(1 + i % 3)).map(|k| hash((i + k) as u8)).collect();
            }
            r
        })
        .collect()
}

#[test]
fn round_trip_without_content() {
    let requests = sample_requests(1000, 3, 0);
    let bytes = write_cct(&requests, &["a", "b", "c"], small_blocks(100));
    let back = read_cct(&bytes).unwrap();
    assert_eq!(back.requests, requests);
    assert_eq!(back.names, ["a", "b", "c"]);
    assert!(back.has_timestamps);
    assert!(cct::sniff(&bytes));
}

#[test]
fn round_trip_with_content() {
    let requests = sample_requests(500, 2, 2);
    assert!(requests.iter().any(|r| !r.content.is_empty()));
    let bytes = write_cct(&requests, &["vm1", "vm2"], small_blocks(64));
    assert_eq!(read_cct(&bytes).unwrap().requests, requests);
}

#[test]
fn round_trip_many_volumes_named_as_they_appear() {
    // 300 volumes, declared one by one as a converter meets them, so their
    // names travel in the blocks rather than the header.
    let mut writer = CctWriter::with_options(Vec::new(), &VolumeTable::new(), small_blocks(50)).unwrap();
    let mut requests = Vec::new();
    let mut names = Vec::new();
    for i in 0..3000u32 {
        let volume = i % 300;
        if volume as usize == names.len() {
            let name = format!("host{}_disk{}", volume / 10, volume % 10);
            assert_eq!(writer.declare_volume(&name).unwrap(), volume);
            names.push(name);
        }
        let r = req(u64::from(i) * 1000, volume, Op::Read, u64::from(i) * 4096, 4096);
        writer.write(&r).unwrap();
        requests.push(r);
    }
    writer.declare_volume("unused").unwrap();
    names.push("unused".to_owned());
    let (bytes, summary) = writer.finish().unwrap();
    assert_eq!(summary.volumes, 301);
    assert_eq!(summary.requests, 3000);
    let back = read_cct(&bytes).unwrap();
    assert_eq!(back.requests, requests);
    assert_eq!(back.names, names);
}

#[test]
fn names_are_known_before_their_first_request() {
    let mut writer = CctWriter::with_options(Vec::new(), &table(&["first"]), small_blocks(4)).unwrap();
    writer.write(&req(1, 0, Op::Read, 0, 512)).unwrap();
    writer.declare_volume("second").unwrap();
    writer.write(&req(2, 1, Op::Read, 0, 512)).unwrap();
    let (bytes, _) = writer.finish().unwrap();
    let mut reader = CctReader::new(Box::new(Cursor::new(bytes)), PathBuf::from("t.cct")).unwrap();
    let mut r = Request::default();
    while reader.next_request(&mut r).unwrap() {
        assert!((r.volume as usize) < reader.volumes().len());
    }
    assert_eq!(reader.volumes().names(), ["first", "second"]);
}

#[test]
fn empty_traces() {
    for names in [&[][..], &["only"][..]] {
        let bytes = write_cct(&[], names, CctOptions::default());
        let back = read_cct(&bytes).unwrap();
        assert!(back.requests.is_empty());
        assert_eq!(back.names, names);
    }
}

#[test]
fn more_records_than_one_block() {
    let requests = sample_requests(cct::DEFAULT_BLOCK_RECORDS as usize * 2 + 17, 5, 97);
    let mut writer = CctWriter::new(Vec::new(), &table(&["a", "b", "c", "d", "e"]), true).unwrap();
    for r in &requests {
        writer.write(r).unwrap();
    }
    let (bytes, summary) = writer.finish().unwrap();
    assert_eq!(summary.blocks, 3);
    assert_eq!(read_cct(&bytes).unwrap().requests, requests);
}

#[test]
fn extreme_values_round_trip() {
    let mut requests = vec![
        req(u64::MAX, 0, Op::Write, u64::MAX, u64::MAX),
        req(0, 0, Op::Read, 0, 0),
        req(u64::MAX / 2, 0, Op::Trim, 1, u64::MAX - 1),
        req(5, 0, Op::Read, u64::MAX - 4095, 4096),
    ];
    requests[1].content = vec![[0xff; 16]; 3];
    let bytes = write_cct(&requests, &["x"], small_blocks(3));
    assert_eq!(read_cct(&bytes).unwrap().requests, requests);
}

#[test]
fn without_timestamps() {
    let requests: Vec<Request> = (0..10).map(|i| req(0, 0, Op::Write, i * 4096, 4096)).collect();
    let options = CctOptions { has_timestamps: false, ..CctOptions::default() };
    let bytes = write_cct(&requests, &["fio"], options.clone());
    let back = read_cct(&bytes).unwrap();
    assert!(!back.has_timestamps);
    assert_eq!(back.requests, requests);
    let mut writer = CctWriter::with_options(Vec::new(), &table(&["fio"]), options).unwrap();
    let err = writer.write(&req(5, 0, Op::Read, 0, 512)).unwrap_err();
    assert!(err.to_string().contains("without timestamps"), "{err}");
}

#[test]
fn writer_refuses_what_it_cannot_store() {
    let mut writer = CctWriter::new(Vec::new(), &table(&["a"]), true).unwrap();
    let err = writer.write(&req(0, 1, Op::Read, 0, 512)).unwrap_err();
    assert!(err.to_string().contains("volume id 1 has no name"), "{err}");
    assert!(writer.declare_volume("a").is_err());
    let options = CctOptions { has_content: false, ..CctOptions::default() };
    let mut writer = CctWriter::with_options(Vec::new(), &table(&["a"]), options).unwrap();
    let mut r = req(0, 0, Op::Read, 0, 4096);
    r.content = vec![hash(1)];
    assert!(writer.write(&r).is_err());
    // A promised count is kept.
    let options = CctOptions { request_count: Some(2), ..CctOptions::default() };
    let mut writer = CctWriter::with_options(Vec::new(), &table(&["a"]), options).unwrap();
    writer.write(&req(0, 0, Op::Read, 0, 512)).unwrap();
    assert!(writer.finish().is_err());
    assert!(CctWriter::with_options(Vec::new(), &table(&["a"]), small_blocks(0)).is_err());
}

#[test]
fn seekable_writer_finalises_the_header() {
    let requests = sample_requests(300, 1, 0);
    let mut writer = CctWriter::new(Cursor::new(Vec::new()), &table(&["a"]), true).unwrap();
    for r in &requests {
        writer.write(r).unwrap();
    }
    let (out, _) = writer.finish_seekable().unwrap();
    let bytes = out.into_inner();
    let reader = CctReader::new(Box::new(Cursor::new(bytes.clone())), PathBuf::from("t.cct")).unwrap();
    assert_eq!(reader.header().request_count, Some(300));
    assert!(!reader.header().has_content());
    assert!(reader.header().has_timestamps());
    assert_eq!(read_cct(&bytes).unwrap().requests, requests);
    // Unpatched: the count is unknown and content is allowed.
    let bytes = write_cct(&requests, &["a"], CctOptions::default());
    let reader = CctReader::new(Box::new(Cursor::new(bytes)), PathBuf::from("t.cct")).unwrap();
    assert_eq!(reader.header().request_count, None);
    assert!(reader.header().has_content());
}

// ---------------------------------------------------------------- damage

/// The regions of a file: (start, end, what).
fn regions(bytes: &[u8]) -> Vec<(usize, usize, &'static str)> {
    let names_len = u32::from_le_bytes(bytes[24..28].try_into().unwrap()) as usize;
    let mut out = vec![(0, 32 + names_len, "header")];
    let mut at = 32 + names_len;
    while &bytes[at..at + 4] == b"CCTB" {
        let payload = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        out.push((at, at + 20, "block header"));
        out.push((at + 20, at + 20 + payload, "payload"));
        at += 20 + payload;
    }
    out.push((at, at + 32, "end marker"));
    assert_eq!(at + 32, bytes.len());
    out
}

fn byte_offset(err: &TraceError) -> u64 {
    match err.location {
        Location::ByteOffset(at) => at,
        ref other => panic!("error without a byte offset ({other:?}): {err}"),
    }
}

fn damaged_file() -> Vec<u8> {
    let requests = sample_requests(40, 2, 3);
    write_cct(&requests, &["vol-a", "vol-b"], small_blocks(8))
}

#[test]
fn every_flipped_byte_is_caught_in_its_region() {
    let bytes = damaged_file();
    let regions = regions(&bytes);
    for pos in 0..bytes.len() {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut bad = bytes.clone();
            bad[pos] ^= mask;
            let err = match read_cct(&bad) {
                Ok(_) => panic!("flip {mask:#04x} at byte {pos} went unnoticed"),
                Err(e) => e,
            };
            let at = byte_offset(&err) as usize;
            let &(start, end, what) = regions.iter().find(|r| (r.0..r.1).contains(&pos)).unwrap();
            // Payload damage is reported at the start of its block header.
            let start = if what == "payload" { start - 20 } else { start };
            assert!(
                (start..end).contains(&at),
                "flip at {pos} ({what} {start}..{end}) reported at {at}: {err}"
            );
            assert!(err.to_string().contains(&format!("byte offset {at}")), "{err}");
        }
    }
}

#[test]
fn every_truncation_is_caught() {
    let bytes = damaged_file();
    for len in 0..bytes.len() {
        match read_cct(&bytes[..len]) {
            Ok(_) => panic!("file cut to {len} of {} bytes read as complete", bytes.len()),
            Err(e) => assert!(byte_offset(&e) as usize <= len, "cut at {len}: {e}"),
        }
    }
}

/// The first block's header offset and the first record's offset.
fn first_block(bytes: &[u8]) -> (usize, usize) {
    let regions = regions(bytes);
    let block = regions[1].0;
    let names = u32::from_le_bytes(bytes[block + 20..block + 24].try_into().unwrap());
    assert_eq!(names, 0, "test files name their volumes in the header");
    (block, block + 24)
}

/// Recompute a block's checksums after editing its payload, as a buggy or
/// malicious writer would.
fn reseal_block(bytes: &mut [u8], block: usize) {
    let payload = u32::from_le_bytes(bytes[block + 4..block + 8].try_into().unwrap()) as usize;
    let crc = crc32fast::hash(&bytes[block + 20..block + 20 + payload]);
    bytes[block + 12..block + 16].copy_from_slice(&crc.to_le_bytes());
    let crc = crc32fast::hash(&bytes[block..block + 16]);
    bytes[block + 16..block + 20].copy_from_slice(&crc.to_le_bytes());
}

fn reseal_header(bytes: &mut [u8]) {
    let names_len = u32::from_le_bytes(bytes[24..28].try_into().unwrap()) as usize;
    let mut crc = crc32fast::Hasher::new();
    crc.update(&bytes[..28]);
    crc.update(&bytes[32..32 + names_len]);
    let crc = crc.finalize();
    bytes[28..32].copy_from_slice(&crc.to_le_bytes());
}

fn expect_error(bytes: &[u8], at: usize, needle: &str) {
    let err = read_cct(bytes).err().unwrap_or_else(|| panic!("expected an error containing {needle:?}"));
    assert_eq!(byte_offset(&err), at as u64, "{err}");
    assert!(err.to_string().contains(needle), "expected {needle:?} in: {err}");
}

#[test]
fn each_kind_of_damage_says_what_is_wrong() {
    let good = damaged_file();
    let (block, record) = first_block(&good);

    let mut bad = good.clone();
    bad[3] = b'X';
    expect_error(&bad, 0, "bad magic");

    let mut bad = good.clone();
    bad[17] ^= 1;
    expect_error(&bad, 0, "header checksum mismatch");

    let mut bad = good.clone();
    bad[block + 9] ^= 1;
    expect_error(&bad, block, "block header checksum mismatch");

    let mut bad = good.clone();
    bad[record + 2] ^= 1;
    expect_error(&bad, block, "checksum mismatch");

    let mut bad = good.clone();
    bad[block + 13] ^= 1;
    expect_error(&bad, block, "checksum mismatch");

    let mut bad = good.clone();
    bad[block] = b'Z';
    expect_error(&bad, block, "bad block marker");

    // Checksums that match data a broken writer produced.
    let mut bad = good.clone();
    bad[record] |= 0b11;
    reseal_block(&mut bad, block);
    expect_error(&bad, record, "bad op code 3");

    let mut bad = good.clone();
    bad[record] |= 0x40;
    reseal_block(&mut bad, block);
    expect_error(&bad, record, "reserved tag bits");

    let mut bad = good.clone();
    bad[8] = 2;
    expect_error(&bad, 8, "unsupported cct version 2.0");

    let mut bad = good.clone();
    bad[12] |= 0x10;
    reseal_header(&mut bad);
    expect_error(&bad, 12, "unknown required flags");

    // Flags in the upper half are for minor versions to add: ignored.
    let mut ok = good.clone();
    ok[15] |= 0x80;
    reseal_header(&mut ok);
    assert!(read_cct(&ok).is_ok());

    let payload_end =
        block + 20 + u32::from_le_bytes(good[block + 4..block + 8].try_into().unwrap()) as usize;
    expect_error(&good[..payload_end - 1], block, "truncated block");
    expect_error(&good[..payload_end], payload_end, "without the end-of-trace marker");
    expect_error(&good[..block + 10], block, "truncated block header");

    let mut longer = good.clone();
    longer.extend_from_slice(b"junk");
    expect_error(&longer, good.len(), "after the end-of-trace marker");

    // A whole block dropped: the end marker's totals catch it.
    let second = regions(&good)[3].0;
    let third = regions(&good)[5].0;
    let mut dropped = good[..second].to_vec();
    dropped.extend_from_slice(&good[third..]);
    expect_error(&dropped, dropped.len() - 32 + 8, "a block is missing");

    expect_error(&[], 0, "empty file");
    expect_error(&good[..5], 0, "truncated header");
    expect_error(b"Timestamp,Hostname\n1,2\n", 0, "bad magic");
}

#[test]
fn errors_are_sticky() {
    let mut bad = damaged_file();
    let (block, _) = first_block(&bad);
    bad[block + 30] ^= 4;
    let mut reader = CctReader::new(Box::new(Cursor::new(bad)), PathBuf::from("t.cct")).unwrap();
    let mut r = Request::default();
    let first = reader.next_request(&mut r).unwrap_err();
    assert_eq!(reader.next_request(&mut r).unwrap_err(), first);
}

#[test]
fn content_in_a_file_declared_without_it_is_rejected() {
    let mut r = req(1, 0, Op::Write, 0, 4096);
    r.content = vec![hash(9)];
    let mut bytes = write_cct(&[r], &["a"], CctOptions::default());
    bytes[12] &= !2;
    reseal_header(&mut bytes);
    let (_, record) = first_block(&bytes);
    expect_error(&bytes, record, "says it has none");
}

// ---------------------------------------------------------------- properties

fn arb_request(volumes: u32) -> impl Strategy<Value = Request> {
    (
        any::<u64>(),
        0..volumes,
        prop_oneof![Just(Op::Read), Just(Op::Write), Just(Op::Trim)],
        prop_oneof![any::<u64>(), (0u64..1 << 24).prop_map(|s| s * 512)],
        prop_oneof![any::<u64>(), (0u64..256).prop_map(|s| s * 512)],
        prop::collection::vec(any::<[u8; 16]>(), 0..4),
    )
        .prop_map(|(time_ns, volume, op, offset, len, content)| Request {
            time_ns,
            volume,
            op,
            offset,
            len,
            content,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn any_requests_round_trip(
        requests in prop::collection::vec(arb_request(4), 0..300),
        block_records in 1u32..64,
    ) {
        let bytes = write_cct(&requests, &["a", "b", "c", "d"], small_blocks(block_records));
        let back = read_cct(&bytes).unwrap();
        prop_assert_eq!(back.requests, requests);
    }

    #[test]
    fn random_damage_never_yields_wrong_requests(
        requests in prop::collection::vec(arb_request(2), 1..60),
        pos in any::<prop::sample::Index>(),
        mask in 1u8..=255,
    ) {
        let mut bytes = write_cct(&requests, &["a", "b"], small_blocks(7));
        let pos = pos.index(bytes.len());
        bytes[pos] ^= mask;
        prop_assert!(read_cct(&bytes).is_err());
    }
}

// ---------------------------------------------------------------- sample trace

#[test]
fn sample_trace_converts_and_reads_back_identical() {
    let Some(sample) = sample() else { return };
    let original = open(&sample, &OpenOptions::default()).unwrap().read_all().unwrap();
    assert_eq!(original.len(), 113_872);
    let dir = TempDir::new("convert");
    for name in ["sample.cct", "sample.cct.zst"] {
        let out = dir.path(name);
        let mut reader = open(&sample, &OpenOptions::default()).unwrap();
        let mut calls = 0;
        let stats = cct::convert_with_progress(&mut reader, &out, |_| calls += 1).unwrap();
        assert!(calls >= 2);
        assert_eq!(stats.requests, 113_872);
        assert_eq!(stats.volumes, 1);
        assert_eq!(stats.zstd, name.ends_with(".zst"));
        let mut back = open(&out, &OpenOptions::default()).unwrap();
        assert_eq!(back.format(), Format::Cct);
        assert_eq!(back.compression(), if stats.zstd { "zstd" } else { "none" });
        let requests = back.read_all().unwrap();
        assert!(requests == original, "{name} differs from the vscsi original");
        assert_eq!(back.volumes().names(), ["cloudPhysicsIO"]);
        eprintln!(
            "{name}: {} bytes ({:.1} per request; vscsi original 3,643,904)",
            stats.file_bytes,
            stats.file_bytes as f64 / 113_872.0
        );
    }
    // Only the two outputs: no temporary file left behind.
    let mut left: Vec<String> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["sample.cct", "sample.cct.zst"]);
    // The plain file's header was finalised.
    let bytes = std::fs::read(dir.path("sample.cct")).unwrap();
    let reader = CctReader::new(Box::new(Cursor::new(bytes)), dir.path("sample.cct")).unwrap();
    assert_eq!(reader.header().request_count, Some(113_872));
    assert!(!reader.header().has_content());
}

#[test]
fn a_failed_conversion_leaves_no_file() {
    let dir = TempDir::new("fail");
    let input = dir.path("bad.csv");
    std::fs::write(
        &input,
        "128166372003061629,hm,0,Write,7014912,4096,26\n128166372003061630,hm,0,Jump,0,1,2\n",
    )
    .unwrap();
    let mut reader =
        open(&input, &OpenOptions { format: Some(Format::Msr), ..OpenOptions::default() }).unwrap();
    let out = dir.path("out.cct");
    assert!(cct::convert(&mut reader, &out).is_err());
    let left: Vec<_> = std::fs::read_dir(&dir.0).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["bad.csv"]);
}

/// Rough read speed of cct against the MSR CSV of the same requests.
/// `cargo test --release -p cloudcache-trace --test cct -- --ignored --nocapture read_speed`
#[test]
#[ignore]
fn read_speed() {
    use std::io::Write;
    use std::time::Instant;
    let Some(sample) = sample() else { return };
    let original = open(&sample, &OpenOptions::default()).unwrap().read_all().unwrap();
    const COPIES: u64 = 20;
    let dir = TempDir::new("speed");
    let span = original.last().unwrap().time_ns - original[0].time_ns + 1;
    // MSR CSV: FILETIME ticks (100 ns since 1601), host, disk, type, offset, size, response.
    let csv_path = dir.path("sample.csv");
    let mut csv = std::io::BufWriter::new(std::fs::File::create(&csv_path).unwrap());
    let mut writer = CctWriter::new(Vec::new(), &table(&["cloudPhysicsIO_0"]), true).unwrap();
    for copy in 0..COPIES {
        for r in &original {
            let mut r = r.clone();
            r.time_ns += copy * span;
            r.time_ns -= r.time_ns % 100;
            let ticks = r.time_ns / 100 + 116_444_736_000_000_000;
            let op = if r.op == Op::Read { "Read" } else { "Write" };
            writeln!(csv, "{ticks},cloudPhysicsIO,0,{op},{},{},100", r.offset, r.len).unwrap();
            writer.write(&r).unwrap();
        }
    }
    csv.flush().unwrap();
    drop(csv);
    let cct_path = dir.path("sample.cct");
    std::fs::write(&cct_path, writer.finish().unwrap().0).unwrap();
    let time = |path: &Path| {
        let mut best = f64::MAX;
        let mut n = 0;
        for _ in 0..3 {
            let start = Instant::now();
            let mut reader = open(path, &OpenOptions::default()).unwrap();
            let mut r = Request::default();
            n = 0u64;
            while reader.next_request(&mut r).unwrap() {
                n += 1;
            }
            best = best.min(start.elapsed().as_secs_f64());
        }
        (n, best)
    };
    let (n_csv, t_csv) = time(&csv_path);
    let (n_cct, t_cct) = time(&cct_path);
    assert_eq!(n_csv, n_cct);
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    eprintln!(
        "{n_csv} requests: msr csv {} bytes in {t_csv:.3} s ({:.1} M req/s); cct {} bytes in {t_cct:.3} s \
         ({:.1} M req/s): cct is {:.1}x faster",
        size(&csv_path),
        n_csv as f64 / t_csv / 1e6,
        size(&cct_path),
        n_cct as f64 / t_cct / 1e6,
        t_csv / t_cct
    );
}
