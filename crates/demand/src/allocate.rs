//! Dividing a cache among volumes by predicted demand (seed 001, 3.4.3).
//!
//! When demand fits, each volume gets its demand and the rest (the spare)
//! is either shared out in proportion to demand or left idle so the flash
//! wears less. When demand exceeds the cache, shares are proportional to
//! demand. Shares are whole units (blocks); rounding gives the leftover
//! units to the largest remainders, so proportional shares always add up
//! to exactly the amount divided and no share is negative.

use std::fmt;
use std::str::FromStr;

/// What happens to capacity that predicted demand leaves unused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Spare {
    /// Shared out in proportion to demand (equally when nobody has demand).
    Proportional,
    /// Left unallocated: fewer flash writes, at some cost in hits.
    Idle,
}

impl Spare {
    /// Name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Spare::Proportional => "proportional",
            Spare::Idle => "idle",
        }
    }
}

impl fmt::Display for Spare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Spare {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "proportional" => Ok(Spare::Proportional),
            "idle" => Ok(Spare::Idle),
            _ => Err(format!("unknown spare policy {s:?}; expected proportional or idle")),
        }
    }
}

/// Shares of `capacity` for volumes with the given predicted `demands`
/// (all in the same unit), written into `shares`.
pub fn allocate(capacity: u64, demands: &[u64], spare: Spare, shares: &mut Vec<u64>) {
    let total: u128 = demands.iter().map(|&d| d as u128).sum();
    shares.clear();
    if total == 0 {
        match spare {
            Spare::Proportional => equal_shares(capacity, demands.len(), shares),
            Spare::Idle => shares.resize(demands.len(), 0),
        }
    } else if total <= capacity as u128 {
        match spare {
            Spare::Proportional => divide(capacity, demands, shares),
            Spare::Idle => shares.extend_from_slice(demands),
        }
    } else {
        divide(capacity, demands, shares);
    }
}

/// `capacity` split evenly among `volumes` (the warm-up allocation).
pub fn equal_shares(capacity: u64, volumes: usize, shares: &mut Vec<u64>) {
    shares.clear();
    if volumes == 0 {
        return;
    }
    let each = capacity / volumes as u64;
    let extra = (capacity % volumes as u64) as usize;
    shares.extend((0..volumes).map(|i| each + u64::from(i < extra)));
}

/// `amount` divided in proportion to `weights` (not all zero), largest
/// remainders first, ties to the lower index.
fn divide(amount: u64, weights: &[u64], shares: &mut Vec<u64>) {
    let total: u128 = weights.iter().map(|&w| w as u128).sum();
    let mut remainders: Vec<(u128, usize)> = Vec::with_capacity(weights.len());
    let mut given = 0u64;
    for (i, &w) in weights.iter().enumerate() {
        let exact = amount as u128 * w as u128;
        let share = (exact / total) as u64;
        shares.push(share);
        given += share;
        remainders.push((exact % total, i));
    }
    remainders.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, i) in remainders.iter().take((amount - given) as usize) {
        shares[i] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alloc(capacity: u64, demands: &[u64], spare: Spare) -> Vec<u64> {
        let mut shares = Vec::new();
        allocate(capacity, demands, spare, &mut shares);
        shares
    }

    #[test]
    fn undercommitted_gives_demand_and_shares_or_idles_the_spare() {
        assert_eq!(alloc(100, &[10, 30, 0], Spare::Idle), vec![10, 30, 0]);
        // Spare 60 in proportion 1:3: 15 and 45.
        assert_eq!(alloc(100, &[10, 30, 0], Spare::Proportional), vec![25, 75, 0]);
    }

    #[test]
    fn overcommitted_is_proportional_and_exact() {
        assert_eq!(alloc(2, &[5, 5, 5], Spare::Idle), vec![1, 1, 0]);
        let shares = alloc(1000, &[700, 200, 300], Spare::Proportional);
        assert_eq!(shares.iter().sum::<u64>(), 1000);
        assert_eq!(shares, vec![583, 167, 250]);
    }

    #[test]
    fn no_demand_at_all() {
        assert_eq!(alloc(10, &[0, 0, 0], Spare::Proportional), vec![4, 3, 3]);
        assert_eq!(alloc(10, &[0, 0], Spare::Idle), vec![0, 0]);
        assert_eq!(alloc(10, &[], Spare::Proportional), Vec::<u64>::new());
    }

    #[test]
    fn huge_values_do_not_overflow() {
        let shares = alloc(u64::MAX, &[u64::MAX, u64::MAX], Spare::Idle);
        assert_eq!(shares[0] as u128 + shares[1] as u128, u64::MAX as u128);
    }
}
