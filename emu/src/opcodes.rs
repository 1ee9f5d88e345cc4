//! Opcode names, by family and format, as AMD's ISA reference guides number them (Vega and
//! CDNA for gfx9), spelled as LLVM prints them (without its `_e32`/`_e64`/`_sdwa`/`_dpp`
//! suffixes). So far gfx9's scalar formats (SOP2, SOP1, SOPC, SOPK, SOPP), its scalar memory
//! (SMEM), its vector ALU formats (VOP1, VOP2, VOPC, VOP3, VOP3P) and the LDS, flat/global/
//! scratch and buffer loads and stores kiln's kernels use; other formats and families answer
//! with an error naming them.

use crate::decode::{Family, Format};
use crate::opcodes_rdna as rdna;
use crate::Error;

/// gfx9 SOP2, by opcode (bits 29:23).
const GFX9_SOP2: &[&str] = &[
    "s_add_u32",
    "s_sub_u32",
    "s_add_i32",
    "s_sub_i32",
    "s_addc_u32",
    "s_subb_u32",
    "s_min_i32",
    "s_min_u32",
    "s_max_i32",
    "s_max_u32",
    "s_cselect_b32",
    "s_cselect_b64",
    "s_and_b32",
    "s_and_b64",
    "s_or_b32",
    "s_or_b64",
    "s_xor_b32",
    "s_xor_b64",
    "s_andn2_b32",
    "s_andn2_b64",
    "s_orn2_b32",
    "s_orn2_b64",
    "s_nand_b32",
    "s_nand_b64",
    "s_nor_b32",
    "s_nor_b64",
    "s_xnor_b32",
    "s_xnor_b64",
    "s_lshl_b32",
    "s_lshl_b64",
    "s_lshr_b32",
    "s_lshr_b64",
    "s_ashr_i32",
    "s_ashr_i64",
    "s_bfm_b32",
    "s_bfm_b64",
    "s_mul_i32",
    "s_bfe_u32",
    "s_bfe_i32",
    "s_bfe_u64",
    "s_bfe_i64",
    "s_cbranch_g_fork",
    "s_absdiff_i32",
    "s_rfe_restore_b64",
    "s_mul_hi_u32",
    "s_mul_hi_i32",
    "s_lshl1_add_u32",
    "s_lshl2_add_u32",
    "s_lshl3_add_u32",
    "s_lshl4_add_u32",
    "s_pack_ll_b32_b16",
    "s_pack_lh_b32_b16",
    "s_pack_hh_b32_b16",
];

/// gfx9 SOP1, by opcode (bits 15:8).
const GFX9_SOP1: &[&str] = &[
    "s_mov_b32",
    "s_mov_b64",
    "s_cmov_b32",
    "s_cmov_b64",
    "s_not_b32",
    "s_not_b64",
    "s_wqm_b32",
    "s_wqm_b64",
    "s_brev_b32",
    "s_brev_b64",
    "s_bcnt0_i32_b32",
    "s_bcnt0_i32_b64",
    "s_bcnt1_i32_b32",
    "s_bcnt1_i32_b64",
    "s_ff0_i32_b32",
    "s_ff0_i32_b64",
    "s_ff1_i32_b32",
    "s_ff1_i32_b64",
    "s_flbit_i32_b32",
    "s_flbit_i32_b64",
    "s_flbit_i32",
    "s_flbit_i32_i64",
    "s_sext_i32_i8",
    "s_sext_i32_i16",
    "s_bitset0_b32",
    "s_bitset0_b64",
    "s_bitset1_b32",
    "s_bitset1_b64",
    "s_getpc_b64",
    "s_setpc_b64",
    "s_swappc_b64",
    "s_rfe_b64",
    "s_and_saveexec_b64",
    "s_or_saveexec_b64",
    "s_xor_saveexec_b64",
    "s_andn2_saveexec_b64",
    "s_orn2_saveexec_b64",
    "s_nand_saveexec_b64",
    "s_nor_saveexec_b64",
    "s_xnor_saveexec_b64",
    "s_quadmask_b32",
    "s_quadmask_b64",
    "s_movrels_b32",
    "s_movrels_b64",
    "s_movreld_b32",
    "s_movreld_b64",
    "s_cbranch_join",
    "",
    "s_abs_i32",
    "",
    "s_set_gpr_idx_idx",
    "s_andn1_saveexec_b64",
    "s_orn1_saveexec_b64",
    "s_andn1_wrexec_b64",
    "s_andn2_wrexec_b64",
    "s_bitreplicate_b64_b32",
];

