//! Everything `cloudcache analyze` measures, in one [`Analysis`]: the passes
//! over the workload and the choices of defaults (sizes, windows).

use serde::Serialize;

use crate::characterize::{characterize, Characterization, Log2Counts};
use crate::content::{content_stats, ContentStats};
use crate::histogram::DenseHistogram;
use crate::mrc::{
    dense_sizes, mean_absolute_error, Counted, CurvePoint, ExactBlockMrc, ExactMrc, HitTimeline,
};
use crate::shards::{check_rate, default_rate, BadRate, ShardsSample};
use crate::working_set::{knee_analysis, working_sets, KneeAnalysis, WindowRow};
use crate::workload::Workload;

/// Requests between progress callbacks.
const PROGRESS_EVERY: usize = 1 << 16;

/// Window lengths the default window is chosen from.
const WINDOW_CHOICES_NS: [u64; 10] = {
    const MIN: u64 = 60_000_000_000;
    [MIN, 5 * MIN, 15 * MIN, 30 * MIN, 60 * MIN, 120 * MIN, 360 * MIN, 720 * MIN, 1440 * MIN, 2880 * MIN]
};

/// Sampled accesses below which the SHARDS curve gets a warning (unless
/// the rate is 1: then it is exact).
const MIN_SHARDS_SAMPLE: usize = 10_000;

/// Windows the default window length aims for at least.
const MIN_WINDOWS: u64 = 12;

/// What to measure.
#[derive(Clone, Debug)]
pub struct AnalyzeOptions {
    /// Cache block size.
    pub block_size: u64,
    /// SHARDS rate for the sampled curve compared with the exact one (None:
    /// [`crate::shards::default_rate`]).
    pub shards_rate: Option<f64>,
    /// Working-set window (None: chosen from the trace's span).
    pub window_ns: Option<u64>,
    /// N of RWS_N.
    pub rws_n: u32,
    /// Cache sizes followed over time (None: about 10 % and 50 % of the footprint).
    pub timeline_sizes: Option<Vec<u64>>,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            block_size: 4096,
            shards_rate: None,
            window_ns: None,
            rws_n: 1,
            timeline_sizes: None,
        }
    }
}

/// Why a trace cannot be analyzed.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    /// No requests.
    #[error("the trace is empty (no requests)")]
    Empty,
    /// Requests, but no reads or writes with data.
    #[error("the trace has no reads or writes of at least one byte ({0} requests: trims or empty requests)")]
    NoAccesses(usize),
    /// Bad SHARDS rate.
    #[error(transparent)]
    Rate(#[from] BadRate),
    /// Block size.
    #[error("block size {0} is not a power of two")]
    BlockSize(u64),
}

/// Miss-ratio curves.
#[derive(Clone, Debug, Serialize)]
pub struct Curves {
    /// Cache sizes of every curve.
    pub sizes: Vec<u64>,
    /// Exact LRU, all accesses, whole trace (one shared cache).
    pub exact: Vec<CurvePoint>,
    /// Exact LRU, read hit ratio.
    pub exact_reads: Vec<CurvePoint>,
    /// SHARDS at `shards_rate`, all accesses.
    pub shards: Vec<CurvePoint>,
    /// SHARDS rate.
    pub shards_rate: f64,
    /// Whether the rate is the default (1 %, or higher so the sample holds
    /// enough blocks) rather than one asked for.
    pub shards_default_rate: bool,
    /// Blocks SHARDS sampled.
    pub shards_sampled_accesses: u64,
    /// Mean absolute error of SHARDS against exact.
    pub shards_mean_absolute_error: Option<f64>,
    /// Each volume alone in its own cache.
    pub volumes: Vec<VolumeCurve>,
}

/// One volume's curve.
#[derive(Clone, Debug, Serialize)]
pub struct VolumeCurve {
    /// Volume name.
    pub name: String,
    /// Its block accesses.
    pub block_accesses: u64,
    /// Its distinct blocks (bytes).
    pub footprint_bytes: u64,
    /// Its exact curve at [`Curves::sizes`] (sizes above its footprint are
    /// all the same).
    pub points: Vec<CurvePoint>,
    /// Its read hit ratio curve at the same sizes.
    pub read_points: Vec<CurvePoint>,
}

