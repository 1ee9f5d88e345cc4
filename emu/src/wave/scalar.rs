//! The scalar ALU, program control and scalar memory.

use super::*;

impl Wave {
    pub(super) fn scalar(&mut self, inst: &Inst) -> Result<(), Error> {
        let w = inst.w[0];
        let lit = inst.literal;
        let sdst = (w >> 16) & 0x7f;
        let simm = (w & 0xffff) as u16 as i16;
        // Sources by format: SOP2/SOPC two, SOP1 one, SOPK the destination and a constant.
        let (f0, f1) = (w & 0xff, (w >> 8) & 0xff);
        let s0 = || self.sread(f0, lit);
        let s1 = || self.sread(f1, lit);
        let s0w = || self.sread64(f0, lit);
        let s1w = || self.sread64(f1, lit);
        let branch = |me: &mut Self| {
            me.pc = (me.pc as i64 + 4 * i64::from(simm)) as u64;
        };
        match inst.op {
            Op::SNop | Op::SWaitcnt => {}
            Op::SEndpgm => self.status = Status::Done,
            Op::SBarrier => self.status = Status::Barrier,
            Op::SBranch => branch(self),
            Op::CBranch(cond) => {
                let taken = match cond {
                    BranchIf::Scc0 => !self.scc,
                    BranchIf::Scc1 => self.scc,
                    BranchIf::Vccz => self.vcc() == 0,
                    BranchIf::Vccnz => self.vcc() != 0,
                    BranchIf::Execz => self.exec() == 0,
                    BranchIf::Execnz => self.exec() != 0,
                };
                if taken {
                    branch(self);
                }
            }
            Op::SMovB32 => {
                let v = s0()?;
                self.swrite(sdst, v)?
            }
            Op::SMovB64 => {
                let v = s0w()?;
                self.swrite64(sdst, v)?
            }
            Op::SMovkI32 => self.swrite(sdst, simm as i32 as u32)?,
            Op::SCselectB32 => {
                let v = if self.scc { s0()? } else { s1()? };
                self.swrite(sdst, v)?
            }
            Op::SCselectB64 => {
                let v = if self.scc { s0w()? } else { s1w()? };
                self.swrite64(sdst, v)?
            }
            Op::SNotB32 => {
                let v = !s0()?;
                self.scc = v != 0;
                self.swrite(sdst, v)?
            }
            Op::SNotB64 => {
                let v = !s0w()?;
                self.scc = v != 0;
                self.swrite64(sdst, v)?
            }
            Op::SBrevB32 => {
                let v = s0()?.reverse_bits();
                self.swrite(sdst, v)?
            }
            Op::SAbsI32 => {
                let v = (s0()? as i32).wrapping_abs() as u32;
                self.scc = v != 0;
                self.swrite(sdst, v)?
            }
            Op::SFf1I32B32 => {
                let x = s0()?;
                let v = if x == 0 { u32::MAX } else { x.trailing_zeros() };
                self.swrite(sdst, v)?
            }
            Op::SFf1I32B64 => {
                let x = s0w()?;
                let v = if x == 0 { u32::MAX } else { x.trailing_zeros() };
                self.swrite(sdst, v)?
            }
            Op::SBcnt1I32B64 => {
                let v = s0w()?.count_ones();
                self.scc = v != 0;
                self.swrite(sdst, v)?
            }
            Op::SAddU32 => {
                let (v, c) = s0()?.overflowing_add(s1()?);
                self.scc = c;
                self.swrite(sdst, v)?
            }
            Op::SAddcU32 => {
                let sum = u64::from(s0()?) + u64::from(s1()?) + u64::from(self.scc);
                self.scc = sum >> 32 != 0;
                self.swrite(sdst, sum as u32)?
            }
            Op::SSubU32 => {
                let (v, c) = s0()?.overflowing_sub(s1()?);
                self.scc = c;
                self.swrite(sdst, v)?
            }
            Op::SSubbU32 => {
                let (a, bb, c) = (u64::from(s0()?), u64::from(s1()?), u64::from(self.scc));
                self.scc = bb + c > a;
                self.swrite(sdst, a.wrapping_sub(bb + c) as u32)?
            }
            Op::SAddI32 => {
                let (v, o) = (s0()? as i32).overflowing_add(s1()? as i32);
                self.scc = o;
                self.swrite(sdst, v as u32)?
            }
            Op::SSubI32 => {
                let (v, o) = (s0()? as i32).overflowing_sub(s1()? as i32);
                self.scc = o;
                self.swrite(sdst, v as u32)?
            }
            Op::SAddkI32 => {
                let (v, o) = (self.sread(sdst, 0)? as i32).overflowing_add(i32::from(simm));
                self.scc = o;
                self.swrite(sdst, v as u32)?
            }
            Op::SMulkI32 => {
                let v = (self.sread(sdst, 0)? as i32).wrapping_mul(i32::from(simm));
                self.swrite(sdst, v as u32)?
            }
            Op::SMulI32 => {
                let v = s0()?.wrapping_mul(s1()?);
                self.swrite(sdst, v)?
            }
            Op::SMulHiU32 => {
                let v = (u64::from(s0()?) * u64::from(s1()?)) >> 32;
                self.swrite(sdst, v as u32)?
            }
            Op::SMulHiI32 => {
                let v = (i64::from(s0()? as i32) * i64::from(s1()? as i32)) >> 32;
                self.swrite(sdst, v as u32)?
            }
            Op::SMinI32 | Op::SMaxI32 => {
                let (a, bb) = (s0()? as i32, s1()? as i32);
                let first = if inst.op == Op::SMinI32 {
                    a < bb
                } else {
                    a > bb
                };
                self.scc = first;
                self.swrite(sdst, if first { a } else { bb } as u32)?
            }
            Op::SMinU32 | Op::SMaxU32 => {
                let (a, bb) = (s0()?, s1()?);
                let first = if inst.op == Op::SMinU32 {
                    a < bb
                } else {
                    a > bb
                };
                self.scc = first;
                self.swrite(sdst, if first { a } else { bb })?
            }
            Op::SLshlB32 => {
                let v = s0()? << (s1()? & 31);
                self.scc = v != 0;
                self.swrite(sdst, v)?
            }
            Op::SLshrB32 => {
                let v = s0()? >> (s1()? & 31);
                self.scc = v != 0;
                self.swrite(sdst, v)?
            }
            Op::SAshrI32 => {
                let v = ((s0()? as i32) >> (s1()? & 31)) as u32;
                self.scc = v != 0;
                self.swrite(sdst, v)?
            }
            Op::SLshlB64 => {
                let v = s0w()? << (s1()? & 63);
                self.scc = v != 0;
                self.swrite64(sdst, v)?
            }
            Op::SLshrB64 => {
                let v = s0w()? >> (s1()? & 63);
                self.scc = v != 0;
                self.swrite64(sdst, v)?
            }
            Op::SAshrI64 => {
                let v = ((s0w()? as i64) >> (s1()? & 63)) as u64;
                self.scc = v != 0;
                self.swrite64(sdst, v)?
            }
            Op::SBfeU32 | Op::SBfeI32 => {
                let (x, ctl) = (s0()?, s1()?);
                let (off, width) = (ctl & 31, (ctl >> 16) & 0x7f);
                let v = if width == 0 {
                    0
                } else {
                    let raw = x >> off;
                    let width = width.min(32);
                    let mask = if width == 32 {
                        u32::MAX
                    } else {
                        (1 << width) - 1
                    };
                    let v = raw & mask;
                    if inst.op == Op::SBfeI32 && width < 32 {
                        (((v << (32 - width)) as i32) >> (32 - width)) as u32
                    } else {
                        v
                    }
                };
                self.scc = v != 0;
                self.swrite(sdst, v)?
            }
            Op::SLshl1AddU32 | Op::SLshl2AddU32 | Op::SLshl3AddU32 | Op::SLshl4AddU32 => {
                let shift = match inst.op {
                    Op::SLshl1AddU32 => 1,
                    Op::SLshl2AddU32 => 2,
                    Op::SLshl3AddU32 => 3,
                    _ => 4,
                };
                let sum = (u64::from(s0()?) << shift) + u64::from(s1()?);
                self.scc = sum >> 32 != 0;
                self.swrite(sdst, sum as u32)?
            }
            Op::SPackLlB32B16 => {
                let v = (s0()? & 0xffff) | (s1()? << 16);
                self.swrite(sdst, v)?
            }
            Op::SSetregB32 => {
                // Only the flat-scratch base (gfx10 hwreg 20/21), which the model's scratch
                // addressing does not use.
                let id = (w & 0xffff) & 0x3f;
                if !(self.family == Family::Gfx10 && matches!(id, 20 | 21)) {
                    return Err(Error::Unsupported(format!(
                        "s_setreg_b32 of hardware register {id}"
                    )));
                }
            }
            Op::SSendmsg => {
                // gfx11's MSG_DEALLOC_VGPRS before s_endpgm: nothing to model.
                if !(self.family == Family::Gfx11 && (w & 0xffff) == 3) {
                    return Err(Error::Unsupported(format!("s_sendmsg {}", w & 0xffff)));
                }
            }
            Op::SCvtF32I32 | Op::SCvtF32U32 | Op::SCvtI32F32 | Op::SCvtU32F32 | Op::STruncF32 => {
                let x = s0()?;
                let v = match inst.op {
                    Op::SCvtF32I32 => b(x as i32 as f32),
                    Op::SCvtF32U32 => b(x as f32),
                    Op::SCvtI32F32 => f(x) as i32 as u32,
                    Op::SCvtU32F32 => f(x) as u32,
                    _ => b(f(x).trunc()),
                };
                self.swrite(sdst, v)?
            }
            Op::SAddF32 | Op::SSubF32 | Op::SMulF32 | Op::SFmamkF32 | Op::SFmaakF32 => {
                let (x, y) = (f(s0()?), f(s1()?));
                let k = f(lit);
                let v = match inst.op {
                    Op::SAddF32 => x + y,
                    Op::SSubF32 => x - y,
                    Op::SMulF32 => x * y,
                    // D = S0 * K + S1, and D = S0 * S1 + K.
                    Op::SFmamkF32 => x.mul_add(k, y),
                    _ => x.mul_add(y, k),
                };
                self.swrite(sdst, b(v))?
            }
            Op::SLogic { logic, wide } => {
                if wide {
                    let v = logic.apply(s0w()?, s1w()?);
                    self.scc = v != 0;
                    self.swrite64(sdst, v)?
                } else {
                    let v = logic.apply(u64::from(s0()?), u64::from(s1()?)) as u32;
                    self.scc = v != 0;
                    self.swrite(sdst, v)?
                }
            }
            Op::SaveExec { logic, wide } => {
                let old = self.exec();
                let src = if wide { s0w()? } else { u64::from(s0()?) };
                let new = logic.apply(src, old);
                if wide {
                    self.swrite64(sdst, old)?;
                } else {
                    self.swrite(sdst, old as u32)?;
                }
                self.set_exec(new);
                self.scc = self.exec() != 0;
            }
            Op::SBitCmp { one, wide } => {
                // The bit index is S1's low 5 (6) bits; S1 is 32 bits either way.
                let bit = if wide {
                    (s0w()? >> (s1()? & 63)) & 1
                } else {
                    u64::from((s0()? >> (s1()? & 31)) & 1)
                };
                self.scc = (bit == 1) == one;
            }
            Op::SCmp { cond, ty, k } => {
                self.scc = if k {
                    let a = self.sread(sdst, 0)?;
                    match ty {
                        CmpType::I32 => cond.int(a as i32, i32::from(simm)),
                        _ => cond.int(a, u32::from(simm as u16)),
                    }
                } else {
                    match ty {
                        CmpType::I32 => cond.int(s0()? as i32, s1()? as i32),
                        CmpType::U32 => cond.int(s0()?, s1()?),
                        CmpType::U64 | CmpType::I64 => cond.int(s0w()?, s1w()?),
                        CmpType::F32 => cond.float(f64::from(f(s0()?)), f64::from(f(s1()?))),
                    }
                };
            }
            _ => return Err(Self::unsupported("not in the executor's scalar operations")),
        }
        Ok(())
    }

