//! What a solver's plan says: the kernels of a solution in launch order, each named by its
//! manifest function, with grid, block, shared memory and cluster, the workspace, and for TMA
//! kernels the tensor maps the host encodes.

use super::NotApplicable;

/// Most kernels one solution launches.
pub const MAX_KERNELS: usize = 4;

/// One kernel launch of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelLaunch {
    /// The kernel: one of the solver's manifest `functions`.
    pub kernel: &'static str,
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
    /// Dynamic shared memory, bytes.
    pub shared_bytes: u32,
    /// Blocks per thread-block cluster along x (1: no clusters; CUDA sm_90 only, the grid a
    /// whole number of clusters).
    pub cluster: u32,
}

/// How a solution runs: its kernels in launch order, each receiving
/// `(x, w, y, KernelArgs)`, and the workspace it needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchPlan {
    /// Kernels, in order.
    pub kernels: heapless::Vec<KernelLaunch, MAX_KERNELS>,
    /// Workspace bytes the caller must provide.
    pub workspace_bytes: u64,
    /// Index in `kernels` of the launch a library's parameter builder describes (the library
    /// kernel among layout or padding kernels; unused by solvers without a builder).
    pub library: usize,
    /// Where the epilogue writes a global pool's partial sums ([`kiln_format::Fusion::pool`]);
    /// `None` for a solver that does not write them (it does not take such a problem).
    pub pool_partials: Option<PoolPartials>,
    /// Whether the kernels multiply x by a per-(image, channel) gate as they read it
    /// ([`kiln_format::Fusion::x_scale`]); a solver whose plan does not is not given such a
    /// problem.
    pub scales_x: bool,
}

/// How a convolution's epilogue lays out a global average pool's FP32 partial sums, so that
/// the pool's finishing kernel (`kiln_global_pool_finish`, in its strip mode) can end the mean:
/// each image's output is cut into `strips`, consecutive blocks of the kernel take `group`
/// strips of the whole batch each (a block may span images) and store one partial per
/// (image, block, channel) at `[(n * slots + block - first_block(n)) * K + k]`, where
/// `first_block(n) = n * strips / group`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolPartials {
    /// Strips of one image's output.
    pub strips: u32,
    /// Strips one block sums.
    pub group: u32,
}

impl PoolPartials {
    /// Slots an image has room for: the most blocks its strips can span.
    pub fn slots(&self) -> u32 {
        (self.strips - 1) / self.group + 2
    }

    /// The blocks whose partials image `n` sums: the first and the last.
    pub fn blocks_of(&self, n: u64) -> (u64, u64) {
        let (strips, group) = (u64::from(self.strips), u64::from(self.group));
        (n * strips / group, ((n + 1) * strips - 1) / group)
    }

    /// Bytes of the partials of `n` images of `k` channels.
    pub fn bytes(&self, n: u32, k: u32) -> u64 {
        u64::from(n) * u64::from(self.slots()) * u64::from(k) * 4
    }
}

impl LaunchPlan {
    /// A plan of one kernel with no shared memory or workspace.
    pub fn single(kernel: &'static str, grid: [u32; 3], block: [u32; 3]) -> LaunchPlan {
        LaunchPlan::single_with_shared(kernel, grid, block, 0)
    }

    /// A plan of one kernel with `shared_bytes` of dynamic shared memory and no workspace.
    pub fn single_with_shared(
        kernel: &'static str,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
    ) -> LaunchPlan {
        let mut kernels = heapless::Vec::new();
        // Capacity MAX_KERNELS >= 1.
        let _ = kernels.push(KernelLaunch {
            kernel,
            grid,
            block,
            shared_bytes,
            cluster: 1,
        });
        LaunchPlan {
            kernels,
            workspace_bytes: 0,
            library: 0,
            pool_partials: None,
            scales_x: false,
        }
    }

    /// Checks every launch against the grid and block limits both vendors share (grid x
    /// below 2^31, y and z at most 65,535; at most 1,024 threads a block; no empty dimension).
    pub fn within_launch_limits(&self) -> Result<(), NotApplicable> {
        for k in &self.kernels {
            if k.grid.contains(&0) || k.block.contains(&0) {
                return Err("a launch dimension is 0");
            }
            if k.grid[0] > i32::MAX as u32 || k.grid[1] > 65_535 || k.grid[2] > 65_535 {
                return Err("grid past the device limits (x < 2^31, y and z <= 65535)");
            }
            if k.block.iter().map(|&b| b as u64).product::<u64>() > 1024 {
                return Err("more than 1024 threads per block");
            }
        }
        Ok(())
    }
}

/// Which of the problem's tensors a TMA tensor map views.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmaOperand {
    /// The input.
    X,
    /// The filter.
    W,
    /// The input's packed copy in the workspace ([`Packing`]).
    PackedX,
    /// The filter's packed copy in the workspace.
    PackedW,
}

/// Where a kernel packs its operands in the workspace, and how (`x_packed`, `w_packed`,
/// `row_flags`, `row_elems`, `lead` of `KilnTmaConvParams`): the first-layer kernels pack x
/// and w, the grouped kernel w alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packing {
    /// Byte offsets in the workspace of packed x, packed w and the per-input-row flags.
    pub offsets: [u64; 3],
    /// First layers: elements of one packed filter row (a multiple of 16).
    pub row_elems: i32,
    /// First layers: zero taps before the filter's first in a packed row.
    pub lead: i32,
}

/// One tensor map of a TMA kernel's argument: which tensor, and how it is viewed and loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TmaView {
    /// The tensor.
    pub operand: TmaOperand,
    /// Its extents and boxes.
    pub shape: crate::backend::TensorMapShape,
}

/// The argument of a kernel that takes host-built TMA tensor maps (`KilnTmaConvParams` in
/// `kernels/nv/wgmma_conv.cu`): two maps, y's address, three sizes and the geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TmaArguments {
    /// The maps, in the argument's order.
    pub views: [TmaView; 2],
    /// The kernel's `m, k, c`: GEMM rows, output channels, input channels.
    pub sizes: [i32; 3],
    /// Split-K slices (1: none).
    pub splits: i32,
    /// `out_h, out_w, filter_h, filter_w, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w`.
    pub geometry: [i32; 10],
    /// `out_d, filter_d, stride_d, pad_d, dil_d`: the depth of a 3-D convolution (a 2-D one's
    /// is `1, 1, 1, 0, 1`).
    pub depth: [i32; 5],
    /// `in_d, in_h, in_w`: the input's size (read by the first-layer and grouped kernels).
    pub input: [i32; 3],
    /// `group_in, group_out, group_tile_in`: one group's input and output channels, and the
    /// input channels one output tile reduces over (the grouped kernel, and the channel-padding
    /// kernel of the dense ones: the layer's channels and the padded count; 0 elsewhere).
    pub group_widths: [i32; 3],
    /// Kernels that pack operands into the workspace: where and how.
    pub packing: Option<Packing>,
    /// 32-bit words at the workspace's start to zero before each launch (stream-K's flags).
    pub zeroed_words: u32,
    /// The view of y and of the residual z for the kernel's TMA epilogue (`y_map`, `z_map`),
    /// where it has one; a launch whose y or z rows are not K elements apart goes without.
    pub epilogue_map: Option<crate::backend::TensorMapShape>,
}
