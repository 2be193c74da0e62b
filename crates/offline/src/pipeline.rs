//! Running a set of algorithms at several cache sizes: the multi-stage
//! pipeline of seed 002 §6.2.9 (MIN run -> insertion records -> M+ run ->
//! eviction times -> C), with each run done once per size and shared by
//! every algorithm that needs it, and sizes run in parallel.

use std::collections::HashMap;
use std::str::FromStr;

use cloudcache_flash::container_log::BufferOrder;
use cloudcache_flash::{FlashConfig, Geometry};
use rayon::prelude::*;
use serde::Serialize;

use crate::blocks::BlockTrace;
use crate::family::{run_family, FamilyRun, RunCounters};
use crate::online::{run_lru, run_ripq, RipqConfig};
use crate::placement::Placement;
use crate::records::{DenyList, InsertRecord};
use crate::OfflineError;

/// Free units the FTL's collector keeps (see `cloudcache_flash::ftl`).
const FTL_RESERVE: u32 = 2;

/// An algorithm of seed 002's Table 6.2, an ablation of one, or an online
/// comparison point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    /// Belady's MIN with read-around, no TRIM (`min`).
    Min,
    /// MIN plus TRIM of blocks that leave the cache (`min-trim`; ablation).
    MinTrim,
    /// MIN minus insertions that absorbed no flash hit, plus TRIM (`m+`).
    MPlus,
    /// MIN minus insertions that absorbed fewer than N hits, plus TRIM (`mN`).
    MN(u32),
    /// M+ cut to an erasure budget (`mt`).
    MT,
    /// M+'s decisions on containers packed by eviction time, with
    /// copy-forward reduction (`c`).
    C,
    /// M_N's decisions on containers (`cN`).
    CN(u32),
    /// M_T's decisions on containers (`ct`).
    CT,
    /// C with the write buffer in arrival order (`c-arrival`; ablation of E).
    CArrival,
    /// C without copy-forward reduction (`c-nocfr`; ablation of CFR).
    CNoCfr,
    /// LRU on FTL slots (`lru`).
    Lru,
    /// LRU on whole containers in arrival order (`lru-log`).
    LruLog,
    /// RIPQ-like segmented LRU with insertion points (`ripq`).
    Ripq,
}

impl Algorithm {
    /// The name the command line takes and reports print.
    pub fn name(self) -> String {
        match self {
            Algorithm::Min => "min".into(),
            Algorithm::MinTrim => "min-trim".into(),
            Algorithm::MPlus => "m+".into(),
            Algorithm::MN(n) => format!("m{n}"),
            Algorithm::MT => "mt".into(),
            Algorithm::C => "c".into(),
            Algorithm::CN(n) => format!("c{n}"),
            Algorithm::CT => "ct".into(),
            Algorithm::CArrival => "c-arrival".into(),
            Algorithm::CNoCfr => "c-nocfr".into(),
            Algorithm::Lru => "lru".into(),
            Algorithm::LruLog => "lru-log".into(),
            Algorithm::Ripq => "ripq".into(),
        }
    }

    /// Whether it needs future knowledge.
    pub fn is_offline(self) -> bool {
        !matches!(self, Algorithm::Lru | Algorithm::LruLog | Algorithm::Ripq)
    }

    /// The runs it needs first.
    fn dependencies(self) -> Vec<Algorithm> {
        match self {
            Algorithm::MPlus | Algorithm::MN(_) => vec![Algorithm::Min],
            Algorithm::MT | Algorithm::C | Algorithm::CArrival | Algorithm::CNoCfr => vec![Algorithm::MPlus],
            Algorithm::CN(n) => vec![Algorithm::MN(n)],
            Algorithm::CT => vec![Algorithm::MT],
            _ => vec![],
        }
    }
}

