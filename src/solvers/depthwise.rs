//! `ConvDirectDepthwiseFwd` (`kernels/conv_grouped.cpp` built with `KILN_DW_S`): depthwise 2-D convolution in NHWC
//! (C = K = groups) on CUDA cores, each thread computing a patch of `ph` output rows by `pw`
//! consecutive output pixels for `vec` consecutive channels, with the (square) filter size and
//! stride compiled in so that each input pixel the patch reads is loaded once per thread and
//! several rows' loads are in flight together. NVIDIA archs (manifest).
//! Perf config: `vec,threads_x,threads_y,pw,filter,stride,ph`.

use kiln_format::ConvProblem;

use super::params::{built_for_square_filter, tensor_bytes, tile_fill, values};
use super::{LaunchPlan, NotApplicable, PoolPartials, TargetCaps, TunableSolver};

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
        p.n() as u64 * self.image_strips(p)
    }

    /// Strips of one image.
    fn image_strips(&self, p: &ConvProblem) -> u64 {
        let [_, oh, ow] = p.output();
        (oh as u64).div_ceil(self.rows as u64) * (ow as u64).div_ceil(self.pixels as u64)
    }
}

/// Blocks of the 1-D grid: strip groups x channel slices (slices vary fastest, so the blocks
/// that read the same input pixels run together).
fn grid_blocks(p: &ConvProblem, cfg: &Config) -> u64 {
    cfg.strips(p).div_ceil(cfg.threads[1] as u64) * (p.k() as u64).div_ceil(cfg.slice() as u64)
}

/// Shared memory of a block: the filter slice (taps x slice) and the slice's epilogue scale and
/// bias, as FP32, and where the epilogue writes pool partial sums, every thread's sums (threads_y
/// x slice).
fn shared_bytes(p: &ConvProblem, cfg: &Config) -> u64 {
    let [_, fh, fw] = p.filter();
    let pool_rows = if p.fusion().pool {
        cfg.threads[1] as u64
    } else {
        0
    };
    (fh as u64 * fw as u64 + 2 + pool_rows) * cfg.slice() as u64 * 4
}

