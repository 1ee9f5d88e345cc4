//! The operations the executor knows, parsed once from each instruction's mnemonic (what
//! `opcodes::mnemonic` returns: LLVM's name without `_e32`/`_e64`/`_sdwa`). An instruction
//! whose mnemonic is not here decodes to [`Op::Unknown`] and fails, naming itself and its pc,
//! only if it runs.

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cond {
    /// Never true (`f`).
    False,
    /// `lt`.
    Lt,
    /// `eq`.
    Eq,
    /// `le`.
    Le,
    /// `gt`.
    Gt,
    /// `lg` (floats: ordered and not equal) and `ne`/`lg` for integers.
    Ne,
    /// `ge`.
    Ge,
    /// `o`: both ordered.
    Ordered,
    /// `u`: either NaN.
    Unordered,
    /// `nge`.
    NotGe,
    /// `nlg`.
    NotLg,
    /// `ngt`.
    NotGt,
    /// `nle`.
    NotLe,
    /// `neq`: unordered or not equal.
    NotEq,
    /// `nlt`.
    NotLt,
    /// Always true (`t`/`tru`).
    True,
}

impl Cond {
    fn parse(s: &str) -> Option<Cond> {
        Some(match s {
            "f" => Cond::False,
            "lt" => Cond::Lt,
            "eq" => Cond::Eq,
            "le" => Cond::Le,
            "gt" => Cond::Gt,
            "lg" | "ne" => Cond::Ne,
            "ge" => Cond::Ge,
            "o" => Cond::Ordered,
            "u" => Cond::Unordered,
            "nge" => Cond::NotGe,
            "nlg" => Cond::NotLg,
            "ngt" => Cond::NotGt,
            "nle" => Cond::NotLe,
            "neq" => Cond::NotEq,
            "nlt" => Cond::NotLt,
            "t" | "tru" => Cond::True,
            _ => return None,
        })
    }

    /// The comparison of two integers (ordered compares only).
    pub fn int<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            Cond::False => false,
            Cond::Lt => a < b,
            Cond::Eq => a == b,
            Cond::Le => a <= b,
            Cond::Gt => a > b,
            Cond::Ne => a != b,
            Cond::Ge => a >= b,
            Cond::True => true,
            _ => false,
        }
    }

    /// The comparison of two floats, NaN-aware as the ISA defines each.
    pub fn float(self, a: f64, b: f64) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let unordered = a.is_nan() || b.is_nan();
        match self {
            Cond::False => false,
            Cond::Lt => a < b,
            Cond::Eq => a == b,
            Cond::Le => a <= b,
            Cond::Gt => a > b,
            Cond::Ne => !unordered && a != b,
            Cond::Ge => a >= b,
            Cond::Ordered => !unordered,
            Cond::Unordered => unordered,
            Cond::NotGe => !matches!(a.partial_cmp(&b), Some(Greater | Equal)),
            Cond::NotLg => unordered || a == b,
            Cond::NotGt => a.partial_cmp(&b) != Some(Greater),
            Cond::NotLe => !matches!(a.partial_cmp(&b), Some(Less | Equal)),
            Cond::NotEq => !(a == b),
            Cond::NotLt => a.partial_cmp(&b) != Some(Less),
            Cond::True => true,
        }
    }
}

/// The operand type of a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpType {
    /// `f32`.
    F32,
    /// `i32`.
    I32,
    /// `u32`.
    U32,
    /// `i64`.
    I64,
    /// `u64`.
    U64,
}

impl CmpType {
    fn parse(s: &str) -> Option<CmpType> {
        Some(match s {
            "f32" => CmpType::F32,
            "i32" => CmpType::I32,
            "u32" => CmpType::U32,
            "i64" => CmpType::I64,
            "u64" => CmpType::U64,
            _ => return None,
        })
    }

    /// Whether its operands are 64 bits.
    pub fn wide(self) -> bool {
        matches!(self, CmpType::I64 | CmpType::U64)
    }
}

/// Where a memory instruction reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// Flat: global, LDS or private by the address's aperture.
    Flat,
    /// Global.
    Global,
    /// The lane's private (scratch) memory.
    Scratch,
    /// Through a buffer resource descriptor.
    Buffer,
    /// LDS (the DS instructions).
    Lds,
}

