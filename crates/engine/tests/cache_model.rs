//! Model-based property tests of the cache engine.
//!
//! A driver carries out the engine's actions against a model flash device
//! and a model backend, tracking which version of each block every place
//! holds. After every request, every block must be readable at its latest
//! version: from flash if the engine says it is cached, from the backend
//! otherwise. This is the property the NBD server relies on (nothing lost,
//! nothing stale), checked for every policy and write policy, together with
//! the accounting invariants (occupancy within capacity, counters that add
//! up).

use std::collections::HashMap;

use cloudcache_engine::{
    Action, Admission, BlockKey, Cache, CacheConfig, Mode, PolicyKind, ShareMode, StagingKind, WritePolicy,
};
use cloudcache_trace::Op;
use proptest::prelude::*;

const BLOCK: u64 = 4096;

/// Content of a block as the model knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    /// Written by the request with this sequence number.
    Written(u64),
    /// Trimmed: any content is acceptable.
    Unspecified,
    /// Corrupted by a bad merge (a partial write over stale data).
    Corrupt,
}

#[derive(Default)]
struct Model {
    /// The latest content the client may expect of each block.
    truth: HashMap<BlockKey, Version>,
    backend: HashMap<BlockKey, Version>,
    /// Flash slot -> (key, content).
    flash: HashMap<u32, (BlockKey, Version)>,
    /// Data held in the staging area (memory), as the engine announced it.
    staged: HashMap<BlockKey, Version>,
}

impl Model {
    fn backend(&self, key: BlockKey) -> Version {
        *self.backend.get(&key).unwrap_or(&Version::Written(0))
    }
    fn truth(&self, key: BlockKey) -> Version {
        *self.truth.get(&key).unwrap_or(&Version::Written(0))
    }
}

#[derive(Clone, Debug)]
struct Req {
    volume: u32,
    op: Op,
    offset: u64,
    len: u64,
}

fn request() -> impl Strategy<Value = Req> {
    request_within(3, 24)
}

/// Requests over `volumes` volumes of `blocks` blocks each.
fn request_within(volumes: u32, blocks: u64) -> impl Strategy<Value = Req> {
    (0..volumes, 0u8..10, 0..(blocks * 8), 1u64..(3 * 8 + 1)).prop_map(|(volume, op, sector, sectors)| Req {
        volume,
        op: match op {
            0..=4 => Op::Read,
            5..=8 => Op::Write,
            _ => Op::Trim,
        },
        offset: sector * 512,
        len: sectors * 512,
    })
}

fn blocks_of(r: &Req) -> impl Iterator<Item = (BlockKey, bool)> + '_ {
    let end = r.offset + r.len;
    (r.offset / BLOCK..=(end - 1) / BLOCK).map(move |b| {
        let whole = r.offset <= b * BLOCK && end >= (b + 1) * BLOCK;
        (BlockKey::new(r.volume, b), whole)
    })
}

