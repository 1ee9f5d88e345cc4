//! `ConvDirectDepthwiseFwd` (`kernels/conv_grouped.cpp` built with `KILN_DW_S`): depthwise 2-D convolution in NHWC
//! (C = K = groups) on CUDA cores, each thread computing a patch of `ph` output rows by `pw`
//! consecutive output pixels for `vec` consecutive channels, with the (square) filter size and
//! stride compiled in so that each input pixel the patch reads is loaded once per thread and
//! several rows' loads are in flight together. NVIDIA archs (manifest).
//! Perf config: `vec,threads_x,threads_y,pw,filter,stride,ph`.

use kiln_format::ConvProblem;

use super::params::{built_for_square_filter, tensor_bytes, tile_fill, values};
use super::{LaunchPlan, NotApplicable, TargetCaps, TunableSolver};

/// The solver's id.
pub const ID: &str = "ConvDirectDepthwiseFwd";

/// Shared memory the filter slice may take (the default per-block limit).
const MAX_SLICE_BYTES: u64 = 48 * 1024;

/// The depthwise NHWC direct solver.
pub struct DirectDepthwise;

/// A perf config, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    vec: u32,
    threads: [u32; 2],
    /// Output pixels per thread, along a row.
    pixels: u32,
    /// Filter width and horizontal stride the object is built for.
    filter_w: u32,
    stride_w: u32,
    /// Output rows per thread; above one, the vertical stride is `stride_w` too.
    rows: u32,
}

impl Config {
    fn parse(params: &str) -> Option<Config> {
        let &[vec, tx, ty, pixels, filter_w, stride_w, rows] = values(params).as_slice() else {
            return None;
        };
        [vec, tx, ty, pixels, filter_w, stride_w, rows]
            .iter()
            .all(|&v| v > 0)
            .then_some(Config {
                vec,
                threads: [tx, ty],
                pixels,
                filter_w,
                stride_w,
                rows,
            })
    }

    /// Channels one block covers.
    fn slice(&self) -> u32 {
        self.vec * self.threads[0]
    }

    /// Strips of `rows` x `pixels` output pixels, covering every image.
    fn strips(&self, p: &ConvProblem) -> u64 {
        let [_, oh, ow] = p.output();
        p.n() as u64
            * (oh as u64).div_ceil(self.rows as u64)
            * (ow as u64).div_ceil(self.pixels as u64)
    }
}

/// Blocks of the 1-D grid: strip groups x channel slices (slices vary fastest, so the blocks
/// that read the same input pixels run together).
fn grid_blocks(p: &ConvProblem, cfg: &Config) -> u64 {
    cfg.strips(p).div_ceil(cfg.threads[1] as u64) * (p.k() as u64).div_ceil(cfg.slice() as u64)
}

/// Shared memory of a block: the filter slice (taps x slice) and the slice's epilogue scale and
/// bias, as FP32.
fn slice_bytes(p: &ConvProblem, slice: u32) -> u64 {
    let [_, fh, fw] = p.filter();
    (fh as u64 * fw as u64 + 2) * slice as u64 * 4
}

impl TunableSolver for DirectDepthwise {
    type Config = Config;
    const CONFIG_FORM: &'static str =
        "perf config is not vec,threads_x,threads_y,pixels,filter,stride,rows";

