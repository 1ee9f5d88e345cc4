//! One wavefront's state and the semantics of each instruction (gfx9: GCN5/CDNA, wave64),
//! from AMD's ISA reference guides for Vega, CDNA 2 and CDNA 3. Each instruction runs on all
//! lanes at once: operands are read into per-lane arrays, the operation is applied to the
//! lanes EXEC enables, and the results are written back.

// Lane loops index several per-lane arrays (sources, results, EXEC bits) by the lane.
#![allow(clippy::needless_range_loop)]

use crate::decode::{Extension, Family, Format};
use crate::isa::{Access, BranchIf, CmpType, Op, Space};
use crate::memory::Memory;
use crate::program::{Inst, Program};
use crate::Error;

/// Lanes of the widest wave.
pub const LANES: usize = 64;
/// High half of flat addresses that fall in LDS (what `src_shared_base` reads).
pub const SHARED_APERTURE: u64 = 0x0001_0000_0000_0000;
/// High half of flat addresses that fall in the lane's private memory.
pub const PRIVATE_APERTURE: u64 = 0x0002_0000_0000_0000;
/// Bytes of each aperture.
const APERTURE_BYTES: u64 = 1 << 32;
/// Architectural VGPRs (and as many AGPRs).
pub const VGPRS: usize = 256;

type Lanes = [u32; LANES];
type Lanes64 = [u64; LANES];

/// Where the wave is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Running.
    Ready,
    /// Waiting at `s_barrier`.
    Barrier,
    /// Reached `s_endpgm`.
    Done,
}

/// One wavefront.
pub struct Wave {
    /// Lanes: 64 (gfx9) or 32.
    pub lanes: usize,
    /// The encoding family (gfx10 and gfx11 number M0 and the null register apart).
    pub family: Family,
    /// Scalar registers by operand field: s0-s101, flat_scratch, xnack_mask, vcc, ttmp, m0,
    /// exec (126-127).
    pub s: [u32; 128],
    /// VGPRs, register-major: `v[r * LANES + lane]`.
    pub v: Vec<u32>,
    /// AGPRs (gfx908/gfx90a/gfx942), the same layout.
    pub a: Vec<u32>,
    /// The scalar condition code.
    pub scc: bool,
    /// The next instruction's address.
    pub pc: u64,
    /// Running, at a barrier or done.
    pub status: Status,
    /// Base of this wave's scratch: lane `l`'s private byte `o` is at
    /// `base + (o / 4) * 4 * lanes + 4 * l + o % 4` (the hardware's swizzled layout).
    pub scratch_base: u64,
    /// Private bytes per lane.
    pub scratch_bytes: u32,
    /// VGPRs the kernel descriptor allocates: touching one past them is a fault.
    pub vgpr_limit: usize,
    /// SGPRs the descriptor allocates (gfx9; gfx10 and later always have s0-s105).
    pub sgpr_limit: usize,
}

/// What an instruction needs beyond its wave.
pub struct Env<'a> {
    /// The kernel.
    pub program: &'a Program,
    /// Device memory.
    pub memory: &'a mut Memory,
    /// The workgroup's LDS.
    pub lds: &'a mut [u8],
}

/// VCC's field.
const VCC: u32 = 106;
/// M0's field.
const M0: u32 = 124;

fn f(x: u32) -> f32 {
    f32::from_bits(x)
}

fn b(x: f32) -> u32 {
    x.to_bits()
}

/// A float's biased exponent.
fn exponent(x: f32) -> i32 {
    ((x.to_bits() >> 23) & 0xff) as i32
}