/// Carry out one request's actions; returns an error describing the first
/// wrong step.
fn execute(model: &mut Model, req: &Req, seq: u64, actions: &[Action]) -> Result<(), String> {
    let whole: HashMap<BlockKey, bool> = blocks_of(req).collect();
    // What a backend read returned, per key, for this request.
    let mut fetched: HashMap<BlockKey, Version> = HashMap::new();
    for action in actions {
        match *action {
            Action::FlashRead { key, slot } => {
                let (held, v) = model.flash.get(&slot).copied().ok_or(format!("{action:?}: empty slot"))?;
                if held != key {
                    return Err(format!("{action:?}: slot holds {held:?}"));
                }
                if req.op == Op::Read
                    && !matches!(model.truth(key), Version::Unspecified)
                    && v != model.truth(key)
                {
                    return Err(format!(
                        "{action:?}: stale flash data {v:?}, expected {:?}",
                        model.truth(key)
                    ));
                }
            }
            Action::BackendRead { key } => {
                let v = model.backend(key);
                if !matches!(model.truth(key), Version::Unspecified) && v != model.truth(key) {
                    return Err(format!(
                        "{action:?}: backend is stale ({v:?}, expected {:?})",
                        model.truth(key)
                    ));
                }
                fetched.insert(key, v);
            }
            Action::Stage { key } => {
                let v = *fetched.get(&key).ok_or(format!("{action:?}: stage without a backend read"))?;
                model.staged.insert(key, v);
            }
            Action::StagedRead { key } => {
                let v = *model.staged.get(&key).ok_or(format!("{action:?}: nothing staged"))?;
                if !matches!(model.truth(key), Version::Unspecified) && v != model.truth(key) {
                    return Err(format!(
                        "{action:?}: stale staged data {v:?}, expected {:?}",
                        model.truth(key)
                    ));
                }
                fetched.insert(key, v);
            }
            Action::FlashWrite { key, slot } => {
                let content = match req.op {
                    Op::Read => {
                        *fetched.get(&key).ok_or(format!("{action:?}: fill without a backend read"))?
                    }
                    _ => {
                        let is_whole = *whole.get(&key).ok_or(format!("{action:?}: block not in request"))?;
                        let base_ok = is_whole
                            || fetched.contains_key(&key)
                            || model.flash.get(&slot).is_some_and(|(k, _)| *k == key);
                        if base_ok {
                            Version::Written(seq)
                        } else {
                            Version::Corrupt
                        }
                    }
                };
                model.flash.insert(slot, (key, content));
            }
            Action::WriteBack { key, slot } => {
                let (held, v) = model.flash.get(&slot).copied().ok_or(format!("{action:?}: empty slot"))?;
                if held != key {
                    return Err(format!("{action:?}: slot holds {held:?}"));
                }
                model.backend.insert(key, v);
            }
            Action::Evict { key, slot } | Action::Invalidate { key, slot } => {
                let (held, _) = model.flash.remove(&slot).ok_or(format!("{action:?}: empty slot"))?;
                if held != key {
                    return Err(format!("{action:?}: slot holds {held:?}"));
                }
            }
            Action::BackendWrite { key } => {
                let is_whole = *whole.get(&key).ok_or(format!("{action:?}: block not in request"))?;
                // A partial write merges into what the backend has, which must be current.
                let current = model.backend(key) == model.truth(key)
                    || matches!(model.truth(key), Version::Unspecified);
                let v = if is_whole || current { Version::Written(seq) } else { Version::Corrupt };
                model.backend.insert(key, v);
            }
            Action::BackendTrim { volume, offset, len } => {
                if volume != req.volume || offset != req.offset || len != req.len {
                    return Err(format!("{action:?}: does not match the request"));
                }
                for (key, _) in blocks_of(req) {
                    model.backend.insert(key, Version::Unspecified);
                }
            }
        }
    }
    // The client's view after the request.
    match req.op {
        Op::Write => {
            for (key, _) in blocks_of(req) {
                model.truth.insert(key, Version::Written(seq));
            }
        }
        Op::Trim => {
            for (key, _) in blocks_of(req) {
                model.truth.insert(key, Version::Unspecified);
            }
        }
        Op::Read => {}
    }
    Ok(())
}

/// Every block must be readable at its latest version from where the engine
/// says it is.
fn check_consistency(model: &Model, cache: &Cache) -> Result<(), String> {
    for (&key, &truth) in &model.truth {
        if truth == Version::Unspecified {
            continue;
        }
        let found = match cache.lookup(key) {
            Some((slot, _)) => match model.flash.get(&slot) {
                Some(&(held, v)) if held == key => v,
                other => return Err(format!("{key:?}: engine says slot {slot}, flash has {other:?}")),
            },
            None => model.backend(key),
        };
        if found != truth {
            return Err(format!("{key:?}: reads back {found:?}, expected {truth:?}"));
        }
    }
    Ok(())
}

fn config(
    policy: PolicyKind,
    write_policy: WritePolicy,
    blocks: u64,
    watermarks: Option<(f64, f64)>,
) -> CacheConfig {
    CacheConfig {
        capacity_bytes: blocks * BLOCK,
        block_size: BLOCK,
        mode: Mode::Block,
        policy,
        write_policy,
        dirty_high_watermark: watermarks.map(|w| w.0),
        dirty_low_watermark: watermarks.map(|w| w.1),
        record_actions: true,
        expected_items: 0,
        admission: Admission::Always,
        partitioned: false,
        keep_dirty_order: false,
        sequential_cutoff_bytes: 0,
    }
}

