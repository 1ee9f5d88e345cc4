//! Convolution problems and MIOpen's three serializations of them: the find-db key, the perf-db
//! key and the network config (the invoker-cache key). Keys are written into fixed-capacity
//! buffers so that building one never touches the heap.

use core::fmt;

use crate::keybuf::KeyBuf;

/// Direction of a convolution, as MIOpen's keys spell it (`F`, `B`, `W`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Forward: x, w -> y.
    Forward,
    /// Backward data: dy, w -> dx.
    BackwardData,
    /// Backward weights: dy, x -> dw.
    BackwardWeights,
}

impl Direction {
    /// The one-letter form used in every MIOpen key.
    pub const fn key(self) -> &'static str {
        match self {
            Direction::Forward => "F",
            Direction::BackwardData => "B",
            Direction::BackwardWeights => "W",
        }
    }

    /// Parses `F`, `B` or `W`.
    pub fn from_key(s: &str) -> Option<Self> {
        match s {
            "F" => Some(Direction::Forward),
            "B" => Some(Direction::BackwardData),
            "W" => Some(Direction::BackwardWeights),
            _ => None,
        }
    }

    /// MIOpenDriver's `-F` value (1 forward, 2 backward data, 4 backward weights).
    pub fn from_driver_flag(v: u32) -> Option<Self> {
        match v {
            1 => Some(Direction::Forward),
            2 => Some(Direction::BackwardData),
            4 => Some(Direction::BackwardWeights),
            _ => None,
        }
    }
}

/// Memory layout of one tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// 2-D, channels first.
    Nchw,
    /// 2-D, channels last.
    Nhwc,
    /// 3-D, channels first.
    Ncdhw,
    /// 3-D, channels last.
    Ndhwc,
}

impl Layout {
    /// All layouts kiln understands.
    pub const ALL: [Layout; 4] = [Layout::Nchw, Layout::Nhwc, Layout::Ncdhw, Layout::Ndhwc];

    /// MIOpen's name.
    pub const fn name(self) -> &'static str {
        match self {
            Layout::Nchw => "NCHW",
            Layout::Nhwc => "NHWC",
            Layout::Ncdhw => "NCDHW",
            Layout::Ndhwc => "NDHWC",
        }
    }

    /// Parses MIOpen's name (case-sensitive, as in the DB files).
    pub fn from_name(s: &str) -> Option<Self> {
        Layout::ALL.into_iter().find(|l| l.name() == s)
    }

    /// Number of spatial dimensions this layout describes.
    pub const fn spatial_dims(self) -> u8 {
        match self {
            Layout::Nchw | Layout::Nhwc => 2,
            Layout::Ncdhw | Layout::Ndhwc => 3,
        }
    }

    /// Whether channels are the innermost dimension.
    pub const fn channels_last(self) -> bool {
        matches!(self, Layout::Nhwc | Layout::Ndhwc)
    }

    /// The channels-first layout of `dims` spatial dimensions.
    pub const fn channels_first_for(dims: u8) -> Layout {
        if dims == 3 {
            Layout::Ncdhw
        } else {
            Layout::Nchw
        }
    }
}

/// Element type of one tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    /// 32-bit float.
    Fp32,
    /// IEEE half.
    Fp16,
    /// bfloat16.
    Bf16,
    /// 8-bit integer.
    Int8,
    /// 32-bit integer (INT8 convolution outputs).
    Int32,
    /// 64-bit float.
    Fp64,
    /// 8-bit float (e4m3).
    Fp8,
    /// 8-bit bfloat (e5m2).
    Bf8,
    /// 64-bit integer.
    Int64,
}

impl DataType {
    /// Every MIOpen data type name, longest-prefix-safe order for parsing concatenations.
    pub const ALL: [DataType; 9] = [
        DataType::Fp32,
        DataType::Fp16,
        DataType::Bf16,
        DataType::Int8,
        DataType::Int32,
        DataType::Fp64,
        DataType::Fp8,
        DataType::Bf8,
        DataType::Int64,
    ];

