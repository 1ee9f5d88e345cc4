//! The appliance's command line: what was typed (clap structs), and the domain values built
//! from it once ([`ProblemArgs::problem`], [`DeviceArgs::context`]).

use clap::{Args, Parser, Subcommand};
use kiln::format::text::excerpt;
use kiln::{ConvProblem, ConvSpec, DataType, Direction, Layout, MathMode};

/// What `--help` ends with: the environment and the exit codes.
pub const HELP_FOOTER: &str = "Environment:\n  KILN_LOG_LEVEL    off, error, warn (default), info, debug, trace, or MIOpen's 0-7\n  KILN_DEVICE       device when --device is not given (cuda:0, cuda://GPU-<uuid>, hip:0, hip://<uuid>)\n  KILN_HIP_LIBRARY  the HIP runtime to load (else libamdhip64.so.6, .so.5, .so)\n\nExit codes:\n  0 success   1 error   2 usage   3 no GPU or runtime found   4 no solution for the problem\n  5 selftest failed";

#[derive(Parser)]
#[command(
    name = "kiln",
    version,
    about = "GPU kernels and their tuning databases, baked into one binary (the workshop is kiln-tools)",
    after_help = HELP_FOOTER
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Embedded targets, per-table record counts, raw vs embedded bytes, provenance.
    Info(JsonArgs),
    /// GPU runtimes found (CUDA, HIP), their devices, and the embedded target each maps to.
    Devices(JsonArgs),
    /// Why a GPU is not usable here and what to do: device nodes and access to them, runtimes,
    /// devices, targets and driver versions.
    Doctor,
    /// Resolve a convolution problem: the find-db record, and kiln's plan with where each rank came from.
    Resolve(ResolveArgs),
    /// Run one problem on the GPU with random inputs, checked against a CPU reference (f64; on a large problem, a sample of its outputs).
    Run(RunArgs),
    /// Boot check: every embedded solver and perf config on a problem set, checked; non-zero exit on any failure.
    Selftest(SelftestArgs),
    /// Cold start inside one process: from a ready context to the first convolution's result, by phase.
    Coldstart(ColdstartArgs),
    /// The main job: every ResNet-50 conv layer through kiln (on a GPU: run and verify; without: resolve and verify code objects).
    Demo(DemoArgs),
    /// Run a whole network (weights from a safetensors file) on the GPU, as one captured graph.
    #[command(subcommand)]
    Net(NetCommand),
}

#[derive(Subcommand)]
pub enum NetCommand {
    /// Build a network for a batch size, run it once on the given or random input, time the
    /// captured forward pass (GPU-only) and write the output.
    Run(NetRunArgs),
    /// Resolve every convolution of a network on an embedded target, without a GPU: each
    /// node's fused problem and the solver kiln would run.
    Plan(NetPlanArgs),
    /// Print a network's definition in its text form (which plan and run take as a file).
    Show(NetShowArgs),
}

#[derive(Args)]
pub struct NetShowArgs {
    /// The network: resnet50, mobilenet_v2, efficientnet_b0, yolov8n, or a definition file.
    pub model: String,
}

#[derive(Args)]
pub struct NetPlanArgs {
    /// The network: resnet50, mobilenet_v2, efficientnet_b0, yolov8n, or a file holding a
    /// definition's text form (`kiln net show` prints one).
    pub model: String,
    /// Batch size.
    #[arg(long, default_value_t = 1)]
    pub batch: u32,
    /// Data type: FP16, BF16, FP32.
    #[arg(long = "type", default_value = "FP16")]
    pub dtype: String,
    /// Target basename or alias (default: every embedded target).
    #[arg(long)]
    pub target: Option<String>,
    /// Print only the distinct fused problems' find-db keys (a problem list for `kiln-tools find`),
    /// with the twins the runner may run where it folds a squeeze-and-excitation block.
    #[arg(long)]
    pub keys: bool,
    /// One line per target: how many convolutions resolved, from measurements or the cost
    /// model, and that every chosen code object is embedded and passes its checks.
    #[arg(long)]
    pub brief: bool,
}

