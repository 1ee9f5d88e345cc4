//! Timing device work with events, the one way every kiln measurement is taken: warm-up
//! launches first, then each repeat bracketed by two events on the same stream, reported as
//! the median (robust to the occasional preempted launch) with the minimum beside it.

use crate::backend::{Device, Stream};
use crate::error::RunError;

/// Event-timed repeats of one piece of device work.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    /// Median of the repeats, ms.
    pub median_ms: f64,
    /// Fastest repeat, ms.
    pub min_ms: f64,
    /// Repeats timed (warm-ups excluded).
    pub repeats: usize,
}

/// Runs `work(i)` `warmup` times untimed, then `repeats` times each between two events on the
/// default stream; `i` counts every call, so callers can rotate inputs with it.
pub fn time_device(
    device: &Device,
    warmup: usize,
    repeats: usize,
    mut work: impl FnMut(usize) -> Result<(), RunError>,
) -> Result<Timing, RunError> {
    for i in 0..warmup {
        work(i)?;
    }
    let mut times = Vec::with_capacity(repeats.max(1));
    let stream = Stream::default();
    for i in 0..repeats.max(1) {
        let start = device.record_event(&stream)?;
        work(warmup + i)?;
        let end = device.record_event(&stream)?;
        times.push(f64::from(start.elapsed_ms(&end)?));
    }
    Ok(summarize(times))
}

/// Median and minimum of a set of times (NaN-free input; empty gives NaN).
pub fn summarize(mut times: Vec<f64>) -> Timing {
    times.sort_by(f64::total_cmp);
    Timing {
        median_ms: times.get(times.len() / 2).copied().unwrap_or(f64::NAN),
        min_ms: times.first().copied().unwrap_or(f64::NAN),
        repeats: times.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_min_of_unsorted_times() {
        let t = summarize(vec![3.0, 1.0, 9.0, 2.0, 5.0]);
        assert_eq!((t.median_ms, t.min_ms, t.repeats), (3.0, 1.0, 5));
        let t = summarize(vec![4.0, 2.0]);
        assert_eq!(t.median_ms, 4.0); // upper median of an even count
        assert!(summarize(Vec::new()).median_ms.is_nan());
    }
}
