//! Convolution problems and MIOpen's three serializations of them: the find-db key, the perf-db
//! key and the network config (the invoker-cache key). Keys are written into fixed-capacity
//! buffers so that building one never touches the heap.
//!
//! - `vocab`: direction, layout and data type, as keys spell them;
//! - this module: [`ConvSpec`] (what a caller describes), [`ConvProblem`] (validated) and its
//!   sizes;
//! - `keys`: the three key writers; `parse`: the two key parsers;
//! - `fusion`: the fused epilogue a problem may carry, and its key suffix.

use core::fmt;

mod fusion;
mod keys;
mod parse;
mod vocab;

pub use fusion::{Activation, Fusion};
pub use parse::parse_u32;
pub use vocab::{DataType, Direction, Layout, MathMode};

/// Why a key or a problem description was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProblemError {
    /// Which field (for keys: which `-`/`x` separated field) was wrong.
    pub field: &'static str,
    /// What was wrong with it.
    pub reason: &'static str,
    /// Index of the field in the key (0-based), when the error came from parsing a key.
    pub field_index: Option<usize>,
}

impl ProblemError {
    const fn new(field: &'static str, reason: &'static str) -> Self {
        ProblemError {
            field,
            reason,
            field_index: None,
        }
    }
    const fn at(field: &'static str, reason: &'static str, index: usize) -> Self {
        ProblemError {
            field,
            reason,
            field_index: Some(index),
        }
    }
}

impl fmt::Display for ProblemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.field_index {
            Some(i) => write!(f, "field {} ({}): {}", i + 1, self.field, self.reason),
            None => write!(f, "{}: {}", self.field, self.reason),
        }
    }
}

impl std::error::Error for ProblemError {}

/// A convolution described the way a caller sees it, before validation.
///
/// Sizes are given in forward terms whatever the direction: `x` is `n x c x [d x] h x w`,
/// the filter `k x c/groups x [fd x] fy x fx`, the output is computed. Depth fields are
/// ignored for 2-D problems.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvSpec {
    /// 2 or 3.
    pub spatial_dims: u8,
    /// Batch size.
    pub n: u32,
    /// Input channels (of x).
    pub c: u32,
    /// Output channels (of y).
    pub k: u32,
    /// Input spatial size `[d, h, w]`.
    pub input: [u32; 3],
    /// Filter spatial size `[d, h, w]`.
    pub filter: [u32; 3],
    /// Zero padding `[d, h, w]`.
    pub pad: [u32; 3],
    /// Stride `[d, h, w]`.
    pub stride: [u32; 3],
    /// Dilation `[d, h, w]`.
    pub dilation: [u32; 3],
    /// Group count; `groups == c == k` is depthwise.
    pub groups: u32,
    /// Layout of x, w and y.
    pub layouts: [Layout; 3],
    /// Element types of x, w and y.
    pub data_types: [DataType; 3],
    /// Optional cast types of x, w and y (MIOpen's `_ci`, `_cw`, `_co`).
    pub cast_types: [Option<DataType>; 3],
    /// Direction.
    pub direction: Direction,
    /// MIOpen's bias flag (always 0 for convolutions in the shipped DBs).
    pub bias: u32,
    /// Whether FP32 data may be multiplied as TF32 (not part of any key).
    pub math: MathMode,
    /// The fused epilogue (forward only); [`Fusion::NONE`] for a plain convolution.
    pub fusion: Fusion,
}

impl Default for ConvSpec {
    fn default() -> Self {
        ConvSpec {
            spatial_dims: 2,
            n: 1,
            c: 1,
            k: 1,
            input: [1, 1, 1],
            filter: [1, 1, 1],
            pad: [0; 3],
            stride: [1; 3],
            dilation: [1; 3],
            groups: 1,
            layouts: [Layout::Nchw; 3],
            data_types: [DataType::Fp32; 3],
            cast_types: [None; 3],
            direction: Direction::Forward,
            bias: 0,
            math: MathMode::Default,
            fusion: Fusion::NONE,
        }
    }
}

/// Most elements one tensor of a problem may have (2^48: more than any device holds, and
/// small enough that every count and byte size is an exact u64).
pub const MAX_TENSOR_ELEMENTS: u64 = 1 << 48;

/// Largest value any size field may take. Keeps element counts and keys bounded.
pub const MAX_DIM: u32 = 1 << 24;