/// A vector memory access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Where.
    pub space: Space,
    /// A store (else a load).
    pub store: bool,
    /// Bytes per element: 1, 2 or 4.
    pub bytes: u32,
    /// Elements (dwords for 4-byte elements): 1 to 4.
    pub count: u32,
    /// A narrow load sign-extends.
    pub signed: bool,
    /// DS read2/write2: two elements at two offsets.
    pub pair: bool,
}

impl Access {
    fn parse(space: Space, rest: &str) -> Option<Access> {
        if let Some(w) = rest
            .strip_prefix("read2_")
            .or(rest.strip_prefix("load_2addr_"))
        {
            return Access::pair(space, false, w);
        }
        if let Some(w) = rest
            .strip_prefix("write2_")
            .or(rest.strip_prefix("store_2addr_"))
        {
            return Access::pair(space, true, w);
        }
        let (store, what) =
            if let Some(w) = rest.strip_prefix("load_").or(rest.strip_prefix("read_")) {
                (false, w)
            } else if let Some(w) = rest.strip_prefix("store_").or(rest.strip_prefix("write_")) {
                (true, w)
            } else {
                return None;
            };
        let (bytes, count, signed) = match what {
            "ubyte" | "byte" | "u8" | "b8" => (1, 1, false),
            "sbyte" | "i8" => (1, 1, true),
            "ushort" | "short" | "u16" | "b16" => (2, 1, false),
            "sshort" | "i16" => (2, 1, true),
            "dword" | "b32" => (4, 1, false),
            "dwordx2" | "b64" => (4, 2, false),
            "dwordx3" | "b96" => (4, 3, false),
            "dwordx4" | "b128" => (4, 4, false),
            _ => return None,
        };
        Some(Access {
            space,
            store,
            bytes,
            count,
            signed,
            pair: false,
        })
    }

    fn pair(space: Space, store: bool, what: &str) -> Option<Access> {
        let count = match what {
            "b32" => 1,
            "b64" => 2,
            _ => return None,
        };
        Some(Access {
            space,
            store,
            bytes: 4,
            count,
            signed: false,
            pair: true,
        })
    }
}

/// A bitwise operation with the second operand possibly inverted, as the scalar logic and
/// save-exec instructions name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Logic {
    /// a & b.
    And,
    /// a | b.
    Or,
    /// a ^ b.
    Xor,
    /// a & !b.
    Andn2,
    /// a | !b.
    Orn2,
    /// !(a & b).
    Nand,
    /// !(a | b).
    Nor,
    /// !(a ^ b).
    Xnor,
}

impl Logic {
    fn parse(s: &str) -> Option<Logic> {
        Some(match s {
            "and" => Logic::And,
            "or" => Logic::Or,
            "xor" => Logic::Xor,
            "andn2" | "and_not1" => Logic::Andn2,
            "orn2" | "or_not1" => Logic::Orn2,
            "nand" => Logic::Nand,
            "nor" => Logic::Nor,
            "xnor" => Logic::Xnor,
            _ => return None,
        })
    }

    /// The operation on 64 bits.
    pub fn apply(self, a: u64, b: u64) -> u64 {
        match self {
            Logic::And => a & b,
            Logic::Or => a | b,
            Logic::Xor => a ^ b,
            Logic::Andn2 => a & !b,
            Logic::Orn2 => a | !b,
            Logic::Nand => !(a & b),
            Logic::Nor => !(a | b),
            Logic::Xnor => !(a ^ b),
        }
    }
}

/// What a scalar conditional branch tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BranchIf {
    /// SCC is 0.
    Scc0,
    /// SCC is 1.
    Scc1,
    /// VCC is zero.
    Vccz,
    /// VCC is not zero.
    Vccnz,
    /// EXEC is zero.
    Execz,
    /// EXEC is not zero.
    Execnz,
}

