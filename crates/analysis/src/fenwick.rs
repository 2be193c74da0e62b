//! A Fenwick (binary indexed) tree: point updates and prefix sums in
//! O(log n), the counting structure behind exact stack distances.

/// Values a [`Fenwick`] tree can sum: unsigned integers with wrapping
/// arithmetic, so a decrement is just the addition of the two's complement
/// and partial sums never need to be signed.
pub trait Weight: Copy + Default + Eq + std::fmt::Debug {
    /// `self + other`, wrapping.
    fn plus(self, other: Self) -> Self;
    /// `self - other`, wrapping.
    fn minus(self, other: Self) -> Self;
    /// The weight as a u64.
    fn to_u64(self) -> u64;
}

impl Weight for u32 {
    #[inline]
    fn plus(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
    #[inline]
    fn minus(self, other: Self) -> Self {
        self.wrapping_sub(other)
    }
    #[inline]
    fn to_u64(self) -> u64 {
        u64::from(self)
    }
}

impl Weight for u64 {
    #[inline]
    fn plus(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
    #[inline]
    fn minus(self, other: Self) -> Self {
        self.wrapping_sub(other)
    }
    #[inline]
    fn to_u64(self) -> u64 {
        self
    }
}

/// Prefix sums over positions `0..len` of an array of weights.
#[derive(Clone, Debug, Default)]
pub struct Fenwick<W: Weight> {
    /// 1-based implicit tree: `tree[i]` sums `(i - lowbit(i), i]`.
    tree: Vec<W>,
}

impl<W: Weight> Fenwick<W> {
    /// A tree over `len` zero weights.
    pub fn new(len: usize) -> Self {
        Fenwick { tree: vec![W::default(); len + 1] }
    }

    /// A tree over the given weights, built in O(n).
    pub fn from_weights(weights: &[W]) -> Self {
        let mut tree = Vec::with_capacity(weights.len() + 1);
        tree.push(W::default());
        tree.extend_from_slice(weights);
        let n = weights.len();
        for i in 1..=n {
            let parent = i + (i & i.wrapping_neg());
            if parent <= n {
                tree[parent] = tree[parent].plus(tree[i]);
            }
        }
        Fenwick { tree }
    }

    /// Number of positions.
    pub fn len(&self) -> usize {
        self.tree.len() - 1
    }

    /// Whether the tree has no positions.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Add `w` at position `pos`.
    #[inline]
    pub fn add(&mut self, pos: usize, w: W) {
        let mut i = pos + 1;
        let n = self.tree.len();
        while i < n {
            self.tree[i] = self.tree[i].plus(w);
            i += i & i.wrapping_neg();
        }
    }

    /// Subtract `w` at position `pos`.
    #[inline]
    pub fn sub(&mut self, pos: usize, w: W) {
        let mut i = pos + 1;
        let n = self.tree.len();
        while i < n {
            self.tree[i] = self.tree[i].minus(w);
            i += i & i.wrapping_neg();
        }
    }

    /// Sum of positions `0..=pos`.
    #[inline]
    pub fn prefix_inclusive(&self, pos: usize) -> W {
        let mut i = pos + 1;
        let mut sum = W::default();
        while i > 0 {
            sum = sum.plus(self.tree[i]);
            i &= i - 1;
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_sums_match_a_plain_array() {
        let weights: Vec<u64> = (0..37).map(|i| (i * 7 % 5) as u64).collect();
        let mut f = Fenwick::from_weights(&weights);
        for pos in 0..weights.len() {
            assert_eq!(f.prefix_inclusive(pos), weights[..=pos].iter().sum::<u64>());
        }
        f.sub(3, weights[3]);
        f.add(30, 10);
        let mut w = weights.clone();
        w[3] = 0;
        w[30] += 10;
        for pos in 0..w.len() {
            assert_eq!(f.prefix_inclusive(pos), w[..=pos].iter().sum::<u64>());
        }
    }
}
