//! Parsing MIOpen's find-db and perf-db keys back into problems; errors name the field.

use super::{
    ConvProblem, ConvSpec, DataType, Direction, Layout, MathMode, ProblemError, MAX_DIM,
    PERF_KEY_INT_FIELDS,
};

impl ConvProblem {
    /// Parses a find-db key back into a problem. Inverse of [`ConvProblem::find_db_key`].
    pub fn from_find_db_key(key: &str) -> Result<Self, ProblemError> {
        let (conv, fusion) = super::Fusion::split_key(key)?;
        Self::from_plain_find_db_key(conv)?.with_fusion(fusion)
    }

    fn from_plain_find_db_key(key: &str) -> Result<Self, ProblemError> {
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
            math: MathMode::Default,
            fusion: super::Fusion::NONE,
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
        let (conv, fusion) = super::Fusion::split_key(key)?;
        Self::from_plain_perf_db_key(conv)?.with_fusion(fusion)
    }

    fn from_plain_perf_db_key(key: &str) -> Result<Self, ProblemError> {
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
            math: MathMode::Default,
            fusion: super::Fusion::NONE,
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
