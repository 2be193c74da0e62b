//! Ordering the execution of engine decisions without a global lock.
//!
//! The engine decides under one short-held mutex, so its decisions have a
//! total order. Each decision takes a ticket on every *lane* it touches (a
//! lane is a hash bucket of block keys, or of flash slots), in that order;
//! carrying it out waits until every earlier ticket on those lanes is done.
//! So operations on one block or one slot happen in exactly the engine's
//! order, while requests on unrelated blocks (concurrent misses) run in
//! parallel. A request only ever waits for earlier ones, so there is no
//! deadlock; lanes shared by unrelated blocks cost only a little parallelism.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};

use cloudcache_engine::BlockKey;
use cloudcache_trace::block_hash::hash_block;

/// Lanes for block keys (a power of two).
const KEY_LANES: u32 = 4096;
/// Lanes for flash slots (a power of two).
const SLOT_LANES: u32 = 4096;
/// Waiters sleep on one of this many condition variables.
const WAIT_STRIPES: usize = 64;

/// A lane id.
pub type Lane = u32;

/// The lane of a block key.
pub fn key_lane(key: BlockKey) -> Lane {
    (hash_block(key.volume as u64, key.block) >> 20) as u32 & (KEY_LANES - 1)
}

/// The lane of a flash slot.
pub fn slot_lane(slot: u32) -> Lane {
    KEY_LANES + (slot & (SLOT_LANES - 1))
}

/// Every key lane (for a range too large to list block by block).
pub fn all_key_lanes() -> impl Iterator<Item = Lane> {
    0..KEY_LANES
}

/// Ticket dispensers (guarded by the engine's mutex) and counters of
/// tickets served (shared by the workers).
pub struct Lanes {
    served: Box<[AtomicU32]>,
    stripes: Vec<(Mutex<()>, Condvar)>,
}

/// The next ticket of every lane: lives beside the engine, under its lock.
pub struct Dispenser {
    next: Box<[u32]>,
}

impl Dispenser {
    /// Dispensers for every lane.
    pub fn new() -> Self {
        Dispenser { next: vec![0; (KEY_LANES + SLOT_LANES) as usize].into_boxed_slice() }
    }

    /// Takes tickets for `lanes` (sorted, without duplicates) into `tickets`.
    pub fn take(&mut self, lanes: &[Lane], tickets: &mut Vec<(Lane, u32)>) {
        tickets.clear();
        for &lane in lanes {
            let next = &mut self.next[lane as usize];
            tickets.push((lane, *next));
            *next = next.wrapping_add(1);
        }
    }
}

impl Default for Dispenser {
    fn default() -> Self {
        Dispenser::new()
    }
}

impl Lanes {
    /// Lanes with nothing outstanding.
    pub fn new() -> Self {
        Lanes {
            served: (0..KEY_LANES + SLOT_LANES).map(|_| AtomicU32::new(0)).collect(),
            stripes: (0..WAIT_STRIPES).map(|_| (Mutex::new(()), Condvar::new())).collect(),
        }
    }

    /// Whether `lane` has no ticket outstanding (call under the engine's
    /// lock, which guards `dispenser`).
    pub fn idle(&self, lane: Lane, dispenser: &Dispenser) -> bool {
        self.served[lane as usize].load(Ordering::Acquire) == dispenser.next[lane as usize]
    }

    /// Waits until every ticket is the next to be served on its lane.
    pub fn wait(&self, tickets: &[(Lane, u32)]) {
        for &(lane, ticket) in tickets {
            let served = &self.served[lane as usize];
            if served.load(Ordering::Acquire) == ticket {
                continue;
            }
            let (lock, condvar) = &self.stripes[lane as usize % WAIT_STRIPES];
            let mut guard = lock.lock().unwrap();
            while served.load(Ordering::Acquire) != ticket {
                guard = condvar.wait(guard).unwrap();
            }
        }
    }

    /// Marks the tickets served, letting the next holders run.
    pub fn release(&self, tickets: &[(Lane, u32)]) {
        for &(lane, _) in tickets {
            self.served[lane as usize].fetch_add(1, Ordering::Release);
            let (lock, condvar) = &self.stripes[lane as usize % WAIT_STRIPES];
            // Taking the lock orders this wake-up after a waiter's check.
            drop(lock.lock().unwrap());
            condvar.notify_all();
        }
    }
}

impl Default for Lanes {
    fn default() -> Self {
        Lanes::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn tickets_are_served_in_order_across_threads() {
        let lanes = Arc::new(Lanes::new());
        let mut dispenser = Dispenser::new();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut handles = Vec::new();
        // Ten requests on one lane, started in reverse: they must still run
        // in ticket order.
        let mut all = Vec::new();
        for _ in 0..10 {
            let mut t = Vec::new();
            dispenser.take(&[5, slot_lane(3)], &mut t);
            all.push(t);
        }
        for (i, tickets) in all.into_iter().enumerate().rev() {
            let lanes = lanes.clone();
            let order = order.clone();
            handles.push(std::thread::spawn(move || {
                lanes.wait(&tickets);
                order.lock().unwrap().push(i);
                lanes.release(&tickets);
            }));
        }
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), (0..10).collect::<Vec<_>>());
    }
}
