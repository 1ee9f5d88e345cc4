//! Opcode names of gfx10 (RDNA 1/2) and gfx11 (RDNA 3/3.5), by format, as AMD's RDNA 2 and
//! RDNA 3 ISA reference guides number them, spelled as LLVM prints them (gfx11 renames many:
//! `s_and_not1_b32`, `s_load_b32`, `global_load_b128`, `ds_load_2addr_b32`). The tables hold
//! the compute instructions: scalar ALU and control, scalar loads, vector ALU (VOP1, VOP2,
//! VOPC, VOP3, gfx11's dual-issue VOPD), LDS, flat/global/scratch and buffer loads and
//! stores; graphics-only opcodes (image, export, interpolation) answer with `None`.

use crate::decode::Family;

/// Looks `op` up in a sparse table.
fn find(table: &[(u32, &'static str)], op: u32) -> Option<&'static str> {
    table.iter().find(|(o, _)| *o == op).map(|(_, n)| *n)
}

/// SOP2 (bits 29:23).
pub fn sop2(family: Family, op: u32) -> Option<&'static str> {
    const COMMON: [(u32, &str); 6] = [
        (0x00, "s_add_u32"),
        (0x01, "s_sub_u32"),
        (0x02, "s_add_i32"),
        (0x03, "s_sub_i32"),
        (0x04, "s_addc_u32"),
        (0x05, "s_subb_u32"),
    ];
    const GFX10: &[(u32, &str)] = &[
        (0x06, "s_min_i32"),
        (0x07, "s_min_u32"),
        (0x08, "s_max_i32"),
        (0x09, "s_max_u32"),
        (0x0a, "s_cselect_b32"),
        (0x0b, "s_cselect_b64"),
        (0x0e, "s_and_b32"),
        (0x0f, "s_and_b64"),
        (0x10, "s_or_b32"),
        (0x11, "s_or_b64"),
        (0x12, "s_xor_b32"),
        (0x13, "s_xor_b64"),
        (0x14, "s_andn2_b32"),
        (0x15, "s_andn2_b64"),
        (0x16, "s_orn2_b32"),
        (0x17, "s_orn2_b64"),
        (0x18, "s_nand_b32"),
        (0x19, "s_nand_b64"),
        (0x1a, "s_nor_b32"),
        (0x1b, "s_nor_b64"),
        (0x1c, "s_xnor_b32"),
        (0x1d, "s_xnor_b64"),
        (0x1e, "s_lshl_b32"),
        (0x1f, "s_lshl_b64"),
        (0x20, "s_lshr_b32"),
        (0x21, "s_lshr_b64"),
        (0x22, "s_ashr_i32"),
        (0x23, "s_ashr_i64"),
        (0x24, "s_bfm_b32"),
        (0x25, "s_bfm_b64"),
        (0x26, "s_mul_i32"),
        (0x27, "s_bfe_u32"),
        (0x28, "s_bfe_i32"),
        (0x29, "s_bfe_u64"),
        (0x2a, "s_bfe_i64"),
        (0x2c, "s_absdiff_i32"),
        (0x2e, "s_lshl1_add_u32"),
        (0x2f, "s_lshl2_add_u32"),
        (0x30, "s_lshl3_add_u32"),
        (0x31, "s_lshl4_add_u32"),
        (0x32, "s_pack_ll_b32_b16"),
        (0x33, "s_pack_lh_b32_b16"),
        (0x34, "s_pack_hh_b32_b16"),
        (0x35, "s_mul_hi_u32"),
        (0x36, "s_mul_hi_i32"),
    ];
    const GFX11: &[(u32, &str)] = &[
        (0x06, "s_absdiff_i32"),
        (0x08, "s_lshl_b32"),
        (0x09, "s_lshl_b64"),
        (0x0a, "s_lshr_b32"),
        (0x0b, "s_lshr_b64"),
        (0x0c, "s_ashr_i32"),
        (0x0d, "s_ashr_i64"),
        (0x0e, "s_lshl1_add_u32"),
        (0x0f, "s_lshl2_add_u32"),
        (0x10, "s_lshl3_add_u32"),
        (0x11, "s_lshl4_add_u32"),
        (0x12, "s_min_i32"),
        (0x13, "s_min_u32"),
        (0x14, "s_max_i32"),
        (0x15, "s_max_u32"),
        (0x16, "s_and_b32"),
        (0x17, "s_and_b64"),
        (0x18, "s_or_b32"),
        (0x19, "s_or_b64"),
        (0x1a, "s_xor_b32"),
        (0x1b, "s_xor_b64"),
        (0x1c, "s_nand_b32"),
        (0x1d, "s_nand_b64"),
        (0x1e, "s_nor_b32"),
        (0x1f, "s_nor_b64"),
        (0x20, "s_xnor_b32"),
        (0x21, "s_xnor_b64"),
        (0x22, "s_and_not1_b32"),
        (0x23, "s_and_not1_b64"),
        (0x24, "s_or_not1_b32"),
        (0x25, "s_or_not1_b64"),
        (0x26, "s_bfe_u32"),
        (0x27, "s_bfe_i32"),
        (0x28, "s_bfe_u64"),
        (0x29, "s_bfe_i64"),
        (0x2a, "s_bfm_b32"),
        (0x2b, "s_bfm_b64"),
        (0x2c, "s_mul_i32"),
        (0x2d, "s_mul_hi_u32"),
        (0x2e, "s_mul_hi_i32"),
        (0x30, "s_cselect_b32"),
        (0x31, "s_cselect_b64"),
        (0x32, "s_pack_ll_b32_b16"),
        (0x33, "s_pack_lh_b32_b16"),
        (0x34, "s_pack_hh_b32_b16"),
        (0x35, "s_pack_hl_b32_b16"),
        // gfx11.5's scalar floating point.
        (0x40, "s_add_f32"),
        (0x41, "s_sub_f32"),
        (0x42, "s_min_f32"),
        (0x43, "s_max_f32"),
        (0x44, "s_mul_f32"),
        (0x45, "s_fmaak_f32"),
        (0x46, "s_fmamk_f32"),
        (0x47, "s_fmac_f32"),
        (0x48, "s_cvt_pk_rtz_f16_f32"),
    ];
    find(&COMMON, op).or_else(|| match family {
        Family::Gfx10 => find(GFX10, op),
        _ => find(GFX11, op),
    })
}

/// SOPK (bits 27:23).
pub fn sopk(family: Family, op: u32) -> Option<&'static str> {
    const GFX10: &[(u32, &str)] = &[
        (0x12, "s_getreg_b32"),
        (0x13, "s_setreg_b32"),
        (0x15, "s_setreg_imm32_b32"),
        (0x16, "s_call_b64"),
        (0x17, "s_waitcnt_vscnt"),
        (0x18, "s_waitcnt_vmcnt"),
        (0x19, "s_waitcnt_expcnt"),
        (0x1a, "s_waitcnt_lgkmcnt"),
    ];
    const GFX11: &[(u32, &str)] = &[
        (0x11, "s_getreg_b32"),
        (0x12, "s_setreg_b32"),
        (0x13, "s_setreg_imm32_b32"),
        (0x14, "s_call_b64"),
        (0x18, "s_waitcnt_vscnt"),
        (0x19, "s_waitcnt_vmcnt"),
        (0x1a, "s_waitcnt_expcnt"),
        (0x1b, "s_waitcnt_lgkmcnt"),
    ];
    match op {
        0x00 => Some("s_movk_i32"),
        0x01 => Some("s_version"),
        0x02 => Some("s_cmovk_i32"),
        // The twelve compares, numbered from 3 as on gfx9 (from 2 there).
        0x03..=0x0e => crate::opcodes::gfx9_sopk(op - 1),
        0x0f => Some("s_addk_i32"),
        0x10 => Some("s_mulk_i32"),
        _ => match family {
            Family::Gfx10 => find(GFX10, op),
            _ => find(GFX11, op),
        },
    }
}

/// SOP1 (bits 15:8).
pub fn sop1(family: Family, op: u32) -> Option<&'static str> {
    const GFX10: &[(u32, &str)] = &[
        (0x03, "s_mov_b32"),
        (0x04, "s_mov_b64"),
        (0x05, "s_cmov_b32"),
        (0x06, "s_cmov_b64"),
        (0x07, "s_not_b32"),
        (0x08, "s_not_b64"),
        (0x0b, "s_brev_b32"),
        (0x0c, "s_brev_b64"),
        (0x0f, "s_bcnt1_i32_b32"),
        (0x10, "s_bcnt1_i32_b64"),
        (0x13, "s_ff1_i32_b32"),
        (0x14, "s_ff1_i32_b64"),
        (0x15, "s_flbit_i32_b32"),
        (0x16, "s_flbit_i32_b64"),
        (0x19, "s_sext_i32_i8"),
        (0x1a, "s_sext_i32_i16"),
        (0x1f, "s_getpc_b64"),
        (0x20, "s_setpc_b64"),
        (0x21, "s_swappc_b64"),
        (0x24, "s_and_saveexec_b64"),
        (0x25, "s_or_saveexec_b64"),
        (0x26, "s_xor_saveexec_b64"),
        (0x27, "s_andn2_saveexec_b64"),
        (0x28, "s_orn2_saveexec_b64"),
        (0x2e, "s_movrels_b32"),
        (0x2f, "s_movrels_b64"),
        (0x30, "s_movreld_b32"),
        (0x31, "s_movreld_b64"),
        (0x34, "s_abs_i32"),
        (0x3c, "s_and_saveexec_b32"),
        (0x3d, "s_or_saveexec_b32"),
        (0x3e, "s_xor_saveexec_b32"),
        (0x3f, "s_andn2_saveexec_b32"),
        (0x40, "s_orn2_saveexec_b32"),
        (0x41, "s_nand_saveexec_b32"),
        (0x42, "s_nor_saveexec_b32"),
        (0x43, "s_xnor_saveexec_b32"),
    ];
    const GFX11: &[(u32, &str)] = &[
        (0x00, "s_mov_b32"),
        (0x01, "s_mov_b64"),
        (0x02, "s_cmov_b32"),
        (0x03, "s_cmov_b64"),
        (0x04, "s_brev_b32"),
        (0x05, "s_brev_b64"),
        (0x08, "s_ctz_i32_b32"),
        (0x09, "s_ctz_i32_b64"),
        (0x0a, "s_clz_i32_u32"),
        (0x0b, "s_clz_i32_u64"),
        (0x0e, "s_sext_i32_i8"),
        (0x0f, "s_sext_i32_i16"),
        (0x15, "s_abs_i32"),
        (0x18, "s_bcnt1_i32_b32"),
        (0x19, "s_bcnt1_i32_b64"),
        (0x1e, "s_not_b32"),
        (0x1f, "s_not_b64"),
        (0x20, "s_and_saveexec_b32"),
        (0x21, "s_and_saveexec_b64"),
        (0x22, "s_or_saveexec_b32"),
        (0x23, "s_or_saveexec_b64"),
        (0x24, "s_xor_saveexec_b32"),
        (0x25, "s_xor_saveexec_b64"),
        (0x26, "s_nand_saveexec_b32"),
        (0x28, "s_nor_saveexec_b32"),
        (0x2a, "s_xnor_saveexec_b32"),
        (0x30, "s_and_not1_saveexec_b32"),
        (0x31, "s_and_not1_saveexec_b64"),
        (0x32, "s_or_not1_saveexec_b32"),
        (0x33, "s_or_not1_saveexec_b64"),
        (0x40, "s_movrels_b32"),
        (0x41, "s_movrels_b64"),
        (0x42, "s_movreld_b32"),
        (0x43, "s_movreld_b64"),
        (0x47, "s_getpc_b64"),
        (0x48, "s_setpc_b64"),
        (0x49, "s_swappc_b64"),
        // gfx11.5's scalar floating point.
        (0x60, "s_ceil_f32"),
        (0x61, "s_floor_f32"),
        (0x62, "s_trunc_f32"),
        (0x63, "s_rndne_f32"),
        (0x64, "s_cvt_f32_i32"),
        (0x65, "s_cvt_f32_u32"),
        (0x66, "s_cvt_i32_f32"),
        (0x67, "s_cvt_u32_f32"),
        (0x68, "s_cvt_f16_f32"),
        (0x69, "s_cvt_f32_f16"),
    ];
    match family {
        Family::Gfx10 => find(GFX10, op),
        _ => find(GFX11, op),
    }
}

