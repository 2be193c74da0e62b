//! One miss-ratio curve as `cloudcache mrc` asks for it: method, mode,
//! sizes, which accesses count, which volumes share the cache; and the JSON
//! document it writes.

use serde::Serialize;

use crate::mrc::{dense_sizes, mean_absolute_error, Counted, CurvePoint, ExactBlockMrc, ExactObjectMrc};
use crate::shards::{check_rate, default_rate, BadRate, ShardsFixedSize, ShardsSample};
use crate::workload::Workload;

/// Requests between progress callbacks.
const PROGRESS_EVERY: usize = 1 << 16;

/// How a curve is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Exact LRU stack distances.
    Exact,
    /// SHARDS spatial sampling.
    Shards,
}

impl std::str::FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "exact" => Ok(Method::Exact),
            "shards" => Ok(Method::Shards),
            other => Err(format!("unknown method {other:?}: expected exact or shards")),
        }
    }
}

/// What a cache entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Granularity {
    /// Fixed-size blocks (the engine's block mode).
    Block,
    /// One object per request, keyed by offset (libCacheSim's model).
    Object,
}

impl std::str::FromStr for Granularity {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "block" => Ok(Granularity::Block),
            "object" => Ok(Granularity::Object),
            other => Err(format!("unknown mode {other:?}: expected block or object")),
        }
    }
}

/// What to compute.
#[derive(Clone, Debug)]
pub struct CurveSpec {
    /// Exact or SHARDS.
    pub method: Method,
    /// Block or object mode.
    pub granularity: Granularity,
    /// Cache block size (block mode).
    pub block_size: u64,
    /// SHARDS sampling rate (fixed-rate SHARDS); `None` for the default
    /// ([`crate::shards::default_rate`] of the selected volumes).
    pub rate: Option<f64>,
    /// Fixed-size SHARDS: at most this many sampled blocks (overrides `rate`).
    pub max_samples: Option<usize>,
    /// Cache sizes; `None` for a dense curve up to the footprint.
    pub sizes: Option<Vec<u64>>,
    /// Which accesses count.
    pub counted: Counted,
    /// Volume ids sharing the cache; `None` for all.
    pub volumes: Option<Vec<usize>>,
    /// With SHARDS, also compute the exact curve and report the error.
    pub compare_exact: bool,
}

