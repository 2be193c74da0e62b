//! Turning one request's engine actions into device operations in dependent
//! phases: what the client waits for, and what the cache does afterwards.
//!
//! Phases run one after another; the operations of one phase run in
//! parallel. Contiguous blocks of one kind become one operation (the block
//! layer merges adjacent bios). The client's request completes when its
//! acknowledgement phase completes; later phases are background work that
//! still occupies the devices.

use cloudcache_engine::{Action, WritePolicy};
use cloudcache_trace::{Op, VolumeId};

/// Which device serves an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// The host's flash cache (the first device of a RAID group).
    Flash = 0,
    /// The storage server across the network.
    Backend = 1,
    /// The second flash device of a RAID group (`cloudcache study raid`);
    /// a replay of the engine's single cache never uses it.
    Flash1 = 2,
}

impl Device {
    /// Every device, by index.
    pub const ALL: [Device; 3] = [Device::Flash, Device::Backend, Device::Flash1];

    /// Flash device `d` of a RAID group (0 or 1).
    pub fn flash(d: usize) -> Device {
        if d == 0 {
            Device::Flash
        } else {
            Device::Flash1
        }
    }

    /// Whether this is a flash device.
    pub fn is_flash(self) -> bool {
        self != Device::Backend
    }
}

/// Data direction of an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Read from the device.
    Read,
    /// Write to the device.
    Write,
    /// Discard on the device.
    Trim,
}

/// Why an operation exists: server load is reported by purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// Client data read (a hit on flash, a miss or read-modify-write on the server).
    ClientRead,
    /// Client data written (to flash, or to the server by write-through/invalidate).
    ClientWrite,
    /// Dirty data moving from flash to the server (eviction, cleaning, flush).
    WriteBack,
    /// A block admitted into flash after a read miss.
    Fill,
    /// A forwarded trim.
    Trim,
}

/// One device operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedOp {
    /// Device.
    pub device: Device,
    /// Direction.
    pub dir: Dir,
    /// Purpose.
    pub purpose: Purpose,
    /// Volume.
    pub volume: VolumeId,
    /// First byte (of the volume).
    pub offset: u64,
    /// Bytes.
    pub len: u64,
}

/// Phase indices, in execution order.
pub mod phase {
    /// Client reads (flash hits, server misses), read-modify-write fetches, trims.
    pub const FETCH: usize = 0;
    /// Flash reads of dirty victims.
    pub const VICTIM_READ: usize = 1;
    /// Server writes of dirty victims.
    pub const VICTIM_WRITE: usize = 2;
    /// Flash writes (admissions, cached writes); synchronous server writes.
    pub const STORE: usize = 3;
    /// Asynchronous write-through server writes.
    pub const THROUGH: usize = 4;
    /// Flash reads of blocks cleaned by the dirty watermarks or a flush.
    pub const CLEAN_READ: usize = 5;
    /// Server writes of those blocks.
    pub const CLEAN_WRITE: usize = 6;
    /// Number of phases.
    pub const COUNT: usize = 7;
}

/// A request's operations grouped by phase, and the phase after which the
/// client is answered (`None`: nobody waits, e.g. a flush).
#[derive(Clone, Debug, Default)]
pub struct Plan {
    phases: [Vec<PlannedOp>; phase::COUNT],
    /// Phase whose completion answers the client.
    pub ack_after: Option<usize>,
}

impl Plan {
    /// Forget the previous request (keeping the buffers).
    pub fn clear(&mut self) {
        for p in &mut self.phases {
            p.clear();
        }
        self.ack_after = None;
    }

