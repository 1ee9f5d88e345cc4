//! Operands, written as LLVM's disassembler writes them, so that the decoder's view of each
//! operand (register, width, inline constant, literal, immediate) can be checked against it.
//! gfx9, gfx10 and gfx11 (wave32, as kiln builds them): the scalar formats (SOP2, SOP1, SOPC,
//! SOPK, SOPP, SMEM), VOP1/VOP2/VOPC (with SDWA; DPP not yet), VOP3, VOP3P, gfx11's VOPD, LDS,
//! flat/global/scratch and buffer instructions.

use crate::decode::{Extension, Family, Format, Shape};
use crate::Error;

/// The operands of the instruction `words` (of shape `shape`, mnemonic `name` without LLVM's
/// `_e32`/`_e64`/`_sdwa`/`_dpp` suffix) on `arch`, as LLVM writes them after the mnemonic
/// (empty when it has none); an error naming the pc for what kiln's decoder does not write yet
/// (DPP, SDWA compares, VOP3P beyond gfx9).
pub fn operands(
    arch: &str,
    family: Family,
    shape: &Shape,
    name: &str,
    words: &[u32],
    pc: u64,
) -> Result<String, Error> {
    let not_yet = || {
        Error::Decode(format!(
            "pc 0x{pc:x}: operands of {family:?} {:?} ({:?}) are not in kiln's decoder yet",
            shape.format, shape.extension
        ))
    };
    if words.len() < shape.dwords {
        return Err(Error::Decode(format!(
            "pc 0x{pc:x}: {} dwords of a {}-dword instruction",
            words.len(),
            shape.dwords
        )));
    }
    let written = match (shape.format, shape.extension) {
        (Format::Vop1 | Format::Vop2, Some(Extension::Sdwa)) => {
            Some(sdwa_operands(family, shape, name, words))
        }
        (_, Some(_)) => None,
        (Format::Vop1 | Format::Vop2 | Format::Vopc, None) => {
            vector32_operands(family, shape, name, words)
        }
        (Format::Vop3, None) => Some(vop3_operands(family, name, words)),
        (Format::Vop3p, None) if name.starts_with("v_mfma_") || name.starts_with("v_wmma_") => {
            matrix_operands(family, name, words)
        }
        (Format::Vop3p, None) if family == Family::Gfx9 => {
            Some(vop3p_operands(family, name, words))
        }
        (Format::Vopd, None) => vopd_operands(family, shape, words),
        (Format::Vop3p | Format::Vintrp | Format::Vinterp | Format::Ldsdir, None) => None,
        (Format::Mtbuf | Format::Mimg | Format::Exp, None) => None,
        (Format::Ds | Format::Flat | Format::Mubuf, None) => {
            memory_operands(family, arch, shape, name, words)
        }
        _ => scalar_operands(family, shape, name, words),
    };
    written.ok_or_else(not_yet)
}

/// A scalar source or destination operand field (8 bits, or 7 for destinations) as text,
/// `dwords` wide.
fn scalar(fam: Family, field: u32, dwords: u32, literal: Option<u32>) -> String {
    let range = |base: &str, first: u32| {
        if dwords == 1 {
            format!("{base}{first}")
        } else {
            format!("{base}[{first}:{}]", first + dwords - 1)
        }
    };
    match (fam, field) {
        (Family::Gfx10, 124) | (Family::Gfx11, 125) => return "m0".into(),
        (Family::Gfx10, 125) | (Family::Gfx11, 124) => return "null".into(),
        (Family::Gfx10 | Family::Gfx11, 0..=105) => return range("s", field),
        _ => {}
    }
    match field {
        0..=101 => range("s", field),
        102 if dwords == 2 => "flat_scratch".into(),
        102 => "flat_scratch_lo".into(),
        103 => "flat_scratch_hi".into(),
        104 if dwords == 2 => "xnack_mask".into(),
        104 => "xnack_mask_lo".into(),
        105 => "xnack_mask_hi".into(),
        106 if dwords == 2 => "vcc".into(),
        106 => "vcc_lo".into(),
        107 => "vcc_hi".into(),
        108..=123 => range("ttmp", field - 108),
        124 => "m0".into(),
        126 if dwords == 2 => "exec".into(),
        126 => "exec_lo".into(),
        127 => "exec_hi".into(),
        128..=192 => (field - 128).to_string(),
        193..=208 => format!("-{}", field - 192),
        235 => "src_shared_base".into(),
        236 => "src_shared_limit".into(),
        237 => "src_private_base".into(),
        238 => "src_private_limit".into(),
        239 => "src_pops_exiting_wave_id".into(),
        240 => "0.5".into(),
        241 => "-0.5".into(),
        242 => "1.0".into(),
        243 => "-1.0".into(),
        244 => "2.0".into(),
        245 => "-2.0".into(),
        246 => "4.0".into(),
        247 => "-4.0".into(),
        248 => "0.15915494".into(),
        251 => "src_vccz".into(),
        252 => "src_execz".into(),
        253 => "src_scc".into(),
        255 => format!("0x{:x}", literal.unwrap_or(0)),
        _ => format!("<field {field}>"),
    }
}

