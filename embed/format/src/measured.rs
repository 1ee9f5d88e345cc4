//! The fallback for problems a find-db lacks: the nearest measured problem.
//!
//! At build time every find-db record of a target (with its perf-db configs) becomes a
//! [`MeasuredProblem`]: a class, a feature vector and the measured time and tuned perf config
//! of each solver. At run time a problem with no record takes the solver order and perf configs
//! of the measured problem closest to it in feature space. Problems of different classes (type,
//! layout, direction) are never neighbours: their solvers behave too differently to transfer.
//!
//! Everything here is evaluated on the stack: a linear scan of a static slice, no allocation.

use crate::problem::{ConvProblem, DataType, Direction, Layout};

/// Length of a feature vector.
pub const FEATURES: usize = 11;

/// Squared feature distance beyond which a measured problem no longer predicts another (four
/// doublings on one axis, or two on each of four). Chosen on the held-out evaluation of
/// `kiln-tools regret` (data/heuristic-regret.md): 4 to 16 are within 0.01 of each other at p90;
/// with no limit, dense problems end up ranking depthwise ones (worst regret 15.8).
pub const NEAR_DISTANCE: f32 = 16.0;

/// One solver as measured on one problem.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeasuredSolver<'a> {
    /// Solver id.
    pub solver: &'a str,
    /// Measured time, ms (the find-db's figure).
    pub time_ms: f32,
    /// Its tuned perf config from the perf-db ("" when it has none).
    pub params: &'a str,
}

/// A measured problem of a find-db, as the fallback sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeasuredProblem<'a> {
    /// Its find-db key (for messages: which measured problem a ranking came from).
    pub key: &'a str,
    /// [`class`] of the problem.
    pub class: u32,
    /// [`features`] of the problem.
    pub features: [f32; FEATURES],
    /// Multiply-accumulates of the problem (scales its times to another problem).
    pub macs: f64,
    /// Its solvers, fastest first.
    pub solvers: &'a [MeasuredSolver<'a>],
}

/// Problems of one class may be compared: same direction, data types and layout, both plain or
/// both fused (an epilogue's cost is the output's, not the product's: a plain problem's
/// fallback never takes a fused one's ranking, nor the reverse), and the same grouping: dense,
/// depthwise (one input channel a group) or grouped (several). Each grouping has kernels of its
/// own: a grouped layer ranked by a dense neighbour ran on the dense implicit GEMM (43x cuDNN
/// on one unseen layer), and one ranked by a depthwise neighbour never saw the grouped solvers.
pub fn class(p: &ConvProblem) -> u32 {
    let dir = match p.direction() {
        Direction::Forward => 0,
        Direction::BackwardData => 1,
        Direction::BackwardWeights => 2,
    };
    let dtype = DataType::ALL
        .iter()
        .position(|&d| d == p.data_types()[0])
        .unwrap_or(0) as u32;
    let layout = Layout::ALL
        .iter()
        .position(|&l| l == p.layouts()[0])
        .unwrap_or(0) as u32;
    let fused = !p.fusion().is_none() as u32;
    let grouping = match p.groups() {
        0 | 1 => 0,
        g if p.c() == g => 1,
        _ => 2,
    };
    dir | dtype << 2 | layout << 6 | fused << 9 | grouping << 10
}

fn log2(v: u64) -> f32 {
    (v.max(1) as f64).log2() as f32
}

/// Multiply-accumulates of `p`.
pub fn macs(p: &ConvProblem) -> f64 {
    let [_, w, y] = p.element_counts();
    y as f64 * (w as f64 / p.k().max(1) as f64)
}