/// gfx9 SOPC, by opcode (bits 22:16).
const GFX9_SOPC: &[&str] = &[
    "s_cmp_eq_i32",
    "s_cmp_lg_i32",
    "s_cmp_gt_i32",
    "s_cmp_ge_i32",
    "s_cmp_lt_i32",
    "s_cmp_le_i32",
    "s_cmp_eq_u32",
    "s_cmp_lg_u32",
    "s_cmp_gt_u32",
    "s_cmp_ge_u32",
    "s_cmp_lt_u32",
    "s_cmp_le_u32",
    "s_bitcmp0_b32",
    "s_bitcmp1_b32",
    "s_bitcmp0_b64",
    "s_bitcmp1_b64",
    "s_setvskip",
    "s_set_gpr_idx_on",
    "s_cmp_eq_u64",
    "s_cmp_lg_u64",
];

/// gfx9 SOPK, by opcode (bits 27:23).
const GFX9_SOPK: &[&str] = &[
    "s_movk_i32",
    "s_cmovk_i32",
    "s_cmpk_eq_i32",
    "s_cmpk_lg_i32",
    "s_cmpk_gt_i32",
    "s_cmpk_ge_i32",
    "s_cmpk_lt_i32",
    "s_cmpk_le_i32",
    "s_cmpk_eq_u32",
    "s_cmpk_lg_u32",
    "s_cmpk_gt_u32",
    "s_cmpk_ge_u32",
    "s_cmpk_lt_u32",
    "s_cmpk_le_u32",
    "s_addk_i32",
    "s_mulk_i32",
    "s_cbranch_i_fork",
    "s_getreg_b32",
    "s_setreg_b32",
    "",
    "s_setreg_imm32_b32",
    "s_call_b64",
];

/// gfx9 SOPP, by opcode (bits 22:16).
const GFX9_SOPP: &[&str] = &[
    "s_nop",
    "s_endpgm",
    "s_branch",
    "s_wakeup",
    "s_cbranch_scc0",
    "s_cbranch_scc1",
    "s_cbranch_vccz",
    "s_cbranch_vccnz",
    "s_cbranch_execz",
    "s_cbranch_execnz",
    "s_barrier",
    "s_setkill",
    "s_waitcnt",
    "s_sethalt",
    "s_sleep",
    "s_setprio",
    "s_sendmsg",
    "s_sendmsghalt",
    "s_trap",
    "s_icache_inv",
    "s_incperflevel",
    "s_decperflevel",
    "s_ttracedata",
    "s_cbranch_cdbgsys",
    "s_cbranch_cdbguser",
    "s_cbranch_cdbgsys_or_user",
    "s_cbranch_cdbgsys_and_user",
    "s_endpgm_saved",
    "s_set_gpr_idx_off",
    "s_set_gpr_idx_mode",
    "s_endpgm_ordered_ps_done",
];

/// gfx9 SMEM, by opcode (bits 25:18); gaps are opcodes kiln's objects never hold.
fn gfx9_smem(op: u32) -> Option<&'static str> {
    Some(match op {
        0x00 => "s_load_dword",
        0x01 => "s_load_dwordx2",
        0x02 => "s_load_dwordx4",
        0x03 => "s_load_dwordx8",
        0x04 => "s_load_dwordx16",
        0x08 => "s_buffer_load_dword",
        0x09 => "s_buffer_load_dwordx2",
        0x0a => "s_buffer_load_dwordx4",
        0x0b => "s_buffer_load_dwordx8",
        0x0c => "s_buffer_load_dwordx16",
        0x10 => "s_store_dword",
        0x11 => "s_store_dwordx2",
        0x12 => "s_store_dwordx4",
        0x20 => "s_dcache_inv",
        0x21 => "s_dcache_wb",
        0x22 => "s_dcache_inv_vol",
        0x23 => "s_dcache_wb_vol",
        0x24 => "s_memtime",
        0x25 => "s_memrealtime",
        _ => return None,
    })
}

