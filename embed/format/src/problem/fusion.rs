//! A convolution's fused epilogue: `y = act(alpha * conv(x, w) * scale[k] + bias[k] + beta * z)`.
//!
//! What is fused (per-channel scale and bias, a residual z, the activation, and where y and z
//! sit in wider channels-last tensors) is part of the problem and of its keys; the values
//! (alpha, beta, the activation's parameter, the tensors themselves) are run-time arguments.
//!
//! The key scheme follows MIOpen's fusion plan. A plan there is a convolution followed by ops
//! (`miopenCreateOpBiasForward`, `miopenCreateOpActivationForward`,
//! `miopenCreateOpBatchNormInference`), and its find records are keyed by the convolution's
//! problem plus the ops. kiln writes the ops after the convolution's key, each behind a `+`, in
//! one fixed order: `+scale` (a batch norm's multiplier, where it could not fold into the
//! filter: `kiln::net` folds it there when the weights load), `+bias`, `+add` (the residual),
//! the activation's name (identity is not written), `+ld<N>` (y is a channel slice of a
//! tensor with N channels), `+zld<N>` (z likewise), `+pool` (the epilogue also sums y's
//! channels for a global average pool over y) and `+gate` (x is multiplied per image and
//! input channel before the convolution). MIOpen has no op like the last two: they stand for
//! the squeeze-and-excitation block around a depthwise layer, whose pool follows the layer and
//! whose gate multiplies the next layer's input. A plain convolution's keys are MIOpen's,
//! unchanged, e.g. `64-56-56-1x1-256-56-56-32-0x0-1x1-1x1-0-NHWC-FP16-F+scale+bias+add+relu`.

use super::ProblemError;
use crate::keybuf::KeyBuf;

/// The activation an epilogue ends with (`KILN_ACT_*` in `kernels/epilogue.h`; the
/// discriminant is the code the kernels receive).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Activation {
    /// `v`.
    #[default]
    Identity = 0,
    /// `max(v, 0)`.
    Relu = 1,
    /// `min(max(v, 0), p)`: ReLU6 with `p = 6`.
    ClippedRelu = 2,
    /// `v >= 0 ? v : p * v`.
    LeakyRelu = 3,
    /// `v * sigmoid(v)` (swish).
    Silu = 4,
    /// `1 / (1 + e^-v)`.
    Sigmoid = 5,
    /// `tanh(v)`.
    Tanh = 6,
    /// GELU, tanh form: `0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))`.
    GeluTanh = 7,
    /// `v * min(max(v + 3, 0), 6) / 6`.
    HardSwish = 8,
    /// `min(max(v + 3, 0), 6) / 6`.
    HardSigmoid = 9,
}

impl Activation {
    /// Every activation, in code order.
    pub const ALL: [Activation; 10] = [
        Activation::Identity,
        Activation::Relu,
        Activation::ClippedRelu,
        Activation::LeakyRelu,
        Activation::Silu,
        Activation::Sigmoid,
        Activation::Tanh,
        Activation::GeluTanh,
        Activation::HardSwish,
        Activation::HardSigmoid,
    ];