impl FromStr for Algorithm {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let t = text.trim().to_ascii_lowercase().replace('_', "");
        let numbered = |prefix: char| -> Option<u32> {
            t.strip_prefix(prefix).and_then(|n| n.parse::<u32>().ok()).filter(|&n| n >= 1)
        };
        Ok(match t.as_str() {
            "min" | "m" => Algorithm::Min,
            "min-trim" => Algorithm::MinTrim,
            "m+" | "min+" | "m1" => Algorithm::MPlus,
            "mt" => Algorithm::MT,
            "c" | "c1" => Algorithm::C,
            "ct" => Algorithm::CT,
            "c-arrival" => Algorithm::CArrival,
            "c-nocfr" => Algorithm::CNoCfr,
            "lru" => Algorithm::Lru,
            "lru-log" => Algorithm::LruLog,
            "ripq" | "ripq+" => Algorithm::Ripq,
            _ => {
                if let Some(n) = numbered('m') {
                    Algorithm::MN(n)
                } else if let Some(n) = numbered('c') {
                    Algorithm::CN(n)
                } else {
                    return Err(format!(
                        "unknown algorithm {text:?}; expected one of lru, lru-log, ripq, min, min-trim, m+, \
                         mN (e.g. m5), mt, c, cN (e.g. c5), ct, c-arrival, c-nocfr"
                    ));
                }
            }
        })
    }
}

/// A flash cache size: bytes, or a fraction of the trace's working set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CacheSize {
    /// Bytes.
    Bytes(u64),
    /// Fraction (0, 1] of the working-set size.
    WorkingSet(f64),
}

impl CacheSize {
    /// Bytes for a trace with this working set, rounded down to whole blocks.
    pub fn bytes(self, working_set_bytes: u64, block_size: u64) -> u64 {
        let bytes = match self {
            CacheSize::Bytes(b) => b,
            CacheSize::WorkingSet(f) => (working_set_bytes as f64 * f) as u64,
        };
        bytes / block_size * block_size
    }
}

/// Everything a run of the pipeline needs besides the trace.
#[derive(Clone, Debug)]
pub struct OfflineSpec {
    /// Algorithms, in report order.
    pub algorithms: Vec<Algorithm>,
    /// Flash cache sizes (logical capacity).
    pub cache_sizes: Vec<CacheSize>,
    /// Erase unit (container) bytes.
    pub erase_unit_bytes: u64,
    /// Over-provisioning, in (0, 1).
    pub over_provisioning: f64,
    /// Container write buffer, in erase units.
    pub write_buffer_units: u32,
    /// DRAM size as a fraction of the flash size.
    pub dram_fraction: f64,
    /// Online policies trim slots their blocks leave.
    pub trim_online: bool,
    /// Erasure budget for mt/ct, in EPBPD.
    pub erasure_budget: Option<f64>,
    /// P/E cycles a unit survives, for the endurance projection.
    pub pe_limit: u64,
    /// RIPQ insertion points.
    pub ripq_sections: u32,
}

impl Default for OfflineSpec {
    fn default() -> Self {
        OfflineSpec {
            algorithms: vec![
                Algorithm::Lru,
                Algorithm::Min,
                Algorithm::MPlus,
                Algorithm::C,
                Algorithm::CN(5),
            ],
            cache_sizes: [0.01, 0.025, 0.05, 0.10].iter().map(|&f| CacheSize::WorkingSet(f)).collect(),
            erase_unit_bytes: 2 << 20,
            over_provisioning: 0.07,
            write_buffer_units: 4,
            dram_fraction: 0.05,
            trim_online: true,
            erasure_budget: None,
            pe_limit: 3000,
            ripq_sections: 8,
        }
    }
}

impl OfflineSpec {
    /// Check settings that do not depend on the trace.
    pub fn validate(&self) -> Result<(), OfflineError> {
        let bad = |m: String| Err(OfflineError::Config(m));
        if self.algorithms.is_empty() {
            return bad("no algorithm given".into());
        }
        if self.cache_sizes.is_empty() {
            return bad("no cache size given".into());
        }
        for size in &self.cache_sizes {
            match *size {
                CacheSize::Bytes(0) => return bad("a cache size is zero".into()),
                CacheSize::WorkingSet(f) if !(f > 0.0 && f <= 1.0) => {
                    return bad(format!("cache size {}% of the working set is outside (0, 100]", f * 100.0))
                }
                _ => {}
            }
        }
        if let Some(t) = self.erasure_budget {
            if !(t > 0.0 && t.is_finite()) {
                return bad(format!(
                    "erasure budget {t} EPBPD: it must be a positive number of erasures per erase unit per day"
                ));
            }
        }
        let needs_budget = self.algorithms.iter().any(|a| matches!(a, Algorithm::MT | Algorithm::CT));
        if needs_budget && self.erasure_budget.is_none() {
            return bad("mt and ct need an erasure budget (--erasure-budget EPBPD)".into());
        }
        if !(self.dram_fraction >= 0.0 && self.dram_fraction < 1.0) {
            return bad(format!("DRAM fraction {} is outside [0, 1)", self.dram_fraction));
        }
        if self.write_buffer_units == 0 {
            return bad("the write buffer must hold at least one container".into());
        }
        if self.pe_limit == 0 {
            return bad("the P/E limit must be positive".into());
        }
        if self.ripq_sections == 0 {
            return bad("RIPQ needs at least one insertion point".into());
        }
        Ok(())
    }