/// SOPC (bits 22:16).
pub fn sopc(family: Family, op: u32) -> Option<String> {
    const INT: [&str; 6] = ["eq", "lg", "gt", "ge", "lt", "le"];
    const FLOAT: [&str; 14] = [
        "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle", "neq", "nlt",
    ];
    Some(match (family, op) {
        (_, 0x00..=0x05) => format!("s_cmp_{}_i32", INT[op as usize]),
        (_, 0x06..=0x0b) => format!("s_cmp_{}_u32", INT[op as usize - 6]),
        (_, 0x0c) => "s_bitcmp0_b32".into(),
        (_, 0x0d) => "s_bitcmp1_b32".into(),
        (_, 0x0e) => "s_bitcmp0_b64".into(),
        (_, 0x0f) => "s_bitcmp1_b64".into(),
        (Family::Gfx10, 0x12) | (Family::Gfx11, 0x10) => "s_cmp_eq_u64".into(),
        (Family::Gfx10, 0x13) | (Family::Gfx11, 0x11) => "s_cmp_lg_u64".into(),
        (Family::Gfx11, 0x41..=0x4e) => format!("s_cmp_{}_f32", FLOAT[op as usize - 0x41]),
        _ => return None,
    })
}

/// SOPP (bits 22:16).
pub fn sopp(family: Family, op: u32) -> Option<&'static str> {
    const GFX10: &[(u32, &str)] = &[
        (0x00, "s_nop"),
        (0x01, "s_endpgm"),
        (0x02, "s_branch"),
        (0x03, "s_wakeup"),
        (0x04, "s_cbranch_scc0"),
        (0x05, "s_cbranch_scc1"),
        (0x06, "s_cbranch_vccz"),
        (0x07, "s_cbranch_vccnz"),
        (0x08, "s_cbranch_execz"),
        (0x09, "s_cbranch_execnz"),
        (0x0a, "s_barrier"),
        (0x0b, "s_setkill"),
        (0x0c, "s_waitcnt"),
        (0x0d, "s_sethalt"),
        (0x0e, "s_sleep"),
        (0x0f, "s_setprio"),
        (0x10, "s_sendmsg"),
        (0x11, "s_sendmsghalt"),
        (0x12, "s_trap"),
        (0x13, "s_icache_inv"),
        (0x1b, "s_endpgm_saved"),
        (0x1f, "s_code_end"),
        (0x20, "s_inst_prefetch"),
        (0x21, "s_clause"),
        (0x23, "s_waitcnt_depctr"),
        (0x24, "s_round_mode"),
        (0x25, "s_denorm_mode"),
    ];
    const GFX11: &[(u32, &str)] = &[
        (0x00, "s_nop"),
        (0x01, "s_setkill"),
        (0x02, "s_sethalt"),
        (0x03, "s_sleep"),
        (0x04, "s_set_inst_prefetch_distance"),
        (0x05, "s_clause"),
        (0x07, "s_delay_alu"),
        (0x08, "s_waitcnt_depctr"),
        (0x09, "s_waitcnt"),
        (0x0a, "s_wait_idle"),
        (0x0b, "s_wait_event"),
        (0x10, "s_trap"),
        (0x11, "s_round_mode"),
        (0x12, "s_denorm_mode"),
        (0x1f, "s_code_end"),
        (0x20, "s_branch"),
        (0x21, "s_cbranch_scc0"),
        (0x22, "s_cbranch_scc1"),
        (0x23, "s_cbranch_vccz"),
        (0x24, "s_cbranch_vccnz"),
        (0x25, "s_cbranch_execz"),
        (0x26, "s_cbranch_execnz"),
        (0x30, "s_endpgm"),
        (0x31, "s_endpgm_saved"),
        (0x34, "s_wakeup"),
        (0x35, "s_setprio"),
        (0x36, "s_sendmsg"),
        (0x37, "s_sendmsghalt"),
        (0x3c, "s_icache_inv"),
        (0x3d, "s_barrier"),
    ];
    match family {
        Family::Gfx10 => find(GFX10, op),
        _ => find(GFX11, op),
    }
}

