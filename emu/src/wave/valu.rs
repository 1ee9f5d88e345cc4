//! The vector ALU: VOP1/VOP2/VOPC/VOP3 (with SDWA and VOP3 modifiers), gfx90a's packed FP32,
//! gfx11's dual issue, and the IEEE division steps.

use super::*;

impl Wave {
    pub(super) fn valu(&mut self, inst: &Inst) -> Result<(), Error> {
        let exec = self.exec();
        let (w, w1) = (inst.w[0], inst.w[1]);
        let lit = inst.literal;
        let sdwa = inst.extension == Some(Extension::Sdwa);
        // Operand fields by encoding: sources (9-bit), vector destination, and for VOP3 the
        // modifiers and the scalar destination of the carry/condition forms.
        let (src, vdst) = match inst.format {
            Format::Vop1 => ([w & 0x1ff, 0, 0], (w >> 17) & 0xff),
            Format::Vop2 => ([w & 0x1ff, 256 + ((w >> 9) & 0xff), 0], (w >> 17) & 0xff),
            Format::Vopc => ([w & 0x1ff, 256 + ((w >> 9) & 0xff), 0], VCC),
            _ => (
                [w1 & 0x1ff, (w1 >> 9) & 0x1ff, (w1 >> 18) & 0x1ff],
                w & 0xff,
            ),
        };
        let vop3 = inst.format == Format::Vop3;
        let (abs, neg, clamp, omod) = if vop3 {
            (
                (w >> 8) & 7,
                (w1 >> 29) & 7,
                (w >> 15) & 1 == 1,
                (w1 >> 27) & 3,
            )
        } else {
            (0, 0, false, 0)
        };
        let sdst = (w >> 8) & 0x7f;
        // SDWA: sources through their selects, the result into dst_sel.
        let src = if sdwa {
            let s = inst.sdwa;
            let s0 = if (s >> 23) & 1 == 1 {
                s & 0xff
            } else {
                256 + (s & 0xff)
            };
            let s1 = if (s >> 31) & 1 == 1 {
                (w >> 9) & 0xff
            } else {
                256 + ((w >> 9) & 0xff)
            };
            if inst.format == Format::Vopc {
                return Err(Self::unsupported("SDWA compares"));
            }
            if (s >> 20) & 3 != 0 || (s >> 28) & 3 != 0 || (s >> 13) & 7 != 0 {
                return Err(Self::unsupported("SDWA float modifiers, clamp or omod"));
            }
            [s0, s1, 0]
        } else {
            src
        };
        let read = |me: &Self, i: usize| -> Result<Lanes, Error> {
            let mut x = me.vread(src[i], lit)?;
            if sdwa && i < 2 {
                let s = inst.sdwa;
                let (sel, sext) = if i == 0 {
                    ((s >> 16) & 7, (s >> 19) & 1 == 1)
                } else {
                    ((s >> 24) & 7, (s >> 27) & 1 == 1)
                };
                for v in x.iter_mut() {
                    *v = sdwa_select(*v, sel, sext);
                }
            }
            Ok(x)
        };
        // A float source with VOP3's abs and neg applied.
        let readf = |me: &Self, i: usize| -> Result<Lanes, Error> {
            let mut x = read(me, i)?;
            let (a, n) = ((abs >> i) & 1 == 1, (neg >> i) & 1 == 1);
            if a || n {
                for v in x.iter_mut() {
                    if a {
                        *v &= 0x7fff_ffff;
                    }
                    if n {
                        *v ^= 0x8000_0000;
                    }
                }
            }
            Ok(x)
        };
        let lanes = self.lanes;
        let active = |l: usize| exec >> l & 1 == 1;
        // Writes an integer result (SDWA's dst_sel applied).
        let write = |me: &mut Self, vals: Lanes| -> Result<(), Error> {
            if clamp {
                return Err(Self::unsupported("integer clamp"));
            }
            if sdwa {
                let s = inst.sdwa;
                let (sel, unused) = ((s >> 8) & 7, (s >> 11) & 3);
                if sel == 7 || unused == 3 {
                    return Err(Self::unsupported("a reserved SDWA destination select"));
                }
                if sel != 6 {
                    let old = me.vread(256 + vdst, 0)?;
                    let mut out = [0u32; LANES];
                    let (shift, bits) = if sel < 4 {
                        (8 * sel, 8)
                    } else {
                        (16 * (sel - 4), 16)
                    };
                    let mask = ((1u32 << bits) - 1) << shift;
                    for l in 0..LANES {
                        let v = (vals[l] << shift) & mask;
                        out[l] = match unused {
                            0 => v,
                            2 => (old[l] & !mask) | v,
                            _ => {
                                // UNUSED_SEXT: the bits above take the field's sign.
                                let field = v >> shift;
                                (((field << (32 - bits)) as i32 >> (32 - bits)) as u32) << shift
                            }
                        };
                    }
                    me.vwrite(vdst, &out, exec)?;
                    return Ok(());
                }
            }
            me.vwrite(vdst, &vals, exec)?;
            Ok(())
        };
        // Writes a float result with VOP3's output modifier and clamp.
        let writef = |me: &mut Self, mut vals: Lanes| -> Result<(), Error> {
            if omod != 0 || clamp {
                for v in vals.iter_mut() {
                    let mut x = f(*v);
                    x *= [1.0, 2.0, 4.0, 0.5][omod as usize];
                    if clamp {
                        x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
                    }
                    *v = b(x);
                }
            }
            me.vwrite(vdst, &vals, exec)?;
            Ok(())
        };
        macro_rules! lanewise {
            (|$lane:ident; $($x:ident),*| $body:expr) => {{
                let mut out = [0u32; LANES];
                for $lane in 0..lanes {
                    if active($lane) {
                        let ($($x,)*) = ($($x[$lane],)*);
                        out[$lane] = $body;
                    }
                }
                out
            }};
            (|$($x:ident),*| $body:expr) => {{
                let mut out = [0u32; LANES];
                for l in 0..lanes {
                    if active(l) {
                        let ($($x,)*) = ($($x[l],)*);
                        out[l] = $body;
                    }
                }
                out
            }};
        }
        // v_add_co_u32 and friends: the carry out goes to VCC (VOP2) or sdst (VOP3).
        let carry_dst = if vop3 { sdst } else { VCC };
        let carry_in = |me: &Self| -> Result<u64, Error> {
            if vop3 {
                me.read_mask(src[2])
            } else {
                Ok(me.vcc())
            }
        };
        let write_mask = |me: &mut Self, field: u32, mask: u64| -> Result<(), Error> {
            if me.lanes == 32 {
                me.swrite(field, mask as u32)
            } else {
                me.swrite64(field, mask)
            }
        };
        match inst.op {
            Op::VNop => {}
            Op::VMovB32 => {
                let a = read(self, 0)?;
                write(self, a)?
            }
            Op::VMovB64 => {
                let a = self.vread64(src[0], lit)?;
                self.vwrite64(vdst, &a, exec)?
            }
            Op::VReadfirstlaneB32 => {
                let a = self.vread(src[0], lit)?;
                let lane = if exec == 0 {
                    0
                } else {
                    exec.trailing_zeros() as usize
                };
                self.swrite(vdst, a[lane])?
            }
            Op::VReadlaneB32 => {
                let a = self.vread(src[0], lit)?;
                let lane = (self.sread(src[1], lit)? as usize) % self.lanes;
                self.swrite(vdst, a[lane])?
            }
            // One lane of a VGPR set from a scalar, whatever EXEC holds (compilers spill SGPRs
            // into VGPR lanes so).
            Op::VWritelaneB32 => {
                let value = self.sread(src[0], lit)?;
                let lane = (self.sread(src[1], lit)? as usize) % self.lanes;
                self.v[vdst as usize * LANES + lane] = value;
            }
            Op::VAccvgprReadB32 => {
                let r = (src[0] as usize)
                    .checked_sub(256)
                    .ok_or_else(|| Self::unsupported("an AGPR read from a non-register"))?;
                for l in 0..lanes {
                    if active(l) {
                        self.v[vdst as usize * LANES + l] = self.a[r * LANES + l];
                    }
                }
            }
            Op::VAccvgprWriteB32 => {
                let x = self.vread(src[0], lit)?;
                for l in 0..lanes {
                    if active(l) {
                        self.a[vdst as usize * LANES + l] = x[l];
                    }
                }
            }
            Op::VCndmaskB32 => {
                let (a, bb) = (readf(self, 0)?, readf(self, 1)?);
                let mask = if vop3 {
                    self.read_mask(src[2])?
                } else {
                    self.vcc()
                };
                let out = lanewise!(|l; a, bb| if mask >> l & 1 == 1 { bb } else { a });
                write(self, out)?
            }
            Op::VAddU32 => {
                let (a, bb) = (read(self, 0)?, read(self, 1)?);
                write(self, lanewise!(|a, bb| a.wrapping_add(bb)))?
            }
            Op::VSubU32 => {
                let (a, bb) = (read(self, 0)?, read(self, 1)?);
                write(self, lanewise!(|a, bb| a.wrapping_sub(bb)))?
            }
            Op::VSubrevU32 => {
                let (a, bb) = (read(self, 0)?, read(self, 1)?);
                write(self, lanewise!(|a, bb| bb.wrapping_sub(a)))?
            }
            Op::VAddCoU32
            | Op::VSubCoU32
            | Op::VSubrevCoU32
            | Op::VAddcCoU32
            | Op::VSubbCoU32
            | Op::VSubbrevCoU32 => {
                let (a, bb) = (read(self, 0)?, read(self, 1)?);
                let cin = match inst.op {
                    Op::VAddcCoU32 | Op::VSubbCoU32 | Op::VSubbrevCoU32 => carry_in(self)?,
                    _ => 0,
                };
                let mut out = [0u32; LANES];
                let mut carry = 0u64;
                for l in 0..lanes {
                    if !active(l) {
                        continue;
                    }
                    let c = cin >> l & 1;
                    let (x, y) = match inst.op {
                        Op::VSubrevCoU32 | Op::VSubbrevCoU32 => (u64::from(bb[l]), u64::from(a[l])),
                        _ => (u64::from(a[l]), u64::from(bb[l])),
                    };
                    let (v, cout) = match inst.op {
                        Op::VAddCoU32 | Op::VAddcCoU32 => {
                            let s = x + y + c;
                            (s as u32, s >> 32 != 0)
                        }
                        _ => (x.wrapping_sub(y + c) as u32, y + c > x),
                    };
                    out[l] = v;
                    carry |= u64::from(cout) << l;
                }
                write(self, out)?;
                write_mask(self, carry_dst, carry)?
            }
            Op::VAdd3U32 => {
                let (a, bb, c) = (read(self, 0)?, read(self, 1)?, read(self, 2)?);
                write(
                    self,
                    lanewise!(|a, bb, c| a.wrapping_add(bb).wrapping_add(c)),
                )?
            }
            Op::VAddLshlU32 => {
                let (a, bb, c) = (read(self, 0)?, read(self, 1)?, read(self, 2)?);
                write(self, lanewise!(|a, bb, c| a.wrapping_add(bb) << (c & 31)))?
            }
            Op::VLshlAddU32 => {
                let (a, bb, c) = (read(self, 0)?, read(self, 1)?, read(self, 2)?);
                write(self, lanewise!(|a, bb, c| (a << (bb & 31)).wrapping_add(c)))?
            }
            Op::VLshlOrB32 => {
                let (a, bb, c) = (read(self, 0)?, read(self, 1)?, read(self, 2)?);
                write(self, lanewise!(|a, bb, c| (a << (bb & 31)) | c))?
            }
            Op::VAndOrB32 => {
                let (a, bb, c) = (read(self, 0)?, read(self, 1)?, read(self, 2)?);
                write(self, lanewise!(|a, bb, c| (a & bb) | c))?
            }
            Op::VOr3B32 => {
                let (a, bb, c) = (read(self, 0)?, read(self, 1)?, read(self, 2)?);
                write(self, lanewise!(|a, bb, c| a | bb | c))?
            }
            Op::VXadU32 => {
                let (a, bb, c) = (read(self, 0)?, read(self, 1)?, read(self, 2)?);
                write(self, lanewise!(|a, bb, c| (a ^ bb).wrapping_add(c)))?
            }
            Op::VLshlAddU64 => {
                let (a, bb, c) = (
                    self.vread64(src[0], lit)?,
                    read(self, 1)?,
                    self.vread64(src[2], lit)?,
                );
                let mut out = [0u64; LANES];
                for l in 0..lanes {
                    if active(l) {
                        out[l] = (a[l] << (bb[l] & 63)).wrapping_add(c[l]);
                    }
                }
                self.vwrite64(vdst, &out, exec)?
            }
            Op::VAndB32 => {
                let (a, bb) = (read(self, 0)?, read(self, 1)?);
                write(self, lanewise!(|a, bb| a & bb))?
            }
            Op::VOrB32 => {
                let (a, bb) = (read(self, 0)?, read(self, 1)?);
                write(self, lanewise!(|a, bb| a | bb))?
            }
            Op::VXorB32 => {
                let (a, bb) = (read(self, 0)?, read(self, 1)?);
                write(self, lanewise!(|a, bb| a ^ bb))?
            }
            Op::VNotB32 => {
                let a = read(self, 0)?;
                write(self, lanewise!(|a| !a))?
            }
            Op::VLshlrevB32 => {
                let (a, bb) = (read(self, 0)?, read(self, 1)?);
                write(self, lanewise!(|a, bb| bb << (a & 31)))?
            }
            Op::VLshrrevB32 => {
                let (a, bb) = (read(self, 0)?, read(self, 1)?);
                write(self, lanewise!(|a, bb| bb >> (a & 31)))?
            }
            Op::VAshrrevI32 => {
                let (a, bb) = (read(self, 0)?, read(self, 1)?);
                write(self, lanewise!(|a, bb| ((bb as i32) >> (a & 31)) as u32))?
            }
            Op::VLshlrevB64 | Op::VLshrrevB64 | Op::VAshrrevI64 => {
                let (a, bb) = (read(self, 0)?, self.vread64(src[1], lit)?);
                let mut out = [0u64; LANES];
                for l in 0..lanes {
                    if active(l) {
                        let s = a[l] & 63;
                        out[l] = match inst.op {
                            Op::VLshlrevB64 => bb[l] << s,
                            Op::VLshrrevB64 => bb[l] >> s,
                            _ => ((bb[l] as i64) >> s) as u64,
                        };
                    }
                }
                self.vwrite64(vdst, &out, exec)?
            }
            Op::VBfeU32 | Op::VBfeI32 => {
                let (a, bb, c) = (read(self, 0)?, read(self, 1)?, read(self, 2)?);
                let signed = inst.op == Op::VBfeI32;
                write(
                    self,
                    lanewise!(|a, bb, c| {
                        let (off, width) = (bb & 31, c & 31);
                        if width == 0 {
                            0
                        } else if signed {
                            (((a >> off) << (32 - width)) as i32 >> (32 - width)) as u32
                        } else {
                            (a >> off) & ((1u32 << width) - 1)
                        }
                    }),
                )?
            }
            Op::VBfiB32 => {
                let (a, bb, c) = (read(self, 0)?, read(self, 1)?, read(self, 2)?);
                write(self, lanewise!(|a, bb, c| (a & bb) | (!a & c)))?
            }
            Op::VAlignbitB32 => {
                let (a, bb, c) = (read(self, 0)?, read(self, 1)?, read(self, 2)?);
                write(
                    self,
                    lanewise!(|a, bb, c| ((((a as u64) << 32) | bb as u64) >> (c & 31)) as u32),
                )?
            }
            Op::VPermB32 => {
                let (a, bb, c) = (read(self, 0)?, read(self, 1)?, read(self, 2)?);
                write(
                    self,
                    lanewise!(|a, bb, c| {
                        let data = ((a as u64) << 32) | bb as u64;
                        (0..4).fold(0u32, |acc, i| {
                            acc | (perm_byte(data, (c >> (8 * i)) & 0xff) << (8 * i))
                        })
                    }),
                )?
            }
            Op::VMulLoU32 => {
                let (a, bb) = (read(self, 0)?, read(self, 1)?);
                write(self, lanewise!(|a, bb| a.wrapping_mul(bb)))?
            }
            Op::VMulHiU32 => {
                let (a, bb) = (read(self, 0)?, read(self, 1)?);
                write(
                    self,
                    lanewise!(|a, bb| ((a as u64 * bb as u64) >> 32) as u32),
                )?
            }
            Op::VMulHiI32 => {
                let (a, bb) = (read(self, 0)?, read(self, 1)?);
                write(
                    self,
                    lanewise!(|a, bb| ((a as i32 as i64 * bb as i32 as i64) >> 32) as u32),
                )?
            }
            Op::VMulU32U24 => {
                let (a, bb) = (read(self, 0)?, read(self, 1)?);
                write(
                    self,
                    lanewise!(|a, bb| (a & 0xff_ffff).wrapping_mul(bb & 0xff_ffff)),
                )?
            }
            Op::VMulI32I24 => {
                let (a, bb) = (read(self, 0)?, read(self, 1)?);
                let s24 = |x: u32| ((x << 8) as i32) >> 8;
                write(self, lanewise!(|a, bb| s24(a).wrapping_mul(s24(bb)) as u32))?
            }
            Op::VMadU32U24 => {
                let (a, bb, c) = (read(self, 0)?, read(self, 1)?, read(self, 2)?);
                write(
                    self,
                    lanewise!(|a, bb, c| (a & 0xff_ffff)
                        .wrapping_mul(bb & 0xff_ffff)
                        .wrapping_add(c)),
                )?
            }
            Op::VMadI32I24 => {
                let (a, bb, c) = (read(self, 0)?, read(self, 1)?, read(self, 2)?);
                let s24 = |x: u32| ((x << 8) as i32) >> 8;
                write(
                    self,
                    lanewise!(
                        |a, bb, c| s24(a).wrapping_mul(s24(bb)).wrapping_add(c as i32) as u32
                    ),
                )?
            }
            Op::VMadU64U32 | Op::VMadI64I32 => {
                let (a, bb, c) = (read(self, 0)?, read(self, 1)?, self.vread64(src[2], lit)?);
                let mut out = [0u64; LANES];
                let mut carry = 0u64;
                for l in 0..lanes {
                    if !active(l) {
                        continue;
                    }
                    let (v, cout) = if inst.op == Op::VMadU64U32 {
                        let s = u128::from(a[l]) * u128::from(bb[l]) + u128::from(c[l]);
                        (s as u64, s >> 64 != 0)
                    } else {
                        let s = i128::from(a[l] as i32) * i128::from(bb[l] as i32)
                            + i128::from(c[l] as i64);
                        (
                            s as u64,
                            s < i128::from(i64::MIN) || s > i128::from(i64::MAX),
                        )
                    };
                    out[l] = v;
                    carry |= u64::from(cout) << l;
                }
                self.vwrite64(vdst, &out, exec)?;
                write_mask(self, sdst, carry)?
            }
            Op::VMinI32 | Op::VMaxI32 => {
                let (a, bb) = (read(self, 0)?, read(self, 1)?);
                let min = inst.op == Op::VMinI32;
                write(
                    self,
                    lanewise!(|a, bb| if min {
                        (a as i32).min(bb as i32)
                    } else {
                        (a as i32).max(bb as i32)
                    } as u32),
                )?
            }
            Op::VMinU32 | Op::VMaxU32 => {
                let (a, bb) = (read(self, 0)?, read(self, 1)?);
                let min = inst.op == Op::VMinU32;
                write(
                    self,
                    lanewise!(|a, bb| if min { a.min(bb) } else { a.max(bb) }),
                )?
            }
            // ---- FP32 ----
            Op::VAddF32
            | Op::VSubF32
            | Op::VSubrevF32
            | Op::VMulF32
            | Op::VMinF32
            | Op::VMaxF32
            | Op::VLdexpF32 => {
                let (a, bb) = (readf(self, 0)?, readf(self, 1)?);
                let op = inst.op;
                writef(
                    self,
                    lanewise!(|a, bb| {
                        let (x, y) = (f(a), f(bb));
                        b(match op {
                            Op::VAddF32 => x + y,
                            Op::VSubF32 => x - y,
                            Op::VSubrevF32 => y - x,
                            Op::VMulF32 => x * y,
                            Op::VMinF32 => ieee_min(x, y),
                            Op::VMaxF32 => ieee_max(x, y),
                            _ => ldexp(x, bb as i32),
                        })
                    }),
                )?
            }
            Op::VMacF32 | Op::VFmacF32 => {
                let (a, bb) = (readf(self, 0)?, readf(self, 1)?);
                let c = self.vread(256 + vdst, 0)?;
                let fused = inst.op == Op::VFmacF32;
                writef(self, lanewise!(|a, bb, c| b(mad(f(a), f(bb), f(c), fused))))?
            }
            Op::VMadF32 | Op::VFmaF32 => {
                let (a, bb, c) = (readf(self, 0)?, readf(self, 1)?, readf(self, 2)?);
                let fused = inst.op == Op::VFmaF32;
                writef(self, lanewise!(|a, bb, c| b(mad(f(a), f(bb), f(c), fused))))?
            }
            Op::VMadmkF32 | Op::VFmamkF32 => {
                // D = S0 * K + S1.
                let (a, c) = (readf(self, 0)?, readf(self, 1)?);
                let k = f(lit);
                let fused = inst.op == Op::VFmamkF32;
                writef(self, lanewise!(|a, c| b(mad(f(a), k, f(c), fused))))?
            }
            Op::VMadakF32 | Op::VFmaakF32 => {
                // D = S0 * S1 + K.
                let (a, bb) = (readf(self, 0)?, readf(self, 1)?);
                let k = f(lit);
                let fused = inst.op == Op::VFmaakF32;
                writef(self, lanewise!(|a, bb| b(mad(f(a), f(bb), k, fused))))?
            }
            Op::VMed3F32 | Op::VMax3F32 | Op::VMin3F32 => {
                let (a, bb, c) = (readf(self, 0)?, readf(self, 1)?, readf(self, 2)?);
                let op = inst.op;
                writef(
                    self,
                    lanewise!(|a, bb, c| {
                        let (x, y, z) = (f(a), f(bb), f(c));
                        b(match op {
                            Op::VMax3F32 => ieee_max(ieee_max(x, y), z),
                            Op::VMin3F32 => ieee_min(ieee_min(x, y), z),
                            _ => {
                                if x.is_nan() || y.is_nan() || z.is_nan() {
                                    ieee_min(ieee_min(x, y), z)
                                } else {
                                    let hi = ieee_max(ieee_max(x, y), z);
                                    if hi == x {
                                        ieee_max(y, z)
                                    } else if hi == y {
                                        ieee_max(x, z)
                                    } else {
                                        ieee_max(x, y)
                                    }
                                }
                            }
                        })
                    }),
                )?
            }
            Op::VRcpF32
            | Op::VRcpIflagF32
            | Op::VExpF32
            | Op::VLogF32
            | Op::VSqrtF32
            | Op::VRsqF32
            | Op::VTruncF32
            | Op::VFloorF32 => {
                let a = readf(self, 0)?;
                let op = inst.op;
                writef(
                    self,
                    lanewise!(|a| {
                        let x = f(a);
                        b(match op {
                            Op::VRcpF32 | Op::VRcpIflagF32 => 1.0 / x,
                            Op::VExpF32 => x.exp2(),
                            Op::VLogF32 => x.log2(),
                            Op::VSqrtF32 => x.sqrt(),
                            Op::VRsqF32 => 1.0 / x.sqrt(),
                            Op::VTruncF32 => x.trunc(),
                            _ => x.floor(),
                        })
                    }),
                )?
            }
            Op::VCvtF32I32 => {
                let a = read(self, 0)?;
                writef(self, lanewise!(|a| b(a as i32 as f32)))?
            }
            Op::VCvtF32U32 => {
                let a = read(self, 0)?;
                writef(self, lanewise!(|a| b(a as f32)))?
            }
            Op::VCvtI32F32 => {
                let a = readf(self, 0)?;
                write(self, lanewise!(|a| f(a) as i32 as u32))?
            }
            Op::VCvtU32F32 => {
                let a = readf(self, 0)?;
                write(self, lanewise!(|a| f(a) as u32))?
            }
            Op::VDivScaleF32 => {
                let (a, den, num) = (readf(self, 0)?, readf(self, 1)?, readf(self, 2)?);
                let mut out = [0u32; LANES];
                let mut vcc = 0u64;
                for l in 0..lanes {
                    if active(l) {
                        let (v, flag) = div_scale(f(a[l]), f(den[l]), f(num[l]));
                        out[l] = b(v);
                        vcc |= u64::from(flag) << l;
                    }
                }
                writef(self, out)?;
                write_mask(self, sdst, vcc)?
            }
            Op::VDivFmasF32 => {
                let (a, bb, c) = (readf(self, 0)?, readf(self, 1)?, readf(self, 2)?);
                let vcc = self.vcc();
                writef(
                    self,
                    lanewise!(|l; a, bb, c| {
                        let r = f(a).mul_add(f(bb), f(c));
                        b(if vcc >> l & 1 == 1 {
                            // The quotient's pre-scale undone: up when the numerator was large.
                            if exponent(f(c)) > 127 { ldexp(r, 64) } else { ldexp(r, -64) }
                        } else {
                            r
                        })
                    }),
                )?
            }
            Op::VDivFixupF32 => {
                let (q, den, num) = (readf(self, 0)?, readf(self, 1)?, readf(self, 2)?);
                writef(
                    self,
                    lanewise!(|q, den, num| b(div_fixup(f(q), f(den), f(num)))),
                )?
            }
            Op::VMfmaF32x32x8F16 | Op::VMfmaF32x32x8Bf16 => self.mfma(inst, src)?,
            Op::VWmmaF32F16 | Op::VWmmaF32Bf16 => self.wmma(inst, src)?,
            Op::VPkFmaF32 | Op::VPkMulF32 | Op::VPkAddF32 | Op::VPkMovB32 => {
                self.packed_f32(inst, src, vdst, exec)?
            }
            Op::VCmp {
                cond,
                ty,
                exec: to_exec,
            } => {
                let mut mask = 0u64;
                if ty.wide() {
                    let (a, bb) = (self.vread64(src[0], lit)?, self.vread64(src[1], lit)?);
                    for l in 0..lanes {
                        if active(l) {
                            let r = if ty == CmpType::I64 {
                                cond.int(a[l] as i64, bb[l] as i64)
                            } else {
                                cond.int(a[l], bb[l])
                            };
                            mask |= u64::from(r) << l;
                        }
                    }
                } else {
                    let (a, bb) = (readf(self, 0)?, readf(self, 1)?);
                    for l in 0..lanes {
                        if active(l) {
                            let r = match ty {
                                CmpType::F32 => cond.float(f64::from(f(a[l])), f64::from(f(bb[l]))),
                                CmpType::I32 => cond.int(a[l] as i32, bb[l] as i32),
                                _ => cond.int(a[l], bb[l]),
                            };
                            mask |= u64::from(r) << l;
                        }
                    }
                }
                // gfx10 and later: v_cmpx writes EXEC alone.
                if !(to_exec && self.family != Family::Gfx9) {
                    write_mask(self, vdst, mask)?;
                }
                if to_exec {
                    self.set_exec(mask);
                }
            }
            Op::VMovrelsB32 => {
                // D = VGPR[src0 + M0].
                let r = src[0]
                    .checked_sub(256)
                    .ok_or_else(|| Self::unsupported("v_movrels_b32 of a non-VGPR"))?
                    as usize
                    + self.s[M0 as usize] as usize;
                let r = self.vgprs(r, 1)?;
                let mut out = [0u32; LANES];
                out.copy_from_slice(&self.v[r * LANES..(r + 1) * LANES]);
                write(self, out)?
            }
            Op::VBfrevB32 => {
                let a = read(self, 0)?;
                write(self, lanewise!(|a| a.reverse_bits()))?
            }
            Op::VXor3B32 => {
                let (a, bb, c) = (read(self, 0)?, read(self, 1)?, read(self, 2)?);
                write(self, lanewise!(|a, bb, c| a ^ bb ^ c))?
            }
            _ => return Err(Self::unsupported("not in the executor's vector operations")),
        }
        Ok(())
    }