    fn flash_config(&self, capacity_bytes: u64, block_size: u64) -> FlashConfig {
        FlashConfig {
            capacity_bytes,
            page_bytes: block_size,
            erase_unit_bytes: self.erase_unit_bytes,
            over_provisioning: self.over_provisioning,
        }
    }

    /// Every run each size needs, dependencies first.
    fn runs(&self) -> Vec<Algorithm> {
        let mut all = Vec::new();
        let mut stack: Vec<Algorithm> = self.algorithms.clone();
        if self.algorithms.iter().any(|a| a.is_offline()) {
            // M+ is WFUE's reference.
            stack.push(Algorithm::MPlus);
        }
        while let Some(a) = stack.pop() {
            if !all.contains(&a) {
                all.push(a);
                stack.extend(a.dependencies());
            }
        }
        all.sort();
        all
    }

    /// Block accesses the whole pipeline replays (for a progress bar).
    pub fn total_work(&self, trace: &BlockTrace) -> u64 {
        (self.runs().len() * self.cache_sizes.len()) as u64 * trace.accesses().len() as u64
    }
}

/// One algorithm at one cache size.
#[derive(Clone, Debug, Serialize)]
pub struct AlgorithmResult {
    /// Algorithm name as given on the command line.
    pub algorithm: String,
    /// Flash cache size (logical capacity).
    pub cache_size_bytes: u64,
    /// Block reads served by DRAM or flash / block reads.
    pub read_hit_ratio: f64,
    /// Erase-unit erasures.
    pub erasures: u64,
    /// Erasures per erase unit per day (null without timestamps).
    pub epbpd: Option<f64>,
    /// Blocks written to flash as new data (insertions).
    pub flash_write_blocks: u64,
    /// Blocks written to flash to move live data (FTL GC or host copy-forward).
    pub copy_forward_blocks: u64,
    /// (flash_write_blocks + copy_forward_blocks) / flash_write_blocks.
    pub write_amplification: f64,
    /// Flash read-hit blocks / (flash_write_blocks + copy_forward_blocks).
    pub fue: Option<f64>,
    /// WFUE with alpha 0.2 (erasures weigh most), relative to M+.
    pub wfue_0_2: Option<f64>,
    /// WFUE with alpha 0.8 (hits weigh most), relative to M+.
    pub wfue_0_8: Option<f64>,
    /// Fraction of block reads served by DRAM.
    pub dram_hit_ratio: f64,
    /// Fraction of block reads served by flash.
    pub flash_hit_ratio: f64,
    /// Flash insertions (for container placements some leave the write
    /// buffer before reaching flash).
    pub insertions: u64,
    /// Insertions skipped by the filter of an earlier run.
    pub denied_insertions: u64,
    /// Live blocks GC dropped instead of copying (copy-forward reduction).
    pub copy_forward_dropped_blocks: u64,
    /// DRAM size.
    pub dram_bytes: u64,
    /// "ftl", "container" or "ripq".
    pub placement: String,
    /// Physical erase units.
    pub erase_units: u32,
    /// Most erasures of one unit.
    pub max_unit_erasures: u64,
    /// Days until the P/E limit with wear levelled (pe_limit / EPBPD).
    pub endurance_days: Option<f64>,
    /// Days until the most-erased unit reaches the P/E limit.
    pub endurance_days_worst_unit: Option<f64>,
    /// For mt/ct: the reuse count R and leftover L of the budget cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_cut: Option<(u32, u64)>,
    /// Flash hits on blocks the device did not hold; 0 unless a model is wrong.
    pub ghost_hits: u64,
}