    /// The name keys and command lines use.
    pub const fn name(self) -> &'static str {
        match self {
            Activation::Identity => "identity",
            Activation::Relu => "relu",
            Activation::ClippedRelu => "clippedrelu",
            Activation::LeakyRelu => "leakyrelu",
            Activation::Silu => "silu",
            Activation::Sigmoid => "sigmoid",
            Activation::Tanh => "tanh",
            Activation::GeluTanh => "gelu",
            Activation::HardSwish => "hardswish",
            Activation::HardSigmoid => "hardsigmoid",
        }
    }

    /// The activation named `name` (as [`Activation::name`] writes it).
    pub fn parse(name: &str) -> Option<Activation> {
        Activation::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The code the kernels receive.
    pub const fn code(self) -> i32 {
        self as i32
    }

    /// The parameter PyTorch's module uses by default (ReLU6's ceiling, LeakyReLU's slope);
    /// 0 for activations without one.
    pub const fn default_param(self) -> f32 {
        match self {
            Activation::ClippedRelu => 6.0,
            Activation::LeakyRelu => 0.01,
            _ => 0.0,
        }
    }

    /// The activation in f64: the CPU reference kiln's checks compare against.
    pub fn apply(self, v: f64, param: f64) -> f64 {
        let sigmoid = |v: f64| 1.0 / (1.0 + (-v).exp());
        let clamp = |v: f64, lo: f64, hi: f64| {
            if v < lo {
                lo
            } else if v > hi {
                hi
            } else {
                v
            }
        };
        match self {
            Activation::Identity => v,
            Activation::Relu => {
                if v < 0.0 {
                    0.0
                } else {
                    v
                }
            }
            Activation::ClippedRelu => clamp(v, 0.0, param),
            Activation::LeakyRelu => {
                if v < 0.0 {
                    param * v
                } else {
                    v
                }
            }
            Activation::Silu => v * sigmoid(v),
            Activation::Sigmoid => sigmoid(v),
            Activation::Tanh => v.tanh(),
            Activation::GeluTanh => {
                let u = (2.0 / core::f64::consts::PI).sqrt() * (v + 0.044715 * v * v * v);
                0.5 * v * (1.0 + u.tanh())
            }
            Activation::HardSwish => v * clamp(v + 3.0, 0.0, 6.0) / 6.0,
            Activation::HardSigmoid => clamp(v + 3.0, 0.0, 6.0) / 6.0,
        }
    }
}

/// What a convolution's epilogue fuses. [`Fusion::NONE`] is a plain convolution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Fusion {
    /// A per-output-channel FP32 multiplier (a batch norm folded with its bias).
    pub scale: bool,
    /// A per-output-channel FP32 bias.
    pub bias: bool,
    /// A residual z of y's type and shape, added as `beta * z`.
    pub residual: bool,
    /// The activation applied last.
    pub activation: Activation,
    /// Channels of the channels-last tensor y is a slice of (elements from one pixel to the
    /// next); 0: y is dense (K).
    pub y_ld: u32,
    /// The same for z; 0: dense.
    pub z_ld: u32,
    /// The epilogue also sums each image's output channels (FP32, after the activation,
    /// before y's rounding) into partial sums that a global average pool's finishing kernel
    /// ends (`kiln::ops::OpKind::GlobalAveragePoolFinish`), so the pool does not read y
    /// again. Where the partials go is the solver's plan (`LaunchPlan::pool_partials`); a
    /// solver whose plan has none does not take the problem.
    pub pool: bool,
    /// x is multiplied, per image and input channel, by a gate `s[n][c]` of x's type before the
    /// convolution (each product rounded to x's type, as a separate multiply would store it):
    /// a squeeze-and-excitation block's channel multiply, folded into the layer that reads its
    /// output. Solvers whose plan does not say it scales x (`LaunchPlan::scales_x`) do not
    /// take the problem.
    pub x_scale: bool,
}

impl Fusion {
    /// No epilogue: a plain convolution.
    pub const NONE: Fusion = Fusion {
        scale: false,
        bias: false,
        residual: false,
        activation: Activation::Identity,
        y_ld: 0,
        z_ld: 0,
        pool: false,
        x_scale: false,
    };

    /// Whether nothing is fused.
    pub fn is_none(&self) -> bool {
        *self == Fusion::NONE
    }

    /// y's pixel stride in elements for `k` output channels.
    pub fn y_stride(&self, k: u32) -> u32 {
        dense_or(self.y_ld, k)
    }

    /// z's pixel stride in elements for `k` output channels.
    pub fn z_stride(&self, k: u32) -> u32 {
        dense_or(self.z_ld, k)
    }