    /// gfx11's dual issue: two VOP2-like operations whose sources are all read before either
    /// result is written (word 0: src0X, vsrc1X, opY, opX; word 1: src0Y, vsrc1Y, vdstY's
    /// upper bits, vdstX).
    pub(super) fn vopd(&mut self, inst: &Inst) -> Result<(), Error> {
        let (w, w1) = (inst.w[0], inst.w[1]);
        let lit = inst.literal;
        let exec = self.exec();
        let vdst_x = w1 >> 24;
        // vdstY's lowest bit is the opposite of vdstX's (the two land in different banks).
        let vdst_y = (((w1 >> 17) & 0x7f) << 1) | ((vdst_x & 1) ^ 1);
        let halves = [
            ((w >> 22) & 0xf, w & 0x1ff, 256 + ((w >> 9) & 0xff), vdst_x),
            (
                (w >> 17) & 0x1f,
                w1 & 0x1ff,
                256 + ((w1 >> 9) & 0xff),
                vdst_y,
            ),
        ];
        let vcc = self.vcc();
        let mut results = Vec::with_capacity(2);
        for (op, s0, s1, vdst) in halves {
            let a = self.vread(s0, lit)?;
            let bb = self.vread(s1, lit)?;
            let d = self.vread(256 + vdst, 0)?;
            let k = f(lit);
            let mut out = [0u32; LANES];
            for l in 0..self.lanes {
                if exec >> l & 1 == 0 {
                    continue;
                }
                let (x, y) = (f(a[l]), f(bb[l]));
                out[l] = match op {
                    0x00 => b(x.mul_add(y, f(d[l]))),
                    0x01 => b(x.mul_add(y, k)),
                    0x02 => b(x.mul_add(k, y)),
                    0x03 => b(x * y),
                    0x04 => b(x + y),
                    0x05 => b(x - y),
                    0x06 => b(y - x),
                    0x08 => a[l],
                    0x09 => {
                        if vcc >> l & 1 == 1 {
                            bb[l]
                        } else {
                            a[l]
                        }
                    }
                    0x0a => b(ieee_max(x, y)),
                    0x0b => b(ieee_min(x, y)),
                    0x10 => a[l].wrapping_add(bb[l]),
                    0x11 => bb[l] << (a[l] & 31),
                    0x12 => a[l] & bb[l],
                    _ => {
                        return Err(Error::Unsupported(format!(
                            "VOPD operation {op} ({})",
                            crate::opcodes_rdna::vopd(op).unwrap_or("undefined")
                        )))
                    }
                };
            }
            results.push((vdst, out));
        }
        for (vdst, out) in results {
            self.vwrite(vdst, &out, exec)?;
        }
        Ok(())
    }