/// Where the kernel's epilogue writes a global pool's partial sums (`kiln_dw_pool_partials` in
/// `kernels/conv_grouped.cpp`): a block sums `threads_y` consecutive strips of the batch.
fn pool_partials(p: &ConvProblem, cfg: &Config) -> PoolPartials {
    PoolPartials {
        // Below 2^31: n * oh < 2^31 (checked in `valid`) and a strip holds at least one pixel.
        strips: cfg.image_strips(p).min(u32::MAX as u64) as u32,
        group: cfg.threads[1],
    }
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
        if shared_bytes(p, cfg) > MAX_SLICE_BYTES {
            return Err(
                "the block's filter slice and factors (and pool sums) do not fit in 48 KiB of shared memory",
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
        if p.fusion().pool && pool_partials(p, cfg).bytes(p.n(), p.k()) / 4 > i32::MAX as u64 {
            return Err("more pool partial sums than 32-bit indexing reaches");
        }
        Ok(())
    }

    fn plan(&self, p: &ConvProblem, _: &TargetCaps, cfg: &Config) -> LaunchPlan {
        let kernel = match p.fusion().pool {
            true => "conv_depthwise_nhwc_fwd_pool",
            false => "conv_depthwise_nhwc_fwd",
        };
        let mut plan = LaunchPlan::single_with_shared(
            kernel,
            // `valid` bounds the count.
            [grid_blocks(p, cfg).min(i32::MAX as u64) as u32, 1, 1],
            [cfg.threads[0], cfg.threads[1], 1],
            shared_bytes(p, cfg) as u32,
        );
        if p.fusion().pool {
            plan.pool_partials = Some(pool_partials(p, cfg));
        }
        plan
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
    use std::collections::HashMap;

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

    /// The kernel's pool partial sums, replayed on the CPU (`kiln_dw_pool_partials` in
    /// `kernels/conv_grouped.cpp`: which block stores which image's sum in which slot) against
    /// what the finishing kernel reads (`kiln_pool_strip_finish` in `kernels/ops.cpp`, through
    /// [`PoolPartials::blocks_of`]): every image's strips are summed exactly once, by the
    /// slots it reads, each slot written once and within the image's room.
    #[test]
    fn pool_partials_cover_each_image_once() {
        let caps = crate::solvers::devices::h100();
        let s = &DirectDepthwise;
        // EfficientNet-B0's layers and their configs at N = 1, 2 and 32 (7x7 maps: blocks that
        // span three images; 112x112: images that span 98 blocks), and ragged strips.
        let cases = [
            (32, 112, 3, 1, "8,4,32,2,3,1,2"),
            (96, 112, 3, 2, "8,4,32,2,3,2,1"),
            (144, 56, 5, 2, "8,4,32,2,5,2,1"),
            (480, 14, 3, 1, "8,4,32,2,3,1,2"),
            (1152, 7, 5, 1, "8,4,32,4,5,1,1"),
            (40, 15, 5, 1, "8,8,16,4,5,1,2"),
        ];
        for (c, hw, f, stride, params) in cases {
            for n in [1, 2, 5, 32] {
                let p = ConvProblem::new(ConvSpec {
                    n,
                    fusion: kiln_format::Fusion {
                        bias: true,
                        pool: true,
                        ..kiln_format::Fusion::NONE
                    },
                    ..depthwise(c, hw, f, stride).spec()
                })
                .unwrap();
                let plan = s.launch_plan(&p, &caps, params).unwrap();
                let l = plan.pool_partials.unwrap();
                let cfg = Config::parse(params).unwrap();
                assert_eq!(u64::from(l.strips) * u64::from(n), cfg.strips(&p));
                assert_eq!(
                    plan.kernels[0].shared_bytes as u64,
                    (f as u64 * f as u64 + 2 + cfg.threads[1] as u64) * cfg.slice() as u64 * 4
                );
                // The kernel: block g sums strips [g * group, ...) per image they lie in.
                let (strips, group) = (u64::from(l.strips), u64::from(l.group));
                let total = cfg.strips(&p);
                let mut written: HashMap<(u64, u64), (u64, u64)> = HashMap::new();
                for g in 0..total.div_ceil(group) {
                    let first = g * group;
                    let end = (first + group).min(total);
                    let n_first = first / strips;
                    for image in n_first..=(end - 1) / strips {
                        let lo = (image * strips).max(first);
                        let hi = ((image + 1) * strips).min(end);
                        let slot = g - image * strips / group;
                        assert!(slot < u64::from(l.slots()), "{params} n={n}: slot {slot}");
                        assert!(written.insert((image, slot), (lo, hi)).is_none());
                    }
                }
                // The finish: image m adds slots 0..=last - first, which cover its strips.
                let mut read = 0;
                for image in 0..u64::from(n) {
                    let (first, last) = l.blocks_of(image);
                    let mut next = image * strips;
                    for slot in 0..=last - first {
                        let (lo, hi) = written[&(image, slot)];
                        assert_eq!(lo, next, "{params} n={n} image {image} slot {slot}");
                        next = hi;
                        read += 1;
                    }
                    assert_eq!(next, (image + 1) * strips);
                }
                assert_eq!(read, written.len());
                assert_eq!(
                    l.bytes(n, c),
                    u64::from(n) * u64::from(l.slots()) * c as u64 * 4
                );
            }
        }
        // Without the fusion the plan has no partials and the shared memory is as before.
        let plain = depthwise(144, 56, 3, 1);
        let plan = s.launch_plan(&plain, &caps, "8,8,16,4,3,1,1").unwrap();
        assert_eq!(plan.pool_partials, None);
        assert_eq!(plan.kernels[0].shared_bytes, (9 + 2) * 64 * 4);
    }
}