/// SMEM (bits 25:18).
pub fn smem(family: Family, op: u32) -> Option<&'static str> {
    const GFX10: [&str; 5] = [
        "s_load_dword",
        "s_load_dwordx2",
        "s_load_dwordx4",
        "s_load_dwordx8",
        "s_load_dwordx16",
    ];
    const GFX11: [&str; 5] = [
        "s_load_b32",
        "s_load_b64",
        "s_load_b128",
        "s_load_b256",
        "s_load_b512",
    ];
    const GFX10_BUFFER: [&str; 5] = [
        "s_buffer_load_dword",
        "s_buffer_load_dwordx2",
        "s_buffer_load_dwordx4",
        "s_buffer_load_dwordx8",
        "s_buffer_load_dwordx16",
    ];
    const GFX11_BUFFER: [&str; 5] = [
        "s_buffer_load_b32",
        "s_buffer_load_b64",
        "s_buffer_load_b128",
        "s_buffer_load_b256",
        "s_buffer_load_b512",
    ];
    let gfx10 = family == Family::Gfx10;
    match op {
        0x00..=0x04 => Some(if gfx10 { GFX10 } else { GFX11 }[op as usize]),
        0x08..=0x0c => Some(if gfx10 { GFX10_BUFFER } else { GFX11_BUFFER }[op as usize - 8]),
        0x1f if gfx10 => Some("s_gl1_inv"),
        0x20 if gfx10 => Some("s_dcache_inv"),
        0x24 if gfx10 => Some("s_memtime"),
        0x25 if gfx10 => Some("s_memrealtime"),
        0x20 => Some("s_gl1_inv"),
        0x21 => Some("s_dcache_inv"),
        _ => None,
    }
}

