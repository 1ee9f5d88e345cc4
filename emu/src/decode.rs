//! Instruction boundaries and encoding formats. An AMD GPU instruction is one or two dwords
//! chosen by its first dword's top bits (the encoding), plus a 32-bit literal constant when a
//! source operand field holds 255, plus one dword of SDWA or DPP controls when a VOP1/VOP2/VOPC
//! source 0 field names them. The encodings differ between gfx9 (GCN and CDNA: gfx900 to
//! gfx942), gfx10 (RDNA 1 and 2) and gfx11 (RDNA 3 and 3.5); facts from AMD's ISA reference
//! guides for Vega, CDNA 2/3, RDNA 2 and RDNA 3.

use crate::Error;

/// An instruction-set generation with one encoding scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// gfx900 to gfx942 (wave64).
    Gfx9,
    /// gfx1010 to gfx1036 (wave32 here).
    Gfx10,
    /// gfx1100 to gfx1153 (wave32 here).
    Gfx11,
}

impl Family {
    /// The family of an architecture name (`gfx90a`, `gfx1100`, ...).
    pub fn of_arch(arch: &str) -> Result<Family, Error> {
        let digits = arch
            .strip_prefix("gfx")
            .ok_or_else(|| Error::Decode(format!("{arch:?} is not a gfx architecture")))?;
        match digits.len() {
            3 if digits.starts_with('9') => Ok(Family::Gfx9),
            4 if digits.starts_with("10") => Ok(Family::Gfx10),
            4 if digits.starts_with("11") => Ok(Family::Gfx11),
            _ => Err(Error::Decode(format!(
                "architecture {arch:?}: kiln's decoder knows gfx9, gfx10 and gfx11"
            ))),
        }
    }
}

/// An encoding format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Scalar ALU, two sources.
    Sop2,
    /// Scalar ALU with a 16-bit constant.
    Sopk,
    /// Scalar ALU, one source.
    Sop1,
    /// Scalar compare.
    Sopc,
    /// Scalar program control (branches, waits, barriers, `s_endpgm`).
    Sopp,
    /// Scalar memory.
    Smem,
    /// Vector ALU, one source.
    Vop1,
    /// Vector ALU, two sources.
    Vop2,
    /// Vector compare.
    Vopc,
    /// Vector ALU, three sources (and the 64-bit forms of VOP1/VOP2/VOPC).
    Vop3,
    /// Packed and matrix (MFMA, WMMA, dot) vector ALU.
    Vop3p,
    /// Dual-issue vector ALU (gfx11).
    Vopd,
    /// Parameter interpolation (gfx9, gfx10).
    Vintrp,
    /// Parameter interpolation (gfx11).
    Vinterp,
    /// LDS parameter load (gfx11).
    Ldsdir,
    /// LDS and GDS.
    Ds,
    /// Flat, global and scratch memory.
    Flat,
    /// Buffer memory, untyped.
    Mubuf,
    /// Buffer memory, typed.
    Mtbuf,
    /// Image memory.
    Mimg,
    /// Export.
    Exp,
}

/// Extra controls a VOP1/VOP2/VOPC (or gfx11 VOP3) instruction carries in its last dword.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extension {
    /// Sub-dword addressing (gfx9, gfx10).
    Sdwa,
    /// Data-parallel primitives over 16 lanes (one dword; gfx11 VOP3 too).
    Dpp16,
    /// Data-parallel primitives over 8 lanes (gfx10, gfx11).
    Dpp8,
}

/// One decoded instruction's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Its encoding.
    pub format: Format,
    /// Its dwords, literal and extension included.
    pub dwords: usize,
    /// Whether it carries a 32-bit literal constant.
    pub literal: bool,
    /// Its SDWA or DPP dword.
    pub extension: Option<Extension>,
}

/// Source operand value that means "a 32-bit literal follows".
const LITERAL: u32 = 255;
/// VOP1/VOP2/VOPC source 0 values that mean "an SDWA, DPP8 or DPP16 dword follows".
const SRC_SDWA: u32 = 0xf9;
const SRC_DPP8: u32 = 0xe9;
const SRC_DPP8_FI: u32 = 0xea;
const SRC_DPP16: u32 = 0xfa;

