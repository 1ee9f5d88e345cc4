//! Timing device work with events: warm-up launches first, then each repeat bracketed by two
//! events on the same stream, reported as the median (robust to the occasional preempted
//! launch) with the minimum beside it.
//!
//! Two methods. [`time_gpu_only`] is the one benchmarks and tuning use: a CUDA graph of many
//! calls, replayed, so the window holds GPU work only (no host launch path between kernels).
//! [`time_device`] brackets single calls and so includes the host side of each launch; it is
//! what an application calling once per layer sees.

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

/// How [`time_gpu_only`] measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuMethod {
    /// A captured graph of the calls, replayed.
    Graph,
    /// The calls launched back to back between two events (no graph capture: HIP).
    BackToBack,
}

impl GpuMethod {
    /// How the method reads in a report.
    pub fn describe(self) -> &'static str {
        match self {
            GpuMethod::Graph => "CUDA graph of the calls, replayed; median per call",
            GpuMethod::BackToBack => {
                "calls launched back to back between two events; median per call"
            }
        }
    }
}

/// GPU-only time per call of `work`: `calls` calls (`work(stream, i)`, `i` counting calls so
/// inputs can rotate) captured into one graph, replayed once to warm up, then `replays` times
/// between two events; each replay's time / `calls` is one sample. Where graphs are not
/// available, `calls` calls are launched back to back instead, `replays` times.
pub fn time_gpu_only(
    device: &Device,
    calls: usize,
    replays: usize,
    mut work: impl FnMut(&Stream, usize) -> Result<(), RunError>,
) -> Result<(Timing, GpuMethod), RunError> {
    let calls = calls.max(1);
    let stream = device.create_stream()?;
    let graph = device.capture(&stream, |s| {
        for i in 0..calls {
            work(s, i)?;
        }
        Ok::<(), RunError>(())
    });
    let mut times = Vec::with_capacity(replays.max(1));
    let method = match graph {
        Ok(graph) => {
            graph.launch(&stream)?;
            for _ in 0..replays.max(1) {
                let start = device.record_event(&stream)?;
                graph.launch(&stream)?;
                let end = device.record_event(&stream)?;
                times.push(f64::from(start.elapsed_ms(&end)?) / calls as f64);
            }
            GpuMethod::Graph
        }
        Err(RunError::Backend(e)) if e.call == "begin_capture" => {
            for i in 0..calls {
                work(&stream, i)?;
            }
            for _ in 0..replays.max(1) {
                let start = device.record_event(&stream)?;
                for i in 0..calls {
                    work(&stream, i)?;
                }
                let end = device.record_event(&stream)?;
                times.push(f64::from(start.elapsed_ms(&end)?) / calls as f64);
            }
            GpuMethod::BackToBack
        }
        Err(e) => return Err(e),
    };
    Ok((summarize(times), method))
}

/// [`time_gpu_only`] with a graph length fitted to the work: 20 calls, or 2 when one call
/// takes over 2 ms (launch gaps are then negligible, and long graphs would take seconds).
/// One untimed call first measures it (and warms caches).
pub fn time_gpu_only_fitted(
    device: &Device,
    replays: usize,
    mut work: impl FnMut(&Stream, usize) -> Result<(), RunError>,
) -> Result<(Timing, GpuMethod), RunError> {
    let probe = time_device(device, 0, 1, |i| work(&Stream::default(), i))?;
    let calls = if probe.median_ms > 2.0 { 2 } else { 20 };
    time_gpu_only(device, calls, replays, work)
}

/// Bytes an [`L2Eviction`] writes: over twice the L2 of any GPU kiln targets (50 MiB on the
/// H100 and H200, 40 MiB on the A100), so none of what the work before it read is left there.
pub const L2_EVICTION_BYTES: u64 = 128 << 20;

/// A device buffer whose zeroing evicts L2, so that work timed after it finds its inputs and
/// weights in device memory, as a network's layers do (each reads what is not in L2 any more:
/// its weights, residuals written layers earlier), not in L2 as back-to-back replays of one
/// launch do.
pub struct L2Eviction {
    buffer: crate::backend::DeviceBuffer,
}

impl L2Eviction {
    /// Allocates the [`L2_EVICTION_BYTES`] it writes.
    pub fn new(device: &Device) -> Result<L2Eviction, RunError> {
        Ok(L2Eviction {
            buffer: device.alloc(L2_EVICTION_BYTES)?,
        })
    }

    /// Zeroes the buffer on `stream`.
    pub fn enqueue(&self, device: &Device, stream: &Stream) -> Result<(), RunError> {
        Ok(device.zero_async(&self.buffer, 0, L2_EVICTION_BYTES / 4, stream)?)
    }

    /// GPU-only time per call of `work` with L2 evicted before each call: [`time_gpu_only`]
    /// of ten (eviction, call) pairs less that of ten evictions alone. `work` must not overlap
    /// the eviction before it (no programmatic dependent launch).
    pub fn time_gpu_only(
        &self,
        device: &Device,
        replays: usize,
        mut work: impl FnMut(&Stream, usize) -> Result<(), RunError>,
    ) -> Result<Timing, RunError> {
        const CALLS: usize = 10;
        let (alone, _) = time_gpu_only(device, CALLS, replays, |s, _| self.enqueue(device, s))?;
        let (pairs, _) = time_gpu_only(device, CALLS, replays, |s, i| {
            self.enqueue(device, s)?;
            work(s, i)
        })?;
        Ok(Timing {
            median_ms: pairs.median_ms - alone.median_ms,
            min_ms: pairs.min_ms - alone.min_ms,
            repeats: pairs.repeats,
        })
    }
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