/// Working sets over time.
#[derive(Clone, Debug, Serialize)]
pub struct WorkingSets {
    /// Window length (ns).
    pub window_ns: u64,
    /// N of RWS_N.
    pub n: u32,
    /// Per volume and window.
    pub rows: Vec<WindowRow>,
    /// Cache sizes whose hit ratio is followed over time (powers of two in
    /// blocks).
    pub timeline_sizes: Vec<u64>,
    /// Per window: block accesses and the hit ratio at each timeline size.
    pub timeline: Vec<(u64, Vec<Option<f64>>)>,
    /// The knee-point window analysis.
    pub knee: KneeAnalysis,
}

/// The whole analysis of one trace.
#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    /// Block size.
    pub block_size: u64,
    /// Requests.
    pub requests: u64,
    /// Volume names.
    pub volumes: Vec<String>,
    /// Whether the trace has timestamps.
    pub has_timestamps: bool,
    /// Trace time covered (ns).
    pub duration_ns: Option<u64>,
    /// Block accesses (reads and writes).
    pub block_accesses: u64,
    /// Distinct blocks (bytes).
    pub footprint_bytes: u64,
    /// Things the reader should know (tiny trace, no timestamps...).
    pub warnings: Vec<String>,
    /// Curves.
    pub curves: Curves,
    /// Distributions.
    pub characterization: Characterization,
    /// Stack distances of reads and writes (distinct blocks between reuses).
    #[serde(skip)]
    pub distinct_reuse: [DenseHistogram; 2],
    /// Content statistics (traces with hashes).
    pub content: Option<ContentStats>,
    /// Working sets (traces with timestamps).
    pub working_sets: Option<WorkingSets>,
}

impl Analysis {
    /// The stack distances of reads and writes in power-of-two buckets.
    pub fn distinct_reuse_log2(&self) -> [Log2Counts; 2] {
        self.distinct_reuse.clone().map(|h| {
            let mut c = Log2Counts::default();
            for (d, n) in h.nonzero() {
                c.add_n(d, n);
            }
            c
        })
    }
}

/// The default window: the longest of 1 min .. 2 days that gives at least
/// 12 windows, or a twelfth of a shorter span.
pub fn default_window_ns(span_ns: u64) -> u64 {
    WINDOW_CHOICES_NS
        .iter()
        .rev()
        .copied()
        .find(|&t| span_ns / t >= MIN_WINDOWS)
        .unwrap_or_else(|| (span_ns / MIN_WINDOWS).max(1))
}