    /// MIOpen's name (`GetDataTypeName`).
    pub const fn name(self) -> &'static str {
        match self {
            DataType::Fp32 => "FP32",
            DataType::Fp16 => "FP16",
            DataType::Bf16 => "BF16",
            DataType::Int8 => "INT8",
            DataType::Int32 => "INT32",
            DataType::Fp64 => "FP64",
            DataType::Fp8 => "FP8",
            DataType::Bf8 => "BF8",
            DataType::Int64 => "INT64",
        }
    }

    /// Parses one MIOpen name.
    pub fn from_name(s: &str) -> Option<Self> {
        DataType::ALL.into_iter().find(|t| t.name() == s)
    }

    /// Size of one element in bytes.
    pub const fn size_bytes(self) -> usize {
        match self {
            DataType::Int8 | DataType::Fp8 | DataType::Bf8 => 1,
            DataType::Fp16 | DataType::Bf16 => 2,
            DataType::Fp32 | DataType::Int32 => 4,
            DataType::Fp64 | DataType::Int64 => 8,
        }
    }

    /// Parses a key's type field: one name, or three concatenated names that are not all the
    /// same (MIOpen writes a single name then, so that form would not round-trip).
    fn parse_key_field(s: &str) -> Option<[DataType; 3]> {
        match DataType::from_name(s) {
            Some(t) => Some([t; 3]),
            None => DataType::split_concat(s).filter(|t| !(t[0] == t[1] && t[1] == t[2])),
        }
    }

    /// Splits a concatenation such as `INT8INT8INT32` into its names.
    fn split_concat(s: &str) -> Option<[DataType; 3]> {
        let mut out = [DataType::Fp32; 3];
        let mut rest = s;
        for slot in out.iter_mut() {
            // The longest name that prefixes `rest` wins (INT32 before INT3..., FP32 before FP3...).
            let t = DataType::ALL
                .into_iter()
                .filter(|t| rest.starts_with(t.name()))
                .max_by_key(|t| t.name().len())?;
            *slot = t;
            rest = &rest[t.name().len()..];
        }
        rest.is_empty().then_some(out)
    }
}

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
        }
    }
}

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
        Ok(ConvProblem {
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
        })
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
    /// Layouts of x, w, y.
    pub fn layouts(&self) -> [Layout; 3] {
        self.layouts
    }
    /// Element types of x, w, y.
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
        // Each dimension is below 2^24, so a product of up to five of them needs 120 bits: it
        // is computed in u128 and saturates at u64::MAX, which no buffer can match and every
        // solver refuses (never a wrapped, small count).
        let prod = |v: &[u32]| {
            let p = v.iter().fold(1u128, |a, &x| a * x as u128);
            u64::try_from(p).unwrap_or(u64::MAX)
        };
        let [i, f, o] = [self.input, self.filter, self.output];
        [
            prod(&[self.n, self.c, i[0], i[1], i[2]]),
            prod(&[self.k, self.c / self.groups.max(1), f[0], f[1], f[2]]),
            prod(&[self.n, self.k, o[0], o[1], o[2]]),
        ]
    }

    /// Bytes of x, w and y in the problem's data types, saturating at `u64::MAX`.
    pub fn byte_counts(&self) -> [u64; 3] {
        let e = self.element_counts();
        core::array::from_fn(|i| e[i].saturating_mul(self.data_types[i].size_bytes() as u64))
    }

    /// MIOpen's "in" and "out" sides for keys: swapped for backward problems, where MIOpen's
    /// problem description is built from dy (B: `{dy, w, dx}`, W: `{dy, dw, x}`).
    fn key_sides(&self) -> KeySides {
        let fwd = self.direction == Direction::Forward;
        let (ic, ik) = if fwd {
            (self.c, self.k)
        } else {
            (self.k, self.c)
        };
        let (isp, osp) = if fwd {
            (self.input, self.output)
        } else {
            (self.output, self.input)
        };
        let (il, ol) = if fwd {
            (self.layouts[0], self.layouts[2])
        } else {
            (self.layouts[2], self.layouts[0])
        };
        let (it, ot) = if fwd {
            (self.data_types[0], self.data_types[2])
        } else {
            (self.data_types[2], self.data_types[0])
        };
        let (ict, oct) = if fwd {
            (self.cast_types[0], self.cast_types[2])
        } else {
            (self.cast_types[2], self.cast_types[0])
        };
        KeySides {
            in_channels: ic,
            out_channels: ik,
            in_spatial: isp,
            out_spatial: osp,
            layouts: [il, self.layouts[1], ol],
            types: [it, self.data_types[1], ot],
            casts: [ict, self.cast_types[1], oct],
        }
    }

    fn write_dhw(&self, out: &mut KeyBuf, sep: char, v: [u32; 3]) {
        if self.spatial_dims == 3 {
            out.push_u32(v[0]);
            out.push_char(sep);
        }
        out.push_u32(v[1]);
        out.push_char(sep);
        out.push_u32(v[2]);
    }

    fn write_layouts(out: &mut KeyBuf, sep: char, l: [Layout; 3]) {
        let all_default =
            l.iter().all(|&x| x == Layout::Nchw) || l.iter().all(|&x| x == Layout::Ncdhw);
        out.push_str(l[0].name());
        if !all_default {
            out.push_char(sep);
            out.push_str(l[1].name());
            out.push_char(sep);
            out.push_str(l[2].name());
        }
    }

    fn write_types(out: &mut KeyBuf, t: [DataType; 3]) {
        out.push_str(t[0].name());
        if !(t[0] == t[1] && t[1] == t[2]) {
            out.push_str(t[1].name());
            out.push_str(t[2].name());
        }
    }

    /// MIOpen's find-db key (`conv::ProblemDescription::Serialize`), e.g.
    /// `64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F`.
    pub fn find_db_key(&self) -> KeyBuf {
        let s = self.key_sides();
        let mut out = KeyBuf::new();
        out.push_u32(s.in_channels);
        out.push_char('-');
        self.write_dhw(&mut out, '-', s.in_spatial);
        out.push_char('-');
        self.write_dhw(&mut out, 'x', self.filter);
        out.push_char('-');
        out.push_u32(s.out_channels);
        out.push_char('-');
        self.write_dhw(&mut out, '-', s.out_spatial);
        out.push_char('-');
        out.push_u32(self.n);
        out.push_char('-');
        self.write_dhw(&mut out, 'x', self.pad);
        out.push_char('-');
        self.write_dhw(&mut out, 'x', self.stride);
        out.push_char('-');
        self.write_dhw(&mut out, 'x', self.dilation);
        out.push_char('-');
        out.push_u32(self.bias);
        out.push_char('-');
        Self::write_layouts(&mut out, '-', s.layouts);
        out.push_char('-');
        Self::write_types(&mut out, s.types);
        out.push_char('-');
        out.push_str(self.direction.key());
        if self.groups != 1 {
            out.push_str("_g");
            out.push_u32(self.groups);
        }
        for (cast, tag) in s.casts.iter().zip(["_ci", "_cw", "_co"]) {
            if let Some(t) = cast {
                out.push_str(tag);
                out.push_str(t.name());
            }
        }
        out
    }

    /// MIOpen's perf-db key (`DbRecord::SerializeKey`, as `sqlite2txt` writes it), e.g.
    /// `2x64x56x56x1x3x3x1x64x32x1x1x0x1x1x0x1x1x0x0x1xNCHWxFP32xF`.
    pub fn perf_db_key(&self) -> KeyBuf {
        let s = self.key_sides();
        let three = self.spatial_dims == 3;
        let mut out = KeyBuf::new();
        let field = |out: &mut KeyBuf, v: u32| {
            if !out.is_empty() {
                out.push_char('x');
            }
            out.push_u32(v);
        };
        field(&mut out, self.spatial_dims as u32);
        field(&mut out, s.in_channels);
        field(&mut out, s.in_spatial[1]);
        field(&mut out, s.in_spatial[2]);
        field(&mut out, s.in_spatial[0]);
        field(&mut out, self.filter[1]);
        field(&mut out, self.filter[2]);
        field(&mut out, self.filter[0]);
        field(&mut out, s.out_channels);
        field(&mut out, self.n);
        // 2-D problems carry 0 in every depth field that MIOpen reads through GetD3.
        let d = |v: u32| if three { v } else { 0 };
        field(&mut out, self.pad[1]);
        field(&mut out, self.pad[2]);
        field(&mut out, d(self.pad[0]));
        field(&mut out, self.stride[1]);
        field(&mut out, self.stride[2]);
        field(&mut out, d(self.stride[0]));
        field(&mut out, self.dilation[1]);
        field(&mut out, self.dilation[2]);
        field(&mut out, d(self.dilation[0]));
        field(&mut out, self.bias);
        field(&mut out, self.groups);
        out.push_char('x');
        out.push_str(s.layouts[0].name());
        out.push_char('x');
        Self::write_types(&mut out, s.types);
        out.push_char('x');
        out.push_str(self.direction.key());
        out
    }

    /// MIOpen's network config (`MakeNetworkConfig`), the invoker-cache key, e.g.
    /// `64x56x56x3x3x64x56x56x32xNCHWxFP32x1x1x1x1x1x1x1xFxDefault`.
    pub fn network_config(&self) -> KeyBuf {
        let s = self.key_sides();
        let mut out = KeyBuf::new();
        out.push_u32(s.in_channels);
        out.push_char('x');
        self.write_dhw(&mut out, 'x', s.in_spatial);
        out.push_char('x');
        self.write_dhw(&mut out, 'x', self.filter);
        out.push_char('x');
        out.push_u32(s.out_channels);
        out.push_char('x');
        self.write_dhw(&mut out, 'x', s.out_spatial);
        out.push_char('x');
        out.push_u32(self.n);
        out.push_char('x');
        Self::write_layouts(&mut out, 'x', s.layouts);
        out.push_char('x');
        Self::write_types(&mut out, s.types);
        if s.casts.iter().any(Option::is_some) {
            out.push_char('x');
            for (cast, tag) in s.casts.iter().zip(["ci", "cw", "co"]) {
                if let Some(t) = cast {
                    out.push_str(tag);
                    out.push_str(t.name());
                }
            }
        }
        out.push_char('x');
        self.write_dhw(&mut out, 'x', self.pad);
        out.push_char('x');
        self.write_dhw(&mut out, 'x', self.stride);
        out.push_char('x');
        self.write_dhw(&mut out, 'x', self.dilation);
        out.push_char('x');
        out.push_u32(self.groups);
        out.push_char('x');
        out.push_str(self.direction.key());
        out.push_str("xDefault");
        out
    }

    /// Parses a find-db key back into a problem. Inverse of [`ConvProblem::find_db_key`].
    pub fn from_find_db_key(key: &str) -> Result<Self, ProblemError> {
        let mut fields: heapless::Vec<&str, 24> = heapless::Vec::new();
        for f in key.split('-') {
            fields
                .push(f)
                .map_err(|_| ProblemError::new("key", "too many '-' separated fields"))?;
        }
        let count = fields.len();
        // 2-D: 15 fields (17 with three layouts); 3-D: 17 (19).
        let (dims, three_layouts) = match count {
            15 => (2u8, false),
            // Either 2-D with three layouts or 3-D with one: 2-D has its filter (`FyxFx`) at
            // index 3, where 3-D has the plain input width.
            17 if fields[3].contains('x') => (2, true),
            17 => (3, false),
            19 => (3, true),
            _ => {
                return Err(ProblemError::new(
                    "key",
                    "expected 15, 17 or 19 '-' separated fields",
                ))
            }
        };
        let mut i = 0usize;
        let num = |i: usize, name: &'static str| -> Result<u32, ProblemError> {
            parse_u32(fields[i]).ok_or(ProblemError::at(name, "not a decimal number", i))
        };
        let triple = |i: usize, name: &'static str| -> Result<[u32; 3], ProblemError> {
            let mut v = [0u32; 3];
            let parts = fields[i].split('x');
            let want = dims as usize;
            let mut n = 0;
            for p in parts {
                if n >= want {
                    return Err(ProblemError::at(name, "too many 'x' separated values", i));
                }
                v[3 - want + n] =
                    parse_u32(p).ok_or(ProblemError::at(name, "not a decimal number", i))?;
                n += 1;
            }
            if n != want {
                return Err(ProblemError::at(name, "too few 'x' separated values", i));
            }
            Ok(v)
        };
        let in_c = num(i, "in_channels")?;
        i += 1;
        let mut in_sp = [1u32; 3];
        if dims == 3 {
            in_sp[0] = num(i, "in_d")?;
            i += 1;
        }
        in_sp[1] = num(i, "in_h")?;
        in_sp[2] = num(i + 1, "in_w")?;
        i += 2;
        let filter = triple(i, "filter")?;
        i += 1;
        let out_c = num(i, "out_channels")?;
        i += 1;
        let mut out_sp = [1u32; 3];
        if dims == 3 {
            out_sp[0] = num(i, "out_d")?;
            i += 1;
        }
        out_sp[1] = num(i, "out_h")?;
        out_sp[2] = num(i + 1, "out_w")?;
        i += 2;
        let n = num(i, "batch")?;
        i += 1;
        let pad = triple(i, "pad")?;
        let stride = triple(i + 1, "stride")?;
        let dilation = triple(i + 2, "dilation")?;
        i += 3;
        let bias = num(i, "bias")?;
        i += 1;
        let layout = |i: usize| {
            Layout::from_name(fields[i]).ok_or(ProblemError::at("layout", "unknown layout", i))
        };
        let layouts = if three_layouts {
            let l = [layout(i)?, layout(i + 1)?, layout(i + 2)?];
            if l.iter().all(|&x| x == Layout::Nchw) || l.iter().all(|&x| x == Layout::Ncdhw) {
                return Err(ProblemError::at(
                    "layout",
                    "three NCHW/NCDHW tokens: MIOpen writes a single one",
                    i,
                ));
            }
            i += 3;
            l
        } else {
            let l = layout(i)?;
            if l.channels_last() {
                return Err(ProblemError::at(
                    "layout",
                    "a single layout token must be NCHW or NCDHW (MIOpen writes three otherwise)",
                    i,
                ));
            }
            i += 1;
            [l; 3]
        };
        let types = DataType::parse_key_field(fields[i]).ok_or(ProblemError::at(
            "data_type",
            "unknown data type (or three equal types, which MIOpen writes as one)",
            i,
        ))?;
        i += 1;
        let (direction, groups, casts) = parse_direction_suffix(fields[i]).map_err(|mut e| {
            e.field_index = Some(i);
            e
        })?;
        let fwd = direction == Direction::Forward;
        // Undo MIOpen's backward swap: its "in" side is dy for B and W.
        let (c, k, x_sp, y_sp) = if fwd {
            (in_c, out_c, in_sp, out_sp)
        } else {
            (out_c, in_c, out_sp, in_sp)
        };
        let swap3 = |a: [Layout; 3]| if fwd { a } else { [a[2], a[1], a[0]] };
        let swap3t = |a: [DataType; 3]| if fwd { a } else { [a[2], a[1], a[0]] };
        let swap3c = |a: [Option<DataType>; 3]| if fwd { a } else { [a[2], a[1], a[0]] };
        let spec = ConvSpec {
            spatial_dims: dims,
            n,
            c,
            k,
            input: x_sp,
            filter,
            pad,
            stride,
            dilation,
            groups,
            layouts: swap3(layouts),
            data_types: swap3t(types),
            cast_types: swap3c(casts),
            direction,
            bias,
        };
        let problem = ConvProblem::new(spec)?;
        if problem.output != y_sp {
            return Err(ProblemError::new(
                "output size",
                "does not follow from input, filter, pad, stride and dilation",
            ));
        }
        if problem.bias != bias {
            return Err(ProblemError::new("bias", "must be 0 or 1"));
        }
        Ok(problem)
    }

    /// Parses a perf-db text key (`2x...xNCHWxFP32xF`). The perf-db key carries one layout
    /// token (that of MIOpen's "in" tensor); it is applied to all three tensors.
    pub fn from_perf_db_key(key: &str) -> Result<Self, ProblemError> {
        let mut fields: heapless::Vec<&str, 24> = heapless::Vec::new();
        for f in key.split('x') {
            fields
                .push(f)
                .map_err(|_| ProblemError::new("key", "too many 'x' separated fields"))?;
        }
        if fields.len() != 24 {
            return Err(ProblemError::new("key", "expected 24 'x' separated fields"));
        }
        let mut v = [0u32; 21];
        for (idx, slot) in v.iter_mut().enumerate() {
            *slot = parse_u32(fields[idx]).ok_or(ProblemError::at(
                PERF_KEY_INT_FIELDS[idx],
                "not a decimal number",
                idx,
            ))?;
        }
        let dims = v[0];
        if dims != 2 && dims != 3 {
            return Err(ProblemError::at("spatial_dim", "must be 2 or 3", 0));
        }
        let dims = dims as u8;
        if dims == 2 {
            // Depth fields of 2-D rows: in_d = fil_d = 1, pad/stride/dilation_d = 0.
            for (idx, want) in [(4usize, 1u32), (7, 1), (12, 0), (15, 0), (18, 0)] {
                if v[idx] != want {
                    return Err(ProblemError::at(
                        PERF_KEY_INT_FIELDS[idx],
                        "unexpected depth value for a 2-D problem",
                        idx,
                    ));
                }
            }
        }
        let layout = Layout::from_name(fields[21]).ok_or(ProblemError::at(
            "layout",
            "unknown layout",
            21,
        ))?;
        let types = DataType::parse_key_field(fields[22]).ok_or(ProblemError::at(
            "data_type",
            "unknown data type (or three equal types, which MIOpen writes as one)",
            22,
        ))?;
        let direction = Direction::from_key(fields[23]).ok_or(ProblemError::at(
            "direction",
            "must be F, B or W",
            23,
        ))?;
        let fwd = direction == Direction::Forward;
        let in_sp = [if dims == 3 { v[4] } else { 1 }, v[2], v[3]];
        let (in_c, out_c) = (v[1], v[8]);
        let d3 = |x: u32, default: u32| if dims == 3 { x } else { default };
        let filter = [d3(v[7], 1), v[5], v[6]];
        let pad = [d3(v[12], 0), v[10], v[11]];
        let stride = [d3(v[15], 1), v[13], v[14]];
        let dilation = [d3(v[18], 1), v[16], v[17]];
        let types = if fwd {
            types
        } else {
            [types[2], types[1], types[0]]
        };
        // The "in" side is dy for backward problems: recover x's spatial size from dy's.
        let (c, k) = if fwd { (in_c, out_c) } else { (out_c, in_c) };
        let x_sp =
            if fwd {
                in_sp
            } else {
                let mut x = [1u32; 3];
                for i in 0..3 {
                    if dims == 2 && i == 0 {
                        continue;
                    }
                    // Smallest x whose forward output is dy (the usual inverse, exact for stride 1).
                    let dy = (in_sp[i] as u64)
                        .checked_sub(1)
                        .ok_or(ProblemError::new("in_h/in_w/in_d", "must be positive"))?;
                    let span = dilation[i] as u64 * (filter[i] as u64).saturating_sub(1) + 1;
                    let v = (dy * stride[i] as u64 + span)
                        .saturating_sub(2 * pad[i] as u64)
                        .max(1);
                    x[i] = u32::try_from(v).ok().filter(|&v| v <= MAX_DIM).ok_or(
                        ProblemError::new("in_h/in_w/in_d", "too large (limit 2^24)"),
                    )?;
                }
                x
            };
        let problem = ConvProblem::new(ConvSpec {
            spatial_dims: dims,
            n: v[9],
            c,
            k,
            input: x_sp,
            filter,
            pad,
            stride,
            dilation,
            groups: v[20],
            layouts: [layout; 3],
            data_types: types,
            cast_types: [None; 3],
            direction,
            bias: v[19],
        })?;
        // No x gives this dy (e.g. padding alone makes the output larger): not a real problem.
        if !fwd && problem.output != in_sp {
            return Err(ProblemError::new(
                "output size",
                "no input size gives this dy with this filter, pad and stride",
            ));
        }
        Ok(problem)
    }
}

