//! Property tests of the flash models' garbage collection: whatever the
//! sequence of writes, trims and reads, no live page is lost or duplicated,
//! valid-page counts add up, erasures add up, and write amplification is at
//! least 1.

use std::collections::HashSet;

use cloudcache_flash::{BufferOrder, ContainerLog, FlashConfig, FlashDevice, Ftl, Geometry};
use proptest::prelude::*;

#[derive(Clone, Copy, Debug)]
enum Step {
    Write(u32, u64),
    Trim(u32),
    Read(u32),
}

fn steps(pages: u32) -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        6 => (0..pages, 0u64..1000).prop_map(|(p, o)| Step::Write(p, o)),
        2 => (0..pages).prop_map(Step::Trim),
        1 => (0..pages).prop_map(Step::Read),
    ];
    prop::collection::vec(step, 1..3000)
}

fn geometry(logical_pages: u64, pages_per_unit: u64, op: f64) -> Geometry {
    FlashConfig {
        capacity_bytes: logical_pages * 4096,
        page_bytes: 4096,
        erase_unit_bytes: pages_per_unit * 4096,
        over_provisioning: op,
    }
    .geometry()
    .unwrap()
}

fn check_common(device: &dyn FlashDevice, valid_per_unit: &[u32], erase_counts: &[u32], writes: u64) {
    let stats = device.stats();
    let on_flash: u64 = valid_per_unit.iter().map(|&v| u64::from(v)).sum();
    assert_eq!(on_flash, stats.valid_pages, "per-unit valid counts add up to the live total");
    assert!(valid_per_unit.iter().all(|&v| v <= device.geometry().pages_per_unit));
    let erasures: u64 = erase_counts.iter().map(|&e| u64::from(e)).sum();
    assert_eq!(erasures, stats.erasures, "erasures add up per unit");
    assert_eq!(u64::from(*erase_counts.iter().max().unwrap()), stats.max_unit_erasures);
    assert!(stats.write_amplification() >= 1.0);
    assert!(stats.host_writes <= writes);
    // Every erasure reclaimed at least one invalid page, so programs bound erasures.
    let programs = stats.host_writes + stats.copy_forward_writes;
    assert!(stats.erasures * u64::from(device.geometry().pages_per_unit) <= programs);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn ftl_keeps_every_live_page(
        (logical, per_unit, op) in (8u64..200, 2u64..16, 0.1f64..0.6),
        ops in steps(200),
    ) {
        let g = geometry(logical, per_unit, op);
        prop_assume!(g.check_spare(2, "test").is_ok());
        let mut ftl = Ftl::new(g).unwrap();
        let mut live = HashSet::new();
        let mut writes = 0;
        for step in ops {
            match step {
                Step::Write(p, o) => {
                    let p = p % g.logical_pages;
                    ftl.write(p, o);
                    live.insert(p);
                    writes += 1;
                }
                Step::Trim(p) => {
                    let p = p % g.logical_pages;
                    ftl.trim(p);
                    live.remove(&p);
                }
                Step::Read(p) => {
                    let p = p % g.logical_pages;
                    prop_assert_eq!(ftl.read(p), live.contains(&p));
                }
            }
            prop_assert_eq!(ftl.stats().valid_pages, live.len() as u64, "valid pages conserved");
        }
        prop_assert_eq!(ftl.stats().host_writes, writes);
        for p in 0..g.logical_pages {
            prop_assert_eq!(ftl.is_live(p), live.contains(&p));
        }
        check_common(&ftl, ftl.valid_per_unit(), ftl.erase_counts(), writes);
    }

    #[test]
    fn container_log_keeps_every_page_the_filter_keeps(
        (logical, per_unit, op, buffer) in (8u64..200, 2u64..16, 0.2f64..0.7, 1u32..4),
        arrival in any::<bool>(),
        drop_mod in 0u32..5,
        ops in steps(200),
    ) {
        let g = geometry(logical, per_unit, op);
        prop_assume!(g.check_spare(buffer - 1, "test").is_ok());
        let order = if arrival { BufferOrder::Arrival } else { BufferOrder::ByKey };
        let mut log = ContainerLog::new(g, buffer, order, g.logical_pages).unwrap();
        let mut live = HashSet::new();
        let mut writes = 0;
        for step in ops {
            match step {
                Step::Write(p, o) => {
                    let p = p % g.logical_pages;
                    let mut dropped = Vec::new();
                    // Drop copies of pages divisible by drop_mod (none when 0).
                    log.write_filtered(p, o, &mut |q| {
                        let keep = drop_mod == 0 || q % drop_mod != 0;
                        if !keep {
                            dropped.push(q);
                        }
                        keep
                    });
                    for q in dropped {
                        prop_assert!(live.remove(&q), "only live pages are offered to the filter");
                    }
                    live.insert(p);
                    writes += 1;
                }
                Step::Trim(p) => {
                    let p = p % g.logical_pages;
                    log.trim(p);
                    live.remove(&p);
                }
                Step::Read(p) => {
                    let p = p % g.logical_pages;
                    prop_assert_eq!(log.read(p), live.contains(&p));
                }
            }
            let held = log.stats().valid_pages + log.buffered_pages() as u64;
            prop_assert_eq!(held, live.len() as u64, "valid pages conserved");
        }
        for p in 0..g.logical_pages {
            prop_assert_eq!(log.is_live(p), live.contains(&p));
        }
        check_common(&log, log.valid_per_unit(), log.erase_counts(), writes);
    }
}