/// The shape of the instruction that starts `words` (which must hold all of it) at `pc`.
pub fn shape(family: Family, words: &[u32], pc: u64) -> Result<Shape, Error> {
    let w = *words
        .first()
        .ok_or_else(|| Error::Decode(format!("pc 0x{pc:x}: no instruction")))?;
    let second = || words.get(1).copied();
    let (format, mut dwords, mut literal, extension) = if w >> 31 == 0 {
        // VOP2 (or VOP1 / VOPC by its opcode field); gfx11's VOPD shares no bits with it.
        let op = (w >> 25) & 0x3f;
        let format = match op {
            0x3f => Format::Vop1,
            0x3e => Format::Vopc,
            _ => Format::Vop2,
        };
        let src0 = w & 0x1ff;
        let extension = match (family, src0) {
            (Family::Gfx9 | Family::Gfx10, SRC_SDWA) => Some(Extension::Sdwa),
            (Family::Gfx10 | Family::Gfx11, SRC_DPP8 | SRC_DPP8_FI) => Some(Extension::Dpp8),
            (_, SRC_DPP16) => Some(Extension::Dpp16),
            _ => None,
        };
        let literal = src0 == LITERAL || (format == Format::Vop2 && vop2_takes_literal(family, op));
        (format, 1, literal, extension)
    } else if w >> 30 == 0b10 {
        let ssrc0 = w & 0xff;
        let ssrc1 = (w >> 8) & 0xff;
        match w >> 23 {
            0x17d => (Format::Sop1, 1, ssrc0 == LITERAL, None),
            0x17e => (Format::Sopc, 1, ssrc0 == LITERAL || ssrc1 == LITERAL, None),
            0x17f => (Format::Sopp, 1, false, None),
            _ if w >> 28 == 0b1011 => {
                let op = (w >> 23) & 0x1f;
                (Format::Sopk, 1, sopk_takes_literal(family, op), None)
            }
            _ => {
                let op = (w >> 23) & 0x7f;
                let literal =
                    ssrc0 == LITERAL || ssrc1 == LITERAL || sop2_takes_literal(family, op);
                (Format::Sop2, 1, literal, None)
            }
        }
    } else {
        let format = match (family, w >> 26) {
            (Family::Gfx9, 0b110000) => Format::Smem,
            (Family::Gfx10 | Family::Gfx11, 0b111101) => Format::Smem,
            (Family::Gfx9, 0b110100) if w >> 23 == 0b1_1010_0111 => Format::Vop3p,
            (Family::Gfx9, 0b110100) => Format::Vop3,
            (Family::Gfx10 | Family::Gfx11, 0b110101) => Format::Vop3,
            (Family::Gfx10 | Family::Gfx11, 0b110011) => match (family, (w >> 24) & 3) {
                (_, 0b00) => Format::Vop3p,
                (Family::Gfx11, 0b01) => Format::Vinterp,
                (Family::Gfx11, 0b10) => Format::Ldsdir,
                _ => return Err(unknown(pc, w)),
            },
            (Family::Gfx11, 0b110010) => Format::Vopd,
            (Family::Gfx9, 0b110101) | (Family::Gfx10, 0b110010) => Format::Vintrp,
            (_, 0b110110) => Format::Ds,
            (_, 0b110111) => Format::Flat,
            (_, 0b111000) => Format::Mubuf,
            (_, 0b111010) => Format::Mtbuf,
            (_, 0b111100) => Format::Mimg,
            (Family::Gfx9, 0b110001) | (Family::Gfx10 | Family::Gfx11, 0b111110) => Format::Exp,
            _ => return Err(unknown(pc, w)),
        };
        let dwords = match format {
            Format::Vintrp | Format::Ldsdir => 1,
            _ => 2,
        };
        let w1 = if dwords == 2 {
            second().ok_or_else(|| {
                Error::Decode(format!(
                    "pc 0x{pc:x}: a two-dword instruction at the end of the code"
                ))
            })?
        } else {
            0
        };
        // From gfx10, VOP3 and VOP3P sources may be literals; gfx11's VOP3 may carry DPP, and
        // VOPD's two source-0 fields may be literals (its fmaak/fmamk always carry one).
        let (literal, extension) = match (family, format) {
            (Family::Gfx10 | Family::Gfx11, Format::Vop3 | Format::Vop3p) => {
                let srcs = [w1 & 0x1ff, (w1 >> 9) & 0x1ff, (w1 >> 18) & 0x1ff];
                let ext = match (family, srcs[0]) {
                    (Family::Gfx11, SRC_DPP16) => Some(Extension::Dpp16),
                    (Family::Gfx11, SRC_DPP8 | SRC_DPP8_FI) => Some(Extension::Dpp8),
                    _ => None,
                };
                (srcs.contains(&LITERAL), ext)
            }
            (Family::Gfx11, Format::Vopd) => {
                let (opx, opy) = ((w >> 22) & 0xf, (w >> 17) & 0x1f);
                let fmak = matches!(opx, 1 | 2) || matches!(opy, 1 | 2);
                (fmak || w & 0x1ff == LITERAL || w1 & 0x1ff == LITERAL, None)
            }
            _ => (false, None),
        };
        (format, dwords, literal, extension)
    };
    // An SDWA or DPP dword takes source 0's place, so no literal comes with it.
    if extension.is_some() {
        literal = false;
        dwords += 1;
    } else if literal {
        dwords += 1;
    }
    if words.len() < dwords {
        return Err(Error::Decode(format!(
            "pc 0x{pc:x}: a {dwords}-dword {format:?} instruction runs past the end of the code"
        )));
    }
    Ok(Shape {
        format,
        dwords,
        literal,
        extension,
    })
}

