//! Intrusive doubly linked lists over slot indices.
//!
//! Policies keep their queues (LRU lists, FIFOs, ARC's T1/T2 ...) as
//! [`List`] heads over one shared [`Links`] arena, so moving an item between
//! queues is a few index writes and never allocates. A slot is on at most one
//! list of an arena at a time. "Front" is the most recently inserted end.

use crate::key::{Slot, NO_SLOT};

/// Previous/next pointers for every slot of an arena, side by side so a
/// list update touches one cache line per slot.
#[derive(Clone, Debug, Default)]
pub struct Links {
    nodes: Vec<Node>,
}

#[derive(Clone, Copy, Debug)]
struct Node {
    prev: Slot,
    next: Slot,
}

const UNLINKED: Node = Node { prev: NO_SLOT, next: NO_SLOT };

/// One list's head, tail and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct List {
    head: Slot,
    tail: Slot,
    len: usize,
}

impl Default for List {
    fn default() -> Self {
        List { head: NO_SLOT, tail: NO_SLOT, len: 0 }
    }
}

impl List {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of slots on the list.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Most recently pushed slot.
    pub fn front(&self) -> Option<Slot> {
        (self.head != NO_SLOT).then_some(self.head)
    }

    /// Least recently pushed slot.
    pub fn back(&self) -> Option<Slot> {
        (self.tail != NO_SLOT).then_some(self.tail)
    }
}

impl Links {
    /// Links for `slots` slots.
    pub fn with_slots(slots: usize) -> Self {
        Links { nodes: vec![UNLINKED; slots] }
    }

    /// The slot before `slot` on its list (towards the front).
    #[inline]
    pub fn prev_of(&self, slot: Slot) -> Slot {
        self.nodes[slot as usize].prev
    }

    /// Start loading `slot`'s links (see [`cloudcache_trace::prefetch`]).
    #[inline]
    pub fn prefetch(&self, slot: Slot) {
        if let Some(node) = self.nodes.get(slot as usize) {
            cloudcache_trace::prefetch::prefetch(node);
        }
    }

    /// The next two slots `pop_back` would take from `list`, the links of
    /// the second prefetched.
    #[inline]
    pub fn prefetch_coming_backs(&self, list: &List) -> (Slot, Slot) {
        let Some(next) = list.back() else { return (NO_SLOT, NO_SLOT) };
        let after = self.prev_of(next);
        self.prefetch(after);
        (next, after)
    }

    /// Make room for slot indices below `slots` (object mode grows).
    pub fn ensure_slots(&mut self, slots: usize) {
        if self.nodes.len() < slots {
            self.nodes.resize(slots, UNLINKED);
        }
    }

    /// Put `slot` at the front of `list`.
    pub fn push_front(&mut self, list: &mut List, slot: Slot) {
        self.nodes[slot as usize] = Node { prev: NO_SLOT, next: list.head };
        if list.head != NO_SLOT {
            self.nodes[list.head as usize].prev = slot;
        } else {
            list.tail = slot;
        }
        list.head = slot;
        list.len += 1;
    }

    /// Take `slot` off `list`; it must be on it.
    pub fn unlink(&mut self, list: &mut List, slot: Slot) {
        let Node { prev, next } = self.nodes[slot as usize];
        if prev != NO_SLOT {
            self.nodes[prev as usize].next = next;
        } else {
            debug_assert_eq!(list.head, slot, "slot is not on this list");
            list.head = next;
        }
        if next != NO_SLOT {
            self.nodes[next as usize].prev = prev;
        } else {
            debug_assert_eq!(list.tail, slot, "slot is not on this list");
            list.tail = prev;
        }
        self.nodes[slot as usize] = UNLINKED;
        list.len -= 1;
    }

    /// Remove and return the back (oldest) slot.
    pub fn pop_back(&mut self, list: &mut List) -> Option<Slot> {
        let tail = list.back()?;
        self.unlink(list, tail);
        Some(tail)
    }

    /// Move `slot`, which is on `list`, to its front.
    pub fn move_to_front(&mut self, list: &mut List, slot: Slot) {
        if list.head != slot {
            self.unlink(list, slot);
            self.push_front(list, slot);
        }
    }

    /// The slot after `slot` towards the back, if any.
    pub fn next(&self, slot: Slot) -> Option<Slot> {
        let n = self.nodes[slot as usize].next;
        (n != NO_SLOT).then_some(n)
    }

    /// The slot before `slot` towards the front, if any.
    pub fn prev(&self, slot: Slot) -> Option<Slot> {
        let p = self.nodes[slot as usize].prev;
        (p != NO_SLOT).then_some(p)
    }

    /// Slots of `list` from front to back (for tests and debugging).
    pub fn iter<'a>(&'a self, list: &List) -> impl Iterator<Item = Slot> + 'a {
        let mut at = list.head;
        std::iter::from_fn(move || {
            if at == NO_SLOT {
                return None;
            }
            let here = at;
            at = self.nodes[here as usize].next;
            Some(here)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_unlink_pop_keep_order() {
        let mut links = Links::with_slots(4);
        let mut list = List::new();
        for s in 0..4 {
            links.push_front(&mut list, s);
        }
        assert_eq!(links.iter(&list).collect::<Vec<_>>(), vec![3, 2, 1, 0]);
        links.unlink(&mut list, 2);
        links.move_to_front(&mut list, 0);
        assert_eq!(links.iter(&list).collect::<Vec<_>>(), vec![0, 3, 1]);
        assert_eq!(links.pop_back(&mut list), Some(1));
        assert_eq!(links.pop_back(&mut list), Some(3));
        assert_eq!(links.pop_back(&mut list), Some(0));
        assert_eq!(links.pop_back(&mut list), None);
        assert!(list.is_empty());
    }
}