macro_rules! plain_ops {
    ($($variant:ident = $name:literal,)*) => {
        /// One operation.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Op {
            $(
                #[doc = concat!("`", $name, "`.")]
                $variant,
            )*
            /// A scalar comparison (`s_cmp_*`; `k`: against the 16-bit constant).
            SCmp { cond: Cond, ty: CmpType, k: bool },
            /// `s_bitcmp0/1_b32/b64`: SCC = whether bit `S1 mod 32` (64) of S0 equals `one`.
            SBitCmp { one: bool, wide: bool },
            /// A vector comparison (`v_cmp_*`, `v_cmpx_*` when `exec`).
            VCmp { cond: Cond, ty: CmpType, exec: bool },
            /// A scalar bitwise operation on 32 or 64 bits.
            SLogic { logic: Logic, wide: bool },
            /// `s_<logic>_saveexec_b32/b64`: the old EXEC to the destination, EXEC = src op EXEC.
            SaveExec { logic: Logic, wide: bool },
            /// A conditional branch.
            CBranch(BranchIf),
            /// A scalar memory load of `dwords` dwords.
            SLoad { dwords: u32 },
            /// A vector memory access.
            Mem(Access),
            /// gfx11's dual-issue pair (both halves decoded when it runs).
            Vopd,
            /// A mnemonic the executor does not know.
            Unknown,
        }

        impl Op {
            /// The operation a mnemonic names (without `_e32`/`_e64`/`_sdwa`).
            pub fn of(name: &str) -> Op {
                match name {
                    $($name => return Op::$variant,)*
                    _ => {}
                }
                Op::alias(name).or_else(|| Op::parse_family(name)).unwrap_or(Op::Unknown)
            }
        }
    };
}