/// VOP1 (bits 16:9; in VOP3, 0x180 + op).
pub fn vop1(family: Family, op: u32) -> Option<&'static str> {
    const COMMON: &[(u32, &str)] = &[
        (0x00, "v_nop"),
        (0x01, "v_mov_b32"),
        (0x02, "v_readfirstlane_b32"),
        (0x05, "v_cvt_f32_i32"),
        (0x06, "v_cvt_f32_u32"),
        (0x07, "v_cvt_u32_f32"),
        (0x08, "v_cvt_i32_f32"),
        (0x0a, "v_cvt_f16_f32"),
        (0x0b, "v_cvt_f32_f16"),
        (0x20, "v_fract_f32"),
        (0x21, "v_trunc_f32"),
        (0x22, "v_ceil_f32"),
        (0x23, "v_rndne_f32"),
        (0x24, "v_floor_f32"),
        (0x25, "v_exp_f32"),
        (0x27, "v_log_f32"),
        (0x2a, "v_rcp_f32"),
        (0x2b, "v_rcp_iflag_f32"),
        (0x2e, "v_rsq_f32"),
        (0x33, "v_sqrt_f32"),
        (0x35, "v_sin_f32"),
        (0x36, "v_cos_f32"),
        (0x37, "v_not_b32"),
        (0x38, "v_bfrev_b32"),
        (0x3f, "v_frexp_exp_i32_f32"),
        (0x40, "v_frexp_mant_f32"),
        (0x42, "v_movreld_b32"),
        (0x43, "v_movrels_b32"),
        (0x44, "v_movrelsd_b32"),
        (0x48, "v_movrelsd_2_b32"),
    ];
    const GFX10: &[(u32, &str)] = &[
        (0x0c, "v_cvt_rpi_i32_f32"),
        (0x0d, "v_cvt_flr_i32_f32"),
        (0x39, "v_ffbh_u32"),
        (0x3a, "v_ffbl_b32"),
        (0x3b, "v_ffbh_i32"),
    ];
    const GFX11: &[(u32, &str)] = &[
        (0x0c, "v_cvt_nearest_i32_f32"),
        (0x0d, "v_cvt_floor_i32_f32"),
        (0x39, "v_clz_i32_u32"),
        (0x3a, "v_ctz_i32_b32"),
        (0x3b, "v_cls_i32"),
    ];
    find(COMMON, op).or_else(|| match family {
        Family::Gfx10 => find(GFX10, op),
        _ => find(GFX11, op),
    })
}