fn is_denormal(x: f32) -> bool {
    x != 0.0 && exponent(x) == 0
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

impl Wave {
    /// A wave of `lanes` lanes with every register zero.
    pub fn new(lanes: usize, family: Family) -> Wave {
        Wave {
            lanes,
            family,
            s: [0; 128],
            v: vec![0; VGPRS * LANES],
            a: vec![0; VGPRS * LANES],
            scc: false,
            pc: 0,
            status: Status::Ready,
            scratch_base: 0,
            scratch_bytes: 0,
            vgpr_limit: VGPRS,
            sgpr_limit: 106,
        }
    }

    /// EXEC (its low 32 bits on a wave32).
    pub fn exec(&self) -> u64 {
        let e = u64::from(self.s[126]) | (u64::from(self.s[127]) << 32);
        if self.lanes == 32 {
            e & 0xffff_ffff
        } else {
            e
        }
    }

    /// Sets EXEC.
    pub fn set_exec(&mut self, e: u64) {
        self.s[126] = e as u32;
        self.s[127] = if self.lanes == 32 {
            0
        } else {
            (e >> 32) as u32
        };
    }

    fn vcc(&self) -> u64 {
        let v = u64::from(self.s[106]) | (u64::from(self.s[107]) << 32);
        if self.lanes == 32 {
            v & 0xffff_ffff
        } else {
            v
        }
    }

    /// A VGPR's value in one lane.
    pub fn vgpr(&self, reg: usize, lane: usize) -> u32 {
        self.v[reg * LANES + lane]
    }

    /// Runs the instruction at the pc.
    pub fn step(&mut self, env: &mut Env<'_>) -> Result<(), Error> {
        let program: &Program = env.program;
        let inst = program.at(self.pc)?;
        let next = self.pc + u64::from(inst.bytes);
        self.pc = next;
        let at = |e: Error| match e {
            Error::Fault(why) => Error::Fault(format!(
                "kernel {}, pc 0x{:x} ({}): {why}",
                program.name, inst.pc, inst.name
            )),
            Error::Unsupported(why) => Error::Unsupported(format!(
                "kernel {}, pc 0x{:x} ({}): {why}",
                program.name, inst.pc, inst.name
            )),
            other => other,
        };
        self.execute(inst, env).map_err(at)
    }

    fn unsupported(why: &str) -> Error {
        Error::Unsupported(why.to_string())
    }

    // ---- scalar operands ----

    /// Where a scalar register field (0-127) lives: its slot in `s` (M0 always in slot 124),
    /// or `None` for the null register (gfx10: 125; gfx11: 124, with M0 at 125).
    fn slot(&self, field: u32) -> Result<Option<usize>, Error> {
        Ok(match (self.family, field) {
            (Family::Gfx9, 125) => return Err(Self::unsupported("operand field 125")),
            (Family::Gfx10, 125) | (Family::Gfx11, 124) => None,
            (Family::Gfx11, 125) => Some(M0 as usize),
            (Family::Gfx9, 0..=101) if field as usize >= self.sgpr_limit => {
                return Err(Error::Fault(format!(
                    "s{field} is past the {} SGPRs the kernel descriptor allocates",
                    self.sgpr_limit
                )))
            }
            (_, 0..=127) => Some(field as usize),
            _ => return Err(Error::Unsupported(format!("scalar register field {field}"))),
        })
    }

    /// A 32-bit scalar operand field (8 bits).
    fn sread(&self, field: u32, literal: u32) -> Result<u32, Error> {
        Ok(match field {
            0..=127 => match self.slot(field)? {
                Some(i) => self.s[i],
                None => 0,
            },
            128..=192 => field - 128,
            193..=208 => (-((field - 192) as i32)) as u32,
            235 => (SHARED_APERTURE >> 32) as u32,
            236 => ((SHARED_APERTURE + APERTURE_BYTES - 1) >> 32) as u32,
            237 => (PRIVATE_APERTURE >> 32) as u32,
            238 => ((PRIVATE_APERTURE + APERTURE_BYTES - 1) >> 32) as u32,
            240 => b(0.5),
            241 => b(-0.5),
            242 => b(1.0),
            243 => b(-1.0),
            244 => b(2.0),
            245 => b(-2.0),
            246 => b(4.0),
            247 => b(-4.0),
            248 => 0x3e22_f983,
            251 => u32::from(self.vcc() == 0),
            252 => u32::from(self.exec() == 0),
            253 => u32::from(self.scc),
            255 => literal,
            _ => return Err(Error::Unsupported(format!("operand field {field}"))),
        })
    }

    /// A 64-bit scalar operand field.
    fn sread64(&self, field: u32, literal: u32) -> Result<u64, Error> {
        Ok(match field {
            0..=127 => {
                if self.slot(field)?.is_none() {
                    return Ok(0);
                }
                if field % 2 == 1 || field == 124 {
                    return Err(Error::Unsupported(format!(
                        "64-bit operand at odd field {field}"
                    )));
                }
                let v = u64::from(self.s[field as usize])
                    | (u64::from(self.s[field as usize + 1]) << 32);
                match field {
                    106 => self.vcc(),
                    126 => self.exec(),
                    _ => v,
                }
            }
            128..=208 => self.sread(field, 0)? as i32 as i64 as u64,
            240..=247 => f64::from(f(self.sread(field, 0)?)).to_bits(),
            248 => 0x3fc4_5f30_6dc9_c882,
            251..=253 => u64::from(self.sread(field, 0)?),
            255 => u64::from(literal),
            _ => return Err(Error::Unsupported(format!("operand field {field}"))),
        })
    }

    /// Writes a 32-bit scalar destination field (7 bits).
    fn swrite(&mut self, field: u32, v: u32) -> Result<(), Error> {
        let Some(slot) = self.slot(field)? else {
            return Ok(());
        };
        match slot as u32 {
            0..=107 | M0 | 126 | 127 => self.s[slot] = v,
            _ => {
                return Err(Error::Unsupported(format!(
                    "scalar destination field {field}"
                )))
            }
        }
        if field == 127 && self.lanes == 32 {
            self.s[127] = 0;
        }
        Ok(())
    }

    fn swrite64(&mut self, field: u32, v: u64) -> Result<(), Error> {
        if self.slot(field)?.is_none() {
            return Ok(());
        }
        if field % 2 == 1 || field > 126 || field == 124 {
            return Err(Error::Unsupported(format!(
                "64-bit scalar destination at field {field}"
            )));
        }
        self.swrite(field, v as u32)?;
        self.swrite(field + 1, (v >> 32) as u32)
    }

    /// Checks that VGPRs `first .. first + count` lie within the descriptor's allocation.
    fn vgprs(&self, first: usize, count: usize) -> Result<usize, Error> {
        if first + count > self.vgpr_limit {
            return Err(Error::Fault(format!(
                "v{} is past the {} VGPRs the kernel descriptor allocates",
                first + count - 1,
                self.vgpr_limit
            )));
        }
        Ok(first)
    }

    /// A lane mask from a scalar operand: 64 bits on wave64, 32 on wave32.
    fn read_mask(&self, field: u32) -> Result<u64, Error> {
        if self.lanes == 32 {
            Ok(u64::from(self.sread(field, 0)?))
        } else {
            self.sread64(field, 0)
        }
    }

    // ---- vector operands ----

    /// A 9-bit vector source field, per lane.
    fn vread(&self, field: u32, literal: u32) -> Result<Lanes, Error> {
        if field >= 256 {
            let r = self.vgprs((field - 256) as usize, 1)?;
            let mut out = [0u32; LANES];
            out.copy_from_slice(&self.v[r * LANES..(r + 1) * LANES]);
            Ok(out)
        } else {
            Ok([self.sread(field, literal)?; LANES])
        }
    }

    /// A 9-bit vector source field read as 64 bits, per lane.
    fn vread64(&self, field: u32, literal: u32) -> Result<Lanes64, Error> {
        if field >= 256 {
            let r = self.vgprs((field - 256) as usize, 2)?;
            let mut out = [0u64; LANES];
            for (l, o) in out.iter_mut().enumerate() {
                *o = u64::from(self.v[r * LANES + l])
                    | (u64::from(self.v[(r + 1) * LANES + l]) << 32);
            }
            Ok(out)
        } else {
            Ok([self.sread64(field, literal)?; LANES])
        }
    }

    fn vwrite(&mut self, reg: u32, vals: &Lanes, exec: u64) -> Result<(), Error> {
        let r = self.vgprs(reg as usize, 1)?;
        for l in 0..self.lanes {
            if exec >> l & 1 == 1 {
                self.v[r * LANES + l] = vals[l];
            }
        }
        Ok(())
    }

    fn vwrite64(&mut self, reg: u32, vals: &Lanes64, exec: u64) -> Result<(), Error> {
        let r = self.vgprs(reg as usize, 2)?;
        for l in 0..self.lanes {
            if exec >> l & 1 == 1 {
                self.v[r * LANES + l] = vals[l] as u32;
                self.v[(r + 1) * LANES + l] = (vals[l] >> 32) as u32;
            }
        }
        Ok(())
    }

    /// Runs one instruction (the pc already points past it).
    fn execute(&mut self, inst: &Inst, env: &mut Env<'_>) -> Result<(), Error> {
        match inst.format {
            Format::Sop1 | Format::Sop2 | Format::Sopk | Format::Sopc | Format::Sopp => {
                self.scalar(inst)
            }
            Format::Smem => self.smem(inst, env),
            Format::Vop1 | Format::Vop2 | Format::Vopc | Format::Vop3 | Format::Vop3p => {
                self.valu(inst)
            }
            Format::Vopd => self.vopd(inst),
            Format::Ds | Format::Flat | Format::Mubuf => self.vmem(inst, env),
            _ => Err(Self::unsupported("an encoding the executor does not run")),
        }
    }

    // ---- scalar ALU and control ----

    fn scalar(&mut self, inst: &Inst) -> Result<(), Error> {
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

    fn smem(&mut self, inst: &Inst, env: &mut Env<'_>) -> Result<(), Error> {
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

    fn valu(&mut self, inst: &Inst) -> Result<(), Error> {
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
            Op::VXad3U32 => {
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

    /// A 16-bit half of a register of `file` (VGPRs or AGPRs) in one lane, as FP32 (`bf16`:
    /// bfloat16, else IEEE half).
    fn half_at(file: &[u32], reg: usize, lane: usize, high: bool, bf16: bool) -> f32 {
        let word = file[reg * LANES + lane];
        let bits = if high { word >> 16 } else { word & 0xffff } as u16;
        if bf16 {
            f32::from_bits(u32::from(bits) << 16)
        } else {
            half_to_f32(bits)
        }
    }

    /// v_mfma_f32_32x32x8 (f16, bf16): D = A (32 x 8) B (8 x 32) + C, one wave64 instruction
    /// regardless of EXEC. A[i][k] is in lane i + 32 (k / 4), register src0 + (k % 4) / 2, half
    /// k % 2; B[k][j] likewise in lane j + 32 (k / 4); C and D[i][j] in lane j + 32 ((i / 4) %
    /// 2), register 4 (i / 8) + i % 4 (AMD's matrix instruction calculator, CDNA 2/3).
    fn mfma(&mut self, inst: &Inst, src: [u32; 3]) -> Result<(), Error> {
        let (w, w1) = (inst.w[0], inst.w[1]);
        if self.lanes != 64 || (w >> 8) & 0x7f != 0 || w1 >> 29 != 0 {
            return Err(Self::unsupported(
                "MFMA broadcasts (cbsz/abid/blgp) or a wave32 MFMA",
            ));
        }
        let bf16 = inst.op == Op::VMfmaF32x32x8Bf16;
        let acc_cd = (w >> 15) & 1 == 1;
        let acc_ab = (w1 >> 27) & 3;
        let vgpr = |field: u32| -> Result<usize, Error> {
            field
                .checked_sub(256)
                .map(|r| r as usize)
                .ok_or_else(|| Self::unsupported("an MFMA operand that is not a register"))
        };
        let (ra, rb, rc, rd) = (
            vgpr(src[0])?,
            vgpr(src[1])?,
            vgpr(src[2])?,
            (w & 0xff) as usize,
        );
        for (r, n, agpr) in [
            (ra, 2, acc_ab & 1 == 1),
            (rb, 2, acc_ab & 2 == 2),
            (rc, 16, acc_cd),
            (rd, 16, acc_cd),
        ] {
            if agpr {
                if r + n > VGPRS {
                    return Err(Self::unsupported("MFMA AGPRs past a255"));
                }
            } else {
                self.vgprs(r, n)?;
            }
        }
        let (fa, fb) = (
            if acc_ab & 1 == 1 { &self.a } else { &self.v },
            if acc_ab & 2 == 2 { &self.a } else { &self.v },
        );
        let fc = if acc_cd { &self.a } else { &self.v };
        let mut d = [[0f32; 32]; 32];
        for (i, row) in d.iter_mut().enumerate() {
            for (j, out) in row.iter_mut().enumerate() {
                let at = |i: usize, j: usize| (j + 32 * ((i / 4) % 2), 4 * (i / 8) + i % 4);
                let (lane, reg) = at(i, j);
                let mut sum = f64::from(f32::from_bits(fc[(rc + reg) * LANES + lane]));
                for k in 0..8 {
                    let a = Self::half_at(fa, ra + (k % 4) / 2, i + 32 * (k / 4), k % 2 == 1, bf16);
                    let b = Self::half_at(fb, rb + (k % 4) / 2, j + 32 * (k / 4), k % 2 == 1, bf16);
                    sum += f64::from(a) * f64::from(b);
                }
                *out = sum as f32;
            }
        }
        let fd = if acc_cd { &mut self.a } else { &mut self.v };
        for (i, row) in d.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                let (lane, reg) = (j + 32 * ((i / 4) % 2), 4 * (i / 8) + i % 4);
                fd[(rd + reg) * LANES + lane] = v.to_bits();
            }
        }
        Ok(())
    }

    /// v_wmma_f32_16x16x16 (f16, bf16), wave32: D = A (16 x 16) B (16 x 16) + C. A[i][k] is in
    /// lanes i and i + 16 (which must agree), register src0 + k / 2, half k % 2; B[k][j] in
    /// lanes j and j + 16; C and D[i][j] in lane j + 16 (i % 2), register i / 2 (AMD's matrix
    /// instruction calculator, RDNA 3).
    fn wmma(&mut self, inst: &Inst, src: [u32; 3]) -> Result<(), Error> {
        let (w, w1) = (inst.w[0], inst.w[1]);
        if self.lanes != 32 || (w >> 8) & 0x7f != 0x40 || w1 >> 27 != 3 {
            return Err(Self::unsupported(
                "WMMA modifiers (op_sel, neg, clamp) or wave64",
            ));
        }
        let bf16 = inst.op == Op::VWmmaF32Bf16;
        let vgpr = |field: u32| -> Result<usize, Error> {
            field
                .checked_sub(256)
                .map(|r| r as usize)
                .ok_or_else(|| Self::unsupported("a WMMA operand that is not a VGPR"))
        };
        let (ra, rb, rc, rd) = (
            vgpr(src[0])?,
            vgpr(src[1])?,
            vgpr(src[2])?,
            (w & 0xff) as usize,
        );
        for r in [ra, rb, rc, rd] {
            self.vgprs(r, 8)?;
        }
        // The A and B operands are replicated in both half-waves; a kernel that fills them
        // differently computes something else on hardware.
        for (r, what) in [(ra, "A"), (rb, "B")] {
            for reg in r..r + 8 {
                for l in 0..16 {
                    if self.v[reg * LANES + l] != self.v[reg * LANES + l + 16] {
                        return Err(Error::Fault(format!(
                            "WMMA {what} operand v{reg}: lanes {l} and {} differ",
                            l + 16
                        )));
                    }
                }
            }
        }
        let mut d = [[0f32; 16]; 16];
        for (i, row) in d.iter_mut().enumerate() {
            for (j, out) in row.iter_mut().enumerate() {
                let mut sum = f64::from(f32::from_bits(
                    self.v[(rc + i / 2) * LANES + j + 16 * (i % 2)],
                ));
                for k in 0..16 {
                    let a = Self::half_at(&self.v, ra + k / 2, i, k % 2 == 1, bf16);
                    let b = Self::half_at(&self.v, rb + k / 2, j, k % 2 == 1, bf16);
                    sum += f64::from(a) * f64::from(b);
                }
                *out = sum as f32;
            }
        }
        for (i, row) in d.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                self.v[(rd + i / 2) * LANES + j + 16 * (i % 2)] = v.to_bits();
            }
        }
        Ok(())
    }

    /// gfx11's dual issue: two VOP2-like operations whose sources are all read before either
    /// result is written (word 0: src0X, vsrc1X, opY, opX; word 1: src0Y, vsrc1Y, vdstY's
    /// upper bits, vdstX).
    fn vopd(&mut self, inst: &Inst) -> Result<(), Error> {
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
    fn packed_f32(
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
            if src[i] < 256 && !(src[i] <= 101 && src[i].is_multiple_of(2)) {
                return Err(Self::unsupported(
                    "a packed FP32 source that is not a register pair",
                ));
            }
            srcs[i] = self.vread64(src[i], 0)?;
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

    fn vmem(&mut self, inst: &Inst, env: &mut Env<'_>) -> Result<(), Error> {
        if inst.op == Op::CacheInvalidate {
            // Memory is coherent in the model: nothing is cached.
            return Ok(());
        }
        let Op::Mem(acc) = inst.op else {
            return Err(Self::unsupported("not in the executor's memory operations"));
        };
        let exec = self.exec();
        let (w, w1) = (inst.w[0], inst.w[1]);
        let lanes = self.lanes;
        // Per lane: the address (in its space) of each element.
        let mut addrs = [0u64; LANES];
        // Each element group: an offset added to the lane's address, and its first register.
        let mut parts = [(0u64, 0u32); 2];
        let mut nparts = 1;
        let mut space = acc.space;
        match inst.format {
            Format::Ds => {
                let (off0, off1) = (w & 0xff, (w >> 8) & 0xff);
                let (addr, d0, d1, vd) = (w1 & 0xff, (w1 >> 8) & 0xff, (w1 >> 16) & 0xff, w1 >> 24);
                let gds_bit = if self.family == Family::Gfx9 { 16 } else { 17 };
                if (w >> gds_bit) & 1 == 1 {
                    return Err(Self::unsupported("GDS"));
                }
                let a = self.vread(256 + addr, 0)?;
                for l in 0..lanes {
                    addrs[l] = u64::from(a[l]);
                }
                if acc.pair {
                    // read2/write2: two elements, at offset0 and offset1 in units of the
                    // element; the second from data1 or into the registers after the first.
                    let unit = 4 * u64::from(acc.count);
                    let second = if acc.store { d1 } else { vd + acc.count };
                    let first = if acc.store { d0 } else { vd };
                    parts = [
                        (unit * u64::from(off0), first),
                        (unit * u64::from(off1), second),
                    ];
                    nparts = 2;
                } else {
                    parts[0] = (
                        u64::from(off0 | (off1 << 8)),
                        if acc.store { d0 } else { vd },
                    );
                }
            }
            Format::Flat => {
                // By family: the segment's bits, the offset's width (flat's unsigned, global's
                // and scratch's signed), and the saddr value meaning "off" (gfx10/gfx11: null).
                let (seg, flat_bits, signed_bits, off) = match self.family {
                    Family::Gfx9 => ((w >> 14) & 3, 12, 13, 0x7f),
                    Family::Gfx10 => ((w >> 14) & 3, 11, 12, 0x7d),
                    Family::Gfx11 => ((w >> 16) & 3, 12, 13, 0x7c),
                };
                let (addr, d, saddr, vd) =
                    (w1 & 0xff, (w1 >> 8) & 0xff, (w1 >> 16) & 0x7f, w1 >> 24);
                if self.family == Family::Gfx9
                    && (w1 >> 23) & 1 == 1
                    && env.program.arch != "gfx942"
                {
                    return Err(Self::unsupported("AGPR data"));
                }
                let offset = if seg == 0 {
                    i64::from(w & ((1 << flat_bits) - 1))
                } else {
                    let shift = 32 - signed_bits;
                    i64::from(((w & ((1 << signed_bits) - 1)) << shift) as i32 >> shift)
                };
                let saddr = if saddr == off { 0x7f } else { saddr };
                // Scratch takes its VGPR address only when told (gfx942 and gfx11: the SVE
                // bit), or else when no SGPR address is given.
                let scratch_vaddr = match (self.family, env.program.arch) {
                    (_, "gfx942") => (w >> 13) & 1 == 1,
                    (Family::Gfx11, _) => (w1 >> 23) & 1 == 1,
                    _ => saddr == 0x7f,
                };
                match seg {
                    0 => {
                        let a = self.vread64(256 + addr, 0)?;
                        for l in 0..lanes {
                            addrs[l] = (a[l] as i64).wrapping_add(offset) as u64;
                        }
                    }
                    2 => {
                        if saddr == 0x7f {
                            let a = self.vread64(256 + addr, 0)?;
                            for l in 0..lanes {
                                addrs[l] = (a[l] as i64).wrapping_add(offset) as u64;
                            }
                        } else {
                            let base = self.sread64(saddr, 0)?;
                            let a = self.vread(256 + addr, 0)?;
                            for l in 0..lanes {
                                addrs[l] = (base.wrapping_add(u64::from(a[l])) as i64)
                                    .wrapping_add(offset)
                                    as u64;
                            }
                        }
                    }
                    1 => {
                        // Scratch: a private offset per lane.
                        let v = if scratch_vaddr {
                            self.vread(256 + addr, 0)?
                        } else {
                            [0; LANES]
                        };
                        let s = if saddr == 0x7f {
                            0
                        } else {
                            self.sread(saddr, 0)?
                        };
                        for l in 0..lanes {
                            addrs[l] = (i64::from(v[l].wrapping_add(s)) + offset) as u64;
                        }
                    }
                    _ => return Err(Self::unsupported("flat segment 3")),
                }
                parts[0].1 = if acc.store { d } else { vd };
            }
            Format::Mubuf => {
                if self.family == Family::Gfx11 {
                    return Err(Self::unsupported("gfx11 buffer loads and stores"));
                }
                let (offen, idxen) = ((w >> 12) & 1 == 1, (w >> 13) & 1 == 1);
                if (w >> 16) & 1 == 1 {
                    return Err(Self::unsupported("buffer loads into LDS"));
                }
                let (vaddr, d, srsrc, soffset) = (
                    w1 & 0xff,
                    (w1 >> 8) & 0xff,
                    ((w1 >> 16) & 0x1f) * 4,
                    w1 >> 24,
                );
                let rsrc: Vec<u32> = (0..4).map(|i| self.s[(srsrc + i) as usize]).collect();
                let base = u64::from(rsrc[0]) | (u64::from(rsrc[1] & 0xffff) << 32);
                let stride = u64::from((rsrc[1] >> 16) & 0x3fff);
                let swizzle = (rsrc[1] >> 31) & 1 == 1;
                let add_tid = (rsrc[3] >> 23) & 1 == 1;
                let index_stride = [8u64, 16, 32, 64][((rsrc[3] >> 21) & 3) as usize];
                let soff = u64::from(self.sread(soffset, 0)?);
                let va = self.vread(256 + vaddr, 0)?;
                let va2 = if offen && idxen {
                    self.vread(256 + vaddr + 1, 0)?
                } else {
                    [0; LANES]
                };
                for l in 0..lanes {
                    let index = if idxen { u64::from(va[l]) } else { 0 }
                        + if add_tid { l as u64 } else { 0 };
                    let off = if offen {
                        u64::from(if idxen { va2[l] } else { va[l] })
                    } else {
                        0
                    } + u64::from(w & 0xfff);
                    addrs[l] = if swizzle {
                        // Elements of 4 bytes interleaved across index_stride lanes.
                        let (imsb, ilsb) = (index / index_stride, index % index_stride);
                        let (omsb, olsb) = (off / 4, off % 4);
                        base + soff + (imsb * stride + omsb * 4) * index_stride + ilsb * 4 + olsb
                    } else {
                        base + soff + off + index * stride
                    };
                }
                if swizzle && acc.bytes * acc.count > 4 {
                    return Err(Self::unsupported(
                        "swizzled buffer access wider than a dword",
                    ));
                }
                space = Space::Global;
                parts[0].1 = d;
            }
            _ => {
                return Err(Self::unsupported(
                    "a memory encoding the executor does not run",
                ))
            }
        }
        self.access(env, acc, space, &addrs, &parts[..nparts], exec)
    }

    /// Moves each active lane's data for one memory instruction: per element group of
    /// `parts` (offset, first register), `acc.count` elements from the lane's address plus
    /// the offset.
    fn access(
        &mut self,
        env: &mut Env<'_>,
        acc: Access,
        space: Space,
        addrs: &[u64; LANES],
        parts: &[(u64, u32)],
        exec: u64,
    ) -> Result<(), Error> {
        let bytes = acc.bytes as usize;
        for l in 0..self.lanes {
            if exec >> l & 1 == 0 {
                continue;
            }
            for &(offset, first) in parts {
                for i in 0..acc.count {
                    let at = addrs[l]
                        .wrapping_add(offset)
                        .wrapping_add(u64::from(i) * u64::from(acc.bytes));
                    let reg = self.vgprs((first + i) as usize, 1)?;
                    let slot = reg * LANES + l;
                    let target = self.locate(env, space, at, bytes, l)?;
                    if acc.store {
                        let v = self.v[slot].to_le_bytes();
                        match target {
                            Place::Memory(a) => env
                                .memory
                                .write(a, &v[..bytes])
                                .map_err(|_| fault(acc, at, bytes))?,
                            Place::Lds(o) => env.lds[o..o + bytes].copy_from_slice(&v[..bytes]),
                        }
                    } else {
                        let mut v = [0u8; 4];
                        match target {
                            Place::Memory(a) => env
                                .memory
                                .read(a, &mut v[..bytes])
                                .map_err(|_| fault(acc, at, bytes))?,
                            Place::Lds(o) => v[..bytes].copy_from_slice(&env.lds[o..o + bytes]),
                        }
                        let raw = u32::from_le_bytes(v);
                        self.v[slot] = match (bytes, acc.signed) {
                            (1, true) => raw as u8 as i8 as i32 as u32,
                            (2, true) => raw as u16 as i16 as i32 as u32,
                            _ => raw,
                        };
                    }
                }
            }
        }
        Ok(())
    }

    /// Where `bytes` bytes at address `at` of `space` lie for lane `lane`.
    fn locate(
        &self,
        env: &Env<'_>,
        space: Space,
        at: u64,
        bytes: usize,
        lane: usize,
    ) -> Result<Place, Error> {
        let lds = |o: u64| -> Result<Place, Error> {
            let end = o
                .checked_add(bytes as u64)
                .filter(|&e| e <= env.lds.len() as u64);
            match end {
                Some(_) => Ok(Place::Lds(o as usize)),
                None => Err(Error::Fault(format!(
                    "LDS access of {bytes} B at byte {o} past the workgroup's {} B of LDS",
                    env.lds.len()
                ))),
            }
        };
        let private = |o: u64| -> Result<Place, Error> {
            if o + bytes as u64 > u64::from(self.scratch_bytes) {
                return Err(Error::Fault(format!(
                    "private access of {bytes} B at byte {o} past the lane's {} B of scratch",
                    self.scratch_bytes
                )));
            }
            if o % 4 + bytes as u64 > 4 {
                return Err(Self::unsupported("a private access across a dword"));
            }
            Ok(Place::Memory(
                self.scratch_base + (o / 4) * 4 * self.lanes as u64 + 4 * lane as u64 + o % 4,
            ))
        };
        match space {
            Space::Lds => lds(at & 0xffff_ffff),
            Space::Scratch => private(at & 0xffff_ffff),
            Space::Flat => {
                let hi = at & !(APERTURE_BYTES - 1);
                if hi == SHARED_APERTURE {
                    lds(at - SHARED_APERTURE)
                } else if hi == PRIVATE_APERTURE {
                    private(at - PRIVATE_APERTURE)
                } else {
                    Ok(Place::Memory(at))
                }
            }
            Space::Global | Space::Buffer => Ok(Place::Memory(at)),
        }
    }
}

enum Place {
    Memory(u64),
    Lds(usize),
}

fn fault(acc: Access, at: u64, bytes: usize) -> Error {
    Error::Fault(format!(
        "{} of {bytes} B at 0x{at:x}, outside every allocation",
        if acc.store { "store" } else { "load" }
    ))
}

/// An IEEE half's value.
fn half_to_f32(h: u16) -> f32 {
    let (sign, exp, man) = ((h >> 15) & 1, (h >> 10) & 0x1f, u32::from(h & 0x3ff));
    let magnitude = match exp {
        0 => man as f32 * (1.0 / 16_777_216.0),
        0x1f if man == 0 => f32::INFINITY,
        0x1f => f32::NAN,
        _ => f32::from_bits(((u32::from(exp) + 112) << 23) | (man << 13)),
    };
    if sign == 1 {
        -magnitude
    } else {
        magnitude
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