struct KeySides {
    in_channels: u32,
    out_channels: u32,
    in_spatial: [u32; 3],
    out_spatial: [u32; 3],
    layouts: [Layout; 3],
    types: [DataType; 3],
    casts: [Option<DataType>; 3],
}

/// Parses `F`, `F_g32`, `B_g2_ciFP8`, ...
fn parse_direction_suffix(
    s: &str,
) -> Result<(Direction, u32, [Option<DataType>; 3]), ProblemError> {
    // The direction is one ASCII letter; anything else (even a multi-byte char) is an error.
    let (dir, mut rest) = if s.is_char_boundary(1) {
        s.split_at(1)
    } else {
        (s, "")
    };
    let direction =
        Direction::from_key(dir).ok_or(ProblemError::new("direction", "must be F, B or W"))?;
    let mut groups = 1;
    let mut casts = [None; 3];
    if let Some(r) = rest.strip_prefix("_g") {
        let end = r.find('_').unwrap_or(r.len());
        groups =
            parse_u32(&r[..end]).ok_or(ProblemError::new("group count", "not a decimal number"))?;
        if groups == 1 {
            return Err(ProblemError::new(
                "group count",
                "_g1 is never written by MIOpen",
            ));
        }
        rest = &r[end..];
    }
    for (slot, tag) in casts.iter_mut().zip(["_ci", "_cw", "_co"]) {
        if let Some(r) = rest.strip_prefix(tag) {
            let end = r.find('_').unwrap_or(r.len());
            *slot = Some(
                DataType::from_name(&r[..end])
                    .ok_or(ProblemError::new("cast type", "unknown data type"))?,
            );
            rest = &r[end..];
        }
    }
    if !rest.is_empty() {
        return Err(ProblemError::new(
            "direction",
            "unexpected text after the direction",
        ));
    }
    Ok((direction, groups, casts))
}

/// Strict decimal: digits only, no sign, no leading zeros (except "0"), fits in u32.
pub fn parse_u32(s: &str) -> Option<u32> {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 10 || (b.len() > 1 && b[0] == b'0') {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + (c - b'0') as u64;
    }
    u32::try_from(v).ok()
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
}