/// VOP2 (bits 30:25; in VOP3, 0x100 + op).
pub fn vop2(family: Family, op: u32) -> Option<&'static str> {
    const COMMON: &[(u32, &str)] = &[
        (0x01, "v_cndmask_b32"),
        (0x03, "v_add_f32"),
        (0x04, "v_sub_f32"),
        (0x05, "v_subrev_f32"),
        (0x08, "v_mul_f32"),
        (0x09, "v_mul_i32_i24"),
        (0x0a, "v_mul_hi_i32_i24"),
        (0x0b, "v_mul_u32_u24"),
        (0x0c, "v_mul_hi_u32_u24"),
        (0x0f, "v_min_f32"),
        (0x10, "v_max_f32"),
        (0x11, "v_min_i32"),
        (0x12, "v_max_i32"),
        (0x13, "v_min_u32"),
        (0x14, "v_max_u32"),
        (0x1b, "v_and_b32"),
        (0x1c, "v_or_b32"),
        (0x1d, "v_xor_b32"),
        (0x1e, "v_xnor_b32"),
        (0x25, "v_add_nc_u32"),
        (0x26, "v_sub_nc_u32"),
        (0x27, "v_subrev_nc_u32"),
        (0x2b, "v_fmac_f32"),
        (0x2c, "v_fmamk_f32"),
        (0x2d, "v_fmaak_f32"),
    ];
    const GFX10: &[(u32, &str)] = &[
        (0x16, "v_lshrrev_b32"),
        (0x18, "v_ashrrev_i32"),
        (0x1a, "v_lshlrev_b32"),
        (0x1f, "v_mac_f32"),
        (0x20, "v_madmk_f32"),
        (0x21, "v_madak_f32"),
        (0x28, "v_add_co_ci_u32"),
        (0x29, "v_sub_co_ci_u32"),
        (0x2a, "v_subrev_co_ci_u32"),
        (0x2f, "v_cvt_pkrtz_f16_f32"),
    ];
    const GFX11: &[(u32, &str)] = &[
        (0x18, "v_lshlrev_b32"),
        (0x19, "v_lshrrev_b32"),
        (0x1a, "v_ashrrev_i32"),
        (0x20, "v_add_co_ci_u32"),
        (0x21, "v_sub_co_ci_u32"),
        (0x22, "v_subrev_co_ci_u32"),
        (0x2f, "v_cvt_pk_rtz_f16_f32"),
    ];
    find(COMMON, op).or_else(|| match family {
        Family::Gfx10 => find(GFX10, op),
        _ => find(GFX11, op),
    })
}