/// Trace facts a report repeats.
#[derive(Clone, Debug, Serialize)]
pub struct TraceSummary {
    /// Requests.
    pub requests: u64,
    /// Block accesses.
    pub block_accesses: u64,
    /// Block reads.
    pub block_reads: u64,
    /// Distinct blocks.
    pub distinct_blocks: u32,
    /// Working-set bytes.
    pub working_set_bytes: u64,
    /// Block size.
    pub block_size: u64,
    /// Duration in days (EPBPD's denominator).
    pub days: Option<f64>,
}

/// Settings a report repeats.
#[derive(Clone, Debug, Serialize)]
pub struct SpecSummary {
    /// Erase unit bytes.
    pub erase_unit_bytes: u64,
    /// Over-provisioning.
    pub over_provisioning: f64,
    /// Write buffer, containers.
    pub write_buffer_units: u32,
    /// DRAM as a fraction of flash.
    pub dram_fraction: f64,
    /// TRIM for online policies.
    pub trim_online: bool,
    /// Budget for mt/ct.
    pub erasure_budget_epbpd: Option<f64>,
    /// P/E limit.
    pub pe_limit: u64,
    /// RIPQ insertion points.
    pub ripq_sections: u32,
}

/// The pipeline's output.
#[derive(Clone, Debug, Serialize)]
pub struct OfflineReport {
    /// The trace.
    pub trace: TraceSummary,
    /// The settings.
    pub config: SpecSummary,
    /// One entry per (cache size, algorithm), sizes outer.
    pub results: Vec<AlgorithmResult>,
}

/// What one run left for later runs.
struct Done {
    counters: RunCounters,
    records: Option<Vec<InsertRecord>>,
    deny: Option<DenyList>,
    placement: &'static str,
    geometry: Geometry,
    budget_cut: Option<(u32, u64)>,
}