    /// Checks the fusion against the problem it belongs to: slices only of channels-last
    /// tensors, at least `k` wide, in multiples of 8 channels (every kernel's vector stores
    /// stay aligned), and z's stride only with a residual.
    pub(super) fn validate(&self, k: u32, channels_last: bool) -> Result<(), ProblemError> {
        for (ld, field) in [(self.y_ld, "y_ld"), (self.z_ld, "z_ld")] {
            if ld == 0 {
                continue;
            }
            if !channels_last {
                return Err(ProblemError::new(
                    field,
                    "channel slices need a channels-last y",
                ));
            }
            if ld < k {
                return Err(ProblemError::new(
                    field,
                    "narrower than the output's channels k",
                ));
            }
            if !ld.is_multiple_of(8) {
                return Err(ProblemError::new(
                    field,
                    "must be a multiple of 8 channels (every kernel's vector stores stay aligned)",
                ));
            }
            if ld > super::MAX_DIM {
                return Err(ProblemError::new(field, "too large (limit 2^24)"));
            }
        }
        if self.z_ld != 0 && !self.residual {
            return Err(ProblemError::new("z_ld", "given without a residual"));
        }
        if self.pool && self.y_ld != 0 {
            return Err(ProblemError::new(
                "pool",
                "pool partial sums need a dense y (a pool reads its whole tensor, not a slice)",
            ));
        }
        Ok(())
    }

    /// Appends the key suffix (nothing for [`Fusion::NONE`]).
    pub(super) fn write_key(&self, out: &mut KeyBuf) {
        for (on, op) in [
            (self.scale, "+scale"),
            (self.bias, "+bias"),
            (self.residual, "+add"),
        ] {
            if on {
                out.push_str(op);
            }
        }
        if self.activation != Activation::Identity {
            out.push_char('+');
            out.push_str(self.activation.name());
        }
        for (ld, tag) in [(self.y_ld, "+ld"), (self.z_ld, "+zld")] {
            if ld != 0 {
                out.push_str(tag);
                out.push_u32(ld);
            }
        }
        if self.pool {
            out.push_str("+pool");
        }
        if self.x_scale {
            out.push_str("+gate");
        }
    }

    /// The same epilogue without its input scale.
    pub fn without_x_scale(self) -> Fusion {
        Fusion {
            x_scale: false,
            ..self
        }
    }

    /// The same epilogue without its pool partial sums.
    pub fn without_pool(self) -> Fusion {
        Fusion {
            pool: false,
            ..self
        }
    }

    /// Splits a key into the convolution's key and its fusion (the inverse of the suffix
    /// `Fusion::write_key` writes). Ops out of order, repeated or unknown are errors.
    pub fn split_key(key: &str) -> Result<(&str, Fusion), ProblemError> {
        let Some(at) = key.find('+') else {
            return Ok((key, Fusion::NONE));
        };
        let mut f = Fusion::NONE;
        // The rank of the last op read: each op must come after it.
        let mut last = 0u8;
        for op in key[at + 1..].split('+') {
            let rank =
                match op {
                    "scale" => {
                        f.scale = true;
                        1
                    }
                    "bias" => {
                        f.bias = true;
                        2
                    }
                    "add" => {
                        f.residual = true;
                        3
                    }
                    "pool" => {
                        f.pool = true;
                        7
                    }
                    "gate" => {
                        f.x_scale = true;
                        8
                    }
                    _ if op.starts_with("zld") => {
                        f.z_ld = ld(&op[3..], "zld")?;
                        6
                    }
                    _ if op.starts_with("ld") => {
                        f.y_ld = ld(&op[2..], "ld")?;
                        5
                    }
                    _ => match Activation::parse(op) {
                        Some(a) if a != Activation::Identity => {
                            f.activation = a;
                            4
                        }
                        _ => return Err(ProblemError::new(
                            "fusion",
                            "unknown op after '+' (scale, bias, add, an activation, ld<N>, zld<N>, pool, gate)",
                        )),
                    },
                };
            if rank <= last {
                return Err(ProblemError::new(
                    "fusion",
                    "ops repeated or out of order (scale, bias, add, activation, ld, zld, pool, gate)",
                ));
            }
            last = rank;
        }
        Ok((&key[..at], f))
    }
}