/// VOPC (bits 24:17; in VOP3, the same number): compares and compare-to-EXEC of f32, f64,
/// i32, u32, i64 and u64 (gfx10: type base + cmpx << 4 + condition; gfx11: type base + cmpx
/// << 7 + condition).
pub fn vopc(family: Family, op: u32) -> Option<String> {
    const FLOAT: [&str; 16] = [
        "f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle", "neq",
        "nlt", "tru",
    ];
    const INT: [&str; 8] = ["f", "lt", "eq", "le", "gt", "ne", "ge", "t"];
    let (bases, x): (&[(u32, &str)], bool) = match family {
        Family::Gfx10 => (
            &[
                (0x00, "f32"),
                (0x20, "f64"),
                (0x80, "i32"),
                (0xa0, "i64"),
                (0xc0, "u32"),
                (0xe0, "u64"),
            ],
            op & 0x10 != 0,
        ),
        _ => (
            &[
                (0x10, "f32"),
                (0x20, "f64"),
                (0x40, "i32"),
                (0x48, "u32"),
                (0x50, "i64"),
                (0x58, "u64"),
            ],
            op & 0x80 != 0,
        ),
    };
    let plain = match family {
        Family::Gfx10 => op & !0x10,
        _ => op & !0x80,
    };
    for &(base, ty) in bases {
        let float = ty.starts_with('f');
        let span = if float { 16 } else { 8 };
        if (base..base + span).contains(&plain) {
            let cond = (plain - base) as usize;
            let name = if float { FLOAT[cond] } else { INT[cond] };
            return Some(format!("v_cmp{}_{name}_{ty}", if x { "x" } else { "" }));
        }
    }
    None
}

