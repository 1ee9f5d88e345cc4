//! The C description of a convolution (`kiln_conv_desc`) and its checked conversion into a
//! [`ConvProblem`]: every field is validated and an error names the field and its value.

use kiln::{ConvProblem, ConvSpec, DataType, Direction, Layout, MathMode};

use crate::status::Failure;

/// An element type: one of the `KILN_DATA_*` values.
#[allow(non_camel_case_types)]
pub type kiln_data_type = i32;
/// 32-bit float.
pub const KILN_DATA_FLOAT: kiln_data_type = 0;
/// IEEE half.
pub const KILN_DATA_HALF: kiln_data_type = 1;
/// bfloat16.
pub const KILN_DATA_BFLOAT16: kiln_data_type = 2;

/// A packed tensor layout: one of the `KILN_LAYOUT_*` values.
#[allow(non_camel_case_types)]
pub type kiln_layout = i32;
/// 2-D, channels first.
pub const KILN_LAYOUT_NCHW: kiln_layout = 0;
/// 2-D, channels last.
pub const KILN_LAYOUT_NHWC: kiln_layout = 1;
/// 3-D, channels first.
pub const KILN_LAYOUT_NCDHW: kiln_layout = 2;
/// 3-D, channels last.
pub const KILN_LAYOUT_NDHWC: kiln_layout = 3;

/// A convolution direction: one of the `KILN_DIRECTION_*` values (kiln's embedded solvers run
/// forward; the others resolve to `KILN_ERROR_NO_SOLUTION`).
#[allow(non_camel_case_types)]
pub type kiln_direction = i32;
/// x, w -> y.
pub const KILN_DIRECTION_FORWARD: kiln_direction = 0;
/// dy, w -> dx.
pub const KILN_DIRECTION_BACKWARD_DATA: kiln_direction = 1;
/// dy, x -> dw.
pub const KILN_DIRECTION_BACKWARD_WEIGHTS: kiln_direction = 2;

/// How FP32 may be multiplied: one of the `KILN_MATH_*` values (cuDNN's math type).
#[allow(non_camel_case_types)]
pub type kiln_math = i32;
/// FP32 accuracy (kiln's FP32 tensor-core solvers use 3xTF32).
pub const KILN_MATH_DEFAULT: kiln_math = 0;
/// FP32 inputs may be rounded to TF32 (10-bit mantissa): faster, about 1e-3 relative error.
pub const KILN_MATH_ALLOW_TF32: kiln_math = 1;

/// One packed tensor: element type, layout and extents in logical order.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kiln_tensor_desc {
    /// A `KILN_DATA_*` value.
    pub data_type: kiln_data_type,
    /// A `KILN_LAYOUT_*` value.
    pub layout: kiln_layout,
    /// Extents `{n, c, d, h, w}` for x and y, `{k, c / groups, d, h, w}` for w; `d` is 1 for
    /// the 2-D layouts.
    pub dims: [i64; 5],
}

/// A convolution: three tensors and the window. Fill it with `kiln_conv_desc_init` first,
/// which sets `struct_size` and the neutral values (stride and dilation 1, one group).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kiln_conv_desc {
    /// `sizeof(kiln_conv_desc)` as the caller compiled it (lets later versions add fields).
    pub struct_size: u32,
    /// A `KILN_DIRECTION_*` value.
    pub direction: kiln_direction,
    /// The input.
    pub x: kiln_tensor_desc,
    /// The filter.
    pub w: kiln_tensor_desc,
    /// The output: its extents must be those x and w make.
    pub y: kiln_tensor_desc,
    /// Zero padding `{d, h, w}` (`d` 0 for 2-D).
    pub pad: [i32; 3],
    /// Stride `{d, h, w}` (`d` 1 for 2-D).
    pub stride: [i32; 3],
    /// Dilation `{d, h, w}` (`d` 1 for 2-D).
    pub dilation: [i32; 3],
    /// Group count (`groups == c == k` is depthwise).
    pub groups: i32,
    /// A `KILN_MATH_*` value.
    pub math: kiln_math,
}

impl kiln_conv_desc {
    /// A 1x1 single-channel 2-D FP32 NCHW convolution of a 1x1 image: the neutral start
    /// `kiln_conv_desc_init` writes.
    pub fn neutral() -> kiln_conv_desc {
        let t = kiln_tensor_desc {
            data_type: KILN_DATA_FLOAT,
            layout: KILN_LAYOUT_NCHW,
            dims: [1; 5],
        };
        kiln_conv_desc {
            struct_size: std::mem::size_of::<kiln_conv_desc>() as u32,
            direction: KILN_DIRECTION_FORWARD,
            x: t,
            w: t,
            y: t,
            pad: [0; 3],
            stride: [1; 3],
            dilation: [1; 3],
            groups: 1,
            math: KILN_MATH_DEFAULT,
        }
    }
}