/// Dwords of a scalar ALU instruction's destination, first and second source, from its name.
fn widths(name: &str) -> (u32, u32, u32) {
    let wide = name.ends_with("_b64") || name.ends_with("_u64") || name.ends_with("_i64");
    if !wide {
        return (1, 1, 1);
    }
    let op = name.trim_start_matches("s_");
    if op.starts_with("lshl_")
        || op.starts_with("lshr_")
        || op.starts_with("ashr_")
        || op.starts_with("bfe_")
    {
        (2, 2, 1)
    } else if op.starts_with("bfm_") {
        (2, 1, 1)
    } else if op.starts_with("bitcmp") {
        (1, 2, 1)
    } else if op.starts_with("bitset") {
        (2, 1, 1)
    } else if op.contains("_i32_") {
        // s_bcnt1_i32_b64, s_ff1_i32_b64, s_flbit_i32_b64 / _i64: a 32-bit count of 64 bits.
        (1, 2, 2)
    } else {
        (2, 2, 2)
    }
}

/// s_waitcnt's counters: each one not at its maximum, as LLVM lists them (all of them when
/// none is waited for). Their fields by family: gfx9 vmcnt 3:0 and 15:14, expcnt 6:4, lgkmcnt
/// 11:8; gfx10 the same with lgkmcnt 13:8; gfx11 vmcnt 15:10, expcnt 2:0, lgkmcnt 9:4.
fn waitcnt(fam: Family, imm: u32) -> String {
    let (vm, exp, lgkm, lgkm_max) = match fam {
        Family::Gfx9 => (
            (imm & 0xf) | ((imm >> 10) & 0x30),
            (imm >> 4) & 0x7,
            (imm >> 8) & 0xf,
            15,
        ),
        Family::Gfx10 => (
            (imm & 0xf) | ((imm >> 10) & 0x30),
            (imm >> 4) & 0x7,
            (imm >> 8) & 0x3f,
            63,
        ),
        Family::Gfx11 => ((imm >> 10) & 0x3f, imm & 0x7, (imm >> 4) & 0x3f, 63),
    };
    let all = [
        ("vmcnt", vm, 63),
        ("expcnt", exp, 7),
        ("lgkmcnt", lgkm, lgkm_max),
    ];
    let waited: Vec<_> = all.iter().filter(|(_, v, max)| v != max).collect();
    // A wait for nothing lists every counter at its maximum.
    let shown = if waited.is_empty() {
        all.iter().collect()
    } else {
        waited
    };
    shown
        .iter()
        .map(|(n, v, _)| format!("{n}({v})"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// gfx11's s_delay_alu: the first instruction's dependency, how many instructions to skip,
/// the second's dependency; each written unless zero, joined by `|`.
fn delay_alu(imm: u32) -> String {
    const ID: [&str; 12] = [
        "NO_DEP",
        "VALU_DEP_1",
        "VALU_DEP_2",
        "VALU_DEP_3",
        "VALU_DEP_4",
        "TRANS32_DEP_1",
        "TRANS32_DEP_2",
        "TRANS32_DEP_3",
        "FMA_ACCUM_CYCLE_1",
        "SALU_CYCLE_1",
        "SALU_CYCLE_2",
        "SALU_CYCLE_3",
    ];
    const SKIP: [&str; 6] = ["SAME", "NEXT", "SKIP_1", "SKIP_2", "SKIP_3", "SKIP_4"];
    let name = |table: &[&str], v: u32| table.get(v as usize).copied().unwrap_or("?").to_string();
    let mut parts = Vec::new();
    let (id0, skip, id1) = (imm & 0xf, (imm >> 4) & 0x7, (imm >> 7) & 0xf);
    if id0 != 0 {
        parts.push(format!("instid0({})", name(&ID, id0)));
    }
    if skip != 0 {
        parts.push(format!("instskip({})", name(&SKIP, skip)));
    }
    if id1 != 0 {
        parts.push(format!("instid1({})", name(&ID, id1)));
    }
    parts.join(" | ")
}

/// Operands of the scalar instruction `words` (shape `shape`, mnemonic `name`) as LLVM writes
/// them after the mnemonic (empty when it has none).
fn scalar_operands(fam: Family, shape: &Shape, name: &str, words: &[u32]) -> Option<String> {
    let w = words[0];
    let literal = shape.literal.then(|| words.get(1).copied()).flatten();
    let (d, s0, s1) = widths(name);
    Some(match shape.format {
        // gfx11.5's scalar fmamk (D = S0 * K + S1) and fmaak (D = S0 * S1 + K).
        Format::Sop2 if name == "s_fmamk_f32" || name == "s_fmaak_f32" => {
            let (d, a, b) = (
                scalar(fam, (w >> 16) & 0x7f, 1, None),
                scalar(fam, w & 0xff, 1, literal),
                scalar(fam, (w >> 8) & 0xff, 1, literal),
            );
            let k = format!("0x{:x}", literal.unwrap_or(0));
            if name == "s_fmamk_f32" {
                format!("{d}, {a}, {k}, {b}")
            } else {
                format!("{d}, {a}, {b}, {k}")
            }
        }
        Format::Sop2 => format!(
            "{}, {}, {}",
            scalar(fam, (w >> 16) & 0x7f, d, literal),
            scalar(fam, w & 0xff, s0, literal),
            scalar(fam, (w >> 8) & 0xff, s1, literal)
        ),
        Format::Sop1 => {
            let (dst, src) = (
                scalar(fam, (w >> 16) & 0x7f, d, literal),
                scalar(fam, w & 0xff, s0, literal),
            );
            match name {
                "s_getpc_b64" => dst,
                "s_setpc_b64" => src,
                _ => format!("{dst}, {src}"),
            }
        }
        Format::Sopc => format!(
            "{}, {}",
            scalar(fam, w & 0xff, s0, literal),
            scalar(fam, (w >> 8) & 0xff, s1, literal)
        ),
        Format::Sopk if name == "s_setreg_b32" => {
            // hwreg(id[, offset, size]): only the flat-scratch halves, whole, are written.
            let imm = w & 0xffff;
            let reg = match (fam, imm) {
                (Family::Gfx10, 0xf814) => "HW_REG_FLAT_SCR_LO",
                (Family::Gfx10, 0xf815) => "HW_REG_FLAT_SCR_HI",
                _ => return None,
            };
            format!("hwreg({reg}), {}", scalar(fam, (w >> 16) & 0x7f, 1, None))
        }
        Format::Sopk => {
            let imm = w & 0xffff;
            format!("{}, 0x{imm:x}", scalar(fam, (w >> 16) & 0x7f, d, literal))
        }
        Format::Sopp => {
            let imm = w & 0xffff;
            match name {
                "s_endpgm"
                | "s_barrier"
                | "s_wakeup"
                | "s_icache_inv"
                | "s_ttracedata"
                | "s_endpgm_saved"
                | "s_set_gpr_idx_off"
                | "s_endpgm_ordered_ps_done"
                | "s_code_end" => String::new(),
                "s_waitcnt" => waitcnt(fam, imm),
                "s_clause"
                | "s_inst_prefetch"
                | "s_set_inst_prefetch_distance"
                | "s_waitcnt_depctr" => format!("0x{imm:x}"),
                "s_delay_alu" => delay_alu(imm),
                // gfx11's MSG_DEALLOC_VGPRS; other messages are not written yet.
                "s_sendmsg" if fam == Family::Gfx11 && imm == 3 => {
                    "sendmsg(MSG_DEALLOC_VGPRS)".into()
                }
                "s_sendmsg" => return None,
                // Branch offsets too: LLVM writes the 16 bits unsigned, the target aside.
                _ => imm.to_string(),
            }
        }
        Format::Smem => {
            let w1 = words[1];
            let dwords = if let Some(bits) = name
                .rsplit_once("_b")
                .and_then(|(_, b)| b.parse::<u32>().ok())
            {
                bits / 32
            } else {
                match name.rsplit('x').next().and_then(|n| n.parse::<u32>().ok()) {
                    Some(n) if name.contains("dwordx") => n,
                    _ => 1,
                }
            };
            let data = scalar(fam, (w >> 6) & 0x7f, dwords, None);
            let base = scalar(
                fam,
                (w & 0x3f) * 2,
                if name.contains("buffer") { 4 } else { 2 },
                None,
            );
            let (offset, glc, dlc) = match fam {
                Family::Gfx9 => (
                    if (w >> 17) & 1 == 1 {
                        format!("0x{:x}", w1 & 0xfffff)
                    } else {
                        scalar(fam, w1 & 0x7f, 1, None)
                    },
                    (w >> 16) & 1,
                    0,
                ),
                _ => {
                    // An immediate offset, and an SGPR one unless it names null.
                    let soffset = w1 >> 25;
                    let imm = w1 & 0x1f_ffff;
                    let text = if scalar(fam, soffset, 1, None) == "null" && imm == 0 {
                        "null".to_string()
                    } else if scalar(fam, soffset, 1, None) == "null" {
                        format!("0x{imm:x}")
                    } else if imm == 0 {
                        scalar(fam, soffset, 1, None)
                    } else {
                        format!("{} offset:0x{imm:x}", scalar(fam, soffset, 1, None))
                    };
                    let (glc, dlc) = if fam == Family::Gfx10 {
                        (16, 14)
                    } else {
                        (14, 13)
                    };
                    (text, (w >> glc) & 1, (w >> dlc) & 1)
                }
            };
            let glc = if glc == 1 { " glc" } else { "" };
            let dlc = if dlc == 1 { " dlc" } else { "" };
            format!("{data}, {base}, {offset}{glc}{dlc}")
        }
        _ => return None,
    })
}

/// A 9-bit vector source field (0-255: the scalar operand space, 256-511: VGPRs) as text.
fn vector_source(fam: Family, field: u32, dwords: u32, literal: Option<u32>) -> String {
    if field >= 256 {
        vgpr(field - 256, dwords)
    } else {
        scalar(fam, field, dwords, literal)
    }
}

fn vgpr(n: u32, dwords: u32) -> String {
    if dwords == 1 {
        format!("v{n}")
    } else {
        format!("v[{n}:{}]", n + dwords - 1)
    }
}

/// Dwords of a value of the type a mnemonic's part names (`f64`, `u32`, ...).
fn type_dwords(t: &str) -> u32 {
    if matches!(t, "f64" | "i64" | "u64" | "b64") {
        2
    } else {
        1
    }
}

/// Operands of a VOP1, VOP2 or VOPC instruction without SDWA or DPP, as LLVM writes them;
/// `name` is its mnemonic without `_e32`.
fn vector32_operands(fam: Family, shape: &Shape, name: &str, words: &[u32]) -> Option<String> {
    let w = words[0];
    let literal = shape.literal.then(|| words.get(1).copied()).flatten();
    let types: Vec<&str> = name.split('_').skip(2).collect();
    let last = types.last().copied().unwrap_or("");
    let (vdst, src0, vsrc1) = ((w >> 17) & 0xff, w & 0x1ff, (w >> 9) & 0xff);
    let k = || format!("0x{:x}", literal.unwrap_or(0));
    Some(match shape.format {
        Format::Vop1 => {
            let op = name.trim_start_matches("v_");
            // v_cvt_<to>_<from>: each side its own width; otherwise one type throughout.
            let (d, s) = match types.as_slice() {
                [to, from] if op.starts_with("cvt_") => (type_dwords(to), type_dwords(from)),
                _ => (type_dwords(last), type_dwords(last)),
            };
            match name {
                "v_nop" | "v_clrexcp" => String::new(),
                "v_readfirstlane_b32" => {
                    format!(
                        "{}, {}",
                        scalar(fam, vdst, 1, None),
                        vector_source(fam, src0, 1, literal)
                    )
                }
                _ => format!(
                    "{}, {}",
                    vgpr(vdst, d),
                    vector_source(fam, src0, s, literal)
                ),
            }
        }
        Format::Vop2 => {
            let (d, s) = (type_dwords(last), type_dwords(last));
            let (v, a, b) = (
                vgpr(vdst, d),
                vector_source(fam, src0, s, literal),
                vgpr(vsrc1, s),
            );
            match name {
                _ if uses_vcc(name) => vop2_through_vcc(fam, name, &v, &a, &b),
                _ if name.ends_with("mk_f32") || name.ends_with("mk_f16") => {
                    format!("{v}, {a}, {}, {b}", k())
                }
                _ if name.ends_with("ak_f32") || name.ends_with("ak_f16") => {
                    format!("{v}, {a}, {b}, {}", k())
                }
                _ => format!("{v}, {a}, {b}"),
            }
        }
        Format::Vopc => {
            let s = type_dwords(last);
            let sources = format!(
                "{}, {}",
                vector_source(fam, src0, s, literal),
                vgpr(vsrc1, s)
            );
            // gfx10 and later: v_cmpx writes EXEC alone and names no destination.
            if fam != Family::Gfx9 && name.starts_with("v_cmpx_") {
                sources
            } else {
                format!("{}, {sources}", vcc(fam))
            }
        }
        _ => return None,
    })
}

/// VCC as a wave's lane mask: the pair on gfx9 (wave64), its low half on wave32.
fn vcc(fam: Family) -> &'static str {
    if fam == Family::Gfx9 {
        "vcc"
    } else {
        "vcc_lo"
    }
}

/// Dwords of a lane mask: 2 on gfx9 (wave64), 1 on wave32.
fn mask_dwords(fam: Family) -> u32 {
    if fam == Family::Gfx9 {
        2
    } else {
        1
    }
}

/// gfx11's VOPD: `vdstX, src0X, vsrc1X :: v_dual_<Y> vdstY, src0Y, vsrc1Y` (fmamk/fmaak with
/// the literal in place, mov with one source, cndmask with VCC implied).
fn vopd_operands(fam: Family, shape: &Shape, words: &[u32]) -> Option<String> {
    let (w, w1) = (words[0], words[1]);
    let literal = shape.literal.then(|| words.get(2).copied()).flatten();
    let vdst_x = w1 >> 24;
    let vdst_y = (((w1 >> 17) & 0x7f) << 1) | ((vdst_x & 1) ^ 1);
    let half = |op: u32, src0: u32, vsrc1: u32, vdst: u32| -> Option<String> {
        let name = crate::opcodes_rdna::vopd(op)?;
        let (d, a, b) = (
            vgpr(vdst, 1),
            vector_source(fam, src0, 1, literal),
            vgpr(vsrc1, 1),
        );
        let k = format!("0x{:x}", literal.unwrap_or(0));
        Some(match name {
            "v_dual_mov_b32" => format!("{d}, {a}"),
            "v_dual_fmamk_f32" => format!("{d}, {a}, {k}, {b}"),
            "v_dual_fmaak_f32" => format!("{d}, {a}, {b}, {k}"),
            _ => format!("{d}, {a}, {b}"),
        })
    };
    let x = half((w >> 22) & 0xf, w & 0x1ff, (w >> 9) & 0xff, vdst_x)?;
    let y_op = (w >> 17) & 0x1f;
    let y = half(y_op, w1 & 0x1ff, (w1 >> 9) & 0xff, vdst_y)?;
    Some(format!("{x} :: {} {y}", crate::opcodes_rdna::vopd(y_op)?))
}

/// VOP2 opcodes with a carry out into VCC (`v_add_co_u32`), and those that also take one in.
const CARRY_OUT: [&str; 3] = ["v_add_co_u32", "v_sub_co_u32", "v_subrev_co_u32"];
const CARRY_IN: [&str; 6] = [
    "v_addc_co_u32",
    "v_subb_co_u32",
    "v_subbrev_co_u32",
    "v_add_co_ci_u32",
    "v_sub_co_ci_u32",
    "v_subrev_co_ci_u32",
];

/// Whether a VOP2 opcode's 32-bit forms (plain and SDWA) name VCC: the carries and
/// v_cndmask_b32.
fn uses_vcc(name: &str) -> bool {
    CARRY_OUT.contains(&name) || CARRY_IN.contains(&name) || name == "v_cndmask_b32"
}

/// A 32-bit VOP2 form that names VCC ([`uses_vcc`]): its destination `v`, sources `a` and `b`.
fn vop2_through_vcc(fam: Family, name: &str, v: &str, a: &str, b: &str) -> String {
    let vcc = vcc(fam);
    if CARRY_OUT.contains(&name) {
        format!("{v}, {vcc}, {a}, {b}")
    } else if CARRY_IN.contains(&name) {
        format!("{v}, {vcc}, {a}, {b}, {vcc}")
    } else {
        format!("{v}, {a}, {b}, {vcc}")
    }
}

/// An output modifier (VOP3's and SDWA's two omod bits) as LLVM writes it.
fn omod(bits: u32) -> &'static str {
    match bits & 3 {
        1 => " mul:2",
        2 => " mul:4",
        3 => " div:2",
        _ => "",
    }
}

/// Dwords a load or store moves, from its name (`dwordx4` 4, `b64` 2, `ushort` 1, ...).
fn data_dwords(name: &str) -> u32 {
    if let Some(n) = name.rsplit_once("dwordx").and_then(|(_, n)| n.parse().ok()) {
        return n;
    }
    let bits = name
        .rsplit_once("_b")
        .and_then(|(_, b)| b.parse::<u32>().ok())
        .unwrap_or(32);
    bits.div_ceil(32)
}

/// A signed field of `bits` bits.
fn signed(v: u32, bits: u32) -> i32 {
    ((v << (32 - bits)) as i32) >> (32 - bits)
}

/// Operands of an LDS, flat/global/scratch or buffer instruction on `arch`, as LLVM writes
/// them.
fn memory_operands(
    fam: Family,
    arch: &str,
    shape: &Shape,
    name: &str,
    words: &[u32],
) -> Option<String> {
    let (w, w1) = (words[0], words[1]);
    let n = data_dwords(name);
    let load = name.contains("load") || name.contains("read");
    Some(match shape.format {
        Format::Ds => {
            let (off0, off1) = (w & 0xff, (w >> 8) & 0xff);
            let (addr, data0, data1, vdst) =
                (w1 & 0xff, (w1 >> 8) & 0xff, (w1 >> 16) & 0xff, w1 >> 24);
            let two = name.contains("read2") || name.contains("write2") || name.contains("_2addr_");
            let offsets = if two {
                let mut s = String::new();
                if off0 != 0 {
                    s += &format!(" offset0:{off0}");
                }
                if off1 != 0 {
                    s += &format!(" offset1:{off1}");
                }
                s
            } else {
                let off = off0 | (off1 << 8);
                if off != 0 {
                    format!(" offset:{off}")
                } else {
                    String::new()
                }
            };
            match (load, two) {
                (true, true) => format!("{}, {}{offsets}", vgpr(vdst, 2 * n), vgpr(addr, 1)),
                (true, false) => format!("{}, {}{offsets}", vgpr(vdst, n), vgpr(addr, 1)),
                (false, true) => format!(
                    "{}, {}, {}{offsets}",
                    vgpr(addr, 1),
                    vgpr(data0, n),
                    vgpr(data1, n)
                ),
                (false, false) => format!("{}, {}{offsets}", vgpr(addr, 1), vgpr(data0, n)),
            }
        }
        Format::Flat => {
            // By family: the segment's bits, the offset's width (flat's unsigned, global's and
            // scratch's signed), the saddr value meaning "off", and the cache bits.
            let (seg, flat_bits, signed_bits, off, glc, slc, dlc) = match fam {
                Family::Gfx9 => ((w >> 14) & 3, 12, 13, 0x7f, 16, 17, None),
                Family::Gfx10 => ((w >> 14) & 3, 11, 12, 0x7d, 16, 17, Some(12)),
                Family::Gfx11 => ((w >> 16) & 3, 12, 13, 0x7c, 14, 15, Some(13)),
            };
            let (addr, data, saddr, vdst) =
                (w1 & 0xff, (w1 >> 8) & 0xff, (w1 >> 16) & 0x7f, w1 >> 24);
            let saddr = if saddr == off { 0x7f } else { saddr };
            let offset = if seg == 0 {
                (w & ((1 << flat_bits) - 1)) as i32
            } else {
                signed(w & ((1 << signed_bits) - 1), signed_bits)
            };
            let offset = if offset != 0 {
                format!(" offset:{offset}")
            } else {
                String::new()
            };
            let bit = |b: u32| (w >> b) & 1 == 1;
            let cache = format!(
                "{}{}{}",
                if bit(glc) { " glc" } else { "" },
                if bit(slc) { " slc" } else { "" },
                if dlc.is_some_and(bit) { " dlc" } else { "" }
            );
            let (address, sbase) = match seg {
                0 => (vgpr(addr, 2), None),
                2 if saddr == 0x7f => (vgpr(addr, 2), Some("off".to_string())),
                2 => (vgpr(addr, 1), Some(scalar(fam, saddr, 2, None))),
                _ => {
                    let uses_vaddr = match (fam, arch) {
                        (_, "gfx942") => (w >> 13) & 1 == 1,
                        (Family::Gfx11, _) => (w1 >> 23) & 1 == 1,
                        _ => saddr == 0x7f,
                    };
                    let v = if uses_vaddr {
                        vgpr(addr, 1)
                    } else {
                        "off".to_string()
                    };
                    let s = if saddr == 0x7f {
                        "off".to_string()
                    } else {
                        scalar(fam, saddr, 1, None)
                    };
                    (v, Some(s))
                }
            };
            let tail = sbase.map(|s| format!(", {s}")).unwrap_or_default();
            if load {
                format!("{}, {address}{tail}{offset}{cache}", vgpr(vdst, n))
            } else {
                format!("{address}, {}{tail}{offset}{cache}", vgpr(data, n))
            }
        }
        Format::Mubuf if name.starts_with("buffer_gl") => String::new(),
        // gfx11's buffer encoding is not written yet (kiln's gfx11 objects use scratch).
        Format::Mubuf if fam == Family::Gfx11 => return None,
        Format::Mubuf => {
            let (offen, idxen) = ((w >> 12) & 1 == 1, (w >> 13) & 1 == 1);
            let (vaddr, vdata, srsrc, soffset) = (
                w1 & 0xff,
                (w1 >> 8) & 0xff,
                ((w1 >> 16) & 0x1f) * 4,
                w1 >> 24,
            );
            let address = match (offen, idxen) {
                (false, false) => "off".to_string(),
                (true, true) => vgpr(vaddr, 2),
                _ => vgpr(vaddr, 1),
            };
            let mut mods = String::new();
            if idxen {
                mods += " idxen";
            }
            if offen {
                mods += " offen";
            }
            let off = w & 0xfff;
            if off != 0 {
                mods += &format!(" offset:{off}");
            }
            if (w >> 14) & 1 == 1 {
                mods += " glc";
            }
            if (w >> 17) & 1 == 1 {
                mods += " slc";
            }
            if fam == Family::Gfx10 && (w >> 15) & 1 == 1 {
                mods += " dlc";
            }
            format!(
                "{}, {address}, {}, {}{mods}",
                vgpr(vdata, n),
                scalar(fam, srsrc, 4, None),
                scalar(fam, soffset, 1, None)
            )
        }
        _ => return None,
    })
}

/// VOP3 opcodes with a scalar carry-out or condition destination (VOP3b) instead of
/// absolute-value modifiers.
fn vop3b(name: &str) -> bool {
    CARRY_OUT.contains(&name)
        || CARRY_IN.contains(&name)
        || matches!(
            name,
            "v_div_scale_f32" | "v_div_scale_f64" | "v_mad_u64_u32" | "v_mad_i64_i32"
        )
}

/// Operands of a VOP3 instruction (the 64-bit forms of VOPC/VOP2/VOP1 and the three-source
/// operations), with their modifiers, as LLVM writes them; `name` is the mnemonic without
/// `_e64`.
fn vop3_operands(fam: Family, name: &str, words: &[u32]) -> String {
    let (w, w1) = (words[0], words[1]);
    let op = (w >> 16) & 0x3ff;
    let vdst = w & 0xff;
    let srcs = [w1 & 0x1ff, (w1 >> 9) & 0x1ff, (w1 >> 18) & 0x1ff];
    // From gfx10 a VOP3 source may be a literal, in the dword after the instruction.
    let literal = if fam == Family::Gfx9 {
        None
    } else {
        words.get(2).copied()
    };
    let carry = vop3b(name);
    let (abs, neg) = (if carry { 0 } else { (w >> 8) & 7 }, (w1 >> 29) & 7);
    let mask = mask_dwords(fam);
    let src = |i: usize, dwords: u32| {
        let text = vector_source(fam, srcs[i], dwords, literal);
        let text = if abs & (1 << i) != 0 {
            format!("|{text}|")
        } else {
            text
        };
        if neg & (1 << i) != 0 {
            format!("-{text}")
        } else {
            text
        }
    };
    let types: Vec<&str> = name.split('_').skip(2).collect();
    let last = types.last().copied().unwrap_or("");
    let t = type_dwords(last);
    let sdst = scalar(fam, (w >> 8) & 0x7f, mask, None);
    let body = match op {
        // VOPC: the condition into an SGPR pair (or VCC); from gfx10 v_cmpx names none.
        0x000..=0x0ff if fam != Family::Gfx9 && name.starts_with("v_cmpx_") => {
            format!("{}, {}", src(0, t), src(1, t))
        }
        0x000..=0x0ff => format!(
            "{}, {}, {}",
            scalar(fam, vdst, mask, None),
            src(0, t),
            src(1, t)
        ),
        _ => match name {
            "v_cndmask_b32" => format!(
                "{}, {}, {}, {}",
                vgpr(vdst, 1),
                src(0, 1),
                src(1, 1),
                vector_source(fam, srcs[2], mask, None)
            ),
            _ if CARRY_OUT.contains(&name) => {
                format!("{}, {sdst}, {}, {}", vgpr(vdst, 1), src(0, 1), src(1, 1))
            }
            _ if CARRY_IN.contains(&name) => format!(
                "{}, {sdst}, {}, {}, {}",
                vgpr(vdst, 1),
                src(0, 1),
                src(1, 1),
                vector_source(fam, srcs[2], mask, None)
            ),
            "v_div_scale_f32" | "v_div_scale_f64" => format!(
                "{}, {sdst}, {}, {}, {}",
                vgpr(vdst, t),
                src(0, t),
                src(1, t),
                src(2, t)
            ),
            "v_mad_u64_u32" | "v_mad_i64_i32" => format!(
                "{}, {sdst}, {}, {}, {}",
                vgpr(vdst, 2),
                src(0, 1),
                src(1, 1),
                src(2, 2)
            ),
            "v_lshlrev_b64" | "v_lshrrev_b64" | "v_ashrrev_i64" => {
                format!("{}, {}, {}", vgpr(vdst, 2), src(0, 1), src(1, 2))
            }
            "v_lshl_add_u64" => format!(
                "{}, {}, {}, {}",
                vgpr(vdst, 2),
                src(0, 2),
                src(1, 1),
                src(2, 2)
            ),
            "v_readlane_b32" => format!(
                "{}, {}, {}",
                scalar(fam, vdst, 1, None),
                src(0, 1),
                src(1, 1)
            ),
            _ => {
                // VOP1 forms take one source, VOP2 forms and the listed two-source operations
                // two, the rest three.
                let two = matches!(
                    name,
                    "v_mul_lo_u32"
                        | "v_mul_hi_u32"
                        | "v_mul_hi_i32"
                        | "v_bfm_b32"
                        | "v_ldexp_f32"
                        | "v_bcnt_u32_b32"
                        | "v_mbcnt_lo_u32_b32"
                        | "v_mbcnt_hi_u32_b32"
                        | "v_add_i32"
                        | "v_sub_i32"
                        | "v_add_nc_i32"
                        | "v_sub_nc_i32"
                        | "v_pack_b32_f16"
                        | "v_writelane_b32"
                        | "v_cvt_pkrtz_f16_f32"
                        | "v_cvt_pknorm_i16_f32"
                        | "v_cvt_pknorm_u16_f32"
                        | "v_cvt_pk_u16_u32"
                        | "v_cvt_pk_i16_i32"
                );
                let vop1 = match fam {
                    Family::Gfx9 => 0x140..=0x1bf,
                    _ => 0x180..=0x1ff,
                };
                let count = match op {
                    _ if vop1.contains(&op) => 1,
                    0x100..=0x13f => 2,
                    _ if two => 2,
                    _ => 3,
                };
                let (d, s) = if name.starts_with("v_cvt_") && types.len() == 2 {
                    (type_dwords(types[0]), type_dwords(types[1]))
                } else {
                    (t, t)
                };
                let list: Vec<String> = (0..count).map(|i| src(i, s)).collect();
                format!("{}, {}", vgpr(vdst, d), list.join(", "))
            }
        },
    };
    let clamp = if (w >> 15) & 1 == 1 { " clamp" } else { "" };
    format!("{body}{clamp}{}", omod(w1 >> 27))
}

/// A modifier list (`op_sel:[0,1]`) over `n` sources from per-source bits, or nothing when
/// every bit equals `default`.
fn source_bits(label: &str, bits: [u32; 3], n: usize, default: u32) -> String {
    if bits[..n].iter().all(|&b| b == default) {
        return String::new();
    }
    let list: Vec<String> = bits[..n].iter().map(|b| b.to_string()).collect();
    format!(" {label}:[{}]", list.join(","))
}

/// The register ranges of a matrix product (`v_mfma_*`, `v_wmma_*`): D, A, B, C. MFMA's D and
/// C are AGPRs when its ACC_CD bit (15) says so, A and B when its ACC bits (word 1, 27-28) do;
/// CBSZ/ABID/BLGP broadcasts and WMMA's op_sel/neg are not written yet.
fn matrix_operands(fam: Family, name: &str, words: &[u32]) -> Option<String> {
    let (w, w1) = (words[0], words[1]);
    let srcs = [w1 & 0x1ff, (w1 >> 9) & 0x1ff, (w1 >> 18) & 0x1ff];
    let (d_dwords, ab_dwords) = match name {
        "v_mfma_f32_32x32x8f16"
        | "v_mfma_f32_32x32x8_f16"
        | "v_mfma_f32_32x32x8bf16_1k"
        | "v_mfma_f32_32x32x8_bf16" => (16, 2),
        "v_wmma_f32_16x16x16_f16" | "v_wmma_f32_16x16x16_bf16" => (8, 8),
        _ => return None,
    };
    let reg = |field: u32, dwords: u32, agpr: bool| -> Option<String> {
        let n = field.checked_sub(256)?;
        let base = if agpr { "a" } else { "v" };
        Some(format!("{base}[{n}:{}]", n + dwords - 1))
    };
    if name.starts_with("v_mfma_") {
        let (acc_cd, acc) = ((w >> 15) & 1 == 1, (w1 >> 27) & 3);
        if (w >> 8) & 0x7f != 0 || w1 >> 29 != 0 {
            return None;
        }
        let d = format!(
            "{}[{}:{}]",
            if acc_cd { "a" } else { "v" },
            w & 0xff,
            (w & 0xff) + d_dwords - 1
        );
        return Some(format!(
            "{d}, {}, {}, {}",
            reg(srcs[0], ab_dwords, acc & 1 == 1)?,
            reg(srcs[1], ab_dwords, acc & 2 == 2)?,
            reg(srcs[2], d_dwords, acc_cd)?
        ));
    }
    // WMMA: op_sel_hi at its default (all ones), no negation.
    if fam != Family::Gfx11 || (w >> 8) & 0x7f != 0x40 || (w1 >> 27) != 3 {
        return None;
    }
    Some(format!(
        "{}, {}, {}, {}",
        reg(256 + (w & 0xff), d_dwords, false)?,
        reg(srcs[0], ab_dwords, false)?,
        reg(srcs[1], ab_dwords, false)?,
        reg(srcs[2], d_dwords, false)?
    ))
}

/// Operands of a VOP3P instruction (packed math, gfx90a's packed FP32, CDNA's AGPR moves)
/// with its op_sel/op_sel_hi/neg/clamp modifiers, as LLVM writes them.
fn vop3p_operands(fam: Family, name: &str, words: &[u32]) -> String {
    let (w, w1) = (words[0], words[1]);
    let vdst = w & 0xff;
    let srcs = [w1 & 0x1ff, (w1 >> 9) & 0x1ff, (w1 >> 18) & 0x1ff];
    match name {
        "v_accvgpr_read_b32" => return format!("v{vdst}, a{}", srcs[0].saturating_sub(256)),
        "v_accvgpr_write_b32" => {
            return format!("a{vdst}, {}", vector_source(fam, srcs[0], 1, None))
        }
        _ => {}
    }
    let dwords = if name.ends_with("_f32") || name.ends_with("_b32") {
        2
    } else {
        1
    };
    let n = if name.contains("fma") || name.contains("mad") {
        3
    } else {
        2
    };
    let list: Vec<String> = (0..n)
        .map(|i| vector_source(fam, srcs[i], dwords, None))
        .collect();
    let bit = |v: u32, i: u32| (v >> i) & 1;
    let op_sel = [bit(w, 11), bit(w, 12), bit(w, 13)];
    let op_sel_hi = [bit(w1, 27), bit(w1, 28), bit(w, 14)];
    let neg_lo = [bit(w1, 29), bit(w1, 30), bit(w1, 31)];
    let neg_hi = [bit(w, 8), bit(w, 9), bit(w, 10)];
    let mut text = format!("{}, {}", vgpr(vdst, dwords), list.join(", "));
    text += &source_bits("op_sel", op_sel, n, 0);
    text += &source_bits("op_sel_hi", op_sel_hi, n, 1);
    text += &source_bits("neg_lo", neg_lo, n, 0);
    text += &source_bits("neg_hi", neg_hi, n, 0);
    if bit(w, 15) == 1 {
        text += " clamp";
    }
    text
}

/// Operands of a VOP1 or VOP2 instruction with SDWA controls, as LLVM writes them.
fn sdwa_operands(fam: Family, shape: &Shape, name: &str, words: &[u32]) -> String {
    const SEL: [&str; 8] = [
        "BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD", "?",
    ];
    const UNUSED: [&str; 4] = ["UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE", "?"];
    let (w, s) = (words[0], words[1]);
    let vdst = (w >> 17) & 0xff;
    let bit = |i: u32| (s >> i) & 1 == 1;
    let operand = |reg: u32, scalar_bit: bool, sext: bool, neg: bool, abs: bool| {
        let r = if scalar_bit {
            scalar(fam, reg, 1, None)
        } else {
            format!("v{reg}")
        };
        let r = if abs { format!("|{r}|") } else { r };
        let r = if neg { format!("-{r}") } else { r };
        if sext {
            format!("sext({r})")
        } else {
            r
        }
    };
    let src0 = operand(s & 0xff, bit(23), bit(19), bit(20), bit(21));
    let sels = format!(
        " dst_sel:{} dst_unused:{} src0_sel:{}",
        SEL[((s >> 8) & 7) as usize],
        UNUSED[((s >> 11) & 3) as usize],
        SEL[((s >> 16) & 7) as usize]
    );
    let mut text = match shape.format {
        Format::Vop1 => format!("v{vdst}, {src0}"),
        _ => {
            let src1 = operand((w >> 9) & 0xff, bit(31), bit(27), bit(28), bit(29));
            if uses_vcc(name) {
                vop2_through_vcc(fam, name, &format!("v{vdst}"), &src0, &src1)
            } else {
                format!("v{vdst}, {src0}, {src1}")
            }
        }
    };
    if bit(13) {
        text += " clamp";
    }
    text += omod(s >> 14);
    text += &sels;
    if shape.format == Format::Vop2 {
        text += &format!(" src1_sel:{}", SEL[((s >> 24) & 7) as usize]);
    }
    text
}