plain_ops! {
    SNop = "s_nop",
    SWaitcnt = "s_waitcnt",
    SEndpgm = "s_endpgm",
    SBarrier = "s_barrier",
    SBranch = "s_branch",
    SMovB32 = "s_mov_b32",
    SMovB64 = "s_mov_b64",
    SMovkI32 = "s_movk_i32",
    SCselectB32 = "s_cselect_b32",
    SCselectB64 = "s_cselect_b64",
    SNotB32 = "s_not_b32",
    SNotB64 = "s_not_b64",
    SBrevB32 = "s_brev_b32",
    SAbsI32 = "s_abs_i32",
    SAddU32 = "s_add_u32",
    SAddI32 = "s_add_i32",
    SAddcU32 = "s_addc_u32",
    SSubU32 = "s_sub_u32",
    SSubI32 = "s_sub_i32",
    SSubbU32 = "s_subb_u32",
    SAddkI32 = "s_addk_i32",
    SMulkI32 = "s_mulk_i32",
    SMulI32 = "s_mul_i32",
    SMulHiU32 = "s_mul_hi_u32",
    SMulHiI32 = "s_mul_hi_i32",
    SMinI32 = "s_min_i32",
    SMinU32 = "s_min_u32",
    SMaxI32 = "s_max_i32",
    SMaxU32 = "s_max_u32",
    SLshlB32 = "s_lshl_b32",
    SLshlB64 = "s_lshl_b64",
    SLshrB32 = "s_lshr_b32",
    SLshrB64 = "s_lshr_b64",
    SAshrI32 = "s_ashr_i32",
    SAshrI64 = "s_ashr_i64",
    SBfeU32 = "s_bfe_u32",
    SBfeI32 = "s_bfe_i32",
    SFf1I32B32 = "s_ff1_i32_b32",
    SFf1I32B64 = "s_ff1_i32_b64",
    SBcnt1I32B64 = "s_bcnt1_i32_b64",
    SLshl1AddU32 = "s_lshl1_add_u32",
    SLshl2AddU32 = "s_lshl2_add_u32",
    SLshl3AddU32 = "s_lshl3_add_u32",
    SLshl4AddU32 = "s_lshl4_add_u32",
    SPackLlB32B16 = "s_pack_ll_b32_b16",
    VNop = "v_nop",
    VMovB32 = "v_mov_b32",
    VMovB64 = "v_mov_b64",
    VReadfirstlaneB32 = "v_readfirstlane_b32",
    VReadlaneB32 = "v_readlane_b32",
    VWritelaneB32 = "v_writelane_b32",
    VAccvgprReadB32 = "v_accvgpr_read_b32",
    VAccvgprWriteB32 = "v_accvgpr_write_b32",
    VCndmaskB32 = "v_cndmask_b32",
    VAddU32 = "v_add_u32",
    VSubU32 = "v_sub_u32",
    VSubrevU32 = "v_subrev_u32",
    VAddCoU32 = "v_add_co_u32",
    VSubCoU32 = "v_sub_co_u32",
    VSubrevCoU32 = "v_subrev_co_u32",
    VAddcCoU32 = "v_addc_co_u32",
    VSubbCoU32 = "v_subb_co_u32",
    VSubbrevCoU32 = "v_subbrev_co_u32",
    VAdd3U32 = "v_add3_u32",
    VAddLshlU32 = "v_add_lshl_u32",
    VLshlAddU32 = "v_lshl_add_u32",
    VLshlAddU64 = "v_lshl_add_u64",
    VLshlOrB32 = "v_lshl_or_b32",
    VAndOrB32 = "v_and_or_b32",
    VOr3B32 = "v_or3_b32",
    VXadU32 = "v_xad_u32",
    VAndB32 = "v_and_b32",
    VOrB32 = "v_or_b32",
    VXorB32 = "v_xor_b32",
    VNotB32 = "v_not_b32",
    VLshlrevB32 = "v_lshlrev_b32",
    VLshrrevB32 = "v_lshrrev_b32",
    VAshrrevI32 = "v_ashrrev_i32",
    VLshlrevB64 = "v_lshlrev_b64",
    VLshrrevB64 = "v_lshrrev_b64",
    VAshrrevI64 = "v_ashrrev_i64",
    VBfeU32 = "v_bfe_u32",
    VBfeI32 = "v_bfe_i32",
    VBfiB32 = "v_bfi_b32",
    VAlignbitB32 = "v_alignbit_b32",
    VPermB32 = "v_perm_b32",
    VMulLoU32 = "v_mul_lo_u32",
    VMulHiU32 = "v_mul_hi_u32",
    VMulHiI32 = "v_mul_hi_i32",
    VMulU32U24 = "v_mul_u32_u24",
    VMulI32I24 = "v_mul_i32_i24",
    VMadU32U24 = "v_mad_u32_u24",
    VMadI32I24 = "v_mad_i32_i24",
    VMadU64U32 = "v_mad_u64_u32",
    VMadI64I32 = "v_mad_i64_i32",
    VMinI32 = "v_min_i32",
    VMaxI32 = "v_max_i32",
    VMinU32 = "v_min_u32",
    VMaxU32 = "v_max_u32",
    VAddF32 = "v_add_f32",
    VSubF32 = "v_sub_f32",
    VSubrevF32 = "v_subrev_f32",
    VMulF32 = "v_mul_f32",
    VMinF32 = "v_min_f32",
    VMaxF32 = "v_max_f32",
    VMacF32 = "v_mac_f32",
    VMadF32 = "v_mad_f32",
    VMadmkF32 = "v_madmk_f32",
    VMadakF32 = "v_madak_f32",
    VFmaF32 = "v_fma_f32",
    VFmacF32 = "v_fmac_f32",
    VFmamkF32 = "v_fmamk_f32",
    VFmaakF32 = "v_fmaak_f32",
    VMed3F32 = "v_med3_f32",
    VMax3F32 = "v_max3_f32",
    VMin3F32 = "v_min3_f32",
    VRcpF32 = "v_rcp_f32",
    VRcpIflagF32 = "v_rcp_iflag_f32",
    VExpF32 = "v_exp_f32",
    VLogF32 = "v_log_f32",
    VSqrtF32 = "v_sqrt_f32",
    VRsqF32 = "v_rsq_f32",
    VTruncF32 = "v_trunc_f32",
    VFloorF32 = "v_floor_f32",
    VLdexpF32 = "v_ldexp_f32",
    VCvtF32I32 = "v_cvt_f32_i32",
    VCvtF32U32 = "v_cvt_f32_u32",
    VCvtI32F32 = "v_cvt_i32_f32",
    VCvtU32F32 = "v_cvt_u32_f32",
    VCvtF32F16 = "v_cvt_f32_f16",
    VCvtF16F32 = "v_cvt_f16_f32",
    VDivScaleF32 = "v_div_scale_f32",
    VDivFmasF32 = "v_div_fmas_f32",
    VDivFixupF32 = "v_div_fixup_f32",
    VPkFmaF32 = "v_pk_fma_f32",
    VPkMulF32 = "v_pk_mul_f32",
    VPkAddF32 = "v_pk_add_f32",
    VPkMovB32 = "v_pk_mov_b32",
    VMovrelsB32 = "v_movrels_b32",
    VBfrevB32 = "v_bfrev_b32",
    VXor3B32 = "v_xor3_b32",
    SSetregB32 = "s_setreg_b32",
    SSendmsg = "s_sendmsg",
    SCvtF32I32 = "s_cvt_f32_i32",
    SCvtF32U32 = "s_cvt_f32_u32",
    SCvtI32F32 = "s_cvt_i32_f32",
    SCvtU32F32 = "s_cvt_u32_f32",
    STruncF32 = "s_trunc_f32",
    SAddF32 = "s_add_f32",
    SSubF32 = "s_sub_f32",
    SMulF32 = "s_mul_f32",
    SFmamkF32 = "s_fmamk_f32",
    SFmaakF32 = "s_fmaak_f32",
    CacheInvalidate = "buffer_gl0_inv",
    VMfmaF32x32x8F16 = "v_mfma_f32_32x32x8f16",
    VMfmaF32x32x8Bf16 = "v_mfma_f32_32x32x8bf16_1k",
    VWmmaF32F16 = "v_wmma_f32_16x16x16_f16",
    VWmmaF32Bf16 = "v_wmma_f32_16x16x16_bf16",
}

