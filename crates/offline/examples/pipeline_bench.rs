//! Benchmark of the offline pipeline, stage by stage, on a trace replicated
//! N times on disjoint address ranges one copy after the other in time (as
//! bench/run_libcachesim_compare.sh builds its x20 input). Prints block
//! accesses per second per stage. Single-threaded per stage.
//!
//! cargo run --release -p cloudcache-offline --example pipeline_bench -- TRACE [REPLICAS] [CACHE%]

use std::time::Instant;

use cloudcache_flash::container_log::BufferOrder;
use cloudcache_flash::FlashConfig;
use cloudcache_offline::family::{run_family, FamilyRun};
use cloudcache_offline::online::{run_lru, run_ripq, RipqConfig};
use cloudcache_offline::placement::Placement;
use cloudcache_offline::records::DenyList;
use cloudcache_offline::BlockTrace;
use cloudcache_trace::{OpenOptions, Request, RequestSource, TraceError, VolumeTable};

/// The sample's requests, `copies` times, copy k shifted by k x stride in
/// offset and k x span in time.
struct Replicated {
    requests: Vec<Request>,
    copies: u64,
    stride: u64,
    span: u64,
    next: usize,
    volumes: VolumeTable,
}

impl RequestSource for Replicated {
    fn next_request(&mut self, req: &mut Request) -> Result<bool, TraceError> {
        let n = self.requests.len();
        if self.next as u64 >= n as u64 * self.copies {
            return Ok(false);
        }
        let (k, i) = ((self.next / n) as u64, self.next % n);
        *req = self.requests[i].clone();
        req.offset += k * self.stride;
        req.time_ns += k * self.span;
        self.next += 1;
        Ok(true)
    }
    fn volumes(&self) -> &VolumeTable {
        &self.volumes
    }
}

fn stage(name: &str, accesses: u64, f: impl FnOnce()) {
    let start = Instant::now();
    f();
    let s = start.elapsed().as_secs_f64();
    println!("| {name} | {s:.2} | {:.1} |", accesses as f64 / s / 1e6);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: pipeline_bench TRACE [REPLICAS] [CACHE%]");
    let copies: u64 = args.get(2).map_or(20, |s| s.parse().unwrap());
    let pct: f64 = args.get(3).map_or(2.5, |s| s.parse().unwrap());
    let mut reader = cloudcache_trace::open(std::path::Path::new(path), &OpenOptions::default()).unwrap();
    let requests = reader.read_all().unwrap();
    let stride = requests.iter().map(|r| r.end()).max().unwrap().next_multiple_of(1 << 20);
    let (first, last) = (requests[0].time_ns, requests.last().unwrap().time_ns);
    let mut source = Replicated {
        requests,
        copies,
        stride,
        span: last - first + 1,
        next: 0,
        volumes: reader.volumes().clone(),
    };
    let start = Instant::now();
    let mut trace = BlockTrace::from_source(&mut source, 4096, &|_| {}).unwrap();
    let split_s = start.elapsed().as_secs_f64();
    let n = trace.accesses().len() as u64;
    let cache = (trace.working_set_bytes() as f64 * pct / 100.0) as u64 / 4096 * 4096;
    let g = FlashConfig::new(cache).geometry().unwrap();
    let blocks = trace.distinct_blocks();
    let (flash_blocks, dram_blocks) = (g.logical_pages, g.logical_pages / 20);
    println!(
        "{copies} x {path}: {n} block accesses, working set {} blocks, flash {pct}% = {} MiB ({} erase units)\n",
        blocks,
        cache >> 20,
        g.erase_units
    );
    println!("| stage | seconds | M block accesses/s |\n|---|---:|---:|");
    println!("| split into blocks + dense ids | {split_s:.2} | {:.1} |", n as f64 / split_s / 1e6);
    stage("annotate (next read)", n, || trace.annotate());
    let fam = |name: &str, deny, mirror, placement| {
        run_family(&trace, FamilyRun { name, flash_blocks, dram_blocks, deny, mirror, placement }, &|_| {})
            .unwrap()
    };
    let mut min = None;
    stage("MIN (round 1, FTL, no TRIM)", n, || {
        min = Some(fam("min", None, None, Placement::ftl(g, blocks, false).unwrap()))
    });
    let deny = DenyList::fewer_hits_than(&min.unwrap().records, 1);
    let mut plus = None;
    stage("M+ (FTL, TRIM)", n, || {
        plus = Some(fam("m+", Some(&deny), None, Placement::ftl(g, blocks, true).unwrap()))
    });
    let plus = plus.unwrap();
    stage("C (containers by eviction time, CFR)", n, || {
        fam(
            "c",
            Some(&deny),
            Some(&plus.records),
            Placement::log(g, blocks, 4, BufferOrder::ByKey, true).unwrap(),
        );
    });
    stage("LRU (FTL, TRIM)", n, || {
        run_lru(&trace, flash_blocks, dram_blocks, Placement::ftl(g, blocks, true).unwrap(), &|_| {});
    });
    stage("RIPQ-like (8 sections)", n, || {
        run_ripq(&trace, &g, dram_blocks, RipqConfig { sections: 8 }, &|_| {});
    });
}