fn admission() -> impl Strategy<Value = Admission> {
    let staging = (0u32..3, 0u8..3, 0u64..6).prop_map(|(reuses, kind, entries)| Admission::Staging {
        reuses,
        kind: [StagingKind::Address, StagingKind::Data, StagingKind::Hybrid][kind as usize],
        // Room for a few data entries at most (4 KiB + 24 B each).
        total_bytes: entries * 2100,
    });
    prop_oneof![
        Just(Admission::Always),
        staging,
        Just(Admission::TouchCount { region_bytes: 4 * BLOCK, sequential_cutoff_bytes: 8 * BLOCK }),
        Just(Admission::Larc),
    ]
}

#[derive(Clone, Debug)]
enum Event {
    Request(Req),
    Shares(Vec<u64>, ShareMode),
}

fn event(blocks: u64) -> impl Strategy<Value = Event> {
    let shares = (proptest::collection::vec(0u64..=blocks, 3), any::<bool>(), any::<bool>()).prop_map(
        move |(mut shares, lend_free_space, drop_excess)| {
            // Shares never add up to more than the cache.
            while shares.iter().sum::<u64>() > blocks {
                let biggest = (0..3).max_by_key(|&i| shares[i]).unwrap();
                shares[biggest] -= 1;
            }
            Event::Shares(shares, ShareMode { lend_free_space, drop_excess })
        },
    );
    // Few blocks, so that staged blocks are often accessed again.
    prop_oneof![8 => request_within(3, 6).prop_map(Event::Request), 1 => shares]
}