/// Run every algorithm at every size. Offline algorithms refuse an
/// unannotated trace.
pub fn run_offline(
    trace: &BlockTrace,
    spec: &OfflineSpec,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<OfflineReport, OfflineError> {
    spec.validate()?;
    if let Some(a) = spec.algorithms.iter().find(|a| a.is_offline()) {
        if !trace.is_annotated() {
            return Err(OfflineError::NotAnnotated(a.name()));
        }
    }
    let block = trace.block_size();
    let runs = spec.runs();
    let any_container = runs.iter().any(|a| {
        matches!(
            a,
            Algorithm::C
                | Algorithm::CN(_)
                | Algorithm::CT
                | Algorithm::CArrival
                | Algorithm::CNoCfr
                | Algorithm::LruLog
        )
    });
    // Check every size before the long runs start.
    let mut sizes = Vec::new();
    for size in &spec.cache_sizes {
        let bytes = size.bytes(trace.working_set_bytes(), block);
        if bytes == 0 {
            return Err(OfflineError::Config(format!(
                "cache size {size:?} is less than one {block}-byte block for this trace"
            )));
        }
        let geometry = spec.flash_config(bytes, block).geometry()?;
        let what = format!("flash cache of {bytes} bytes");
        geometry.check_spare(FTL_RESERVE, &format!("{what} (page-mapped FTL)"))?;
        if any_container {
            geometry.check_spare(
                spec.write_buffer_units - 1,
                &format!("{what} (containers, write buffer of {} units)", spec.write_buffer_units),
            )?;
        }
        sizes.push((bytes, geometry));
    }
    let per_size: Vec<Result<Vec<AlgorithmResult>, OfflineError>> = sizes
        .par_iter()
        .map(|&(bytes, geometry)| run_size(trace, spec, &runs, bytes, geometry, progress))
        .collect();
    let mut results = Vec::new();
    for r in per_size {
        results.extend(r?);
    }
    Ok(OfflineReport {
        trace: TraceSummary {
            requests: trace.requests(),
            block_accesses: trace.accesses().len() as u64,
            block_reads: trace.read_accesses(),
            distinct_blocks: trace.distinct_blocks(),
            working_set_bytes: trace.working_set_bytes(),
            block_size: block,
            days: trace.days(),
        },
        config: SpecSummary {
            erase_unit_bytes: spec.erase_unit_bytes,
            over_provisioning: spec.over_provisioning,
            write_buffer_units: spec.write_buffer_units,
            dram_fraction: spec.dram_fraction,
            trim_online: spec.trim_online,
            erasure_budget_epbpd: spec.erasure_budget,
            pe_limit: spec.pe_limit,
            ripq_sections: spec.ripq_sections,
        },
        results,
    })
}

fn run_size(
    trace: &BlockTrace,
    spec: &OfflineSpec,
    runs: &[Algorithm],
    bytes: u64,
    geometry: Geometry,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<AlgorithmResult>, OfflineError> {
    let blocks = trace.distinct_blocks();
    let flash_blocks = geometry.logical_pages;
    let dram_blocks = (f64::from(flash_blocks) * spec.dram_fraction) as u32;
    let mut done: HashMap<Algorithm, Done> = HashMap::new();
    let container = |order| Placement::log(geometry, blocks, spec.write_buffer_units, order, true);
    for &alg in runs {
        let name = alg.name();
        let family = |deny: Option<&DenyList>, mirror: Option<&[InsertRecord]>, placement: Placement| {
            run_family(
                trace,
                FamilyRun { name: &name, flash_blocks, dram_blocks, deny, mirror, placement },
                progress,
            )
        };
        let deny_of = |a: Algorithm| done.get(&a).and_then(|d| d.deny.as_ref());
        let records_of = |a: Algorithm| done.get(&a).and_then(|d| d.records.as_deref());
        let mut deny = None;
        let mut budget_cut = None;
        let (outcome, placement) = match alg {
            Algorithm::Min => (family(None, None, Placement::ftl(geometry, blocks, false)?)?, "ftl"),
            Algorithm::MinTrim => (family(None, None, Placement::ftl(geometry, blocks, true)?)?, "ftl"),
            Algorithm::MPlus | Algorithm::MN(_) => {
                let n = if let Algorithm::MN(n) = alg { n } else { 1 };
                let list = DenyList::fewer_hits_than(records_of(Algorithm::Min).expect("min ran"), n);
                let outcome = family(Some(&list), None, Placement::ftl(geometry, blocks, true)?)?;
                deny = Some(list);
                (outcome, "ftl")
            }
            Algorithm::MT => {
                let base = &done[&Algorithm::MPlus];
                let records = base.records.as_deref().expect("m+ ran");
                let days = trace.days().ok_or_else(|| {
                    OfflineError::Config("mt/ct need trace timestamps to turn EPBPD into erasures".into())
                })?;
                let budget = spec.erasure_budget.expect("validated") * f64::from(geometry.erase_units) * days;
                let erasures = base.counters.flash.erasures as f64;
                let inserted = records.len() as u64;
                // H_T: insertions allowed in proportion to erasures (digest ambiguity 9).
                let allowed =
                    if erasures > budget { (inserted as f64 * budget / erasures) as u64 } else { inserted };
                let (cut, r, l) = DenyList::budget(records, allowed);
                let list = cut.union(base.deny.as_ref().expect("m+ has a deny list"));
                budget_cut = Some((r, l));
                let outcome = family(Some(&list), None, Placement::ftl(geometry, blocks, true)?)?;
                deny = Some(list);
                (outcome, "ftl")
            }
            Algorithm::C | Algorithm::CN(_) | Algorithm::CT | Algorithm::CArrival | Algorithm::CNoCfr => {
                let base = match alg {
                    Algorithm::CN(n) => Algorithm::MN(n),
                    Algorithm::CT => Algorithm::MT,
                    _ => Algorithm::MPlus,
                };
                let placement = match alg {
                    Algorithm::CArrival => container(BufferOrder::Arrival)?,
                    Algorithm::CNoCfr => {
                        Placement::log(geometry, blocks, spec.write_buffer_units, BufferOrder::ByKey, false)?
                    }
                    _ => container(BufferOrder::ByKey)?,
                };
                budget_cut = done.get(&base).and_then(|d| d.budget_cut);
                (family(deny_of(base), records_of(base), placement)?, "container")
            }
            Algorithm::Lru | Algorithm::LruLog => {
                let placement = if alg == Algorithm::Lru {
                    Placement::ftl(geometry, blocks, spec.trim_online)?
                } else {
                    Placement::log(geometry, blocks, spec.write_buffer_units, BufferOrder::Arrival, false)?
                };
                let name = placement.name();
                let counters = run_lru(trace, flash_blocks, dram_blocks, placement, progress);
                done.insert(
                    alg,
                    Done { counters, records: None, deny: None, placement: name, geometry, budget_cut },
                );
                continue;
            }
            Algorithm::Ripq => {
                let config = RipqConfig { sections: spec.ripq_sections };
                let counters = run_ripq(trace, &geometry, dram_blocks, config, progress);
                done.insert(
                    alg,
                    Done { counters, records: None, deny: None, placement: "ripq", geometry, budget_cut },
                );
                continue;
            }
        };
        done.insert(
            alg,
            Done {
                counters: outcome.counters,
                records: Some(outcome.records),
                deny,
                placement,
                geometry,
                budget_cut,
            },
        );
    }
    let reference =
        done.get(&Algorithm::MPlus).map(|d| (hit_ratio(&d.counters), d.counters.flash.erasures as f64));
    Ok(spec
        .algorithms
        .iter()
        .map(|alg| {
            let d = &done[alg];
            result(alg.name(), bytes, u64::from(dram_blocks) * trace.block_size(), d, trace, spec, reference)
        })
        .collect())
}

fn hit_ratio(c: &RunCounters) -> f64 {
    ratio(c.dram_hits + c.flash_hits, c.reads)
}

fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

/// WFUE = alpha * RHR_A / RHR_M+ + (1 - alpha) * (E_M+ - E_A) / E_M+.
pub fn wfue(alpha: f64, rhr: f64, erasures: f64, reference: (f64, f64)) -> Option<f64> {
    let (rhr_m, erasures_m) = reference;
    (rhr_m > 0.0 && erasures_m > 0.0)
        .then(|| alpha * rhr / rhr_m + (1.0 - alpha) * (erasures_m - erasures) / erasures_m)
}

fn result(
    algorithm: String,
    cache_size_bytes: u64,
    dram_bytes: u64,
    d: &Done,
    trace: &BlockTrace,
    spec: &OfflineSpec,
    reference: Option<(f64, f64)>,
) -> AlgorithmResult {
    let c = &d.counters;
    let f = &c.flash;
    let days = trace.days().unwrap_or(0.0);
    let endurance = f.endurance(d.geometry.erase_units, days, spec.pe_limit);
    let rhr = hit_ratio(c);
    let written = f.host_writes + f.copy_forward_writes;
    AlgorithmResult {
        algorithm,
        cache_size_bytes,
        read_hit_ratio: rhr,
        erasures: f.erasures,
        epbpd: f.epbpd(d.geometry.erase_units, days),
        flash_write_blocks: f.host_writes,
        copy_forward_blocks: f.copy_forward_writes,
        write_amplification: f.write_amplification(),
        fue: (written > 0).then(|| c.flash_hits as f64 / written as f64),
        wfue_0_2: reference.and_then(|r| wfue(0.2, rhr, f.erasures as f64, r)),
        wfue_0_8: reference.and_then(|r| wfue(0.8, rhr, f.erasures as f64, r)),
        dram_hit_ratio: ratio(c.dram_hits, c.reads),
        flash_hit_ratio: ratio(c.flash_hits, c.reads),
        insertions: c.insertions,
        denied_insertions: c.denied,
        copy_forward_dropped_blocks: f.copy_forward_dropped,
        dram_bytes,
        placement: d.placement.to_owned(),
        erase_units: d.geometry.erase_units,
        max_unit_erasures: f.max_unit_erasures,
        endurance_days: endurance.days_levelled,
        endurance_days_worst_unit: endurance.days_worst_unit,
        budget_cut: d.budget_cut,
        ghost_hits: c.ghost_hits,
    }
}