/// The feature vector: sizes on a log2 scale (a problem twice as large is one step away, at
/// any size), so that Euclidean distance compares shapes. Grouped problems get their own
/// axis, weighted so that a grouped problem is never nearest to a dense one of the same sizes.
/// So do output channels that end mid-vector (a group's outputs short of 16 bytes' multiple:
/// 150, 230 or 255 FP16 channels): kernels store those element by element or not at all, so
/// their times transfer badly to aligned layers (a 150-channel neighbour ranked a 256-channel
/// video layer's solvers 1.8x off) and back.
pub fn features(p: &ConvProblem) -> [f32; FEATURES] {
    let product = |v: [u32; 3]| v.iter().map(|&x| x as u64).product::<u64>();
    let g = p.groups().max(1);
    let out = product(p.output());
    let output_bytes = p.group_outputs() as u64 * p.data_types()[2].size_bytes() as u64;
    [
        log2(p.n() as u64),
        log2(p.group_channels() as u64),
        log2(p.group_outputs() as u64),
        log2(out),
        log2(product(p.filter())),
        (p.stride().iter().copied().max().unwrap_or(1).max(1) - 1) as f32,
        if g > 1 { 2.0 } else { 0.0 },
        log2(g as u64),
        log2(p.n() as u64 * out),
        (macs(p).max(1.0)).log2() as f32,
        if output_bytes.is_multiple_of(16) {
            0.0
        } else {
            UNALIGNED_OUTPUT_WEIGHT
        },
    ]
}

/// The distance one axis of [`features`] puts between problems whose output channels fill
/// 16-byte vectors and those whose do not.
const UNALIGNED_OUTPUT_WEIGHT: f32 = 2.0;

/// Squared Euclidean distance of two feature vectors.
pub fn distance(a: &[f32; FEATURES], b: &[f32; FEATURES]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// The `K` measured problems of `p`'s class nearest to `p`, nearest first, with their squared
/// distances (ties keep model order). One pass over the model, on the stack.
pub fn nearest_k<'m, 'k, const K: usize>(
    model: &'m [MeasuredProblem<'k>],
    p: &ConvProblem,
) -> heapless::Vec<(&'m MeasuredProblem<'k>, f32), K> {
    let class = class(p);
    let f = features(p);
    let mut best: heapless::Vec<(&MeasuredProblem, f32), K> = heapless::Vec::new();
    for m in model {
        if m.class != class {
            continue;
        }
        let d = distance(&f, &m.features);
        if best.is_full() && best.last().is_none_or(|&(_, worst)| d >= worst) {
            continue;
        }
        let at = best
            .iter()
            .position(|&(_, bd)| d < bd)
            .unwrap_or(best.len());
        if best.is_full() {
            best.pop();
        }
        // Room was made above, so the insert cannot fail.
        let _ = best.insert(at, (m, d));
    }
    best
}

/// The measured problem of `p`'s class nearest to `p` among those whose record has `solver`,
/// with its distance: where a solver was measured, when the nearest problem overall could not
/// run it (a channel count its vector width does not divide, say).
pub fn nearest_with<'m, 'k>(
    model: &'m [MeasuredProblem<'k>],
    p: &ConvProblem,
    solver: &str,
) -> Option<(&'m MeasuredProblem<'k>, &'m MeasuredSolver<'k>, f32)> {
    let class = class(p);
    let f = features(p);
    let mut best: Option<(&MeasuredProblem, &MeasuredSolver, f32)> = None;
    for m in model.iter().filter(|m| m.class == class) {
        let Some(s) = m.solvers.iter().find(|s| s.solver == solver) else {
            continue;
        };
        let d = distance(&f, &m.features);
        if best.is_none_or(|(_, _, bd)| d < bd) {
            best = Some((m, s, d));
        }
    }
    best
}