const DIM_NAMES: [&str; 5] = ["n", "c", "d", "h", "w"];
const FILTER_DIM_NAMES: [&str; 5] = ["k", "c/groups", "d", "h", "w"];

pub(crate) fn data_type(which: &str, v: kiln_data_type) -> Result<DataType, Failure> {
    match v {
        KILN_DATA_FLOAT => Ok(DataType::Fp32),
        KILN_DATA_HALF => Ok(DataType::Fp16),
        KILN_DATA_BFLOAT16 => Ok(DataType::Bf16),
        _ => Err(Failure::bad_param(format!(
            "{which}.data_type = {v}: not a KILN_DATA_* value (0 float, 1 half, 2 bfloat16)"
        ))),
    }
}

fn layout(which: &str, v: kiln_layout) -> Result<Layout, Failure> {
    match v {
        KILN_LAYOUT_NCHW => Ok(Layout::Nchw),
        KILN_LAYOUT_NHWC => Ok(Layout::Nhwc),
        KILN_LAYOUT_NCDHW => Ok(Layout::Ncdhw),
        KILN_LAYOUT_NDHWC => Ok(Layout::Ndhwc),
        _ => Err(Failure::bad_param(format!(
            "{which}.layout = {v}: not a KILN_LAYOUT_* value (0 NCHW, 1 NHWC, 2 NCDHW, 3 NDHWC)"
        ))),
    }
}

/// Parses a `KILN_MATH_*` value.
pub(crate) fn math(v: kiln_math) -> Result<MathMode, Failure> {
    match v {
        KILN_MATH_DEFAULT => Ok(MathMode::Default),
        KILN_MATH_ALLOW_TF32 => Ok(MathMode::AllowTf32),
        _ => Err(Failure::bad_param(format!(
            "math = {v}: not a KILN_MATH_* value (0 default, 1 allow TF32)"
        ))),
    }
}

fn direction(v: kiln_direction) -> Result<Direction, Failure> {
    match v {
        KILN_DIRECTION_FORWARD => Ok(Direction::Forward),
        KILN_DIRECTION_BACKWARD_DATA => Ok(Direction::BackwardData),
        KILN_DIRECTION_BACKWARD_WEIGHTS => Ok(Direction::BackwardWeights),
        _ => Err(Failure::bad_param(format!(
            "direction = {v}: not a KILN_DIRECTION_* value (0 forward, 1 backward data, 2 backward weights)"
        ))),
    }
}

fn extents(which: &str, names: &[&str; 5], dims: &[i64; 5]) -> Result<[u32; 5], Failure> {
    let mut out = [0u32; 5];
    for (i, &d) in dims.iter().enumerate() {
        out[i] = u32::try_from(d).ok().filter(|&v| v > 0).ok_or_else(|| {
            Failure::bad_param(format!(
                "{which}.dims[{i}] ({}) = {d}: extents are 1 to {}",
                names[i],
                u32::MAX
            ))
        })?;
    }
    Ok(out)
}

fn window(which: &str, v: &[i32; 3], min: i32) -> Result<[u32; 3], Failure> {
    let mut out = [0u32; 3];
    for (i, &x) in v.iter().enumerate() {
        if x < min {
            return Err(Failure::bad_param(format!(
                "{which}[{i}] ({}) = {x}: must be at least {min}",
                ["d", "h", "w"][i]
            )));
        }
        out[i] = x as u32;
    }
    Ok(out)
}