#[derive(Args)]
pub struct NetRunArgs {
    /// The network: resnet50, mobilenet_v2, efficientnet_b0, yolov8n, or a file holding a
    /// definition's text form (`kiln net show` prints one).
    pub model: String,
    /// Weights: a safetensors file of the network's PyTorch state_dict (torchvision names);
    /// an embedded network (`KILN_MODELS`) uses its own without one.
    #[arg(long, conflicts_with = "random_weights")]
    pub weights: Option<std::path::PathBuf>,
    /// Seeded random weights instead of a file (He-initialised filters, batch norms near
    /// identity).
    #[arg(long)]
    pub random_weights: bool,
    /// Check the output against the network's CPU reference (f64, tensors rounded as the GPU
    /// stores them); fails when the largest difference passes the data type's tolerance.
    #[arg(long)]
    pub check: bool,
    /// Batch size.
    #[arg(long, default_value_t = 1)]
    pub batch: u32,
    /// Data type of activations and weights: FP16, BF16, FP32.
    #[arg(long = "type", default_value = "FP16")]
    pub dtype: String,
    /// Input: a `.npy` array (N x C x H x W, float32/16/64, as PyTorch and ONNX hold images),
    /// or raw NHWC values of the data type, batch x h x w x c (default: random in [-1, 1)).
    #[arg(long)]
    pub input: Option<std::path::PathBuf>,
    /// Write the output here: raw values of the data type, batch x c.
    #[arg(long)]
    pub output: Option<std::path::PathBuf>,
    /// Timed replays of the captured forward pass.
    #[arg(long, default_value_t = 50)]
    pub repeats: usize,
    /// List each convolution's solver too.
    #[arg(long)]
    pub verbose: bool,
    /// Time every launch alone too (GPU-only: a graph of ten launches of it, replayed 20
    /// times, median per launch) and list the slowest (with --verbose: every launch, in order).
    #[arg(long)]
    pub profile: bool,
    /// With --profile, time every launch two more ways: alone after a 128 MiB write that
    /// evicts L2 (so it finds nothing its replays left there), and in its place (graphs of the
    /// network's first launches, in order on one stream, each launch the difference its
    /// graph makes), to find where the network's graph spends more than its launches alone.
    #[arg(long, requires = "profile")]
    pub profile_in_place: bool,
    /// Launch every kernel in order, without programmatic dependent launch (on by default for
    /// the Hopper convolutions, see `kiln::net::NetOptions`).
    #[arg(long)]
    pub no_pdl: bool,
    /// Most streams the graph spreads independent branches over (1: every launch in order on
    /// one stream; see `kiln::net::NetOptions::lanes`).
    #[arg(long, default_value_t = kiln::net::DEFAULT_LANES)]
    pub lanes: usize,
    /// Run squeeze-and-excitation blocks as written: their pools read the depthwise output
    /// and their multiplies run alone (folded into the layers by default, see
    /// `kiln::net::NetOptions::fold_excitation`).
    #[arg(long)]
    pub unfolded_excitation: bool,
    /// Run each squeeze-and-excitation head (its pool, squeeze and excitation layers) as one
    /// kernel (`kiln::net::NetOptions::excitation_heads`; off by default: slower on an H100).
    #[arg(long)]
    pub excitation_heads: bool,
    /// Run each inverted residual's expansion with its depthwise layer as one kernel, the
    /// expanded tensor never stored (`kiln::net::NetOptions::fused_expansions`; off by default:
    /// slower at N=32 on an H100).
    #[arg(long)]
    pub fused_expansions: bool,
    #[command(flatten)]
    pub device: DeviceArgs,
}