/// gfx9 VOP1, by opcode (bits 16:9); gfx90a and gfx940 add v_mov_b64.
fn gfx9_vop1(arch: &str, op: u32) -> Option<&'static str> {
    const TABLE: &[&str] = &[
        "v_nop",
        "v_mov_b32",
        "v_readfirstlane_b32",
        "v_cvt_i32_f64",
        "v_cvt_f64_i32",
        "v_cvt_f32_i32",
        "v_cvt_f32_u32",
        "v_cvt_u32_f32",
        "v_cvt_i32_f32",
        "",
        "v_cvt_f16_f32",
        "v_cvt_f32_f16",
        "v_cvt_rpi_i32_f32",
        "v_cvt_flr_i32_f32",
        "v_cvt_off_f32_i4",
        "v_cvt_f32_f64",
        "v_cvt_f64_f32",
        "v_cvt_f32_ubyte0",
        "v_cvt_f32_ubyte1",
        "v_cvt_f32_ubyte2",
        "v_cvt_f32_ubyte3",
        "v_cvt_u32_f64",
        "v_cvt_f64_u32",
        "v_trunc_f64",
        "v_ceil_f64",
        "v_rndne_f64",
        "v_floor_f64",
        "v_fract_f32",
        "v_trunc_f32",
        "v_ceil_f32",
        "v_rndne_f32",
        "v_floor_f32",
        "v_exp_f32",
        "v_log_f32",
        "v_rcp_f32",
        "v_rcp_iflag_f32",
        "v_rsq_f32",
        "v_rcp_f64",
        "v_rsq_f64",
        "v_sqrt_f32",
        "v_sqrt_f64",
        "v_sin_f32",
        "v_cos_f32",
        "v_not_b32",
        "v_bfrev_b32",
        "v_ffbh_u32",
        "v_ffbl_b32",
        "v_ffbh_i32",
        "v_frexp_exp_i32_f64",
        "v_frexp_mant_f64",
        "v_fract_f64",
        "v_frexp_exp_i32_f32",
        "v_frexp_mant_f32",
        "v_clrexcp",
    ];
    match op {
        0x38 if matches!(arch, "gfx90a" | "gfx942") => Some("v_mov_b64"),
        _ => TABLE.get(op as usize).copied().filter(|m| !m.is_empty()),
    }
}

/// gfx9 VOP2, by opcode (bits 30:25); gfx940 fuses where the others multiply and add.
fn gfx9_vop2(arch: &str, op: u32) -> Option<&'static str> {
    const TABLE: &[&str] = &[
        "v_cndmask_b32",
        "v_add_f32",
        "v_sub_f32",
        "v_subrev_f32",
        "v_mul_legacy_f32",
        "v_mul_f32",
        "v_mul_i32_i24",
        "v_mul_hi_i32_i24",
        "v_mul_u32_u24",
        "v_mul_hi_u32_u24",
        "v_min_f32",
        "v_max_f32",
        "v_min_i32",
        "v_max_i32",
        "v_min_u32",
        "v_max_u32",
        "v_lshrrev_b32",
        "v_ashrrev_i32",
        "v_lshlrev_b32",
        "v_and_b32",
        "v_or_b32",
        "v_xor_b32",
        "v_mac_f32",
        "v_madmk_f32",
        "v_madak_f32",
        "v_add_co_u32",
        "v_sub_co_u32",
        "v_subrev_co_u32",
        "v_addc_co_u32",
        "v_subb_co_u32",
        "v_subbrev_co_u32",
        "v_add_f16",
        "v_sub_f16",
        "v_subrev_f16",
        "v_mul_f16",
        "v_mac_f16",
        "v_madmk_f16",
        "v_madak_f16",
        "v_add_u16",
        "v_sub_u16",
        "v_subrev_u16",
        "v_mul_lo_u16",
        "v_lshlrev_b16",
        "v_lshrrev_b16",
        "v_ashrrev_i16",
        "v_max_f16",
        "v_min_f16",
        "v_max_u16",
        "v_max_i16",
        "v_min_u16",
        "v_min_i16",
        "v_ldexp_f16",
        "v_add_u32",
        "v_sub_u32",
        "v_subrev_u32",
    ];
    match (arch, op) {
        ("gfx942", 0x17) => Some("v_fmamk_f32"),
        ("gfx942", 0x18) => Some("v_fmaak_f32"),
        (_, 0x3b) if arch != "gfx900" => Some("v_fmac_f32"),
        _ => TABLE.get(op as usize).copied().filter(|m| !m.is_empty()),
    }
}