/// VOP2 opcodes whose third operand is always a literal (madmk/madak, fmamk/fmaak).
fn vop2_takes_literal(family: Family, op: u32) -> bool {
    match family {
        // v_madmk_f32, v_madak_f32 (gfx940: v_fmamk_f32, v_fmaak_f32), v_madmk_f16,
        // v_madak_f16.
        Family::Gfx9 => matches!(op, 0x17 | 0x18 | 0x24 | 0x25),
        // v_madmk_f32, v_madak_f32, v_fmamk_f32, v_fmaak_f32, v_fmamk_f16, v_fmaak_f16.
        Family::Gfx10 => matches!(op, 0x20 | 0x21 | 0x2c | 0x2d | 0x37 | 0x38),
        // v_fmamk_f32, v_fmaak_f32, v_fmamk_f16, v_fmaak_f16.
        Family::Gfx11 => matches!(op, 0x2c | 0x2d | 0x37 | 0x38),
    }
}

/// SOP2 opcodes whose constant is always a literal: gfx11.5's scalar s_fmaak_f32 and
/// s_fmamk_f32.
fn sop2_takes_literal(family: Family, op: u32) -> bool {
    family == Family::Gfx11 && matches!(op, 0x45 | 0x46)
}

/// SOPK opcodes followed by a 32-bit literal (s_setreg_imm32_b32; gfx10's s_version needs none).
fn sopk_takes_literal(family: Family, op: u32) -> bool {
    match family {
        Family::Gfx9 => op == 0x14,
        Family::Gfx10 => op == 0x15,
        Family::Gfx11 => op == 0x13,
    }
}

fn unknown(pc: u64, w: u32) -> Error {
    Error::Decode(format!(
        "pc 0x{pc:x}: dword 0x{w:08x} starts no encoding kiln's decoder knows"
    ))
}

/// Every instruction of `words` (code starting at `pc`), in order: its address and shape.
pub fn walk(family: Family, words: &[u32], pc: u64) -> Result<Vec<(u64, Shape)>, Error> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let at = pc + 4 * i as u64;
        let s = shape(family, &words[i..], at)?;
        out.push((at, s));
        i += s.dwords;
    }
    Ok(out)
}
