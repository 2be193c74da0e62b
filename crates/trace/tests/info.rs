//! The `trace info` report: every number on a small hand-made trace, and the
//! findings on the real sample.

use cloudcache_trace::info::{analyze, TraceInfo};
use cloudcache_trace::{
    open, Format, Op, OpenOptions, Request, RequestSource, TraceError, TraceReader, VolumeTable,
};

mod common;
use common::sample;

/// An in-memory trace.
struct Mem {
    requests: std::vec::IntoIter<Request>,
    volumes: VolumeTable,
    has_timestamps: bool,
}

impl RequestSource for Mem {
    fn next_request(&mut self, req: &mut Request) -> Result<bool, TraceError> {
        match self.requests.next() {
            Some(r) => {
                *req = r;
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn volumes(&self) -> &VolumeTable {
        &self.volumes
    }
    fn has_timestamps(&self) -> bool {
        self.has_timestamps
    }
}

fn reader(requests: Vec<Request>, names: &[&str], has_timestamps: bool) -> TraceReader {
    let mut volumes = VolumeTable::new();
    for n in names {
        volumes.intern(n);
    }
    let source = Mem { requests: requests.into_iter(), volumes, has_timestamps };
    TraceReader::new(Box::new(source), Format::Cct, "none")
}

fn req(time_ns: u64, volume: u32, op: Op, offset: u64, len: u64) -> Request {
    Request { time_ns, volume, op, offset, len, content: Vec::new() }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

fn hand_made() -> TraceInfo {
    let mut with_content = req(600, 1, Op::Write, 3584, 1024);
    with_content.content = vec![[7; 16]];
    let requests = vec![
        req(100, 0, Op::Read, 0, 4096),     // aligned, block a0
        req(200, 0, Op::Write, 3584, 4096), // 7 sectors, blocks a0 a1 (extra block)
        req(150, 1, Op::Read, 11_776, 512), // out of order; 7 sectors, block b2
        req(300, 1, Op::Trim, 0, 1 << 20),  // aligned; trims stay out of the footprint
        req(400, 0, Op::Read, 7680, 8192),  // 7 sectors, blocks a1 a2 a3 (extra block)
        req(500, 0, Op::Read, 100, 0),      // zero-length, not sector-aligned
        with_content,                       // 7 sectors, blocks b0 b1 (extra block)
    ];
    let mut calls = Vec::new();
    let info = analyze(&mut reader(requests, &["a", "b"], true), |n| calls.push(n)).unwrap();
    assert_eq!(calls, [7]);
    info
}

#[test]
fn every_number_of_a_small_trace() {
    let info = hand_made();
    assert_eq!(info.format, "cct");
    assert_eq!(info.compression, "none");
    assert_eq!(info.requests, 7);
    assert_eq!(info.skipped_lines, 0);

    let t = &info.time;
    assert!(t.has_timestamps);
    assert_eq!((t.first_ns, t.last_ns, t.min_ns, t.max_ns), (Some(100), Some(600), Some(100), Some(600)));
    assert_eq!(t.duration_ns, Some(500));
    assert!(close(t.requests_per_second.unwrap(), 7.0 / 500e-9));
    assert_eq!(t.out_of_order, 1);

    let v = &info.volumes;
    assert_eq!(v.count, 2);
    assert_eq!(v.names, ["a", "b"]);
    assert_eq!(v.top.len(), 2);
    let a = &v.top[0];
    assert_eq!((a.id, a.name.as_str(), a.requests, a.reads, a.writes), (0, "a", 4, 3, 1));
    assert_eq!((a.bytes, a.footprint_blocks, a.footprint_bytes), (16_384, 4, 16_384));
    let b = &v.top[1];
    assert_eq!((b.id, b.name.as_str(), b.requests, b.reads, b.writes), (1, "b", 3, 1, 1));
    assert_eq!((b.bytes, b.footprint_blocks, b.footprint_bytes), (1_050_112, 3, 12_288));

    let total_bytes = 1_066_496.0;
    let o = &info.ops;
    assert_eq!((o.read.requests, o.read.bytes), (4, 12_800));
    assert_eq!((o.write.requests, o.write.bytes), (2, 5_120));
    assert_eq!((o.trim.requests, o.trim.bytes), (1, 1 << 20));
    assert!(close(o.read.request_fraction, 4.0 / 7.0));
    assert!(close(o.read.byte_fraction, 12_800.0 / total_bytes));
    assert!(close(o.trim.byte_fraction, 1_048_576.0 / total_bytes));

    let s = &info.sizes;
    assert_eq!((s.min_bytes, s.max_bytes), (0, 1 << 20));
    assert!(close(s.mean_bytes, total_bytes / 7.0));
    let buckets: Vec<(u64, u64, u64)> =
        s.buckets.iter().map(|b| (b.from_bytes, b.to_bytes, b.requests)).collect();
    assert_eq!(
        buckets,
        [
            (0, 1, 1),
            (512, 1024, 1),
            (1024, 2048, 1),
            (4096, 8192, 2),
            (8192, 16_384, 1),
            (1 << 20, 2 << 20, 1)
        ]
    );
    assert!(close(s.buckets[3].fraction, 2.0 / 7.0));

    let al = &info.alignment;
    assert_eq!((al.offset_aligned, al.fully_aligned, al.not_sector_aligned), (2, 2, 1));
    assert!(close(al.offset_aligned_fraction, 2.0 / 7.0));
    let remainders: Vec<(u64, u64, u64)> =
        al.remainders.iter().map(|r| (r.sectors, r.bytes, r.requests)).collect();
    assert_eq!(remainders, [(0, 0, 2), (7, 3584, 4)]);
    let dominant = al.dominant.as_ref().unwrap();
    assert_eq!((dominant.sectors, dominant.requests), (7, 4));
    assert!(close(dominant.fraction, 4.0 / 7.0));
    assert!(al.finding.contains("7 sectors (3584 B) for 57.1 %"), "{}", al.finding);
    assert!(al.finding.contains("63-sector partition offset"), "{}", al.finding);
    assert_eq!((al.crossing, al.extra_block), (4, 3));
    assert!(close(al.extra_block_fraction, 3.0 / 7.0));

    let f = &info.footprint;
    assert_eq!((f.blocks, f.read_only_blocks, f.written_blocks), (7, 3, 4));
    assert_eq!((f.bytes, f.read_only_bytes, f.written_bytes), (28_672, 12_288, 16_384));
    assert_eq!(f.oversized_requests, 0);

    assert_eq!(info.zero_length_requests, 1);
    assert_eq!(info.content_requests, 1);
}

#[test]
fn text_summary_fits_a_screen() {
    let text = hand_made().render_text();
    assert!(text.lines().count() <= 24, "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 120), "{text}");
    for needle in ["7 requests", "1 out of order", "63-sector", "read-only 12 KiB", "1 with content hashes"] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
}

#[test]
fn report_serialises() {
    fn is_serialize<T: serde::Serialize>(_: &T) {}
    is_serialize(&hand_made());
}

#[test]
fn without_timestamps_and_empty() {
    let requests = vec![req(0, 0, Op::Write, 0, 4096), req(0, 0, Op::Write, 4096, 4096)];
    let info = analyze(&mut reader(requests, &["fio"], false), |_| {}).unwrap();
    assert!(!info.time.has_timestamps);
    assert_eq!(info.time.duration_ns, None);
    assert_eq!(info.time.out_of_order, 0);
    assert!(info.render_text().contains("no timestamps"));
    assert!(info.alignment.finding.contains("mostly 4 KiB-aligned"), "{}", info.alignment.finding);

    let info = analyze(&mut reader(Vec::new(), &[], true), |_| {}).unwrap();
    assert_eq!(info.requests, 0);
    assert_eq!(info.sizes.min_bytes, 0);
    assert_eq!(info.sizes.mean_bytes, 0.0);
    assert_eq!(info.footprint.blocks, 0);
    assert!(info.alignment.dominant.is_none());
    assert!(info.render_text().contains("0 requests"));
}

#[test]
fn huge_requests_do_not_blow_up_the_footprint() {
    let requests = vec![
        req(1, 0, Op::Read, 0, u64::MAX),
        req(2, 0, Op::Write, u64::MAX - 100, 1000),
        req(3, 7_000_000, Op::Read, 1 << 60, 4096),
    ];
    let info = analyze(&mut reader(requests, &["a"], true), |_| {}).unwrap();
    assert_eq!(info.footprint.oversized_requests, 1);
    // The second request saturates at the end of the address space: one block.
    assert_eq!(info.footprint.blocks, 2);
    assert_eq!(info.volumes.count, 2);
    assert_eq!(info.volumes.top[1].name, "7000000");
    assert!(info.render_text().contains("left out of the footprint"));
}

#[test]
fn sample_trace_shows_the_63_sector_partition_offset() {
    let Some(path) = sample() else { return };
    let mut reader = open(&path, &OpenOptions::default()).unwrap();
    let mut last = 0;
    let info = analyze(&mut reader, |n| last = n).unwrap();
    assert_eq!(info.requests, 113_872);
    assert_eq!(last, 113_872);
    assert_eq!((info.ops.read.requests, info.ops.write.requests), (46_974, 66_898));
    let dominant = info.alignment.dominant.as_ref().unwrap();
    assert_eq!((dominant.sectors, dominant.bytes, dominant.requests), (7, 3584, 90_572));
    assert!(info.alignment.finding.contains("63-sector partition offset"));
    assert_eq!(info.volumes.count, 1);
    assert!(info.footprint.blocks > 0);
    assert!(info.footprint.read_only_blocks < info.footprint.blocks);
    let span = info.time.duration_ns.unwrap();
    assert!((6_000_000_000_000..8_000_000_000_000).contains(&span), "about two hours, got {span} ns");
    eprintln!("{}", info.render_text());
}