/// The integer fields of a perf-db key, in order: the `config` table's columns as MIOpen's
/// `sqlite2txt` joins them (the layout, data type and direction follow).
pub const PERF_KEY_INT_FIELDS: [&str; 21] = [
    "spatial_dim",
    "in_channels",
    "in_h",
    "in_w",
    "in_d",
    "fil_h",
    "fil_w",
    "fil_d",
    "out_channels",
    "batchsize",
    "pad_h",
    "pad_w",
    "pad_d",
    "conv_stride_h",
    "conv_stride_w",
    "conv_stride_d",
    "dilation_h",
    "dilation_w",
    "dilation_d",
    "bias",
    "group_count",
];

/// A validated convolution problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConvProblem {
    spatial_dims: u8,
    n: u32,
    c: u32,
    k: u32,
    input: [u32; 3],
    filter: [u32; 3],
    output: [u32; 3],
    pad: [u32; 3],
    stride: [u32; 3],
    dilation: [u32; 3],
    groups: u32,
    layouts: [Layout; 3],
    data_types: [DataType; 3],
    cast_types: [Option<DataType>; 3],
    direction: Direction,
    bias: u32,
    math: MathMode,
    fusion: Fusion,
}

fn out_size(input: u32, filter: u32, pad: u32, stride: u32, dilation: u32) -> Option<u32> {
    let span = (dilation as u64) * (filter as u64 - 1) + 1;
    let padded = input as u64 + 2 * pad as u64;
    if padded < span {
        return None;
    }
    u32::try_from((padded - span) / stride as u64 + 1).ok()
}