    fn id(&self) -> &'static str {
        ID
    }

    /// The kernel waits on its predecessor at entry and releases its successor once a block's
    /// products are done, but kiln launches it in order: with programmatic dependent launch,
    /// MobileNetV2 and EfficientNet-B0 ran 7.4% and 4.5% slower at N=32 on an H200
    /// (benches/runs/2026-12-04-h200-depthwise-rows/, section H; released at entry, 6.5% and
    /// 2.7%: benches/runs/2026-12-04-h200-short-kernel-pdl/). Its release still lets the next
    /// convolution launch during its last wave.
    fn waits_on_predecessor(&self) -> bool {
        false
    }

    fn parse(&self, params: &str) -> Option<Config> {
        Config::parse(params)
    }

    fn applicable(&self, p: &ConvProblem, _: &TargetCaps) -> Result<(), NotApplicable> {
        if !p.is_depthwise() {
            return Err("not a depthwise convolution (C = K = groups)");
        }
        if p.spatial_dims() != 2 || !p.layouts()[0].channels_last() {
            return Err("needs 2-D NHWC tensors");
        }
        Ok(())
    }

    fn valid(&self, p: &ConvProblem, _: &TargetCaps, cfg: &Config) -> Result<(), NotApplicable> {
        built_for_square_filter(p, cfg.filter_w, cfg.stride_w)?;
        if cfg.rows > 1 && (p.stride()[1] != cfg.stride_w || p.dilation()[1] != 1) {
            return Err("a strip of several rows needs the vertical stride built in (undilated)");
        }
        if !p.c().is_multiple_of(cfg.vec) {
            return Err("C is not a multiple of the config's vector width");
        }
        if slice_bytes(p, cfg.slice()) > MAX_SLICE_BYTES {
            return Err(
                "the block's filter slice and factors do not fit in 48 KiB of shared memory",
            );
        }
        // The kernel indexes within a row, and rows of the output, in 32 bits; its 1-D grid
        // holds every (strip group, channel slice) pair.
        let [_, _, iw] = p.input();
        let [_, oh, _] = p.output();
        if iw as u64 * p.c() as u64 > i32::MAX as u64 || p.n() as u64 * oh as u64 > i32::MAX as u64
        {
            return Err("an input row or the output rows exceed 32-bit indexing");
        }
        if grid_blocks(p, cfg) > i32::MAX as u64 {
            return Err("more blocks than a 1-D grid holds");
        }
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, _: &TargetCaps, cfg: &Config) -> LaunchPlan {
        LaunchPlan::single_with_shared(
            "conv_depthwise_nhwc_fwd",
            // `valid` bounds the count.
            [grid_blocks(p, cfg).min(i32::MAX as u64) as u32, 1, 1],
            [cfg.threads[0], cfg.threads[1], 1],
            slice_bytes(p, cfg.slice()) as u32,
        )
    }

    fn estimate(&self, p: &ConvProblem, _: &TargetCaps, cfg: &Config) -> f64 {
        // Memory-bound at about 2.5 TB/s when the channels fill the slice; larger strips load
        // fewer pixels per output.
        let bytes = tensor_bytes(p);
        let fill = tile_fill(p.k() as f64, cfg.slice() as f64);
        let reuse = 1.0 + 0.5 / (cfg.pixels * cfg.rows) as f64;
        bytes * reuse / 2.5e9 / fill + 0.004
    }

    fn tile(&self, cfg: &Config) -> u64 {
        cfg.slice() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::Solver;
    use kiln_format::{ConvSpec, DataType, Layout};

    fn depthwise(c: u32, hw: u32, f: u32, stride: u32) -> ConvProblem {
        ConvProblem::new(ConvSpec {
            n: 32,
            c,
            k: c,
            groups: c,
            input: [1, hw, hw],
            filter: [1, f, f],
            pad: [0, f / 2, f / 2],
            stride: [1, stride, stride],
            layouts: [Layout::Nhwc; 3],
            data_types: [DataType::Fp16; 3],
            ..ConvSpec::default()
        })
        .unwrap()
    }

    #[test]
    fn applies_to_the_filter_width_and_stride_it_is_built_for() {
        let caps = crate::solvers::devices::h100();
        let s = &DirectDepthwise;
        // MobileNetV2's 144-channel 3x3 at 56x56.
        let p = depthwise(144, 56, 3, 1);
        assert!(s.check(&p, &caps, "8,8,16,4,3,1,1").is_ok());
        assert_eq!(
            s.check(&p, &caps, "8,8,16,2,3,2,1"),
            Err("built for another horizontal stride (or dilated)")
        );
        assert_eq!(
            s.check(&p, &caps, "8,8,16,2,5,1,1"),
            Err("built for another filter size (square filters)")
        );
        assert_eq!(
            s.check(&depthwise(36, 14, 3, 1), &caps, "8,8,16,4,3,1,1"),
            Err("C is not a multiple of the config's vector width")
        );
        let grouped = ConvProblem::new(ConvSpec {
            groups: 72,
            ..p.spec()
        })
        .unwrap();
        assert_eq!(
            s.check(&grouped, &caps, "8,8,16,4,3,1,1"),
            Err("not a depthwise convolution (C = K = groups)")
        );
        let grid =
            |q: &ConvProblem, params| s.launch_plan(q, &caps, params).unwrap().kernels[0].grid;
        let plan = s.launch_plan(&p, &caps, "8,8,16,4,3,1,1").unwrap();
        // 32 x 56 rows of 14 four-pixel strips, 16 strips a block, times 144 channels in three
        // 64-channel slices (one 1-D grid); 9 taps x 64 channels of FP32 filter, then the
        // slice's scale and bias.
        assert_eq!(plan.kernels[0].grid, [32 * 56 * 14 / 16 * 3, 1, 1]);
        assert_eq!(plan.kernels[0].block, [8, 16, 1]);
        assert_eq!(plan.kernels[0].shared_bytes, (9 + 2) * 64 * 4);
        // Stride 2: 28 output columns in strips of 2.
        let s2 = depthwise(144, 56, 3, 2);
        assert!(s.check(&s2, &caps, "8,8,16,2,3,2,1").is_ok());
        assert_eq!(grid(&s2, "8,8,16,2,3,2,1"), [32 * 28 * 14 / 16 * 3, 1, 1]);
        // Two output rows a strip: 28 row pairs of 14 four-pixel strips per image.
        assert_eq!(grid(&p, "8,8,16,4,3,1,2"), [32 * 28 * 14 / 16 * 3, 1, 1]);
        // Several rows a strip step down by the built-in stride: not a vertical stride of 2 on
        // a stride-1 object, nor a vertical dilation; one row a strip takes either.
        let tall_stride = ConvProblem::new(ConvSpec {
            stride: [1, 2, 1],
            ..p.spec()
        })
        .unwrap();
        let dilated = ConvProblem::new(ConvSpec {
            dilation: [1, 2, 1],
            pad: [0, 2, 1],
            ..p.spec()
        })
        .unwrap();
        for q in [&tall_stride, &dilated] {
            assert_eq!(
                s.check(q, &caps, "8,8,16,4,3,1,2"),
                Err("a strip of several rows needs the vertical stride built in (undilated)")
            );
            assert!(s.check(q, &caps, "8,8,16,4,3,1,1").is_ok());
        }
        assert_eq!(
            s.check(&p, &caps, "8,8,16,4,3,1"),
            Err("perf config is not vec,threads_x,threads_y,pixels,filter,stride,rows")
        );
        // A row of more than 2^31 elements would overflow the kernel's 32-bit offsets.
        let wide = ConvProblem::new(ConvSpec {
            c: 1 << 16,
            k: 1 << 16,
            groups: 1 << 16,
            input: [1, 3, 1 << 15],
            ..p.spec()
        })
        .unwrap();
        assert_eq!(
            s.check(&wide, &caps, "8,8,16,4,3,1,1"),
            Err("an input row or the output rows exceed 32-bit indexing")
        );
    }
}
