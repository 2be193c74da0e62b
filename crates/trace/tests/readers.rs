//! Golden tests of the text trace readers: every sample in `tests/data` is
//! opened through format auto-detection and must give exactly the requests
//! written below; bad lines must be reported with file, line and field.

use std::path::{Path, PathBuf};

use cloudcache_trace::formats::{alibaba, blkparse, fio, fiu, msr, systor, tencent};
use cloudcache_trace::{open, Format, Op, OpenOptions, Request, TraceReader};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// A request as (time_ns, volume name, op, offset, len, content hex digests).
type Row = (u64, &'static str, Op, u64, u64, Vec<&'static str>);

fn rows(reader: &mut TraceReader) -> Vec<(u64, String, Op, u64, u64, Vec<String>)> {
    let requests: Vec<Request> = reader.read_all().unwrap();
    requests
        .into_iter()
        .map(|r| {
            let content = r.content.iter().map(|h| h.iter().map(|b| format!("{b:02x}")).collect()).collect();
            (r.time_ns, reader.volumes().name(r.volume), r.op, r.offset, r.len, content)
        })
        .collect()
}

fn assert_golden(file: &str, format: Format, expected: &[Row]) -> TraceReader {
    let mut reader = open(data(file), &OpenOptions::default()).unwrap();
    assert_eq!(reader.format(), format, "{file} detected as {}", reader.format());
    let got = rows(&mut reader);
    let want: Vec<_> = expected
        .iter()
        .map(|(t, v, op, off, len, c)| {
            (*t, v.to_string(), *op, *off, *len, c.iter().map(|s| s.to_string()).collect())
        })
        .collect();
    assert_eq!(got, want, "{file}");
    reader
}

const ZERO_MD5: &str = "3df1244f6143869f52abf2a1d73d0c0f";

#[test]
fn msr() {
    let reader = assert_golden(
        "msr.csv",
        Format::Msr,
        &[
            (1_172_163_600_306_162_900, "hm_0", Op::Write, 7_014_912, 4096, vec![]),
            (1_172_163_600_310_843_800, "hm_0", Op::Write, 7_019_008, 8192, vec![]),
            (1_172_163_601_638_215_500, "hm_1", Op::Read, 1_317_441_536, 65536, vec![]),
            (1_172_163_602_638_224_500, "hm_0", Op::Read, 3_154_116_608, 4096, vec![]),
            (1_172_163_603_638_230_300, "prxy_0", Op::Write, 409_600, 512, vec![]),
            (1_172_163_604_638_239_400, "hm_1", Op::Write, 1_317_441_536, 4096, vec![]),
        ],
    );
    assert_eq!(reader.volumes().names(), ["hm_0", "hm_1", "prxy_0"]);
    assert!(reader.has_timestamps());
}

#[test]
fn fiu_iodedup_keeps_content_hashes() {
    assert_golden(
        "fiu_iodedup.txt",
        Format::Fiu,
        &[
            (
                89_968_195_792_462,
                "6,0",
                Op::Read,
                283_193_184 * 512,
                4096,
                vec!["56f11b711d91a065a2b6458eca924523"],
            ),
            (89_968_196_053_721, "6,0", Op::Read, 283_193_192 * 512, 4096, vec![ZERO_MD5]),
            (
                89_968_201_459_010,
                "6,0",
                Op::Write,
                7416 * 512,
                8192,
                vec!["5a1e3f2b7c9d8e4f6a0b1c2d3e4f5a6b", ZERO_MD5],
            ),
            // The process name "Web Content" has a blank in it.
            (89_968_210_000_000, "8,0", Op::Write, 120 * 512, 4096, vec!["e3b0c44298fc1c149afbf4c8996fb924"]),
            (
                89_968_220_000_000,
                "6,0",
                Op::Write,
                9_175_040 * 512,
                4096,
                vec!["d41d8cd98f00b204e9800998ecf8427e"],
            ),
        ],
    );
}