    /// Operations of phase `p`.
    pub fn phase(&self, p: usize) -> &[PlannedOp] {
        &self.phases[p]
    }

    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.phases.iter().all(Vec::is_empty)
    }

    /// Add `op` to phase `p`, merging it into the phase's previous operation
    /// on the same device when it continues it (each device's queue merges
    /// adjacent bios; a RAID group's mirrored writes interleave devices).
    pub fn push(&mut self, p: usize, op: PlannedOp) {
        if let Some(last) = self.phases[p].iter_mut().rev().find(|o| o.device == op.device) {
            if last.device == op.device
                && last.dir == op.dir
                && last.purpose == op.purpose
                && last.volume == op.volume
                && last.offset + last.len == op.offset
            {
                last.len += op.len;
                return;
            }
        }
        self.phases[p].push(op);
    }

    /// Plan a request the cache handled: `actions` are the engine's for
    /// request (`op`, `volume`, `offset`, `len`).
    ///
    /// Client data the cache forwards to the server (write-through,
    /// write-invalidate, read-only) goes as the client wrote it, one
    /// operation of the request's bytes, not widened to whole cache blocks.
    #[allow(clippy::too_many_arguments)]
    pub fn from_actions(
        &mut self,
        op: Op,
        volume: VolumeId,
        offset: u64,
        len: u64,
        policy: WritePolicy,
        actions: &[Action],
        block_size: u64,
    ) {
        self.clear();
        let mut forwarded = false;
        let block = |device, dir, purpose, volume, b: u64| PlannedOp {
            device,
            dir,
            purpose,
            volume,
            offset: b * block_size,
            len: block_size,
        };
        let mut i = 0;
        while i < actions.len() {
            match actions[i] {
                Action::FlashRead { key, .. } => {
                    self.push(
                        phase::FETCH,
                        block(Device::Flash, Dir::Read, Purpose::ClientRead, key.volume, key.block),
                    );
                }
                Action::BackendRead { key } => {
                    self.push(
                        phase::FETCH,
                        block(Device::Backend, Dir::Read, Purpose::ClientRead, key.volume, key.block),
                    );
                }
                Action::FlashWrite { key, .. } => {
                    let purpose = if op == Op::Read { Purpose::Fill } else { Purpose::ClientWrite };
                    self.push(phase::STORE, block(Device::Flash, Dir::Write, purpose, key.volume, key.block));
                }
                Action::WriteBack { key, slot } => {
                    // A victim's write-back (followed by the eviction of its
                    // slot) must finish before the slot is refilled; any other
                    // write-back is background cleaning.
                    let victim =
                        matches!(actions.get(i + 1), Some(Action::Evict { slot: s, .. }) if *s == slot);
                    let (read_phase, write_phase) = if victim {
                        (phase::VICTIM_READ, phase::VICTIM_WRITE)
                    } else {
                        (phase::CLEAN_READ, phase::CLEAN_WRITE)
                    };
                    self.push(
                        read_phase,
                        block(Device::Flash, Dir::Read, Purpose::WriteBack, key.volume, key.block),
                    );
                    self.push(
                        write_phase,
                        block(Device::Backend, Dir::Write, Purpose::WriteBack, key.volume, key.block),
                    );
                }
                Action::BackendWrite { .. } => {
                    // Write-through answers once the flash copy is stored and
                    // updates the server asynchronously (dm-cache, seed §2.5);
                    // write-invalidate and read-only wait for the server.
                    let p = if policy == WritePolicy::WriteThrough { phase::THROUGH } else { phase::STORE };
                    if !forwarded {
                        forwarded = true;
                        self.push(
                            p,
                            PlannedOp {
                                device: Device::Backend,
                                dir: Dir::Write,
                                purpose: Purpose::ClientWrite,
                                volume,
                                offset,
                                len,
                            },
                        );
                    }
                }
                Action::BackendTrim { volume, offset, len } => {
                    self.push(
                        phase::FETCH,
                        PlannedOp {
                            device: Device::Backend,
                            dir: Dir::Trim,
                            purpose: Purpose::Trim,
                            volume,
                            offset,
                            len,
                        },
                    );
                }
                // Metadata or memory only: nothing reaches a device.
                Action::Evict { .. }
                | Action::Invalidate { .. }
                | Action::Stage { .. }
                | Action::StagedRead { .. } => {}
            }
            i += 1;
        }
        self.ack_after = Some(match op {
            Op::Read | Op::Trim => phase::FETCH,
            _ => phase::STORE,
        });
    }

    /// Plan a request with no cache in the way: it goes to the server as is.
    pub fn uncached(&mut self, volume: VolumeId, op: Op, offset: u64, len: u64) {
        self.clear();
        let (p, dir, purpose) = match op {
            Op::Read => (phase::FETCH, Dir::Read, Purpose::ClientRead),
            Op::Trim => (phase::FETCH, Dir::Trim, Purpose::Trim),
            _ => (phase::STORE, Dir::Write, Purpose::ClientWrite),
        };
        if len > 0 {
            self.push(p, PlannedOp { device: Device::Backend, dir, purpose, volume, offset, len });
        }
        self.ack_after = Some(p);
    }

    /// Plan background write-backs (a flush): `actions` are `WriteBack`s.
    pub fn flush(&mut self, actions: &[Action], block_size: u64) {
        self.clear();
        for a in actions {
            if let Action::WriteBack { key, .. } = *a {
                let op = |device, dir| PlannedOp {
                    device,
                    dir,
                    purpose: Purpose::WriteBack,
                    volume: key.volume,
                    offset: key.block * block_size,
                    len: block_size,
                };
                self.push(phase::CLEAN_READ, op(Device::Flash, Dir::Read));
                self.push(phase::CLEAN_WRITE, op(Device::Backend, Dir::Write));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cloudcache_engine::{BlockKey, Cache, CacheConfig};

    fn cache(policy: WritePolicy, blocks: u64) -> Cache {
        Cache::new(CacheConfig {
            capacity_bytes: blocks * 4096,
            write_policy: policy,
            record_actions: true,
            ..CacheConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn read_miss_answers_after_the_server_and_fills_flash_afterwards() {
        let mut c = cache(WritePolicy::WriteBack, 16);
        let mut plan = Plan::default();
        c.handle(0, Op::Read, 0, 3 * 4096);
        plan.from_actions(Op::Read, 0, 0, 3 * 4096, WritePolicy::WriteBack, c.actions(), 4096);
        // Three contiguous blocks merge into one server read and one flash write.
        assert_eq!(
            plan.phase(phase::FETCH),
            &[PlannedOp {
                device: Device::Backend,
                dir: Dir::Read,
                purpose: Purpose::ClientRead,
                volume: 0,
                offset: 0,
                len: 3 * 4096
            }]
        );
        assert_eq!(plan.phase(phase::STORE).len(), 1);
        assert_eq!(plan.phase(phase::STORE)[0].purpose, Purpose::Fill);
        assert_eq!(plan.ack_after, Some(phase::FETCH));
    }

    #[test]
    fn dirty_victim_is_written_back_before_the_write_lands() {
        let mut c = cache(WritePolicy::WriteBack, 1);
        let mut plan = Plan::default();
        c.handle(0, Op::Write, 0, 4096);
        c.handle(0, Op::Write, 8192, 4096);
        plan.from_actions(Op::Write, 0, 8192, 4096, WritePolicy::WriteBack, c.actions(), 4096);
        assert_eq!(plan.phase(phase::VICTIM_READ)[0].device, Device::Flash);
        let wb = plan.phase(phase::VICTIM_WRITE)[0];
        assert_eq!((wb.device, wb.purpose, wb.offset), (Device::Backend, Purpose::WriteBack, 0));
        assert_eq!(plan.phase(phase::STORE)[0].offset, 8192);
        assert_eq!(plan.ack_after, Some(phase::STORE));
    }

    #[test]
    fn write_through_server_write_is_asynchronous_write_invalidate_is_not() {
        let mut plan = Plan::default();
        let mut c = cache(WritePolicy::WriteThrough, 4);
        c.handle(0, Op::Write, 512, 8192);
        plan.from_actions(Op::Write, 0, 512, 8192, WritePolicy::WriteThrough, c.actions(), 4096);
        // Three partly written blocks, forwarded as the client's one write.
        assert_eq!(plan.phase(phase::THROUGH).len(), 1);
        assert_eq!((plan.phase(phase::THROUGH)[0].offset, plan.phase(phase::THROUGH)[0].len), (512, 8192));
        assert_eq!(plan.phase(phase::FETCH).len(), 2, "read-modify-write of the two partial blocks");
        assert_eq!(plan.phase(phase::STORE)[0].device, Device::Flash);
        let mut c = cache(WritePolicy::WriteInvalidate, 4);
        c.handle(0, Op::Read, 0, 4096);
        c.handle(0, Op::Write, 0, 4096);
        assert!(c.lookup(BlockKey { volume: 0, block: 0 }).is_none());
        plan.from_actions(Op::Write, 0, 0, 4096, WritePolicy::WriteInvalidate, c.actions(), 4096);
        assert_eq!(plan.phase(phase::STORE)[0].device, Device::Backend);
        assert!(plan.phase(phase::THROUGH).is_empty());
    }

    #[test]
    fn uncached_requests_keep_their_bytes() {
        let mut plan = Plan::default();
        plan.uncached(2, Op::Write, 512, 1024);
        let op = plan.phase(phase::STORE)[0];
        assert_eq!((op.volume, op.offset, op.len, op.dir), (2, 512, 1024, Dir::Write));
        plan.uncached(2, Op::Read, 0, 0);
        assert!(plan.is_empty());
    }
}