fn write_policy() -> impl Strategy<Value = (WritePolicy, Option<(f64, f64)>)> {
    prop_oneof![
        Just((WritePolicy::WriteBack, None)),
        (0.0f64..1.0, 0.0f64..1.0).prop_map(|(a, b)| (WritePolicy::WriteBack, Some((a.max(b), a.min(b))))),
        Just((WritePolicy::WriteThrough, None)),
        Just((WritePolicy::WriteInvalidate, None)),
        Just((WritePolicy::ReadOnly, None)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn nothing_lost_nothing_stale(
        policy in proptest::sample::select(PolicyKind::ALL.to_vec()),
        (wp, watermarks) in write_policy(),
        blocks in 1u64..10,
        reqs in proptest::collection::vec(request(), 1..120),
    ) {
        let mut cache = Cache::new(config(policy, wp, blocks, watermarks)).unwrap();
        let mut model = Model::default();
        for (i, req) in reqs.iter().enumerate() {
            let seq = i as u64 + 1;
            cache.handle(req.volume, req.op, req.offset, req.len);
            execute(&mut model, req, seq, cache.actions())
                .map_err(|e| TestCaseError::fail(format!("request {i} {req:?}: {e}")))?;
            check_consistency(&model, &cache)
                .map_err(|e| TestCaseError::fail(format!("after request {i} {req:?}: {e}")))?;
            prop_assert!(cache.used_weight() <= cache.capacity_weight());
            prop_assert_eq!(model.flash.len() as u64, cache.cached_items());
            if let (Some((high, _)), WritePolicy::WriteBack) = (watermarks, wp) {
                prop_assert!(cache.dirty_blocks() as f64 <= (high * blocks as f64).floor());
            }
        }
        // Accounting adds up.
        let n = cache.counters();
        prop_assert_eq!(n.block_accesses, n.read_block_accesses + n.write_block_accesses);
        prop_assert_eq!(n.block_hits, n.read_block_hits + n.write_block_hits);
        prop_assert!(n.request_hits <= n.requests && n.block_hits <= n.block_accesses);
        prop_assert!(n.byte_hits <= n.bytes_accessed);
        prop_assert_eq!(n.requests, n.read_requests + n.write_requests);
        prop_assert_eq!(n.flash_read_blocks, n.read_block_hits);
        prop_assert!(n.dirty_evictions <= n.evictions);
        let volumes = cache.volumes();
        prop_assert_eq!(volumes.iter().map(|v| v.cached_items).sum::<u64>(), cache.cached_items());
        prop_assert_eq!(volumes.iter().map(|v| v.dirty_blocks).sum::<u64>(), cache.dirty_blocks());
        // Flushing everything leaves the backend complete.
        cache.write_back_all(None);
        execute(&mut model, &Req { volume: 0, op: Op::Read, offset: 0, len: 512 }, 0, cache.actions())
            .map_err(TestCaseError::fail)?;
        for (&key, &truth) in &model.truth {
            if truth != Version::Unspecified {
                prop_assert_eq!(model.backend(key), truth, "{:?} after write_back_all", key);
            }
        }
    }

    #[test]
    fn admission_and_shares_lose_nothing(
        (wp, watermarks) in write_policy(),
        admission in admission(),
        (blocks, events) in (2u64..10).prop_flat_map(|b| (Just(b), proptest::collection::vec(event(b), 1..150))),
    ) {
        let admission = match admission {
            Admission::Staging { reuses, kind, total_bytes } =>
                Admission::Staging { reuses, kind, total_bytes: total_bytes.min(blocks * BLOCK) },
            other => other,
        };
        let mut cache = Cache::new(CacheConfig {
            admission,
            partitioned: true,
            ..config(PolicyKind::Lru, wp, blocks, watermarks)
        }).unwrap();
        let mut model = Model::default();
        let mut mode = None;
        for (i, event) in events.iter().enumerate() {
            let seq = i as u64 + 1;
            match event {
                Event::Request(req) => {
                    let v = req.volume as usize;
                    let before = cache.volumes().get(v).map_or(0, |s| s.cached_items);
                    cache.handle(req.volume, req.op, req.offset, req.len);
                    execute(&mut model, req, seq, cache.actions())
                        .map_err(|e| TestCaseError::fail(format!("event {i} {req:?}: {e}")))?;
                    // A volume never grows past its share unless it may borrow free space.
                    if let (Some(share), Some(ShareMode { lend_free_space: false, .. })) = (cache.share(req.volume), mode) {
                        let after = cache.volumes()[v].cached_items;
                        prop_assert!(after <= share.max(before), "volume {} holds {} > share {}", v, after, share);
                    }
                }
                Event::Shares(shares, new_mode) => {
                    cache.set_shares(shares, *new_mode);
                    mode = Some(*new_mode);
                    let probe = Req { volume: 0, op: Op::Read, offset: 0, len: 512 };
                    execute(&mut model, &probe, seq, cache.actions())
                        .map_err(|e| TestCaseError::fail(format!("event {i} shares {shares:?}: {e}")))?;
                    if new_mode.drop_excess {
                        for (v, state) in cache.volumes().iter().enumerate() {
                            prop_assert!(state.cached_items <= shares.get(v).copied().unwrap_or(0));
                        }
                    }
                }
            }
            check_consistency(&model, &cache)
                .map_err(|e| TestCaseError::fail(format!("after event {i}: {e}")))?;
            prop_assert!(cache.used_weight() <= cache.capacity_weight());
            prop_assert_eq!(model.flash.len() as u64, cache.cached_items());
        }
        let n = cache.counters();
        prop_assert_eq!(n.block_hits, n.read_block_hits + n.write_block_hits);
        prop_assert_eq!(n.flash_read_blocks + n.staging_hits, n.read_block_hits);
        cache.write_back_all(None);
        execute(&mut model, &Req { volume: 0, op: Op::Read, offset: 0, len: 512 }, 0, cache.actions())
            .map_err(TestCaseError::fail)?;
        for (&key, &truth) in &model.truth {
            if truth != Version::Unspecified {
                prop_assert_eq!(model.backend(key), truth, "{:?} after write_back_all", key);
            }
        }
    }

    #[test]
    fn object_mode_occupancy_within_capacity(
        policy in proptest::sample::select(PolicyKind::ALL.to_vec()),
        capacity in 1u64..20_000,
        reqs in proptest::collection::vec((0u64..40, 0u64..12_000, 0u8..3), 1..200),
    ) {
        let mut cache = Cache::new(CacheConfig {
            capacity_bytes: capacity,
            mode: Mode::Object,
            policy,
            ..CacheConfig::default()
        }).unwrap();
        for &(key, len, op) in &reqs {
            let op = [Op::Read, Op::Write, Op::Trim][op as usize];
            let before = cache.lookup(BlockKey::new(0, key * 512)).is_some();
            let outcome = cache.handle(0, op, key * 512, len);
            if op != Op::Trim {
                prop_assert_eq!(outcome.is_hit(), before);
            }
            prop_assert!(cache.used_weight() <= capacity);
        }
        let n = cache.counters();
        prop_assert_eq!(n.requests, n.block_accesses);
        prop_assert_eq!(n.requests - n.request_hits, n.backend_read_blocks);
        prop_assert_eq!(n.backend_read_blocks, n.flash_write_blocks + n.not_admitted);
    }
}