/// A slice's stride `ld`, or `k` where there is no slice (0).
fn dense_or(ld: u32, k: u32) -> u32 {
    if ld == 0 {
        k
    } else {
        ld
    }
}

fn ld(digits: &str, field: &'static str) -> Result<u32, ProblemError> {
    super::parse_u32(digits)
        .filter(|&v| v > 0)
        .ok_or(ProblemError::new(field, "not a positive decimal number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_reject_disorder() {
        let f = Fusion {
            scale: true,
            bias: true,
            residual: true,
            activation: Activation::Silu,
            y_ld: 128,
            z_ld: 64,
            pool: false,
            x_scale: true,
        };
        let mut k = KeyBuf::new();
        k.push_str("conv");
        f.write_key(&mut k);
        assert_eq!(k.as_str(), "conv+scale+bias+add+silu+ld128+zld64+gate");
        assert!(!f.without_x_scale().x_scale);
        assert_eq!(Fusion::split_key(k.as_str()), Ok(("conv", f)));
        let pooled = Fusion {
            bias: true,
            activation: Activation::Silu,
            pool: true,
            ..Fusion::NONE
        };
        let mut k = KeyBuf::new();
        k.push_str("conv");
        pooled.write_key(&mut k);
        assert_eq!(k.as_str(), "conv+bias+silu+pool");
        assert_eq!(Fusion::split_key(k.as_str()), Ok(("conv", pooled)));
        assert!(!pooled.without_pool().pool);
        assert!(pooled.validate(8, true).is_ok());
        let sliced = Fusion { y_ld: 16, ..pooled };
        assert_eq!(sliced.validate(8, true).unwrap_err().field, "pool");
        assert_eq!(Fusion::split_key("conv"), Ok(("conv", Fusion::NONE)));
        for bad in [
            "c+relu+bias",
            "c+bias+bias",
            "c+identity",
            "c+swish",
            "c+ld0",
            "c+ldx",
            "c+",
            "c+pool+relu",
            "c+pool+pool",
            "c+gate+bias",
            "c+gate+pool",
        ] {
            assert!(Fusion::split_key(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn activations_match_their_definitions() {
        let a = |act: Activation, v: f64| act.apply(v, act.default_param() as f64);
        assert_eq!(a(Activation::Relu, -2.0), 0.0);
        assert_eq!(a(Activation::ClippedRelu, 7.5), 6.0);
        assert!((a(Activation::LeakyRelu, -2.0) + 0.02).abs() < 1e-9);
        assert!((a(Activation::Silu, 1.0) - 0.7310585786300049).abs() < 1e-12);
        assert!((a(Activation::GeluTanh, 1.0) - 0.8411919906082768).abs() < 1e-12);
        assert_eq!(a(Activation::HardSwish, 1.0), 4.0 / 6.0);
        assert_eq!(a(Activation::HardSigmoid, -4.0), 0.0);
        for act in Activation::ALL {
            assert_eq!(Activation::parse(act.name()), Some(act));
        }
    }

    #[test]
    fn no_key_token_holds_the_perf_db_keys_separator() {
        // Perf-db keys are 'x'-separated fields (their SQLite form splits them), the fusion
        // suffix within the last one: no token may hold an 'x'.
        for act in Activation::ALL {
            let f = Fusion {
                scale: true,
                bias: true,
                residual: true,
                activation: act,
                y_ld: 128,
                z_ld: 64,
                pool: true,
                x_scale: true,
            };
            let mut k = KeyBuf::new();
            f.write_key(&mut k);
            assert!(!k.as_str().contains('x'), "{}", k.as_str());
        }
    }
}