impl ConvProblem {
    /// Validates a spec: sizes positive and bounded, channels divisible by groups, layouts
    /// matching the spatial dimensions, and a non-empty output.
    pub fn new(spec: ConvSpec) -> Result<Self, ProblemError> {
        let dims = spec.spatial_dims;
        if dims != 2 && dims != 3 {
            return Err(ProblemError::new("spatial_dims", "must be 2 or 3"));
        }
        let positive = |v: u32, field: &'static str| {
            if v == 0 {
                Err(ProblemError::new(field, "must be positive"))
            } else if v > MAX_DIM {
                Err(ProblemError::new(field, "too large (limit 2^24)"))
            } else {
                Ok(())
            }
        };
        positive(spec.n, "n")?;
        positive(spec.c, "c")?;
        positive(spec.k, "k")?;
        positive(spec.groups, "groups")?;
        let first = if dims == 3 { 0 } else { 1 };
        let mut input = [1u32; 3];
        let mut filter = [1u32; 3];
        let mut pad = [0u32; 3];
        let mut stride = [1u32; 3];
        let mut dilation = [1u32; 3];
        let mut output = [1u32; 3];
        const NAMES: [[&str; 5]; 3] = [
            ["in_d", "fil_d", "pad_d", "stride_d", "dilation_d"],
            ["in_h", "fil_h", "pad_h", "stride_h", "dilation_h"],
            ["in_w", "fil_w", "pad_w", "stride_w", "dilation_w"],
        ];
        for i in first..3 {
            let names = NAMES[i];
            positive(spec.input[i], names[0])?;
            positive(spec.filter[i], names[1])?;
            positive(spec.stride[i], names[3])?;
            positive(spec.dilation[i], names[4])?;
            if spec.pad[i] > MAX_DIM {
                return Err(ProblemError::new(names[2], "too large (limit 2^24)"));
            }
            input[i] = spec.input[i];
            filter[i] = spec.filter[i];
            pad[i] = spec.pad[i];
            stride[i] = spec.stride[i];
            dilation[i] = spec.dilation[i];
            output[i] = out_size(input[i], filter[i], pad[i], stride[i], dilation[i])
                .filter(|&o| o > 0)
                .ok_or(ProblemError::new(
                    names[1],
                    "dilated filter is larger than the padded input",
                ))?;
        }
        if !spec.c.is_multiple_of(spec.groups) {
            return Err(ProblemError::new(
                "groups",
                "must divide the input channels c",
            ));
        }
        if !spec.k.is_multiple_of(spec.groups) {
            return Err(ProblemError::new(
                "groups",
                "must divide the output channels k",
            ));
        }
        for (l, name) in spec
            .layouts
            .iter()
            .zip(["x layout", "w layout", "y layout"])
        {
            if l.spatial_dims() != dims {
                return Err(ProblemError::new(
                    name,
                    "layout does not match the number of spatial dimensions",
                ));
            }
        }
        if spec.bias > 1 {
            return Err(ProblemError::new("bias", "must be 0 or 1"));
        }
        if !spec.fusion.is_none() && spec.direction != Direction::Forward {
            return Err(ProblemError::new(
                "fusion",
                "an epilogue fuses into forward convolutions only",
            ));
        }
        spec.fusion
            .validate(spec.k, spec.layouts[2].channels_last())?;
        let problem = ConvProblem {
            spatial_dims: dims,
            n: spec.n,
            c: spec.c,
            k: spec.k,
            input,
            filter,
            output,
            pad,
            stride,
            dilation,
            groups: spec.groups,
            layouts: spec.layouts,
            data_types: spec.data_types,
            cast_types: spec.cast_types,
            direction: spec.direction,
            bias: spec.bias,
            math: spec.math,
            fusion: spec.fusion,
        };
        // Every size below is then a plain u64 product: tensors are capped at 2^48 elements
        // (2^50 bytes: no device holds more), so no count or byte size can wrap.
        for (count, field) in problem.exact_element_counts().iter().zip(["x", "w", "y"]) {
            if *count > MAX_TENSOR_ELEMENTS as u128 {
                return Err(ProblemError::new(
                    field,
                    "tensor has more than 2^48 elements",
                ));
            }
        }
        Ok(problem)
    }

    /// Element counts of x, w and y in 128-bit arithmetic (each dimension is below 2^24, so
    /// products of five need up to 120 bits).
    fn exact_element_counts(&self) -> [u128; 3] {
        let prod = |v: &[u32]| v.iter().fold(1u128, |a, &x| a * x as u128);
        let [i, f, o] = [self.input, self.filter, self.output];
        [
            prod(&[self.n, self.c, i[0], i[1], i[2]]),
            prod(&[self.k, self.group_channels(), f[0], f[1], f[2]]),
            prod(&[self.n, self.k, o[0], o[1], o[2]]),
        ]
    }

    /// The spec this problem was built from (depth fields normalised for 2-D).
    pub fn spec(&self) -> ConvSpec {
        ConvSpec {
            spatial_dims: self.spatial_dims,
            n: self.n,
            c: self.c,
            k: self.k,
            input: self.input,
            filter: self.filter,
            pad: self.pad,
            stride: self.stride,
            dilation: self.dilation,
            groups: self.groups,
            layouts: self.layouts,
            data_types: self.data_types,
            cast_types: self.cast_types,
            direction: self.direction,
            bias: self.bias,
            math: self.math,
            fusion: self.fusion,
        }
    }

    /// 2 or 3.
    pub fn spatial_dims(&self) -> u8 {
        self.spatial_dims
    }
    /// Batch size.
    pub fn n(&self) -> u32 {
        self.n
    }
    /// Input channels.
    pub fn c(&self) -> u32 {
        self.c
    }
    /// Output channels.
    pub fn k(&self) -> u32 {
        self.k
    }
    /// Input spatial size `[d, h, w]` (d = 1 for 2-D).
    pub fn input(&self) -> [u32; 3] {
        self.input
    }
    /// Filter spatial size `[d, h, w]`.
    pub fn filter(&self) -> [u32; 3] {
        self.filter
    }
    /// Output spatial size `[d, h, w]`.
    pub fn output(&self) -> [u32; 3] {
        self.output
    }
    /// Padding `[d, h, w]`.
    pub fn pad(&self) -> [u32; 3] {
        self.pad
    }
    /// Stride `[d, h, w]`.
    pub fn stride(&self) -> [u32; 3] {
        self.stride
    }
    /// Dilation `[d, h, w]`.
    pub fn dilation(&self) -> [u32; 3] {
        self.dilation
    }
    /// Group count.
    pub fn groups(&self) -> u32 {
        self.groups
    }
    /// Input channels per group: each filter's channel count (C for an ungrouped problem).
    pub fn group_channels(&self) -> u32 {
        self.c / self.groups.max(1)
    }
    /// Output channels per group (K for an ungrouped problem).
    pub fn group_outputs(&self) -> u32 {
        self.k / self.groups.max(1)
    }
    /// Layouts of x, w, y.
    pub fn layouts(&self) -> [Layout; 3] {
        self.layouts
    }
    /// Whether FP32 data may be multiplied as TF32.
    pub fn math(&self) -> MathMode {
        self.math
    }

    /// The problem with math mode `math` (same keys).
    pub fn with_math(mut self, math: MathMode) -> ConvProblem {
        self.math = math;
        self
    }

    /// Element types of x, w and y.
    pub fn data_types(&self) -> [DataType; 3] {
        self.data_types
    }
    /// Direction.
    pub fn direction(&self) -> Direction {
        self.direction
    }
    /// Whether this is a depthwise convolution (one input and one output channel per group).
    pub fn is_depthwise(&self) -> bool {
        self.groups > 1 && self.groups == self.c && self.groups == self.k
    }

    /// Element counts of x, w and y.
    pub fn element_counts(&self) -> [u64; 3] {
        // Exact: `new` refuses tensors above 2^48 elements.
        self.exact_element_counts().map(|c| c as u64)
    }

    /// The fused epilogue.
    pub fn fusion(&self) -> Fusion {
        self.fusion
    }

    /// The same convolution with another epilogue (checked as [`ConvProblem::new`] checks it).
    pub fn with_fusion(&self, fusion: Fusion) -> Result<ConvProblem, ProblemError> {
        ConvProblem::new(ConvSpec {
            fusion,
            ..self.spec()
        })
    }

    /// The plain convolution under the epilogue.
    pub fn without_fusion(&self) -> ConvProblem {
        ConvProblem {
            fusion: Fusion::NONE,
            ..*self
        }
    }

    /// The 2-D problem this 3-D one is, where its depth folds away, over the same buffers:
    /// - a filter one plane deep, stepping one plane at a time with no depth padding, convolves
    ///   each depth plane alone: the 2-D problem over a batch of N x D images (channels-last
    ///   only: NCDHW keeps the channels between the batch and the depth);
    /// - a filter 1x1 across, unpadded and unstrided across, convolves along depth alone: the
    ///   2-D problem over N images of D rows of H x W pixels, with a kd x 1 filter.
    ///
    /// Both hold for a 1x1x1 filter of stride 1; the first is taken. `None` for a 2-D problem,
    /// a 3-D one with neither shape, or one whose folded size passes [`MAX_DIM`].
    pub fn as_2d(&self) -> Option<ConvProblem> {
        if self.spatial_dims != 3 {
            return None;
        }
        let [d, h, w] = self.input;
        let planes = self.filter[0] == 1 && self.pad[0] == 0 && self.stride[0] == 1;
        let columns = self.filter[1] == 1
            && self.filter[2] == 1
            && self.pad[1..] == [0, 0]
            && self.stride[1..] == [1, 1];
        let flat = |l: Layout| match l {
            Layout::Ndhwc => Layout::Nhwc,
            _ => Layout::Nchw,
        };
        let spec = if planes && self.layouts.iter().all(|l| l.channels_last()) {
            ConvSpec {
                n: self.n.checked_mul(d)?,
                input: [1, h, w],
                filter: [1, self.filter[1], self.filter[2]],
                pad: [0, self.pad[1], self.pad[2]],
                stride: [1, self.stride[1], self.stride[2]],
                dilation: [1, self.dilation[1], self.dilation[2]],
                ..self.spec()
            }
        } else if columns {
            ConvSpec {
                input: [1, d, h.checked_mul(w)?],
                filter: [1, self.filter[0], 1],
                pad: [0, self.pad[0], 0],
                stride: [1, self.stride[0], 1],
                dilation: [1, self.dilation[0], 1],
                ..self.spec()
            }
        } else {
            return None;
        };
        ConvProblem::new(ConvSpec {
            spatial_dims: 2,
            layouts: self.layouts.map(flat),
            ..spec
        })
        .ok()
    }

    /// Elements from y's first to its last, inclusive: the dense count, or with a channel
    /// slice, `(pixels - 1) * y_ld + k` (the caller adds the slice's channel offset).
    pub fn y_extent(&self) -> u64 {
        self.extent(self.fusion.y_stride(self.k))
    }

    /// The same for the residual z.
    pub fn z_extent(&self) -> u64 {
        self.extent(self.fusion.z_stride(self.k))
    }

    /// Elements an output-shaped tensor spans with pixels `stride` elements apart.
    fn extent(&self, stride: u32) -> u64 {
        let pixels = self.element_counts()[2] / self.k as u64;
        (pixels - 1) * stride as u64 + self.k as u64
    }

    /// Bytes of x, w and y in the problem's data types (below 2^51: exact).
    pub fn byte_counts(&self) -> [u64; 3] {
        let e = self.element_counts();
        core::array::from_fn(|i| e[i] * self.data_types[i].size_bytes() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REAL_KEYS: [&str; 5] = [
        // From gfx942130.HIP.fdb.txt and gfx90a68.HIP.fdb.txt (MIOpen 2d1fd99, MIT).
        "1008-14-14-1x1-192-14-14-16-0x0-1x1-1x1-0-NCHW-FP32-F",
        "1280-4-4-1x1-1280-4-4-30-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP32-F",
        "1-1-161-700-1x5x20-32-1-79-341-1-0x0x0-1x2x2-1x1x1-0-NCDHW-FP32-F",
        "1024-1-14-14-1x3x3-1024-1-14-14-1-0x1x1-1x1x1-1x1x1-0-NCDHW-FP16-F_g32",
        "128-14-14-5x5-32-14-14-1-2x2-1x1-1x1-0-NCHW-FP32-B",
    ];

    #[test]
    fn real_keys_round_trip() {
        for key in REAL_KEYS {
            let p = ConvProblem::from_find_db_key(key).unwrap_or_else(|e| panic!("{key}: {e}"));
            assert_eq!(p.find_db_key().as_str(), key);
        }
    }

    #[test]
    fn backward_swaps_sides() {
        // B key: leading C-H-W belong to dy. dy has 128 channels, dx 32.
        let p = ConvProblem::from_find_db_key("128-14-14-5x5-32-14-14-1-2x2-1x1-1x1-0-NCHW-FP32-B")
            .unwrap();
        assert_eq!((p.c(), p.k()), (32, 128));
        assert_eq!(
            p.perf_db_key().as_str(),
            "2x128x14x14x1x5x5x1x32x1x2x2x0x1x1x0x1x1x0x0x1xNCHWxFP32xB"
        );
    }

    #[test]
    fn perf_key_round_trip_forward() {
        let key = "2x960x8x8x1x1x1x1x960x8x0x0x0x1x1x0x1x1x0x0x1xNHWCxFP32xF";
        let p = ConvProblem::from_perf_db_key(key).unwrap();
        assert_eq!(p.perf_db_key().as_str(), key);
        assert_eq!(p.layouts(), [Layout::Nhwc; 3]);
    }

    #[test]
    fn network_config_matches_hand_built_example() {
        let p = ConvProblem::new(ConvSpec {
            n: 32,
            c: 64,
            k: 64,
            input: [1, 56, 56],
            filter: [1, 3, 3],
            pad: [0, 1, 1],
            ..ConvSpec::default()
        })
        .unwrap();
        assert_eq!(
            p.network_config().as_str(),
            "64x56x56x3x3x64x56x56x32xNCHWxFP32x1x1x1x1x1x1x1xFxDefault"
        );
        assert_eq!(
            p.find_db_key().as_str(),
            "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F"
        );
    }

    #[test]
    fn mixed_types_and_casts() {
        let key = "64-8-8-3x3-64-6-6-1-0x0-1x1-1x1-0-NCHW-INT8INT8INT32-F_g2_ciFP8";
        let p = ConvProblem::from_find_db_key(key).unwrap();
        assert_eq!(
            p.data_types(),
            [DataType::Int8, DataType::Int8, DataType::Int32]
        );
        assert_eq!(p.find_db_key().as_str(), key);
    }

    #[test]
    fn bad_keys_name_the_field() {
        let e = ConvProblem::from_find_db_key("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCWH-FP32-F")
            .unwrap_err();
        assert_eq!((e.field, e.field_index), ("layout", Some(12)));
        let e = ConvProblem::from_find_db_key("64-56-5a-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F")
            .unwrap_err();
        assert_eq!((e.field, e.field_index), ("in_w", Some(2)));
        let e = ConvProblem::from_find_db_key("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP33-F")
            .unwrap_err();
        assert_eq!(e.field, "data_type");
        let e = ConvProblem::from_find_db_key("64-56-56-3x3-64-55-56-32-1x1-1x1-1x1-0-NCHW-FP32-F")
            .unwrap_err();
        assert_eq!(e.field, "output size");
        let e = ConvProblem::from_find_db_key("64-56-56-3x3-64-56-56").unwrap_err();
        assert_eq!(e.field, "key");
    }

    #[test]
    fn fuzz_findings_stay_fixed() {
        // Non-canonical forms MIOpen never writes must not parse (they could not round-trip).
        for key in [
            "1008-14-14-1x1-192-14-14-16-0x0-1x1-1x1-0-NCHW-BF16BF16BF16-F",
            "1008-14-14-1x1-192-14-14-16-0x0-1x1-1x1-0-NCHW-NCHW-NCHW-FP32-F",
            "1-41-14-1x1-2-1-14-6-0x0-1x1-1x1-0-NCHW-INT64-\u{239}",
        ] {
            assert!(ConvProblem::from_find_db_key(key).is_err(), "{key}");
        }
        // A backward key whose x cannot be recovered by the plain inverse (stride 11, pad 3).
        let p = ConvProblem::from_find_db_key("80-1-1-4x1-1914-2-1-41-3x0-11x1-1x1-0-NCHW-FP32-W")
            .unwrap();
        let pk = p.perf_db_key();
        assert_eq!(
            ConvProblem::from_perf_db_key(pk.as_str())
                .unwrap()
                .perf_db_key(),
            pk
        );
        // dy of size 0 is an error, not an underflow.
        assert!(ConvProblem::from_perf_db_key(
            "2x1000x13x0x1x1x1x1x512x16x0x0x0x1x1x0x1x1x0x0x1xNCHWxFP16xB"
        )
        .is_err());
    }

    #[test]
    fn rejects_invalid_specs() {
        let base = ConvSpec {
            c: 6,
            k: 4,
            groups: 4,
            input: [1, 8, 8],
            ..ConvSpec::default()
        };
        assert_eq!(ConvProblem::new(base).unwrap_err().field, "groups");
        let big = ConvSpec {
            filter: [1, 9, 9],
            input: [1, 8, 8],
            ..ConvSpec::default()
        };
        assert_eq!(ConvProblem::new(big).unwrap_err().field, "fil_h");
        let bad = ConvSpec {
            layouts: [Layout::Ncdhw; 3],
            ..ConvSpec::default()
        };
        assert_eq!(ConvProblem::new(bad).unwrap_err().field, "x layout");
    }

    #[test]
    fn depth_folds_away_where_the_filter_spans_one_plane_or_one_pixel() {
        let fold = |key: &str| {
            ConvProblem::from_find_db_key(key)
                .unwrap()
                .as_2d()
                .map(|q| q.find_db_key().as_str().to_string())
        };
        // (2+1)-D's spatial half: each of the 32 x 16 depth planes is an image.
        assert_eq!(
            fold("64-16-56-56-1x3x3-144-16-28-28-32-0x1x1-1x2x2-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F")
                .as_deref(),
            Some("64-56-56-3x3-144-28-28-512-1x1-2x2-1x1-0-NHWC-NHWC-NHWC-FP16-F")
        );
        // Its temporal half: each volume is a 16 x 3136 image under a 3x1 filter.
        assert_eq!(
            fold("144-16-56-56-3x1x1-64-8-56-56-32-1x0x0-2x1x1-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F")
                .as_deref(),
            Some("144-16-3136-3x1-64-8-3136-32-1x0-2x1-1x1-0-NHWC-NHWC-NHWC-FP16-F")
        );
        // Channels first: only the temporal shape folds (a plane is not contiguous there).
        assert_eq!(
            fold("45-16-56-56-3x1x1-64-16-56-56-2-1x0x0-1x1x1-1x1x1-0-NCDHW-FP32-F").as_deref(),
            Some("45-16-3136-3x1-64-16-3136-2-1x0-1x1-1x1-0-NCHW-FP32-F")
        );
        assert_eq!(
            fold("64-16-56-56-1x3x3-64-16-56-56-2-0x1x1-1x1x1-1x1x1-0-NCDHW-FP32-F"),
            None
        );
        // A filter spanning depth and area, depth padding, or a depth stride do not fold.
        for key in [
            "64-16-56-56-3x3x3-64-16-56-56-32-1x1x1-1x1x1-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F",
            "64-16-56-56-1x3x3-64-18-56-56-32-1x1x1-1x1x1-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F",
            "64-16-56-56-1x1x1-128-8-28-28-32-0x0x0-2x2x2-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F",
            "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F",
        ] {
            assert_eq!(fold(key), None, "{key}");
        }
        // A folded batch past the size limit does not fold.
        assert_eq!(
            fold("8-4096-8-8-1x3x3-8-4096-8-8-8192-0x1x1-1x1x1-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F"),
            None
        );
    }
}
