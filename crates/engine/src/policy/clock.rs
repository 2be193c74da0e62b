//! PLACEHOLDER: to be written.
use super::ReplacementPolicy;
use crate::key::{BlockKey, Slot};
/// Placeholder.
pub struct Clock;
impl Clock {
    /// Placeholder.
    pub fn new(_slots: usize) -> Self {
        Clock
    }
}
impl ReplacementPolicy for Clock {
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