/// VOP3-only opcodes (bits 25:16; gfx10 from 0x140 and 0x2ff, gfx11 from 0x200).
pub fn vop3_only(family: Family, op: u32) -> Option<&'static str> {
    const GFX10: &[(u32, &str)] = &[
        (0x140, "v_fma_legacy_f32"),
        (0x141, "v_mad_f32"),
        (0x142, "v_mad_i32_i24"),
        (0x143, "v_mad_u32_u24"),
        (0x148, "v_bfe_u32"),
        (0x149, "v_bfe_i32"),
        (0x14a, "v_bfi_b32"),
        (0x14b, "v_fma_f32"),
        (0x14c, "v_fma_f64"),
        (0x14e, "v_alignbit_b32"),
        (0x14f, "v_alignbyte_b32"),
        (0x151, "v_min3_f32"),
        (0x152, "v_min3_i32"),
        (0x153, "v_min3_u32"),
        (0x154, "v_max3_f32"),
        (0x155, "v_max3_i32"),
        (0x156, "v_max3_u32"),
        (0x157, "v_med3_f32"),
        (0x158, "v_med3_i32"),
        (0x159, "v_med3_u32"),
        (0x15f, "v_div_fixup_f32"),
        (0x169, "v_mul_lo_u32"),
        (0x16a, "v_mul_hi_u32"),
        (0x16c, "v_mul_hi_i32"),
        (0x16d, "v_div_scale_f32"),
        (0x16f, "v_div_fmas_f32"),
        (0x176, "v_mad_u64_u32"),
        (0x177, "v_mad_i64_i32"),
        (0x178, "v_xor3_b32"),
        (0x2ff, "v_lshlrev_b64"),
        (0x300, "v_lshrrev_b64"),
        (0x301, "v_ashrrev_i64"),
        (0x30f, "v_add_co_u32"),
        (0x310, "v_sub_co_u32"),
        (0x319, "v_subrev_co_u32"),
        (0x344, "v_perm_b32"),
        (0x345, "v_xad_u32"),
        (0x346, "v_lshl_add_u32"),
        (0x347, "v_add_lshl_u32"),
        (0x360, "v_readlane_b32"),
        (0x361, "v_writelane_b32"),
        (0x362, "v_ldexp_f32"),
        (0x363, "v_bfm_b32"),
        (0x364, "v_bcnt_u32_b32"),
        (0x365, "v_mbcnt_lo_u32_b32"),
        (0x366, "v_mbcnt_hi_u32_b32"),
        (0x36d, "v_add3_u32"),
        (0x36f, "v_lshl_or_b32"),
        (0x371, "v_and_or_b32"),
        (0x372, "v_or3_b32"),
        (0x376, "v_sub_nc_i32"),
        (0x37f, "v_add_nc_i32"),
    ];
    const GFX11: &[(u32, &str)] = &[
        (0x209, "v_fma_dx9_zero_f32"),
        (0x20a, "v_mad_i32_i24"),
        (0x20b, "v_mad_u32_u24"),
        (0x210, "v_bfe_u32"),
        (0x211, "v_bfe_i32"),
        (0x212, "v_bfi_b32"),
        (0x213, "v_fma_f32"),
        (0x214, "v_fma_f64"),
        (0x216, "v_alignbit_b32"),
        (0x217, "v_alignbyte_b32"),
        (0x219, "v_min3_f32"),
        (0x21a, "v_min3_i32"),
        (0x21b, "v_min3_u32"),
        (0x21c, "v_max3_f32"),
        (0x21d, "v_max3_i32"),
        (0x21e, "v_max3_u32"),
        (0x21f, "v_med3_f32"),
        (0x220, "v_med3_i32"),
        (0x221, "v_med3_u32"),
        (0x227, "v_div_fixup_f32"),
        (0x237, "v_div_fmas_f32"),
        (0x240, "v_xor3_b32"),
        (0x244, "v_perm_b32"),
        (0x245, "v_xad_u32"),
        (0x246, "v_lshl_add_u32"),
        (0x247, "v_add_lshl_u32"),
        (0x255, "v_add3_u32"),
        (0x256, "v_lshl_or_b32"),
        (0x257, "v_and_or_b32"),
        (0x258, "v_or3_b32"),
        (0x25e, "v_maxmin_f32"),
        (0x25f, "v_minmax_f32"),
        (0x262, "v_maxmin_u32"),
        (0x263, "v_minmax_u32"),
        (0x264, "v_maxmin_i32"),
        (0x265, "v_minmax_i32"),
        (0x2fc, "v_div_scale_f32"),
        (0x2fe, "v_mad_u64_u32"),
        (0x2ff, "v_mad_i64_i32"),
        (0x300, "v_add_co_u32"),
        (0x301, "v_sub_co_u32"),
        (0x302, "v_subrev_co_u32"),
        (0x31c, "v_ldexp_f32"),
        (0x31d, "v_bfm_b32"),
        (0x31e, "v_bcnt_u32_b32"),
        (0x31f, "v_mbcnt_lo_u32_b32"),
        (0x320, "v_mbcnt_hi_u32_b32"),
        (0x325, "v_sub_nc_i32"),
        (0x326, "v_add_nc_i32"),
        (0x32c, "v_mul_lo_u32"),
        (0x32d, "v_mul_hi_u32"),
        (0x32e, "v_mul_hi_i32"),
        (0x33c, "v_lshlrev_b64"),
        (0x33d, "v_lshrrev_b64"),
        (0x33e, "v_ashrrev_i64"),
        (0x360, "v_readlane_b32"),
        (0x361, "v_writelane_b32"),
    ];
    match family {
        Family::Gfx10 => find(GFX10, op),
        _ => find(GFX11, op),
    }
}

/// gfx11's VOPD halves: X (bits 25:22) and Y (bits 21:17) name the same operations.
pub fn vopd(op: u32) -> Option<&'static str> {
    const TABLE: [&str; 19] = [
        "v_dual_fmac_f32",
        "v_dual_fmaak_f32",
        "v_dual_fmamk_f32",
        "v_dual_mul_f32",
        "v_dual_add_f32",
        "v_dual_sub_f32",
        "v_dual_subrev_f32",
        "v_dual_mul_dx9_zero_f32",
        "v_dual_mov_b32",
        "v_dual_cndmask_b32",
        "v_dual_max_f32",
        "v_dual_min_f32",
        "v_dual_dot2acc_f32_f16",
        "v_dual_dot2acc_f32_bf16",
        "",
        "",
        "v_dual_add_nc_u32",
        "v_dual_lshlrev_b32",
        "v_dual_and_b32",
    ];
    TABLE.get(op as usize).copied().filter(|n| !n.is_empty())
}