#[test]
fn ftl_sequential_overwrites_need_no_copies() {
    // Rewriting the whole logical space in order leaves whole units dead:
    // greedy GC erases them without copying anything.
    let g = geometry(64, 8, 0.3);
    let mut ftl = Ftl::new(g).unwrap();
    for round in 0..20u64 {
        for p in 0..g.logical_pages {
            ftl.write(p, round);
        }
    }
    let s = ftl.stats();
    assert_eq!(s.copy_forward_writes, 0);
    assert_eq!(s.write_amplification(), 1.0);
    assert!(s.erasures > 0);
}

#[test]
fn ftl_random_overwrites_amplify_and_trim_helps() {
    // Uniform random overwrites of a full device make GC copy live pages;
    // trimming half the pages first leaves the collector less to copy.
    let g = geometry(512, 16, 0.15);
    let mut state = 12345u64;
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) as u32
    };
    let run = |trim_half: bool, next: &mut dyn FnMut() -> u32| {
        let mut ftl = Ftl::new(g).unwrap();
        for p in 0..g.logical_pages {
            ftl.write(p, 0);
        }
        if trim_half {
            for p in 0..g.logical_pages / 2 {
                ftl.trim(p);
            }
        }
        for _ in 0..20_000 {
            let p = next() % g.logical_pages;
            let p = if trim_half { g.logical_pages / 2 + p / 2 } else { p };
            ftl.write(p, 0);
        }
        ftl.stats()
    };
    let full = run(false, &mut next);
    let trimmed = run(true, &mut next);
    assert!(full.write_amplification() > 1.5, "full device WA {}", full.write_amplification());
    assert!(trimmed.write_amplification() < full.write_amplification());
}

#[test]
fn container_log_ordered_by_death_time_copies_nothing() {
    // Pages die in the order of their key: sorting the buffer by key puts
    // pages that die together in one unit, so cleaning finds empty units.
    let g = geometry(64, 8, 0.3);
    let mut log = ContainerLog::new(g, 2, BufferOrder::ByKey, 1 << 16).unwrap();
    let mut live: std::collections::VecDeque<u32> = Default::default();
    for next_page in 0..5000u32 {
        if live.len() as u32 == g.logical_pages {
            let dead = live.pop_front().unwrap();
            log.trim(dead);
        }
        log.write(next_page, u64::from(next_page));
        live.push_back(next_page);
    }
    assert_eq!(log.stats().copy_forward_writes, 0);
    assert!(log.stats().erasures > 0);
}

#[test]
fn bad_configurations_are_refused() {
    let base = FlashConfig::new(1 << 30);
    let e = FlashConfig { over_provisioning: 0.0, ..base }.geometry().unwrap_err().to_string();
    assert!(e.contains("over-provisioning 0 is outside (0, 1)"), "{e}");
    let e = FlashConfig { over_provisioning: 1.0, ..base }.geometry().unwrap_err().to_string();
    assert!(e.contains("outside (0, 1)"), "{e}");
    let e = FlashConfig { erase_unit_bytes: 3 << 20 | 1, ..base }.geometry().unwrap_err().to_string();
    assert!(e.contains("not a positive multiple of the block size"), "{e}");
    // 10 MiB at 2 MiB units: 6 units, too few for a 4-unit write buffer.
    let g = FlashConfig::new(10 << 20).geometry().unwrap();
    let e = ContainerLog::new(g, 4, BufferOrder::ByKey, 10).unwrap_err().to_string();
    assert!(e.contains("too little spare space"), "{e}");
}