#[derive(Args)]
pub struct ColdstartArgs {
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Open the context without its warm-up problem (the driver's and decoder's first-use
    /// costs then fall on the measured problem).
    #[arg(long)]
    pub no_warm_up: bool,
}

#[derive(Args)]
pub struct JsonArgs {
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct SelftestArgs {
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Check only these solvers (repeatable; default: every registered solver and the
    /// standalone operators, `operators`), e.g. to run
    /// the new ones under compute-sanitizer within its time.
    #[arg(long = "solver", value_name = "ID")]
    pub solvers: Vec<String>,
    /// Check these problems instead of the built-in set: problem lists, one find-db key per
    /// line, '#' comments (repeatable), e.g. a network's own layers; FP32 ones also with TF32.
    #[arg(long = "problems", value_name = "FILE")]
    pub problems: Vec<std::path::PathBuf>,
    #[command(flatten)]
    pub output: JsonArgs,
}

#[derive(Args)]
pub struct DeviceArgs {
    /// cuda:0, cuda://GPU-<uuid>, hip:0, hip://<uuid> (default: KILN_DEVICE, else the first GPU).
    #[arg(long)]
    pub device: Option<String>,
}

impl DeviceArgs {
    /// Opens the device (an error of exit class 3 when it cannot be found or opened) and its
    /// context.
    pub fn context(&self) -> Result<kiln::context::Context, Box<dyn std::error::Error>> {
        self.context_with(kiln::context::ContextOptions::default())
    }

    /// As [`DeviceArgs::context`], with `options`.
    pub fn context_with(
        &self,
        options: kiln::context::ContextOptions,
    ) -> Result<kiln::context::Context, Box<dyn std::error::Error>> {
        let device = kiln::harness::output::open_device(self.device.as_deref())?;
        Ok(kiln::context::Context::with_options(device, options)?)
    }
}

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub problem: ProblemArgs,
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Timed repeats.
    #[arg(long, default_value_t = 20)]
    pub repeats: usize,
}

#[derive(Args)]
pub struct DemoArgs {
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Batch size.
    #[arg(short = 'n', default_value_t = 1)]
    pub n: u32,
    /// FP32, FP16 or BF16.
    #[arg(long = "type", default_value = "FP32")]
    pub dtype: String,
    /// NCHW or NHWC.
    #[arg(long, default_value = "NCHW")]
    pub layout: String,
}

#[derive(Args)]
pub struct ResolveArgs {
    #[command(flatten)]
    pub problem: ProblemArgs,
    /// Target basename or alias (default: the only embedded target).
    #[arg(long)]
    pub target: Option<String>,
    /// After printing, resolve the problem this many more times and report the time and the
    /// heap allocations per resolve (the lookup path allocates none).
    #[arg(long, default_value_t = 0)]
    pub repeat: u32,
    /// Print one JSON document instead of text (with --repeat: the timing too).
    #[arg(long)]
    pub json: bool,
}

impl ResolveArgs {
    /// The problem: the key when one is given, else the flags; with the math mode.
    pub fn problem(&self) -> Result<ConvProblem, Box<dyn std::error::Error>> {
        self.problem.problem()
    }
}

/// A convolution problem: a key, or MIOpenDriver-style flags.
#[derive(Args)]
pub struct ProblemArgs {
    /// A find-db key (`64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F`); else use the flags
    /// (which a key excludes: it says everything they would). The line MIOpenDriver logs
    /// works too, pasted in place of the key (`[MIOpenDriver] convfp16 -n 32 -c 64 ... -F 1
    /// -t 1`): its problem flags become the key, its run options (`-t`, `-V`, `-i`, ...) are
    /// ignored, and kiln's own options may follow.
    pub key: Option<String>,
    /// Batch size.
    #[arg(short = 'n', default_value_t = 1, conflicts_with = "key")]
    n: u32,
    /// Input channels.
    #[arg(short = 'c', default_value_t = 1, conflicts_with = "key")]
    c: u32,
    /// Input height.
    #[arg(short = 'H', default_value_t = 1, conflicts_with = "key")]
    h: u32,
    /// Input width.
    #[arg(short = 'W', default_value_t = 1, conflicts_with = "key")]
    w: u32,
    /// Output channels.
    #[arg(short = 'k', default_value_t = 1, conflicts_with = "key")]
    k: u32,
    /// Filter height.
    #[arg(short = 'y', default_value_t = 1, conflicts_with = "key")]
    fy: u32,
    /// Filter width.
    #[arg(short = 'x', default_value_t = 1, conflicts_with = "key")]
    fx: u32,
    /// Padding height.
    #[arg(short = 'p', default_value_t = 0, conflicts_with = "key")]
    pad_h: u32,
    /// Padding width.
    #[arg(short = 'q', default_value_t = 0, conflicts_with = "key")]
    pad_w: u32,
    /// Stride height.
    #[arg(short = 'u', default_value_t = 1, conflicts_with = "key")]
    stride_h: u32,
    /// Stride width.
    #[arg(short = 'v', default_value_t = 1, conflicts_with = "key")]
    stride_w: u32,
    /// Dilation height.
    #[arg(short = 'l', default_value_t = 1, conflicts_with = "key")]
    dil_h: u32,
    /// Dilation width.
    #[arg(short = 'j', default_value_t = 1, conflicts_with = "key")]
    dil_w: u32,
    /// Group count.
    #[arg(short = 'g', default_value_t = 1, conflicts_with = "key")]
    groups: u32,
    /// Direction as MIOpenDriver's -F: 1 forward, 2 backward data, 4 backward weights.
    #[arg(short = 'F', default_value_t = 1, conflicts_with = "key")]
    direction: u32,
    /// Spatial dimensions (2 or 3).
    #[arg(long = "spatial_dim", default_value_t = 2, conflicts_with = "key")]
    spatial_dim: u8,
    /// Input depth (3-D).
    #[arg(long = "in_d", default_value_t = 1, conflicts_with = "key")]
    in_d: u32,
    /// Filter depth (3-D).
    #[arg(long = "fil_d", default_value_t = 1, conflicts_with = "key")]
    fil_d: u32,
    /// Padding depth (3-D).
    #[arg(long = "pad_d", default_value_t = 0, conflicts_with = "key")]
    pad_d: u32,
    /// Stride depth (3-D).
    #[arg(long = "conv_stride_d", default_value_t = 1, conflicts_with = "key")]
    stride_d: u32,
    /// Dilation depth (3-D).
    #[arg(long = "dilation_d", default_value_t = 1, conflicts_with = "key")]
    dil_d: u32,
    /// Layout of all tensors: NCHW, NHWC, NCDHW, NDHWC.
    #[arg(long, default_value = "NCHW", conflicts_with = "key")]
    layout: String,
    /// Data type: FP32, FP16, BF16, INT8.
    #[arg(long = "type", default_value = "FP32", conflicts_with = "key")]
    dtype: String,
    /// Math mode: default (each type's own accuracy) or tf32 (FP32 data may be multiplied as
    /// TF32, about 1e-3 relative error: cuDNN's allow-TF32). Not part of any key.
    #[arg(long, default_value = "default")]
    math: String,
}

impl ProblemArgs {
    /// The problem: the key when one is given, else the flags; with the math mode.
    pub fn problem(&self) -> Result<ConvProblem, Box<dyn std::error::Error>> {
        let math = MathMode::from_name(&self.math)
            .ok_or_else(|| format!("--math '{}': use default or tf32", excerpt(&self.math)))?;
        Ok(self.problem_of_key_or_flags()?.with_math(math))
    }