/// Why a curve cannot be computed.
#[derive(Debug, thiserror::Error)]
pub enum CurveError {
    /// Rate outside (0, 1].
    #[error(transparent)]
    Rate(#[from] BadRate),
    /// No block accesses at all.
    #[error("the trace has no reads or writes{0}: there is no curve to draw")]
    NoAccesses(String),
    /// SHARDS in object mode.
    #[error("SHARDS samples blocks; use --method exact with --mode object")]
    ShardsObjects,
    /// Fixed-size SHARDS with zero samples.
    #[error("--max-samples must be at least 1")]
    NoSamples,
}

/// The document `cloudcache mrc --json` writes.
#[derive(Clone, Debug, Serialize)]
pub struct CurveDocument {
    /// "exact" or "shards".
    pub method: Method,
    /// The curve, one point per cache size.
    pub points: Vec<CurvePoint>,
    /// "block" or "object".
    pub mode: Granularity,
    /// Block size (block mode).
    pub block_size: u64,
    /// "all" or "reads": which accesses the ratios count.
    pub accesses: &'static str,
    /// Volumes sharing the cache (all when the trace has one).
    pub volumes: Vec<String>,
    /// Block (object) accesses counted.
    pub block_accesses: u64,
    /// Distinct blocks (bytes of distinct objects) of the selected volumes;
    /// SHARDS's estimate when no exact pass was made.
    pub footprint_bytes: u64,
    /// SHARDS: the sampling rate (the final one for fixed size).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling_rate: Option<f64>,
    /// SHARDS without `--rate`: true (the rate is the default, 1 % or
    /// higher so the sample holds enough blocks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_rate: Option<bool>,
    /// SHARDS fixed size: the sample bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_samples: Option<usize>,
    /// With `--compare-exact`: the exact curve's miss ratio at each size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact_miss_ratios: Option<Vec<Option<f64>>>,
    /// With `--compare-exact`: mean absolute error of the miss ratios.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_absolute_error: Option<f64>,
}

/// Compute the curve `spec` describes; `progress` counts requests (the
/// exact pass and the sampling pass each count once).
pub fn compute(w: &Workload, spec: &CurveSpec, progress: &dyn Fn(u64)) -> Result<CurveDocument, CurveError> {
    if spec.method == Method::Shards {
        if spec.granularity == Granularity::Object {
            return Err(CurveError::ShardsObjects);
        }
        if let Some(rate) = spec.rate {
            check_rate(rate)?;
        }
        if spec.max_samples == Some(0) {
            return Err(CurveError::NoSamples);
        }
    }
    let selected = |v: u32| spec.volumes.as_ref().is_none_or(|set| set.contains(&(v as usize)));
    let requests = || w.requests.iter().filter(|r| selected(r.volume));
    let for_each_request = |f: &mut dyn FnMut(&crate::WorkloadRequest)| {
        for (i, r) in requests().enumerate() {
            f(r);
            if (i + 1) % PROGRESS_EVERY == 0 {
                progress(PROGRESS_EVERY as u64);
            }
        }
        progress((requests().count() % PROGRESS_EVERY) as u64);
    };
    let volume_names = match &spec.volumes {
        Some(set) => set.iter().map(|&v| w.volume_name(v)).collect(),
        None => (0..w.volumes()).map(|v| w.volume_name(v)).collect(),
    };
    let accesses = match spec.counted {
        Counted::All => "all",
        Counted::Reads => "reads",
    };
    let where_ = match &spec.volumes {
        Some(_) => " on the selected volumes".to_owned(),
        None => String::new(),
    };

    if spec.granularity == Granularity::Object {
        let mut b = ExactObjectMrc::new();
        let mut n = 0u64;
        for_each_request(&mut |r| {
            if r.op != cloudcache_trace::Op::Trim {
                n += u64::from(spec.counted == Counted::All || r.op == cloudcache_trace::Op::Read);
            }
            b.request(r)
        });
        if n == 0 {
            return Err(CurveError::NoAccesses(where_));
        }
        let footprint = b.footprint_bytes();
        let sizes = spec.sizes.clone().unwrap_or_else(|| dense_sizes(footprint, 4096));
        return Ok(CurveDocument {
            method: Method::Exact,
            points: b.curve(&sizes, spec.counted),
            mode: Granularity::Object,
            block_size: spec.block_size,
            accesses,
            volumes: volume_names,
            block_accesses: n,
            footprint_bytes: footprint,
            sampling_rate: None,
            default_rate: None,
            max_samples: None,
            exact_miss_ratios: None,
            mean_absolute_error: None,
        });
    }

    let exact = (spec.method == Method::Exact || spec.compare_exact).then(|| {
        let mut b = ExactBlockMrc::new(spec.block_size, false);
        for_each_request(&mut |r| b.request(r));
        b.finish()
    });
    let shift = spec.block_size.trailing_zeros();
    let counted_accesses: u64 = requests()
        .filter(|r| match spec.counted {
            Counted::All => r.op != cloudcache_trace::Op::Trim,
            Counted::Reads => r.op == cloudcache_trace::Op::Read,
        })
        .filter_map(|r| r.blocks(shift))
        .map(|(first, last)| last - first + 1)
        .sum();
    if counted_accesses == 0 {
        return Err(CurveError::NoAccesses(if spec.counted == Counted::Reads {
            format!("{where_} (no reads for --reads-only)")
        } else {
            where_
        }));
    }
    let exact_footprint = exact.as_ref().map(|m| m.footprint_bytes());
    let mut doc = CurveDocument {
        method: spec.method,
        points: Vec::new(),
        mode: Granularity::Block,
        block_size: spec.block_size,
        accesses,
        volumes: volume_names,
        block_accesses: counted_accesses,
        footprint_bytes: exact_footprint.unwrap_or(0),
        sampling_rate: None,
        default_rate: None,
        max_samples: None,
        exact_miss_ratios: None,
        mean_absolute_error: None,
    };
    let sizes_up_to =
        |footprint: u64| spec.sizes.clone().unwrap_or_else(|| dense_sizes(footprint, spec.block_size));
    match spec.method {
        Method::Exact => {
            let m = exact.as_ref().expect("computed for the exact method");
            doc.points = m.curve(&sizes_up_to(m.footprint_bytes()), spec.counted);
        }
        Method::Shards => {
            // Without an exact pass the dense curve's range is SHARDS's own
            // estimate of the footprint.
            if let Some(max) = spec.max_samples {
                let mut s = ShardsFixedSize::new(spec.block_size, max);
                for_each_request(&mut |r| s.request(r));
                let footprint = exact_footprint.unwrap_or_else(|| s.estimated_footprint_bytes());
                doc.points = s.curve(&sizes_up_to(footprint), spec.counted);
                doc.footprint_bytes = footprint;
                doc.sampling_rate = Some(s.rate());
                doc.max_samples = Some(max);
            } else {
                let rate = match spec.rate {
                    Some(rate) => rate,
                    None => {
                        doc.default_rate = Some(true);
                        default_rate(requests(), spec.block_size, 0)
                    }
                };
                let mut s = ShardsSample::new(spec.block_size, rate)?;
                for_each_request(&mut |r| s.request(r));
                let footprint = exact_footprint.unwrap_or_else(|| s.estimated_footprint_bytes(None));
                doc.points = s.curve(None, &sizes_up_to(footprint), spec.counted);
                doc.footprint_bytes = footprint;
                doc.sampling_rate = Some(rate);
            }
            if let Some(m) = &exact {
                let sizes: Vec<u64> = doc.points.iter().map(|p| p.cache_size_bytes).collect();
                let exact_points = m.curve(&sizes, spec.counted);
                doc.mean_absolute_error = mean_absolute_error(&exact_points, &doc.points);
                doc.exact_miss_ratios = Some(exact_points.iter().map(|p| p.miss_ratio).collect());
            }
        }
    }
    Ok(doc)
}