/// Checks `d` and builds its problem.
pub(crate) fn problem(d: &kiln_conv_desc) -> Result<ConvProblem, Failure> {
    let size = std::mem::size_of::<kiln_conv_desc>();
    if d.struct_size as usize != size {
        return Err(Failure::bad_param(format!(
            "kiln_conv_desc.struct_size = {}, but this kiln's kiln_conv_desc is {size} bytes \
             (call kiln_conv_desc_init first; or the program was compiled against another kiln.h)",
            d.struct_size
        )));
    }
    let tensors = [("x", &d.x), ("w", &d.w), ("y", &d.y)];
    let mut layouts = [Layout::Nchw; 3];
    let mut types = [DataType::Fp32; 3];
    let mut dims = [[0u32; 5]; 3];
    for (i, (which, t)) in tensors.iter().enumerate() {
        layouts[i] = layout(which, t.layout)?;
        types[i] = data_type(which, t.data_type)?;
        let names = if i == 1 {
            &FILTER_DIM_NAMES
        } else {
            &DIM_NAMES
        };
        dims[i] = extents(which, names, &t.dims)?;
    }
    let spatial = layouts[0].spatial_dims();
    for (i, l) in layouts.iter().enumerate().skip(1) {
        if l.spatial_dims() != spatial {
            return Err(Failure::bad_param(format!(
                "{}.layout is {} but x.layout is {}: all three tensors must be 2-D or all 3-D",
                tensors[i].0,
                l.name(),
                layouts[0].name()
            )));
        }
    }
    let pad = window("pad", &d.pad, 0)?;
    let stride = window("stride", &d.stride, 1)?;
    let dilation = window("dilation", &d.dilation, 1)?;
    if spatial == 2 {
        for (i, (which, _)) in tensors.iter().enumerate() {
            if dims[i][2] != 1 {
                return Err(Failure::bad_param(format!(
                    "{which}.dims[2] (d) = {}: 2-D layouts have d = 1",
                    dims[i][2]
                )));
            }
        }
        if pad[0] != 0 || stride[0] != 1 || dilation[0] != 1 {
            return Err(Failure::bad_param(format!(
                "a 2-D convolution has pad[0] = 0, stride[0] = 1, dilation[0] = 1 (got {}, {}, {})",
                pad[0], stride[0], dilation[0]
            )));
        }
    }
    let groups = u32::try_from(d.groups)
        .ok()
        .filter(|&g| g > 0)
        .ok_or_else(|| Failure::bad_param(format!("groups = {}: must be at least 1", d.groups)))?;
    let [x, w, y] = dims;
    let c = x[1];
    if u64::from(w[1]) * u64::from(groups) != u64::from(c) {
        return Err(Failure::bad_param(format!(
            "w.dims[1] (c/groups) = {} with groups = {groups}, but x has c = {c} channels",
            w[1]
        )));
    }
    if y[0] != x[0] {
        return Err(Failure::bad_param(format!(
            "y.dims[0] (n) = {} differs from x.dims[0] (n) = {}",
            y[0], x[0]
        )));
    }
    if y[1] != w[0] {
        return Err(Failure::bad_param(format!(
            "y.dims[1] (c) = {} differs from w.dims[0] (k) = {}",
            y[1], w[0]
        )));
    }
    let spec = ConvSpec {
        spatial_dims: spatial,
        n: x[0],
        c,
        k: w[0],
        input: [x[2], x[3], x[4]],
        filter: [w[2], w[3], w[4]],
        pad,
        stride,
        dilation,
        groups,
        layouts,
        data_types: types,
        direction: direction(d.direction)?,
        math: math(d.math)?,
        ..ConvSpec::default()
    };
    let p = ConvProblem::new(spec)
        .map_err(|e| Failure::bad_param(format!("not a valid convolution: {e}")))?;
    let out = p.output();
    if [y[2], y[3], y[4]] != out {
        return Err(Failure::bad_param(format!(
            "y is {}x{}x{} (d x h x w) but x, w, pad, stride and dilation make {}x{}x{}",
            y[2], y[3], y[4], out[0], out[1], out[2]
        )));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resnet_layer() -> kiln_conv_desc {
        let mut d = kiln_conv_desc::neutral();
        for t in [&mut d.x, &mut d.y] {
            t.layout = KILN_LAYOUT_NHWC;
            t.dims = [1, 64, 1, 56, 56];
        }
        d.w.layout = KILN_LAYOUT_NHWC;
        d.w.dims = [64, 64, 1, 3, 3];
        d.pad = [0, 1, 1];
        d
    }

    #[test]
    fn a_resnet_layer_becomes_its_find_db_key() {
        let p = problem(&resnet_layer()).unwrap();
        assert_eq!(
            p.find_db_key().as_str(),
            "64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP32-F"
        );
    }

    #[test]
    fn every_bad_field_is_named() {
        type Spoil = fn(&mut kiln_conv_desc);
        let cases: [(Spoil, &str); 9] = [
            (|d| d.struct_size = 8, "struct_size = 8"),
            (|d| d.x.data_type = 9, "x.data_type = 9"),
            (|d| d.w.layout = -1, "w.layout = -1"),
            (|d| d.x.dims[3] = 0, "x.dims[3] (h) = 0"),
            (|d| d.w.dims[1] = 32, "w.dims[1] (c/groups) = 32"),
            (|d| d.y.dims[3] = 55, "y is 1x55x56"),
            (|d| d.stride[1] = 0, "stride[1] (h) = 0"),
            (|d| d.groups = 0, "groups = 0"),
            (|d| d.x.dims[0] = 1 << 40, "x.dims[0] (n) = 1099511627776"),
        ];
        for (spoil, expected) in cases {
            let mut d = resnet_layer();
            spoil(&mut d);
            let e = problem(&d).unwrap_err();
            assert!(e.message.contains(expected), "{expected}: {}", e.message);
            assert_eq!(e.status, crate::status::KILN_ERROR_BAD_PARAM);
        }
    }
}