    /// gfx90a's packed FP32 (VOP3P on 64-bit register pairs): op_sel picks each source's
    /// half for the low result, op_sel_hi for the high result; neg_lo/neg_hi negate.
    pub(super) fn packed_f32(
        &mut self,
        inst: &Inst,
        src: [u32; 3],
        vdst: u32,
        exec: u64,
    ) -> Result<(), Error> {
        let (w, w1) = (inst.w[0], inst.w[1]);
        if (w >> 15) & 1 == 1 {
            return Err(Self::unsupported("packed clamp"));
        }
        let bit = |v: u32, i: u32| (v >> i) & 1 == 1;
        let op_sel = [bit(w, 11), bit(w, 12), bit(w, 13)];
        let op_sel_hi = [bit(w1, 27), bit(w1, 28), bit(w, 14)];
        let neg_lo = [bit(w1, 29), bit(w1, 30), bit(w1, 31)];
        let neg_hi = [bit(w, 8), bit(w, 9), bit(w, 10)];
        let n = match inst.op {
            Op::VPkFmaF32 => 3,
            _ => 2,
        };
        let mut srcs = [[0u64; LANES]; 3];
        for i in 0..n {
            let pair = src[i] >= 256 || (src[i] <= 101 && src[i].is_multiple_of(2));
            // An inline constant (integer 128-208, float 240-248) whose low half both results
            // select: its 32-bit value there (what the high half of one would hold is moot).
            let inline = matches!(src[i], 128..=208 | 240..=248);
            if pair {
                srcs[i] = self.vread64(src[i], 0)?;
            } else if inline && !op_sel[i] && !op_sel_hi[i] {
                let low = self.vread(src[i], 0)?;
                for (s, v) in srcs[i].iter_mut().zip(low) {
                    *s = u64::from(v);
                }
            } else {
                return Err(Self::unsupported(
                    "a packed FP32 source that is not a register pair",
                ));
            }
        }
        let half = |x: u64, hi: bool| if hi { (x >> 32) as u32 } else { x as u32 };
        let mut out = [0u64; LANES];
        for l in 0..self.lanes {
            if exec >> l & 1 == 0 {
                continue;
            }
            let mut res = [0u32; 2];
            for (h, r) in res.iter_mut().enumerate() {
                let sel = if h == 0 { op_sel } else { op_sel_hi };
                let neg = if h == 0 { neg_lo } else { neg_hi };
                let x = |i: usize| {
                    let v = half(srcs[i][l], sel[i]);
                    if inst.op != Op::VPkMovB32 && neg[i] {
                        f(v ^ 0x8000_0000)
                    } else {
                        f(v)
                    }
                };
                *r = match inst.op {
                    Op::VPkFmaF32 => b(x(0).mul_add(x(1), x(2))),
                    Op::VPkMulF32 => b(x(0) * x(1)),
                    Op::VPkAddF32 => b(x(0) + x(1)),
                    // v_pk_mov_b32: the low result from source 0, the high from source 1.
                    _ => half(srcs[h][l], op_sel[h]),
                };
            }
            out[l] = u64::from(res[0]) | (u64::from(res[1]) << 32);
        }
        self.vwrite64(vdst, &out, exec)
    }