#[test]
fn fiu_srcmap_has_six_columns() {
    assert_golden(
        "fiu_srcmap.txt",
        Format::Fiu,
        &[
            (1_203_265_839_617_346, "0", Op::Write, 1_001_496 * 512, 4096, vec![]),
            (1_203_265_839_673_154, "0", Op::Write, 1_001_504 * 512, 4096, vec![]),
            (1_203_265_843_193_722, "0", Op::Read, 2_398_464 * 512, 32768, vec![]),
            (1_203_265_843_201_117, "0", Op::Read, 2_398_528 * 512, 4096, vec![]),
        ],
    );
}

const SYSTOR: &[Row] = &[
    (1_487_685_600_014_354_000, "1", Op::Write, 3_183_509_504, 4096, vec![]),
    (1_487_685_600_014_517_000, "1", Op::Read, 3_183_513_600, 8192, vec![]),
    (1_487_685_600_021_003_000, "0", Op::Read, 548_864, 65536, vec![]),
    (1_487_685_600_103_422_000, "2", Op::Write, 7_782_400, 4096, vec![]),
    (1_487_685_601_000_001_000, "1", Op::Read, 3_183_509_504, 4096, vec![]),
];

#[test]
fn systor_with_header_and_empty_response() {
    let reader = assert_golden("systor.csv", Format::Systor, SYSTOR);
    assert_eq!(reader.compression(), "none");
}

#[test]
fn gzip_and_zstd_input_is_decompressed_transparently() {
    let reader = assert_golden("systor.csv.gz", Format::Systor, SYSTOR);
    assert_eq!(reader.compression(), "gzip");
    let reader = assert_golden("systor.csv.zst", Format::Systor, SYSTOR);
    assert_eq!(reader.compression(), "zstd");
}

#[test]
fn alibaba() {
    assert_golden(
        "alibaba.csv",
        Format::Alibaba,
        &[
            (1_577_808_000_000_073_000, "419", Op::Write, 7_074_004_992, 4096, vec![]),
            (1_577_808_000_000_164_000, "419", Op::Write, 7_074_009_088, 4096, vec![]),
            (1_577_808_000_002_516_000, "18", Op::Read, 1_196_449_792, 16384, vec![]),
            (1_577_808_000_009_921_000, "419", Op::Read, 66_510_848, 4096, vec![]),
            (1_577_808_000_010_337_000, "503", Op::Write, 12_887_609_344, 65536, vec![]),
        ],
    );
}

#[test]
fn tencent_sectors_become_bytes() {
    assert_golden(
        "tencent.csv",
        Format::Tencent,
        &[
            (1_538_323_200_000_000_000, "1283", Op::Write, 12_910_952 * 512, 4096, vec![]),
            (1_538_323_200_000_000_000, "1283", Op::Read, 24_563_776 * 512, 8192, vec![]),
            (1_538_323_200_000_000_000, "2045", Op::Write, 3_411_496 * 512, 4096, vec![]),
            (1_538_323_201_000_000_000, "1283", Op::Write, 12_910_960 * 512, 4096, vec![]),
            (1_538_323_201_000_000_000, "6", Op::Read, 1024 * 512, 65536, vec![]),
        ],
    );
}

#[test]
fn blkparse_keeps_one_queue_event_per_io() {
    let reader = assert_golden(
        "blkparse.txt",
        Format::Blkparse,
        &[
            (0, "8,0", Op::Read, 3_768_936 * 512, 4096, vec![]),
            (1_005_115, "8,0", Op::Write, 1_052_672 * 512, 8192, vec![]),
            (1_010_441, "8,0", Op::Write, 1_052_688 * 512, 4096, vec![]),
            (2_000_000, "8,0", Op::Trim, 2_048_000 * 512, 2048 * 512, vec![]),
            (3_000_001, "8,16", Op::Read, 88 * 512, 256 * 512, vec![]),
        ],
    );
    assert_eq!(reader.skipped(), 0, "summary and other actions are not bad lines");
}

#[test]
fn blkparse_other_action() {
    use cloudcache_trace::text::TextReader;
    use cloudcache_trace::RequestSource;
    let text = std::fs::read(data("blkparse.txt")).unwrap();
    let parser = blkparse::BlkparseParser::with_action('C');
    let mut source =
        TextReader::new(parser, Box::new(std::io::Cursor::new(text)), data("blkparse.txt"), false);
    let mut req = Request::default();
    assert!(source.next_request(&mut req).unwrap());
    assert_eq!((req.time_ns, req.op, req.offset, req.len), (214_577, Op::Read, 3_768_936 * 512, 4096));
    // The flush completion carries no data; the summary is skipped.
    assert!(!source.next_request(&mut req).unwrap());
    assert_eq!(source.skipped(), 0);
}