impl Op {
    /// Later families' names for operations gfx9 names otherwise, and the waits, hints and
    /// cache controls that a functional model satisfies by doing nothing.
    fn alias(name: &str) -> Option<Op> {
        Some(match name {
            "v_add_nc_u32" => Op::VAddU32,
            "v_sub_nc_u32" => Op::VSubU32,
            "v_subrev_nc_u32" => Op::VSubrevU32,
            "v_add_co_ci_u32" => Op::VAddcCoU32,
            "v_sub_co_ci_u32" => Op::VSubbCoU32,
            "v_subrev_co_ci_u32" => Op::VSubbrevCoU32,
            "s_ctz_i32_b32" => Op::SFf1I32B32,
            "s_ctz_i32_b64" => Op::SFf1I32B64,
            "s_clause"
            | "s_inst_prefetch"
            | "s_set_inst_prefetch_distance"
            | "s_delay_alu"
            | "s_waitcnt_depctr"
            | "s_waitcnt_vscnt"
            | "s_waitcnt_vmcnt"
            | "s_waitcnt_expcnt"
            | "s_waitcnt_lgkmcnt" => Op::SWaitcnt,
            "buffer_gl1_inv" => Op::CacheInvalidate,
            "v_mfma_f32_32x32x8_f16" => Op::VMfmaF32x32x8F16,
            "v_mfma_f32_32x32x8_bf16" => Op::VMfmaF32x32x8Bf16,
            _ => return None,
        })
    }