/// Analyze `w`. `progress` is told of requests processed (several passes
/// each count; the total is [`PASSES`] x requests).
pub fn analyze(
    w: &Workload,
    opts: &AnalyzeOptions,
    progress: &dyn Fn(u64),
) -> Result<Analysis, AnalyzeError> {
    if !opts.block_size.is_power_of_two() {
        return Err(AnalyzeError::BlockSize(opts.block_size));
    }
    if let Some(rate) = opts.shards_rate {
        check_rate(rate)?;
    }
    if w.requests.is_empty() {
        return Err(AnalyzeError::Empty);
    }
    let shift = opts.block_size.trailing_zeros();
    let block_accesses = w.block_accesses(shift);
    if block_accesses == 0 {
        return Err(AnalyzeError::NoAccesses(w.requests.len()));
    }
    let mut warnings = Vec::new();
    if w.requests.len() == 1 {
        warnings.push(
            "the trace has only one request: nothing is reused, every access is a cold miss".to_owned(),
        );
    }
    let span = w.time_span_ns().map(|(a, b)| b - a);
    let timed = matches!(span, Some(s) if s > 0);
    if !timed {
        warnings.push(
            "the trace has no time span (no timestamps, or all equal): working sets over time, the hit ratio \
             over time and the knee-point analysis are left out"
                .to_owned(),
        );
    }
    let window_ns = opts.window_ns.unwrap_or_else(|| default_window_ns(span.unwrap_or(0)));
    let start_ns = w.time_span_ns().map_or(0, |(a, _)| a);

    // Pass 1: exact curves (whole and per volume), hits over time.
    let mut exact_builder = ExactBlockMrc::new(opts.block_size, true);
    if timed {
        exact_builder = exact_builder.with_timeline(HitTimeline::new(window_ns, start_ns, opts.block_size));
    }
    // Pass 2 (same loop): SHARDS.
    let shards_rate = match opts.shards_rate {
        Some(rate) => rate,
        None => default_rate(&w.requests, opts.block_size, 0),
    };
    let mut shards = ShardsSample::new(opts.block_size, shards_rate)?;
    for chunk in w.requests.chunks(PROGRESS_EVERY) {
        for r in chunk {
            exact_builder.request(r);
            shards.request(r);
        }
        progress(chunk.len() as u64);
    }
    let exact: ExactMrc = exact_builder.finish();
    if shards.sampled() < MIN_SHARDS_SAMPLE && shards_rate < 1.0 {
        warnings.push(format!(
            "SHARDS at rate {} sampled only {} block accesses: too few for an accurate sampled curve (compare \
             its error with the exact curve; a higher --rate helps)",
            shards_rate,
            shards.sampled()
        ));
    }
    let footprint_bytes = exact.footprint_bytes();
    let sizes = dense_sizes(footprint_bytes, opts.block_size);
    let exact_points = exact.curve(&sizes, Counted::All);
    let shards_points = shards.curve(None, &sizes, Counted::All);
    let volumes = (0..exact.volumes.len())
        .map(|v| VolumeCurve {
            name: w.volume_name(v),
            block_accesses: exact.volumes[v].all.accesses(),
            footprint_bytes: exact.volumes[v].footprint_blocks() * opts.block_size,
            points: exact.volume_curve(v, &sizes, Counted::All),
            read_points: exact.volume_curve(v, &sizes, Counted::Reads),
        })
        .collect();
    let curves = Curves {
        shards_mean_absolute_error: mean_absolute_error(&exact_points, &shards_points),
        exact_reads: exact.curve(&sizes, Counted::Reads),
        exact: exact_points,
        shards: shards_points,
        shards_rate,
        shards_default_rate: opts.shards_rate.is_none(),
        shards_sampled_accesses: shards.sampled() as u64,
        sizes,
        volumes,
    };

    // Pass 3: distributions.
    let characterization = characterize(w, opts.block_size);
    progress(w.requests.len() as u64);
    // Pass 4: content.
    let content = content_stats(w);
    progress(w.requests.len() as u64);
    // Pass 5: working sets and the knee.
    let working_sets = timed.then(|| {
        let rows = working_sets(w, window_ns, opts.rws_n, opts.block_size);
        let timeline = exact.timeline.as_ref().expect("timed traces have a timeline");
        let wanted =
            opts.timeline_sizes.clone().unwrap_or_else(|| vec![footprint_bytes / 10, footprint_bytes / 2]);
        let mut timeline_sizes: Vec<u64> = wanted.iter().map(|&s| timeline.effective_size(s)).collect();
        timeline_sizes.dedup();
        let per_size: Vec<Vec<(u64, Option<f64>)>> =
            timeline_sizes.iter().map(|&s| timeline.hit_ratios(s)).collect();
        let timeline_rows = (0..timeline.windows())
            .map(|i| (per_size[0][i].0, per_size.iter().map(|p| p[i].1).collect()))
            .collect();
        let knee = knee_analysis(w, &exact, opts.rws_n);
        WorkingSets { window_ns, n: opts.rws_n, rows, timeline_sizes, timeline: timeline_rows, knee }
    });
    progress(w.requests.len() as u64);

    Ok(Analysis {
        block_size: opts.block_size,
        requests: w.requests.len() as u64,
        volumes: (0..w.volumes()).map(|v| w.volume_name(v)).collect(),
        has_timestamps: w.has_timestamps,
        duration_ns: span,
        block_accesses,
        footprint_bytes,
        warnings,
        curves,
        characterization,
        distinct_reuse: exact.distinct_reuse(),
        content,
        working_sets,
    })
}

/// Passes [`analyze`] reports progress for: its total is this many times the
/// requests.
pub const PASSES: u64 = 4;