#[test]
fn fio_v2_has_no_timestamps() {
    let reader = assert_golden(
        "fio_v2.log",
        Format::Fio,
        &[
            (0, "/dev/nbd0", Op::Write, 0, 4096, vec![]),
            (0, "/dev/nbd0", Op::Read, 4096, 8192, vec![]),
            (0, "/dev/nbd0", Op::Trim, 1_048_576, 65536, vec![]),
            (0, "/dev/nbd0", Op::Read, 1_052_672, 4096, vec![]),
        ],
    );
    assert!(!reader.has_timestamps());
}

#[test]
fn fio_v3_microseconds_by_default() {
    let reader = assert_golden(
        "fio_v3.log",
        Format::Fio,
        &[
            (125_000, "/dev/vdb", Op::Read, 0, 4096, vec![]),
            (3_120_000, "/dev/vdb", Op::Write, 8192, 16384, vec![]),
            (5_002_000, "/dev/vdc", Op::Read, 1_048_576, 131_072, vec![]),
            (7_001_000, "/dev/vdb", Op::Trim, 65536, 4096, vec![]),
        ],
    );
    assert!(reader.has_timestamps());
    // Only data actions name volumes... but add/open did, in order of appearance.
    assert_eq!(reader.volumes().names(), ["/dev/vdb", "/dev/vdc"]);
}

#[test]
fn fio_v3_time_unit_is_configurable() {
    let options = OpenOptions { fio_time_unit: Some(fio::TimeUnit::Milliseconds), ..OpenOptions::default() };
    let mut reader = open(data("fio_v3.log"), &options).unwrap();
    let first = reader.next().unwrap().unwrap();
    assert_eq!(first.time_ns, 125_000_000);
}

const GENERIC_COLUMNS: &str =
    "time=0:us,volume=1,op=2,offset=3:sectors,len=4,read=read,write=write,ignore=flush,header=true,delimiter=semicolon";

#[test]
fn generic_csv_by_column_mapping() {
    let err = open(data("generic.csv"), &OpenOptions::default()).err().expect("generic CSV is not detected");
    assert!(err.to_string().contains("unknown trace format"), "{err}");
    let options = OpenOptions {
        format: Some(Format::Csv),
        csv_columns: Some(GENERIC_COLUMNS.into()),
        ..OpenOptions::default()
    };
    let mut reader = open(data("generic.csv"), &options).unwrap();
    assert_eq!(reader.format(), Format::Csv);
    assert!(reader.has_timestamps());
    let got = rows(&mut reader);
    let want = vec![
        (1_000_000, "vm-a".to_string(), Op::Read, 2048 * 512, 4096, vec![]),
        (1_500_000, "vm-a".to_string(), Op::Write, 2056 * 512, 8192, vec![]),
        (2_250_000, "vm-b".to_string(), Op::Read, 0, 512, vec![]),
        (4_100_000, "vm-b".to_string(), Op::Write, 4096 * 512, 65536, vec![]),
    ];
    assert_eq!(got, want);
}

#[test]
fn generic_csv_without_time_or_volume() {
    let options = OpenOptions {
        format: Some(Format::Csv),
        csv_columns: Some("op=2,offset=3,len=4,ignore=flush,header=1,delimiter=;".into()),
        ..OpenOptions::default()
    };
    let mut reader = open(data("generic.csv"), &options).unwrap();
    assert!(!reader.has_timestamps());
    let all = reader.read_all().unwrap();
    assert_eq!(all.len(), 4);
    assert!(all.iter().all(|r| r.time_ns == 0 && r.volume == 0));
    assert_eq!(reader.volumes().names(), ["0"]);
    assert_eq!(all[0].offset, 2048);
}