/// gfx9 VOPC, by opcode (bits 24:17): classes, then each float type's 16 conditions (compare,
/// then compare-and-write-exec), then each integer type's 8.
fn gfx9_vopc(op: u32) -> Option<String> {
    const FLOAT: [&str; 16] = [
        "f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle", "neq",
        "nlt", "tru",
    ];
    const INT: [&str; 8] = ["f", "lt", "eq", "le", "gt", "ne", "ge", "t"];
    let op = op as usize;
    Some(match op {
        0x10..=0x15 => {
            let (x, ty) = (op & 1 == 1, ["f32", "f64", "f16"][(op - 0x10) / 2]);
            format!("v_cmp{}_class_{ty}", if x { "x" } else { "" })
        }
        0x20..=0x7f => {
            let group = (op - 0x20) / 16;
            let ty = ["f16", "f32", "f64"][group / 2];
            let x = if group % 2 == 1 { "x" } else { "" };
            format!("v_cmp{x}_{}_{ty}", FLOAT[op % 16])
        }
        0xa0..=0xff => {
            let group = (op - 0xa0) / 8;
            let ty = ["i16", "u16", "i32", "u32", "i64", "u64"][(group / 4) * 2 + group % 2];
            let x = if (group / 2) % 2 == 1 { "x" } else { "" };
            format!("v_cmp{x}_{}_{ty}", INT[op % 8])
        }
        _ => return None,
    })
}

/// gfx9 VOP3-only opcodes (bits 25:16, from 0x1c0; below are VOPC, VOP2 + 0x100 and
/// VOP1 + 0x140 in their 64-bit form).
fn gfx9_vop3_only(arch: &str, op: u32) -> Option<&'static str> {
    const FROM_1C0: &[&str] = &[
        "v_mad_legacy_f32",
        "v_mad_f32",
        "v_mad_i32_i24",
        "v_mad_u32_u24",
        "v_cubeid_f32",
        "v_cubesc_f32",
        "v_cubetc_f32",
        "v_cubema_f32",
        "v_bfe_u32",
        "v_bfe_i32",
        "v_bfi_b32",
        "v_fma_f32",
        "v_fma_f64",
        "v_lerp_u8",
        "v_alignbit_b32",
        "v_alignbyte_b32",
        "v_min3_f32",
        "v_min3_i32",
        "v_min3_u32",
        "v_max3_f32",
        "v_max3_i32",
        "v_max3_u32",
        "v_med3_f32",
        "v_med3_i32",
        "v_med3_u32",
        "v_sad_u8",
        "v_sad_hi_u8",
        "v_sad_u16",
        "v_sad_u32",
        "v_cvt_pk_u8_f32",
        "v_div_fixup_f32",
        "v_div_fixup_f64",
        "v_div_scale_f32",
        "v_div_scale_f64",
        "v_div_fmas_f32",
        "v_div_fmas_f64",
        "v_msad_u8",
        "v_qsad_pk_u16_u8",
        "v_mqsad_pk_u16_u8",
        "v_mqsad_u32_u8",
        "v_mad_u64_u32",
        "v_mad_i64_i32",
        "v_mad_legacy_f16",
        "v_mad_legacy_u16",
        "v_mad_legacy_i16",
        "v_perm_b32",
        "v_fma_legacy_f16",
        "v_div_fixup_legacy_f16",
        "v_cvt_pkaccum_u8_f32",
        "v_mad_u32_u16",
        "v_mad_i32_i16",
        "v_xad_u32",
        "v_min3_f16",
        "v_min3_i16",
        "v_min3_u16",
        "v_max3_f16",
        "v_max3_i16",
        "v_max3_u16",
        "v_med3_f16",
        "v_med3_i16",
        "v_med3_u16",
        "v_lshl_add_u32",
        "v_add_lshl_u32",
        "v_add3_u32",
        "v_lshl_or_b32",
        "v_and_or_b32",
        "v_or3_b32",
        "v_mad_f16",
        "v_mad_u16",
        "v_mad_i16",
        "v_fma_f16",
        "v_div_fixup_f16",
    ];
    const FROM_280: &[&str] = &[
        "v_add_f64",
        "v_mul_f64",
        "v_min_f64",
        "v_max_f64",
        "v_ldexp_f64",
        "v_mul_lo_u32",
        "v_mul_hi_u32",
        "v_mul_hi_i32",
        "v_ldexp_f32",
        "v_readlane_b32",
        "v_writelane_b32",
        "v_bcnt_u32_b32",
        "v_mbcnt_lo_u32_b32",
        "v_mbcnt_hi_u32_b32",
        "",
        "v_lshlrev_b64",
        "v_lshrrev_b64",
        "v_ashrrev_i64",
        "v_trig_preop_f64",
        "v_bfm_b32",
        "v_cvt_pknorm_i16_f32",
        "v_cvt_pknorm_u16_f32",
        "v_cvt_pkrtz_f16_f32",
        "v_cvt_pk_u16_u32",
        "v_cvt_pk_i16_i32",
        "v_cvt_pknorm_i16_f16",
        "v_cvt_pknorm_u16_f16",
        "",
        "v_add_i32",
        "v_sub_i32",
        "v_add_i16",
        "v_sub_i16",
        "v_pack_b32_f16",
    ];
    let at = |table: &'static [&'static str], i: u32| {
        table.get(i as usize).copied().filter(|m| !m.is_empty())
    };
    match op {
        // gfx940: a 64-bit shift-and-add.
        0x208 if arch == "gfx942" => Some("v_lshl_add_u64"),
        0x1c0..=0x27f => at(FROM_1C0, op - 0x1c0),
        0x280..=0x2ff => at(FROM_280, op - 0x280),
        _ => None,
    }
}