    // ---- vector memory ----
}

/// Selects a byte of {S0, S1} for v_perm_b32 (selector 0-3: S1's bytes, 4-7: S0's, 8-11:
/// sign bytes, 12: 0x00, 13+: 0xff).
fn perm_byte(data: u64, sel: u32) -> u32 {
    match sel {
        0..=7 => ((data >> (8 * sel)) & 0xff) as u32,
        8..=11 => {
            let bit = [15, 31, 47, 63][(sel - 8) as usize];
            if (data >> bit) & 1 == 1 {
                0xff
            } else {
                0
            }
        }
        12 => 0,
        _ => 0xff,
    }
}

/// An SDWA source select (BYTE_0..3, WORD_0..1, DWORD) applied to `x`, sign-extended when
/// `sext`.
fn sdwa_select(x: u32, sel: u32, sext: bool) -> u32 {
    let (shift, bits) = match sel {
        0..=3 => (8 * sel, 8),
        4 | 5 => (16 * (sel - 4), 16),
        _ => return x,
    };
    let v = (x >> shift) & ((1 << bits) - 1);
    if sext {
        (((v << (32 - bits)) as i32) >> (32 - bits)) as u32
    } else {
        v
    }
}

/// a * b + c, fused or with the product rounded first.
fn mad(a: f32, bb: f32, c: f32, fused: bool) -> f32 {
    if fused {
        a.mul_add(bb, c)
    } else {
        a * bb + c
    }
}

