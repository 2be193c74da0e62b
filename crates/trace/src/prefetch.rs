//! A cache-line prefetch hint for the per-block tables on the hot path.
//!
//! A replay knows the next request before it handles the current one, so a
//! table can start loading the line the next request will probe and have it
//! in cache by then. A plain load would do the same but holds up the CPU
//! until the line arrives; a prefetch does not.

/// Ask the CPU to start loading the cache line that holds `value` (a hint:
/// nothing waits for it, and on targets without one it does nothing).
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults and reads or
    // writes no memory the program sees, whatever the address (here that of
    // a live reference).
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(value as *const T as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
