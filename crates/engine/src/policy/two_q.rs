//! PLACEHOLDER: to be written.
use super::ReplacementPolicy;
use crate::key::{BlockKey, Slot};
/// Placeholder.
pub struct TwoQ;
impl TwoQ {
    /// Placeholder.
    pub fn new(_capacity: u64, _slots: usize) -> Self {
        TwoQ
    }
}
impl ReplacementPolicy for TwoQ {
    fn insert(&mut self, _slot: Slot, _key: BlockKey, _weight: u64) {
        unimplemented!()
    }
    fn hit(&mut self, _slot: Slot) {
        unimplemented!()
    }
    fn remove(&mut self, _slot: Slot) {
        unimplemented!()
    }
    fn evict(&mut self, _incoming: BlockKey, _keys: &[BlockKey]) -> Slot {
        unimplemented!()
    }
    fn reserve_slots(&mut self, _slots: usize) {}
}