    pub(super) fn smem(&mut self, inst: &Inst, env: &mut Env<'_>) -> Result<(), Error> {
        let Op::SLoad { dwords } = inst.op else {
            return Err(Self::unsupported(
                "a scalar memory operation other than a load",
            ));
        };
        let (w, w1) = (inst.w[0], inst.w[1]);
        let sbase = (w & 0x3f) * 2;
        let sdata = (w >> 6) & 0x7f;
        let base = self.sread64(sbase, 0)?;
        let offset = if self.family != Family::Gfx9 {
            // gfx10/gfx11: always the 21-bit signed offset plus an SGPR's (null: none).
            i64::from(((w1 & 0x1f_ffff) << 11) as i32 >> 11) + i64::from(self.sread(w1 >> 25, 0)?)
        } else if (w >> 17) & 1 == 1 {
            // A 21-bit signed byte offset, plus with SOE an SGPR's (word 1, bits 31:25).
            let imm = i64::from(((w1 & 0x1f_ffff) << 11) as i32 >> 11);
            if (w >> 14) & 1 == 1 {
                imm + i64::from(self.sread(w1 >> 25, 0)?)
            } else {
                imm
            }
        } else {
            i64::from(self.sread(w1 & 0x7f, 0)?)
        };
        // The hardware ignores the low two address bits of a scalar load.
        let addr = (base as i64).wrapping_add(offset) as u64 & !3;
        let bytes = env
            .memory
            .get(addr, 4 * dwords as usize)
            .ok_or_else(|| {
                Error::Fault(format!(
                    "scalar load of {} B at 0x{addr:x} outside device memory",
                    4 * dwords
                ))
            })?
            .to_vec();
        for i in 0..dwords {
            let o = 4 * i as usize;
            let v = u32::from_le_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]);
            self.swrite(sdata + i, v)?;
        }
        Ok(())
    }

    // ---- vector ALU ----
}
