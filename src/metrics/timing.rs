//! A counter with a latency histogram, updated with relaxed atomic adds only.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the histogram buckets, in seconds. Requests through the front take from
/// well under a millisecond (reads) to minutes (a held `wait-ready-to-sign`).
pub const BUCKET_BOUNDS: [f64; 16] =
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0];

const fn bounds_in_nanos() -> [u64; BUCKET_BOUNDS.len()] {
    let mut nanos = [0; BUCKET_BOUNDS.len()];
    let mut i = 0;
    while i < nanos.len() {
        nanos[i] = (BUCKET_BOUNDS[i] * 1e9) as u64;
        i += 1;
    }
    nanos
}

const BOUNDS_NANOS: [u64; BUCKET_BOUNDS.len()] = bounds_in_nanos();

/// How many events happened, and how long they took.
///
/// `count` (the counter) and the buckets are separate atomics: the counter is what
/// `..._total` reports, the buckets give `..._bucket` and `..._count`. Each bucket holds the
/// observations of its own range only (one add per observation); the exposition sums them into
/// Prometheus' cumulative form.
#[derive(Debug, Default)]
pub struct Timing {
    count: AtomicU64,
    sum_nanos: AtomicU64,
    /// One per bound, plus one for observations above the largest bound.
    buckets: [AtomicU64; BUCKET_BOUNDS.len() + 1],
}

/// A consistent-enough copy of a [`Timing`] for the exposition.
#[derive(Debug, Clone, PartialEq)]
pub struct TimingSnapshot {
    pub count: u64,
    pub sum_seconds: f64,
    /// Cumulative: `cumulative[i]` observations were at most `BUCKET_BOUNDS[i]`; the last
    /// entry is every observation (`le="+Inf"`).
    pub cumulative: [u64; BUCKET_BOUNDS.len() + 1],
}

impl Timing {
    pub fn observe(&self, elapsed: Duration) {
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let bucket = BOUNDS_NANOS.partition_point(|&bound| bound < nanos);
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    pub fn snapshot(&self) -> TimingSnapshot {
        let mut cumulative = [0; BUCKET_BOUNDS.len() + 1];
        let mut running = 0;
        for (slot, bucket) in cumulative.iter_mut().zip(&self.buckets) {
            running += bucket.load(Ordering::Relaxed);
            *slot = running;
        }
        TimingSnapshot {
            count: self.count(),
            sum_seconds: self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9,
            cumulative,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_the_first_bucket_that_holds_them() {
        let timing = Timing::default();
        timing.observe(Duration::from_micros(500)); // ≤ 0.001
        timing.observe(Duration::from_millis(1)); // = 0.001, bounds are inclusive
        timing.observe(Duration::from_millis(7)); // ≤ 0.01
        timing.observe(Duration::from_secs(600)); // above every bound
        let snapshot = timing.snapshot();
        assert_eq!(snapshot.count, 4);
        assert_eq!(snapshot.cumulative[0], 2);
        assert_eq!(snapshot.cumulative[2], 2, "nothing between 1 ms and 5 ms");
        assert_eq!(snapshot.cumulative[3], 3);
        assert_eq!(snapshot.cumulative[BUCKET_BOUNDS.len() - 1], 3, "600 s is above 120 s");
        assert_eq!(snapshot.cumulative[BUCKET_BOUNDS.len()], 4);
        assert!((snapshot.sum_seconds - 600.0085).abs() < 1e-9, "{}", snapshot.sum_seconds);
    }
}