#[test]
fn generic_csv_needs_and_checks_a_mapping() {
    let options = OpenOptions { format: Some(Format::Csv), ..OpenOptions::default() };
    let err = open(data("generic.csv"), &options).err().unwrap();
    assert!(err.to_string().contains("--columns"), "{err}");
    let options =
        OpenOptions { format: Some(Format::Csv), csv_columns: Some("op=2".into()), ..OpenOptions::default() };
    let err = open(data("generic.csv"), &options).err().unwrap();
    assert!(err.to_string().contains("offset"), "{err}");
    // No header=true: line 1 fails and the message suggests it.
    let options = OpenOptions {
        format: Some(Format::Csv),
        csv_columns: Some("op=2,offset=3,len=4,delimiter=semicolon".into()),
        ..OpenOptions::default()
    };
    let err = open(data("generic.csv"), &options).unwrap().read_all().unwrap_err();
    let text = err.to_string();
    assert!(text.contains("generic.csv:1") && text.contains("header=true"), "{text}");
}

/// A text format's detector.
type Sniff = fn(&[&str]) -> bool;

/// The first lines of a sample, as format detection sees them.
fn head_lines(file: &str) -> Vec<String> {
    std::fs::read_to_string(data(file))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(8)
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_detector_accepts_its_own_samples_only() {
    let detectors: [(Format, Sniff); 7] = [
        (Format::Fio, fio::sniff),
        (Format::Msr, msr::sniff),
        (Format::Systor, systor::sniff),
        (Format::Alibaba, alibaba::sniff),
        (Format::Tencent, tencent::sniff),
        (Format::Blkparse, blkparse::sniff),
        (Format::Fiu, fiu::sniff),
    ];
    let samples = [
        ("msr.csv", Some(Format::Msr)),
        ("fiu_iodedup.txt", Some(Format::Fiu)),
        ("fiu_srcmap.txt", Some(Format::Fiu)),
        ("systor.csv", Some(Format::Systor)),
        ("alibaba.csv", Some(Format::Alibaba)),
        ("tencent.csv", Some(Format::Tencent)),
        ("blkparse.txt", Some(Format::Blkparse)),
        ("fio_v2.log", Some(Format::Fio)),
        ("fio_v3.log", Some(Format::Fio)),
        ("generic.csv", None),
    ];
    for (file, own) in samples {
        let lines = head_lines(file);
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        for (format, sniff) in detectors {
            assert_eq!(sniff(&lines), Some(format) == own, "{format} detector on {file}");
            // Without a header line too.
            assert_eq!(
                sniff(&lines[1..]),
                Some(format) == own && format != Format::Fio,
                "{format} on {file}[1..]"
            );
        }
    }
}

#[test]
fn a_lone_header_is_not_enough_to_detect() {
    for header in [
        "Timestamp,Response,IOType,LUN,Offset,Size",
        "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
        "device_id,opcode,offset,length,timestmap",
        "Timestamp,Offset,Size,IOType,VolumeID",
    ] {
        for sniff in [msr::sniff, systor::sniff, alibaba::sniff, tencent::sniff, blkparse::sniff, fiu::sniff]
        {
            assert!(!sniff(&[header]), "{header}");
        }
    }
    // But each format skips its own header.
    assert!(systor::sniff(&["Timestamp,Response,IOType,LUN,Offset,Size", "1.5,,R,0,0,512"]));
    assert!(msr::sniff(&[
        "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
        "128166372003061629,hm,0,Write,7014912,4096,26"
    ]));
    assert!(alibaba::sniff(&["device_id,opcode,offset,length,timestmap", "1,R,0,4096,5"]));
    assert!(tencent::sniff(&["Timestamp,Offset,Size,IOType,VolumeID", "1538323200,8,8,0,1"]));
}

/// A temporary copy of `text` named `name`.
fn temp_trace(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Replace line `line` (1-based) of sample `file` with `bad`.
fn with_bad_line(file: &str, line: usize, bad: &str) -> String {
    let text = std::fs::read_to_string(data(file)).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[line - 1] = bad;
    lines.join("\n") + "\n"
}

#[test]
fn bad_lines_name_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, Format, usize, &str, &str, &str); 12] = [
        (
            "msr.csv",
            Format::Msr,
            3,
            "128166372016382155,hm,1,Erase,1317441536,65536,1053",
            "Type",
            "\"Erase\"",
        ),
        ("msr.csv", Format::Msr, 4, "128166372026382245,hm,0,Read,3154116608,-4096,412", "Size", "\"-4096\""),
        (
            "fiu_iodedup.txt",
            Format::Fiu,
            2,
            "89968196053721 20782 gzip 283193192 8 R 6 0 xyz",
            "md5",
            "\"xyz\"",
        ),
        (
            "fiu_iodedup.txt",
            Format::Fiu,
            3,
            "89968201459010 3316 kjournald 7416 16 W 6 0 a",
            "md5",
            "expected 2",
        ),
        (
            "systor.csv",
            Format::Systor,
            3,
            "1487685600.014517,0.000128,X,1,3183513600,8192",
            "IOType",
            "\"X\"",
        ),
        ("systor.csv", Format::Systor, 4, "1487685600.021003,,R,0,548864", "Size", "missing"),
        ("alibaba.csv", Format::Alibaba, 2, "419,W,7074009088,4k,1577808000000164", "length", "\"4k\""),
        ("tencent.csv", Format::Tencent, 5, "1538323201,1024,128,2,6", "IOType", "\"2\""),
        (
            "tencent.csv",
            Format::Tencent,
            2,
            "1538323200,99999999999999999999,16,0,1283",
            "Offset",
            "99999999999999999999",
        ),
        (
            "blkparse.txt",
            Format::Blkparse,
            10,
            "  8,0    1        3     0.001010441   221  Q  WS 1052688 + x [j]",
            "sectors",
            "\"x\"",
        ),
        ("fio_v3.log", Format::Fio, 7, "3120 /dev/vdb scribble 8192 16384", "action", "\"scribble\""),
        ("fio_v2.log", Format::Fio, 4, "/dev/nbd0 write 0", "length", "missing"),
    ];
    for (i, (file, format, line, bad, field, quoted)) in cases.into_iter().enumerate() {
        let name = format!("bad{i}_{file}");
        let path = temp_trace(&dir, &name, &with_bad_line(file, line, bad));
        let mut reader = open(&path, &OpenOptions::default()).unwrap();
        assert_eq!(reader.format(), format, "{name}");
        let err = reader.read_all().unwrap_err();
        let text = err.to_string();
        assert!(text.contains(&format!("{name}:{line}: field `{field}`")), "{text}");
        assert!(text.contains(quoted), "{text}");
    }
}

