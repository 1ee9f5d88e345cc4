//! One wavefront's state and the semantics of each instruction (gfx9 in wave64, gfx10 and
//! gfx11 in wave32), from AMD's ISA reference guides for Vega, CDNA 2/3 and RDNA 2/3. Each
//! instruction runs on all lanes at once: operands are read into per-lane arrays, the operation
//! is applied to the lanes EXEC enables, and the results are written back. This module holds
//! the state, the operand fields and the dispatch; `scalar`, `valu`, `matrix` and `vmem` the
//! semantics by kind.

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
}

mod matrix;
mod scalar;
mod valu;
mod vmem;