/// gfx9 VOP3P (bits 22:16): packed 16-bit math; gfx90a's packed FP32; gfx908's AGPR moves.
fn gfx9_vop3p(arch: &str, op: u32) -> Option<&'static str> {
    const PACKED: &[&str] = &[
        "v_pk_mad_i16",
        "v_pk_mul_lo_u16",
        "v_pk_add_i16",
        "v_pk_sub_i16",
        "v_pk_lshlrev_b16",
        "v_pk_lshrrev_b16",
        "v_pk_ashrrev_i16",
        "v_pk_max_i16",
        "v_pk_min_i16",
        "v_pk_mad_u16",
        "v_pk_add_u16",
        "v_pk_sub_u16",
        "v_pk_max_u16",
        "v_pk_min_u16",
        "v_pk_fma_f16",
        "v_pk_add_f16",
        "v_pk_mul_f16",
        "v_pk_min_f16",
        "v_pk_max_f16",
    ];
    let cdna = matches!(arch, "gfx908" | "gfx90a" | "gfx942");
    match op {
        0x00..=0x12 => PACKED.get(op as usize).copied(),
        0x30 if matches!(arch, "gfx90a" | "gfx942") => Some("v_pk_fma_f32"),
        0x31 if matches!(arch, "gfx90a" | "gfx942") => Some("v_pk_mul_f32"),
        0x32 if matches!(arch, "gfx90a" | "gfx942") => Some("v_pk_add_f32"),
        0x33 if matches!(arch, "gfx90a" | "gfx942") => Some("v_pk_mov_b32"),
        // Matrix cores (VOP3P-MAI): the 32x32x8 half-precision products kiln's MFMA solver
        // uses (gfx942 spells them with an underscore; its bf16 form replaced gfx90a's _1k).
        0x4c if arch == "gfx942" => Some("v_mfma_f32_32x32x8_f16"),
        0x4c if cdna => Some("v_mfma_f32_32x32x8f16"),
        0x60 if arch == "gfx942" => Some("v_mfma_f32_32x32x8_bf16"),
        0x66 if arch == "gfx90a" => Some("v_mfma_f32_32x32x8bf16_1k"),
        0x58 if cdna => Some("v_accvgpr_read_b32"),
        0x59 if cdna => Some("v_accvgpr_write_b32"),
        _ => None,
    }
}