/// IEEE minNum: a NaN operand yields the other.
fn ieee_min(x: f32, y: f32) -> f32 {
    x.min(y)
}

fn ieee_max(x: f32, y: f32) -> f32 {
    x.max(y)
}

fn ldexp(x: f32, e: i32) -> f32 {
    (f64::from(x) * 2f64.powi(e)) as f32
}

/// v_div_scale_f32: scales `s0` (the numerator or the denominator) so that the quotient's
/// Newton-Raphson steps neither overflow nor underflow; the flag says the quotient must be
/// rescaled by v_div_fmas_f32.
fn div_scale(s0: f32, den: f32, num: f32) -> (f32, bool) {
    if num == 0.0 || den == 0.0 {
        return (f32::NAN, false);
    }
    let (en, ed) = (exponent(num), exponent(den));
    if en - ed >= 96 {
        return (if s0 == den { ldexp(s0, 64) } else { s0 }, true);
    }
    if is_denormal(den) {
        return (ldexp(s0, 64), false);
    }
    let (inv_den, quot) = (1.0 / den, num / den);
    if is_denormal(inv_den) && is_denormal(quot) {
        return (if s0 == den { ldexp(s0, 64) } else { s0 }, true);
    }
    if is_denormal(inv_den) {
        return (ldexp(s0, -64), false);
    }
    if is_denormal(quot) {
        return (if s0 == num { ldexp(s0, 64) } else { s0 }, true);
    }
    if en <= 23 {
        return (ldexp(s0, 64), false);
    }
    (s0, false)
}

