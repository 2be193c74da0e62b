//! Property tests: no input makes a reader panic or hang. Arbitrary bytes and
//! mutated copies of the sample traces are read with every format forced and
//! with detection; each read must end in `Ok` or `Err`.

use std::io::Write as _;
use std::path::Path;

use cloudcache_trace::{open, Format, OpenOptions, Request};
use proptest::prelude::*;

/// The mapping used whenever the generic CSV format is forced.
const CSV_COLUMNS: &str = "time=0:us,volume=1,op=2,offset=3:sectors,len=4,ignore=flush,header=true";

/// Requests read per attempt: enough to cross every sample, bounded so that
/// a reader that never ends fails the test by time rather than hangs it.
const MAX_REQUESTS: usize = 100_000;

const SAMPLES: [&str; 12] = [
    "msr.csv",
    "fiu_iodedup.txt",
    "fiu_srcmap.txt",
    "systor.csv",
    "alibaba.csv",
    "tencent.csv",
    "blkparse.txt",
    "fio_v2.log",
    "fio_v3.log",
    "generic.csv",
    "systor.csv.gz",
    "systor.csv.zst",
];

/// Text that tends to sit on the edges of the parsers: overflowing numbers,
/// signs, stray separators, multi-byte characters, other formats' tokens.
const TOKENS: [&str; 24] = [
    "18446744073709551615",
    "99999999999999999999",
    "-1",
    "0",
    ".",
    "1e400",
    "NaN",
    ",",
    ";",
    " ",
    "\t",
    "\n",
    "\r\n",
    "+",
    "R",
    "W",
    "D",
    "Q",
    "é",
    "\u{1F4BE}",
    "fio version 3 iolog\n",
    "CPU0 (8,0):\n",
    "3df1244f6143869f52abf2a1d73d0c0f",
    "8,0",
];

fn sample(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)).unwrap()
}

/// Read `bytes` as a file with every format forced and with detection.
fn read_every_way(bytes: &[u8]) {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(bytes).unwrap();
    file.flush().unwrap();
    let mut attempts: Vec<OpenOptions> = Format::ALL
        .into_iter()
        .map(|format| OpenOptions {
            format: Some(format),
            csv_columns: (format == Format::Csv).then(|| CSV_COLUMNS.to_string()),
            ..OpenOptions::default()
        })
        .collect();
    attempts.push(OpenOptions::default());
    let skipping: Vec<OpenOptions> =
        attempts.iter().map(|o| OpenOptions { skip_bad_lines: true, ..o.clone() }).collect();
    attempts.extend(skipping);
    for options in attempts {
        let Ok(mut reader) = open(file.path(), &options) else {
            continue;
        };
        let mut req = Request::default();
        for _ in 0..MAX_REQUESTS {
            match reader.next_request(&mut req) {
                Ok(true) => {
                    // What a consumer does with a request must not panic either.
                    let _ = (req.end(), reader.volumes().name(req.volume));
                }
                Ok(false) | Err(_) => break,
            }
        }
        let _ = (reader.skipped(), reader.has_timestamps(), reader.format(), reader.compression());
    }
}

/// One edit of a byte string.
#[derive(Clone, Debug)]
enum Mutation {
    /// Overwrite the byte at (position modulo length).
    Set(usize, u8),
    /// Insert a token at (position modulo length + 1).
    Insert(usize, usize),
    /// Delete up to `n` bytes from (position modulo length).
    Delete(usize, usize),
    /// Repeat the line containing (position modulo length).
    DuplicateLine(usize),
    /// Cut the input at (position modulo length + 1).
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::Set(at, b)),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(at, t)| Mutation::Insert(at, t)),
        (any::<usize>(), 1..40usize).prop_map(|(at, n)| Mutation::Delete(at, n)),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(bytes: &mut Vec<u8>, mutation: &Mutation) {
    let len = bytes.len();
    match *mutation {
        Mutation::Set(at, b) if len > 0 => bytes[at % len] = b,
        Mutation::Insert(at, t) => {
            let at = at % (len + 1);
            bytes.splice(at..at, TOKENS[t].bytes());
        }
        Mutation::Delete(at, n) if len > 0 => {
            let at = at % len;
            bytes.drain(at..(at + n).min(len));
        }
        Mutation::DuplicateLine(at) if len > 0 => {
            let at = at % len;
            let start = bytes[..at].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
            let end = bytes[at..].iter().position(|&b| b == b'\n').map_or(len, |p| at + p + 1);
            let line = bytes[start..end].to_vec();
            bytes.splice(start..start, line);
        }
        Mutation::Truncate(at) => bytes.truncate(at % (len + 1)),
        _ => {}
    }
}

/// Arbitrary bytes, sometimes behind a compression magic so that the
/// decoders meet garbage too.
fn arbitrary_input() -> impl Strategy<Value = Vec<u8>> {
    (0..3u8, proptest::collection::vec(any::<u8>(), 0..2048)).prop_map(|(prefix, body)| {
        let magic: &[u8] = match prefix {
            0 => &[],
            1 => &[0x1f, 0x8b],
            _ => &[0x28, 0xb5, 0x2f, 0xfd],
        };
        [magic, &body].concat()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in arbitrary_input()) {
        read_every_way(&bytes);
    }

    #[test]
    fn mutated_samples_never_panic(
        which in 0..SAMPLES.len(),
        mutations in proptest::collection::vec(mutation(), 1..8),
    ) {
        let mut bytes = sample(SAMPLES[which]);
        for m in &mutations {
            apply(&mut bytes, m);
        }
        read_every_way(&bytes);
    }

    #[test]
    fn text_built_from_edge_tokens_never_panics(tokens in proptest::collection::vec(0..TOKENS.len(), 0..64)) {
        let text: String = tokens.into_iter().map(|t| TOKENS[t]).collect();
        read_every_way(text.as_bytes());
    }
}

#[test]
fn every_sample_reads_every_way() {
    for name in SAMPLES {
        read_every_way(&sample(name));
    }
}