/// gfx9 LDS (DS, bits 24:17), the operations kiln's kernels use and their kin.
fn gfx9_ds(op: u32) -> Option<&'static str> {
    Some(match op {
        0x0d => "ds_write_b32",
        0x0e => "ds_write2_b32",
        0x0f => "ds_write2st64_b32",
        0x1e => "ds_write_b8",
        0x1f => "ds_write_b16",
        0x36 => "ds_read_b32",
        0x37 => "ds_read2_b32",
        0x38 => "ds_read2st64_b32",
        0x39 => "ds_read_i8",
        0x3a => "ds_read_u8",
        0x3b => "ds_read_i16",
        0x3c => "ds_read_u16",
        0x4d => "ds_write_b64",
        0x4e => "ds_write2_b64",
        0x4f => "ds_write2st64_b64",
        0x76 => "ds_read_b64",
        0x77 => "ds_read2_b64",
        0x78 => "ds_read2st64_b64",
        0xde => "ds_write_b96",
        0xdf => "ds_write_b128",
        0xfe => "ds_read_b96",
        0xff => "ds_read_b128",
        _ => return None,
    })
}

/// gfx9 flat, global and scratch loads and stores, and buffer ones (MUBUF), by opcode (bits
/// 24:18); the segment or `buffer_` prefix comes from the caller.
fn gfx9_load_store(op: u32) -> Option<&'static str> {
    const FROM_10: &[&str] = &[
        "load_ubyte",
        "load_sbyte",
        "load_ushort",
        "load_sshort",
        "load_dword",
        "load_dwordx2",
        "load_dwordx3",
        "load_dwordx4",
        "store_byte",
        "store_byte_d16_hi",
        "store_short",
        "store_short_d16_hi",
        "store_dword",
        "store_dwordx2",
        "store_dwordx3",
        "store_dwordx4",
    ];
    FROM_10.get(op.checked_sub(0x10)? as usize).copied()
}

/// gfx9's SOPK mnemonic of opcode `op`.
pub(crate) fn gfx9_sopk(op: u32) -> Option<&'static str> {
    GFX9_SOPK
        .get(op as usize)
        .copied()
        .filter(|m| !m.is_empty())
}