/// v_div_fixup_f32: the special cases of num / den, else the computed quotient `q`.
fn div_fixup(q: f32, den: f32, num: f32) -> f32 {
    let sign = if den.is_sign_negative() != num.is_sign_negative() {
        -1.0f32
    } else {
        1.0
    };
    if num.is_nan() {
        return num;
    }
    if den.is_nan() {
        return den;
    }
    if (den == 0.0 && num == 0.0) || (den.is_infinite() && num.is_infinite()) {
        return f32::NAN;
    }
    if den == 0.0 || num.is_infinite() {
        return sign * f32::INFINITY;
    }
    if den.is_infinite() || num == 0.0 {
        return sign * 0.0;
    }
    if q.is_nan() {
        return sign * f32::INFINITY;
    }
    sign * q.abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn division_steps_handle_the_special_cases() {
        // 0 / 9: the scale step yields NaN, the fixup a signed zero (the case an average
        // pool of an exactly cancelling window meets).
        assert_eq!(div_fixup(f32::NAN, 9.0, 0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(
            div_fixup(f32::NAN, -9.0, 0.0).to_bits(),
            (-0.0f32).to_bits()
        );
        assert_eq!(div_fixup(1.0, 0.0, 3.0), f32::INFINITY);
        assert!(div_fixup(1.0, 0.0, 0.0).is_nan());
        assert!(div_fixup(1.0, f32::INFINITY, f32::NEG_INFINITY).is_nan());
        assert_eq!(div_fixup(0.25, -4.0, 1.0), -0.25);
        // Ordinary operands pass unscaled; a tiny numerator is scaled up by 2^64.
        assert_eq!(div_scale(3.0, 7.0, 3.0), (3.0, false));
        assert_eq!(div_scale(1e-32, 7.0, 1e-32), (ldexp(1e-32, 64), false));
        // A quotient past the float range asks fmas to rescale.
        assert!(div_scale(1e30, 1e-30, 1e30).1);
    }

    #[test]
    fn byte_permutes_and_sdwa_selects() {
        let data = 0x8899_aabb_ccdd_eeffu64;
        assert_eq!(perm_byte(data, 0), 0xff);
        assert_eq!(perm_byte(data, 7), 0x88);
        assert_eq!(perm_byte(data, 8), 0xff); // bit 15 of 0xeeff is set
        assert_eq!(perm_byte(data, 12), 0x00);
        assert_eq!(perm_byte(data, 13), 0xff);
        assert_eq!(sdwa_select(0x8001_7f02, 5, true), 0xffff_8001);
        assert_eq!(sdwa_select(0x8001_7f02, 4, false), 0x7f02);
        assert_eq!(sdwa_select(0x8001_7f02, 1, true), 0x7f);
        assert_eq!(sdwa_select(0x8001_7f02, 6, true), 0x8001_7f02);
    }
}
