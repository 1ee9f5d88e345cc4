//! Writing a problem's keys: MIOpen's find-db key, perf-db key and network config, into
//! stack buffers.

use super::{ConvProblem, DataType, Direction, Layout};
use crate::keybuf::KeyBuf;

impl ConvProblem {
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
        self.fusion.write_key(&mut out);
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
        self.fusion.write_key(&mut out);
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
        self.fusion.write_key(&mut out);
        out
    }
}

pub(super) struct KeySides {
    in_channels: u32,
    out_channels: u32,
    in_spatial: [u32; 3],
    out_spatial: [u32; 3],
    layouts: [Layout; 3],
    types: [DataType; 3],
    casts: [Option<DataType>; 3],
}