/// The mnemonic of the instruction whose first dword is `w`, decoded as `format`, on `arch`
/// (`gfx90a`, ...; its family's tables, with the architecture's own opcodes).
pub fn mnemonic(
    arch: &str,
    family: Family,
    format: Format,
    w: u32,
    pc: u64,
) -> Result<String, Error> {
    let from = |table: &'static [&'static str], op: u32| {
        table.get(op as usize).copied().filter(|m| !m.is_empty())
    };
    let name = match (family, format) {
        (Family::Gfx9, Format::Vop1) => gfx9_vop1(arch, (w >> 9) & 0xff),
        (Family::Gfx9, Format::Vop2) => gfx9_vop2(arch, (w >> 25) & 0x3f),
        (Family::Gfx9, Format::Vopc) => {
            return gfx9_vopc((w >> 17) & 0xff).ok_or_else(|| undefined(family, format, w, pc))
        }
        (Family::Gfx9, Format::Vop3) => {
            let op = (w >> 16) & 0x3ff;
            match op {
                0x000..=0x0ff => {
                    return gfx9_vopc(op).ok_or_else(|| undefined(family, format, w, pc))
                }
                0x100..=0x13f => gfx9_vop2(arch, op - 0x100),
                0x140..=0x1bf => gfx9_vop1(arch, op - 0x140),
                _ => gfx9_vop3_only(arch, op),
            }
        }
        (Family::Gfx9, Format::Vop3p) => gfx9_vop3p(arch, (w >> 16) & 0x7f),
        (Family::Gfx9, Format::Ds) => gfx9_ds((w >> 17) & 0xff),
        (Family::Gfx9, Format::Flat | Format::Mubuf) => {
            let prefix = match (format, (w >> 14) & 3) {
                (Format::Mubuf, _) => "buffer_",
                (_, 0) => "flat_",
                (_, 1) => "scratch_",
                (_, 2) => "global_",
                _ => return Err(undefined(family, format, w, pc)),
            };
            return gfx9_load_store((w >> 18) & 0x7f)
                .map(|op| format!("{prefix}{op}"))
                .ok_or_else(|| undefined(family, format, w, pc));
        }
        (Family::Gfx9, Format::Sop2) => from(GFX9_SOP2, (w >> 23) & 0x7f),
        (Family::Gfx9, Format::Sop1) => from(GFX9_SOP1, (w >> 8) & 0xff),
        (Family::Gfx9, Format::Sopc) => from(GFX9_SOPC, (w >> 16) & 0x7f),
        (Family::Gfx9, Format::Sopk) => from(GFX9_SOPK, (w >> 23) & 0x1f),
        (Family::Gfx9, Format::Sopp) => from(GFX9_SOPP, (w >> 16) & 0x7f),
        (Family::Gfx9, Format::Smem) => gfx9_smem((w >> 18) & 0xff),
        (_, Format::Vopc) => {
            return rdna::vopc(family, (w >> 17) & 0xff)
                .ok_or_else(|| undefined(family, format, w, pc))
        }
        (_, Format::Vop1) => rdna::vop1(family, (w >> 9) & 0xff),
        (_, Format::Vop2) => rdna::vop2(family, (w >> 25) & 0x3f),
        (_, Format::Vop3) => {
            let op = (w >> 16) & 0x3ff;
            match op {
                0x000..=0x0ff => {
                    return rdna::vopc(family, op).ok_or_else(|| undefined(family, format, w, pc))
                }
                0x100..=0x13f => rdna::vop2(family, op - 0x100),
                0x180..=0x1ff => rdna::vop1(family, op - 0x180),
                _ => rdna::vop3_only(family, op),
            }
        }
        (Family::Gfx11, Format::Vopd) => rdna::vopd((w >> 22) & 0xf),
        (Family::Gfx11, Format::Vop3p) => rdna::vop3p_gfx11((w >> 16) & 0x7f),
        (_, Format::Sop2) => rdna::sop2(family, (w >> 23) & 0x7f),
        (_, Format::Sop1) => rdna::sop1(family, (w >> 8) & 0xff),
        (_, Format::Sopc) => {
            return rdna::sopc(family, (w >> 16) & 0x7f)
                .ok_or_else(|| undefined(family, format, w, pc))
        }
        (_, Format::Sopk) => rdna::sopk(family, (w >> 23) & 0x1f),
        (_, Format::Sopp) => rdna::sopp(family, (w >> 16) & 0x7f),
        (_, Format::Smem) => rdna::smem(family, (w >> 18) & 0xff),
        (_, Format::Ds) => rdna::ds(family, (w >> 18) & 0xff),
        (_, Format::Flat) => {
            let seg = if family == Family::Gfx10 {
                (w >> 14) & 3
            } else {
                (w >> 16) & 3
            };
            let prefix = match seg {
                0 => "flat_",
                1 => "scratch_",
                2 => "global_",
                _ => return Err(undefined(family, format, w, pc)),
            };
            return rdna::load_store(family, (w >> 18) & 0x7f)
                .map(|op| format!("{prefix}{op}"))
                .ok_or_else(|| undefined(family, format, w, pc));
        }
        (_, Format::Mubuf) => {
            let op = if family == Family::Gfx10 {
                (w >> 18) & 0x7f
            } else {
                (w >> 18) & 0xff
            };
            if let Some(name) = rdna::buffer_other(family, op) {
                return Ok(name.to_string());
            }
            return rdna::load_store(family, op)
                .map(|op| format!("buffer_{op}"))
                .ok_or_else(|| undefined(family, format, w, pc));
        }
        _ => {
            return Err(Error::Decode(format!(
                "pc 0x{pc:x}: {format:?} opcodes of {family:?} are not in kiln's tables yet"
            )))
        }
    };
    name.map(str::to_string)
        .ok_or_else(|| undefined(family, format, w, pc))
}

fn undefined(family: Family, format: Format, w: u32, pc: u64) -> Error {
    Error::Decode(format!(
        "pc 0x{pc:x}: {format:?} dword 0x{w:08x} holds an opcode {family:?} does not define"
    ))
}