    /// Families named by pattern: comparisons, logic, save-exec, branches, memory.
    fn parse_family(name: &str) -> Option<Op> {
        if let Some(rest) = name.strip_prefix("s_bitcmp") {
            let (bit, width) = rest.split_once("_b")?;
            return Some(Op::SBitCmp {
                one: match bit {
                    "0" => false,
                    "1" => true,
                    _ => return None,
                },
                wide: match width {
                    "32" => false,
                    "64" => true,
                    _ => return None,
                },
            });
        }
        if let Some(rest) = name.strip_prefix("s_cmpk_").or(name.strip_prefix("s_cmp_")) {
            let (cond, ty) = rest.split_once('_')?;
            return Some(Op::SCmp {
                cond: Cond::parse(cond)?,
                ty: CmpType::parse(ty)?,
                k: name.starts_with("s_cmpk_"),
            });
        }
        for (prefix, exec) in [("v_cmpx_", true), ("v_cmp_", false)] {
            if let Some(rest) = name.strip_prefix(prefix) {
                let (cond, ty) = rest.rsplit_once('_')?;
                return Some(Op::VCmp {
                    cond: Cond::parse(cond)?,
                    ty: CmpType::parse(ty)?,
                    exec,
                });
            }
        }
        if let Some(rest) = name.strip_prefix("s_cbranch_") {
            return Some(Op::CBranch(match rest {
                "scc0" => BranchIf::Scc0,
                "scc1" => BranchIf::Scc1,
                "vccz" => BranchIf::Vccz,
                "vccnz" => BranchIf::Vccnz,
                "execz" => BranchIf::Execz,
                "execnz" => BranchIf::Execnz,
                _ => return None,
            }));
        }
        if let Some(rest) = name.strip_prefix("s_load_dword") {
            let dwords = match rest {
                "" => 1,
                _ => rest.strip_prefix('x')?.parse().ok()?,
            };
            return Some(Op::SLoad { dwords });
        }
        if let Some(bits) = name.strip_prefix("s_load_b") {
            let bits: u32 = bits.parse().ok()?;
            return Some(Op::SLoad { dwords: bits / 32 });
        }
        if let Some(rest) = name.strip_prefix("s_") {
            let (body, width) = rest.rsplit_once('_')?;
            let wide = match width {
                "b32" => false,
                "b64" => true,
                _ => return None,
            };
            if let Some(logic) = body.strip_suffix("_saveexec") {
                return Some(Op::SaveExec {
                    logic: Logic::parse(logic)?,
                    wide,
                });
            }
            return Some(Op::SLogic {
                logic: Logic::parse(body)?,
                wide,
            });
        }
        let (space, rest) = if let Some(r) = name.strip_prefix("flat_") {
            (Space::Flat, r)
        } else if let Some(r) = name.strip_prefix("global_") {
            (Space::Global, r)
        } else if let Some(r) = name.strip_prefix("scratch_") {
            (Space::Scratch, r)
        } else if let Some(r) = name.strip_prefix("buffer_") {
            (Space::Buffer, r)
        } else if let Some(r) = name.strip_prefix("ds_") {
            (Space::Lds, r)
        } else {
            return None;
        };
        Access::parse(space, rest).map(Op::Mem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mnemonics_parse_to_their_operations() {
        assert_eq!(Op::of("v_fma_f32"), Op::VFmaF32);
        assert_eq!(
            Op::of("v_cmp_ngt_f32"),
            Op::VCmp {
                cond: Cond::NotGt,
                ty: CmpType::F32,
                exec: false
            }
        );
        assert_eq!(
            Op::of("s_cmpk_lg_i32"),
            Op::SCmp {
                cond: Cond::Ne,
                ty: CmpType::I32,
                k: true
            }
        );
        assert_eq!(
            Op::of("s_bitcmp1_b32"),
            Op::SBitCmp {
                one: true,
                wide: false
            }
        );
        assert_eq!(
            Op::of("s_bitcmp0_b64"),
            Op::SBitCmp {
                one: false,
                wide: true
            }
        );
        assert_eq!(
            Op::of("s_andn2_saveexec_b64"),
            Op::SaveExec {
                logic: Logic::Andn2,
                wide: true
            }
        );
        assert_eq!(
            Op::of("s_xor_b32"),
            Op::SLogic {
                logic: Logic::Xor,
                wide: false
            }
        );
        assert_eq!(Op::of("s_load_dwordx8"), Op::SLoad { dwords: 8 });
        assert_eq!(
            Op::of("ds_read2_b32"),
            Op::Mem(Access {
                space: Space::Lds,
                store: false,
                bytes: 4,
                count: 1,
                signed: false,
                pair: true
            })
        );
        assert_eq!(
            Op::of("global_store_dwordx4"),
            Op::Mem(Access {
                space: Space::Global,
                store: true,
                bytes: 4,
                count: 4,
                signed: false,
                pair: false
            })
        );
        assert_eq!(Op::of("v_mfma_f32_32x32x8_f16"), Op::VMfmaF32x32x8F16);
        assert_eq!(Op::of("v_mfma_f32_16x16x16f16"), Op::Unknown);
        assert_eq!(Op::of("s_mov_b32"), Op::SMovB32);
        assert_eq!(Op::of("v_add_co_ci_u32"), Op::VAddcCoU32);
        assert_eq!(Op::of("s_load_b512"), Op::SLoad { dwords: 16 });
        assert_eq!(
            Op::of("ds_load_2addr_b32"),
            Op::Mem(Access {
                space: Space::Lds,
                store: false,
                bytes: 4,
                count: 1,
                signed: false,
                pair: true
            })
        );
        assert_eq!(
            Op::of("s_and_not1_saveexec_b32"),
            Op::SaveExec {
                logic: Logic::Andn2,
                wide: false
            }
        );
    }
}