/// The measured problem of `p`'s class nearest to `p`, with its squared distance.
pub fn nearest<'m, 'k>(
    model: &'m [MeasuredProblem<'k>],
    p: &ConvProblem,
) -> Option<(&'m MeasuredProblem<'k>, f32)> {
    nearest_k::<1>(model, p).first().copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::ConvSpec;

    fn conv(n: u32, c: u32, k: u32, hw: u32, f: u32, groups: u32, dtype: DataType) -> ConvProblem {
        ConvProblem::new(ConvSpec {
            n,
            c,
            k,
            groups,
            input: [1, hw, hw],
            filter: [1, f, f],
            pad: [0, f / 2, f / 2],
            data_types: [dtype; 3],
            ..ConvSpec::default()
        })
        .unwrap()
    }

    fn record(
        p: &ConvProblem,
        solvers: &'static [MeasuredSolver<'static>],
    ) -> MeasuredProblem<'static> {
        MeasuredProblem {
            key: "",
            class: class(p),
            features: features(p),
            macs: macs(p),
            solvers,
        }
    }

    #[test]
    fn nearest_stays_in_class_and_prefers_similar_shapes() {
        const S: &[MeasuredSolver] = &[MeasuredSolver {
            solver: "A",
            time_ms: 1.0,
            params: "",
        }];
        let model = [
            record(&conv(1, 64, 64, 56, 3, 1, DataType::Fp32), S),
            record(&conv(32, 64, 64, 56, 3, 1, DataType::Fp32), S),
            record(&conv(1, 256, 256, 14, 1, 1, DataType::Fp32), S),
            record(&conv(1, 64, 64, 56, 3, 64, DataType::Fp32), S),
            record(&conv(1, 64, 64, 56, 3, 1, DataType::Fp16), S),
            record(&conv(32, 512, 512, 7, 3, 32, DataType::Fp32), S),
        ];
        let at = |p: &ConvProblem| {
            let (m, _) = nearest(&model, p).unwrap();
            model.iter().position(|x| core::ptr::eq(x, m)).unwrap()
        };
        assert_eq!(at(&conv(2, 64, 64, 56, 3, 1, DataType::Fp32)), 0);
        assert_eq!(at(&conv(16, 64, 64, 56, 3, 1, DataType::Fp32)), 1);
        assert_eq!(at(&conv(1, 256, 512, 14, 1, 1, DataType::Fp32)), 2);
        // Depthwise -> depthwise.
        assert_eq!(at(&conv(1, 32, 32, 56, 3, 32, DataType::Fp32)), 3);
        // Only an FP16 record.
        assert_eq!(at(&conv(8, 64, 64, 28, 3, 1, DataType::Fp16)), 4);
        // Grouped (several channels a group) -> grouped, however far; never dense or
        // depthwise of the same sizes.
        assert_eq!(at(&conv(1, 64, 64, 56, 3, 4, DataType::Fp32)), 5);
        assert_ne!(
            class(&conv(1, 64, 64, 56, 3, 4, DataType::Fp32)),
            class(&conv(1, 64, 64, 56, 3, 64, DataType::Fp32))
        );
        // A class with no record has no neighbour.
        assert!(nearest(&model, &conv(1, 8, 8, 8, 3, 1, DataType::Bf16)).is_none());
        // The k nearest, in order, only of the class.
        let order: heapless::Vec<usize, 8> =
            nearest_k::<8>(&model, &conv(2, 64, 64, 56, 3, 1, DataType::Fp32))
                .iter()
                .map(|(m, _)| model.iter().position(|x| core::ptr::eq(x, *m)).unwrap())
                .collect();
        assert_eq!(order.as_slice(), [0, 1, 2]);
        let two = nearest_k::<2>(&model, &conv(2, 64, 64, 56, 3, 1, DataType::Fp32));
        assert_eq!(two.len(), 2);
        assert!(two[0].1 <= two[1].1);
    }

    #[test]
    fn features_are_scale_steps() {
        let a = features(&conv(1, 64, 64, 56, 3, 1, DataType::Fp32));
        let b = features(&conv(2, 64, 64, 56, 3, 1, DataType::Fp32));
        // Doubling the batch moves N, N*out and MACs by exactly one step each.
        assert_eq!(distance(&a, &b), 3.0);
    }
}