#[test]
fn overflowing_units_are_errors_not_wraps() {
    let dir = tempfile::tempdir().unwrap();
    // 2^64 / 512 rounded up, in sectors.
    let path = temp_trace(&dir, "big.csv", "1538323200,36028797018963968,8,1,1\n");
    let err = open(&path, &OpenOptions { format: Some(Format::Tencent), ..OpenOptions::default() })
        .unwrap()
        .read_all()
        .unwrap_err();
    assert!(err.to_string().contains("`Offset`") && err.to_string().contains("overflows"), "{err}");
    let path = temp_trace(&dir, "late.csv", "1,R,0,4096,18446744073709551615\n");
    let options = OpenOptions { format: Some(Format::Alibaba), ..OpenOptions::default() };
    let err = open(&path, &options).unwrap().read_all().unwrap_err();
    assert!(err.to_string().contains("`timestamp`"), "{err}");
}

#[test]
fn skip_bad_lines_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let text = with_bad_line("alibaba.csv", 2, "419,W,oops,4096,1577808000000164");
    let text = text + "garbage\n18,Q,0,4096,1\n";
    let path = temp_trace(&dir, "skip.csv", &text);
    // Three bad lines in eight are too many to detect the format by.
    assert!(open(&path, &OpenOptions::default()).is_err());
    let options =
        OpenOptions { format: Some(Format::Alibaba), skip_bad_lines: true, ..OpenOptions::default() };
    let mut reader = open(&path, &options).unwrap();
    let all = reader.read_all().unwrap();
    assert_eq!(all.len(), 4);
    assert_eq!(reader.skipped(), 3);
    // Without skipping, reading stops at the first.
    let options = OpenOptions { format: Some(Format::Alibaba), ..OpenOptions::default() };
    let err = open(&path, &options).unwrap().read_all().unwrap_err();
    assert!(err.to_string().contains("skip.csv:2: field `offset`"), "{err}");
}