/// DS (bits 25:18): loads and stores (gfx11's names: `ds_load_b32`, `ds_store_2addr_b32`).
pub fn ds(family: Family, op: u32) -> Option<&'static str> {
    const TABLE: &[(u32, &str, &str)] = &[
        (0x0d, "ds_write_b32", "ds_store_b32"),
        (0x0e, "ds_write2_b32", "ds_store_2addr_b32"),
        (0x1e, "ds_write_b8", "ds_store_b8"),
        (0x1f, "ds_write_b16", "ds_store_b16"),
        (0x36, "ds_read_b32", "ds_load_b32"),
        (0x37, "ds_read2_b32", "ds_load_2addr_b32"),
        (0x39, "ds_read_i8", "ds_load_i8"),
        (0x3a, "ds_read_u8", "ds_load_u8"),
        (0x3b, "ds_read_i16", "ds_load_i16"),
        (0x3c, "ds_read_u16", "ds_load_u16"),
        (0x4d, "ds_write_b64", "ds_store_b64"),
        (0x4e, "ds_write2_b64", "ds_store_2addr_b64"),
        (0x76, "ds_read_b64", "ds_load_b64"),
        (0x77, "ds_read2_b64", "ds_load_2addr_b64"),
        (0xde, "ds_write_b96", "ds_store_b96"),
        (0xdf, "ds_write_b128", "ds_store_b128"),
        (0xfe, "ds_read_b96", "ds_load_b96"),
        (0xff, "ds_read_b128", "ds_load_b128"),
    ];
    TABLE
        .iter()
        .find(|(o, _, _)| *o == op)
        .map(|&(_, g10, g11)| if family == Family::Gfx10 { g10 } else { g11 })
}

/// The load or store part of a flat/global/scratch (bits 24:18) or buffer (gfx10 bits
/// 24:18, gfx11 25:18) opcode, without its prefix.
pub fn load_store(family: Family, op: u32) -> Option<&'static str> {
    const GFX10: &[(u32, &str)] = &[
        (0x08, "load_ubyte"),
        (0x09, "load_sbyte"),
        (0x0a, "load_ushort"),
        (0x0b, "load_sshort"),
        (0x0c, "load_dword"),
        (0x0d, "load_dwordx2"),
        (0x0e, "load_dwordx4"),
        (0x0f, "load_dwordx3"),
        (0x18, "store_byte"),
        (0x19, "store_byte_d16_hi"),
        (0x1a, "store_short"),
        (0x1b, "store_short_d16_hi"),
        (0x1c, "store_dword"),
        (0x1d, "store_dwordx2"),
        (0x1e, "store_dwordx4"),
        (0x1f, "store_dwordx3"),
        (0x20, "load_ubyte_d16"),
        (0x21, "load_ubyte_d16_hi"),
        (0x22, "load_sbyte_d16"),
        (0x23, "load_sbyte_d16_hi"),
        (0x24, "load_short_d16"),
        (0x25, "load_short_d16_hi"),
    ];
    const GFX11: &[(u32, &str)] = &[
        (0x10, "load_u8"),
        (0x11, "load_i8"),
        (0x12, "load_u16"),
        (0x13, "load_i16"),
        (0x14, "load_b32"),
        (0x15, "load_b64"),
        (0x16, "load_b96"),
        (0x17, "load_b128"),
        (0x18, "store_b8"),
        (0x19, "store_b16"),
        (0x1a, "store_b32"),
        (0x1b, "store_b64"),
        (0x1c, "store_b96"),
        (0x1d, "store_b128"),
        (0x1e, "load_d16_u8"),
        (0x1f, "load_d16_i8"),
        (0x20, "load_d16_b16"),
        (0x21, "load_d16_hi_u8"),
        (0x22, "load_d16_hi_i8"),
        (0x23, "load_d16_hi_b16"),
        (0x24, "store_d16_hi_b8"),
        (0x25, "store_d16_hi_b16"),
    ];
    match family {
        Family::Gfx10 => find(GFX10, op),
        _ => find(GFX11, op),
    }
}

/// Buffer opcodes that are not loads or stores: the cache invalidations.
pub fn buffer_other(family: Family, op: u32) -> Option<&'static str> {
    match (family, op) {
        (Family::Gfx10, 0x71) | (Family::Gfx11, 0x2b) => Some("buffer_gl0_inv"),
        (Family::Gfx10, 0x72) | (Family::Gfx11, 0x2c) => Some("buffer_gl1_inv"),
        _ => None,
    }
}

/// gfx11 VOP3P (bits 22:16): the matrix products (WMMA) kiln's WMMA solver uses and their kin.
pub fn vop3p_gfx11(op: u32) -> Option<&'static str> {
    match op {
        0x40 => Some("v_wmma_f32_16x16x16_f16"),
        0x41 => Some("v_wmma_f32_16x16x16_bf16"),
        0x42 => Some("v_wmma_f16_16x16x16_f16"),
        0x43 => Some("v_wmma_bf16_16x16x16_bf16"),
        _ => None,
    }
}
