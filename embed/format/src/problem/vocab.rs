//! The vocabulary of MIOpen's problem keys: direction, tensor layout and element type, with
//! their key spellings.

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
    pub(super) fn parse_key_field(s: &str) -> Option<[DataType; 3]> {
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

/// How FP32 data may be multiplied (cuDNN's math type). Not part of any database key: MIOpen's
/// keys have no such field, so find-db and perf-db files stay valid. A solver whose manifest
/// entry says `math = "tf32"` is recorded under the FP32 key like any other and is ranked only
/// for problems that opted in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MathMode {
    /// The data type's own accuracy (FP32 stays FP32-accurate: FFMA or 3xTF32).
    #[default]
    Default,
    /// FP32 data may be multiplied as TF32 (10-bit mantissa, about 1e-3 relative error).
    AllowTf32,
}

impl MathMode {
    /// `default` or `tf32`, as the command line spells it.
    pub const fn name(self) -> &'static str {
        match self {
            MathMode::Default => "default",
            MathMode::AllowTf32 => "tf32",
        }
    }

    /// Parses [`MathMode::name`].
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "default" => Some(MathMode::Default),
            "tf32" => Some(MathMode::AllowTf32),
            _ => None,
        }
    }
}