    fn problem_of_key_or_flags(&self) -> Result<ConvProblem, Box<dyn std::error::Error>> {
        match &self.key {
            Some(key) => {
                Ok(
                    ConvProblem::from_find_db_key(key).map_err(|e| kiln::Error::BadKey {
                        key: key.clone(),
                        source: e,
                    })?,
                )
            }
            None => problem_from_flags(self),
        }
    }
}

fn problem_from_flags(a: &ProblemArgs) -> Result<ConvProblem, Box<dyn std::error::Error>> {
    let layout = Layout::from_name(&a.layout).ok_or_else(|| {
        format!(
            "unknown layout '{}' (NCHW, NHWC, NCDHW, NDHWC)",
            excerpt(&a.layout)
        )
    })?;
    let dtype = DataType::from_name(&a.dtype).ok_or_else(|| {
        format!(
            "unknown data type '{}' (FP32, FP16, BF16, INT8)",
            excerpt(&a.dtype)
        )
    })?;
    let direction = Direction::from_driver_flag(a.direction).ok_or_else(|| {
        format!(
            "-F {}: use 1 (forward), 2 (backward data) or 4 (backward weights)",
            a.direction
        )
    })?;
    // Depth flags mean nothing for a 2-D problem: refused rather than silently ignored.
    if a.spatial_dim == 2 && (a.in_d, a.fil_d, a.pad_d, a.stride_d, a.dil_d) != (1, 1, 0, 1, 1) {
        return Err(
            "--in_d/--fil_d/--pad_d/--conv_stride_d/--dilation_d describe 3-D problems: add --spatial_dim 3"
                .into(),
        );
    }
    // One type for all tensors, as the shipped keys write INT8 convolutions too.
    let types = [dtype; 3];
    let spec = ConvSpec {
        spatial_dims: a.spatial_dim,
        n: a.n,
        c: a.c,
        k: a.k,
        input: [a.in_d, a.h, a.w],
        filter: [a.fil_d, a.fy, a.fx],
        pad: [a.pad_d, a.pad_h, a.pad_w],
        stride: [a.stride_d, a.stride_h, a.stride_w],
        dilation: [a.dil_d, a.dil_h, a.dil_w],
        groups: a.groups,
        layouts: [layout; 3],
        data_types: types,
        cast_types: [None; 3],
        direction,
        bias: 0,
        math: MathMode::Default,
        fusion: kiln::Fusion::NONE,
    };
    Ok(ConvProblem::new(spec)?)
}
