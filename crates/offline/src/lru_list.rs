//! An intrusive doubly-linked recency list over dense block ids: O(1)
//! touch, insert and evict without allocation per access.

use cloudcache_flash::NONE;

/// Blocks in recency order, most recent at the head.
#[derive(Clone, Debug)]
pub struct LruList {
    prev: Vec<u32>,
    next: Vec<u32>,
    member: Vec<bool>,
    head: u32,
    tail: u32,
    len: u32,
}

impl LruList {
    /// An empty list over ids `0..blocks`.
    pub fn new(blocks: u32) -> Self {
        LruList {
            prev: vec![NONE; blocks as usize],
            next: vec![NONE; blocks as usize],
            member: vec![false; blocks as usize],
            head: NONE,
            tail: NONE,
            len: 0,
        }
    }

    /// Blocks held.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `b` is held.
    pub fn contains(&self, b: u32) -> bool {
        self.member[b as usize]
    }

    /// Put `b` at the head (adding it if absent).
    pub fn touch(&mut self, b: u32) {
        if self.member[b as usize] {
            self.unlink(b);
        } else {
            self.member[b as usize] = true;
            self.len += 1;
        }
        self.prev[b as usize] = NONE;
        self.next[b as usize] = self.head;
        if self.head != NONE {
            self.prev[self.head as usize] = b;
        }
        self.head = b;
        if self.tail == NONE {
            self.tail = b;
        }
    }

    /// Remove `b` if held; true if it was.
    pub fn remove(&mut self, b: u32) -> bool {
        if !self.member[b as usize] {
            return false;
        }
        self.unlink(b);
        self.member[b as usize] = false;
        self.len -= 1;
        true
    }

    /// Remove and return the least recent block.
    pub fn pop_tail(&mut self) -> Option<u32> {
        let t = self.tail;
        (t != NONE).then(|| {
            self.remove(t);
            t
        })
    }

    fn unlink(&mut self, b: u32) {
        let (p, n) = (self.prev[b as usize], self.next[b as usize]);
        if p != NONE {
            self.next[p as usize] = n;
        } else {
            self.head = n;
        }
        if n != NONE {
            self.prev[n as usize] = p;
        } else {
            self.tail = p;
        }
    }
}
