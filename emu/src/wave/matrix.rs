//! The matrix products kiln's matrix-core solvers use: MFMA (CDNA 2/3) and WMMA (RDNA 3).

use super::*;

impl Wave {
    /// A 16-bit half of a register of `file` (VGPRs or AGPRs) in one lane, as FP32 (`bf16`:
    /// bfloat16, else IEEE half).
    pub(super) fn half_at(file: &[u32], reg: usize, lane: usize, high: bool, bf16: bool) -> f32 {
        let word = file[reg * LANES + lane];
        let bits = if high { word >> 16 } else { word & 0xffff } as u16;
        if bf16 {
            f32::from_bits(u32::from(bits) << 16)
        } else {
            half_to_f32(bits)
        }
    }

    /// The register numbers of a matrix instruction's A, B, C (VOP3P source fields, which
    /// name a register from 256 on) and D (the low byte of `w`); `refusal` says what a source
    /// that names no register is.
    fn matrix_registers(src: [u32; 3], w: u32, refusal: &str) -> Result<[usize; 4], Error> {
        let register = |field: u32| {
            field
                .checked_sub(256)
                .map(|r| r as usize)
                .ok_or_else(|| Self::unsupported(refusal))
        };
        Ok([
            register(src[0])?,
            register(src[1])?,
            register(src[2])?,
            (w & 0xff) as usize,
        ])
    }

    /// v_mfma_f32_32x32x8 (f16, bf16): D = A (32 x 8) B (8 x 32) + C, one wave64 instruction
    /// regardless of EXEC. A[i][k] is in lane i + 32 (k / 4), register src0 + (k % 4) / 2, half
    /// k % 2; B[k][j] likewise in lane j + 32 (k / 4); C and D[i][j] in lane j + 32 ((i / 4) %
    /// 2), register 4 (i / 8) + i % 4 (AMD's matrix instruction calculator, CDNA 2/3).
    pub(super) fn mfma(&mut self, inst: &Inst, src: [u32; 3]) -> Result<(), Error> {
        let (w, w1) = (inst.w[0], inst.w[1]);
        if self.lanes != 64 || (w >> 8) & 0x7f != 0 || w1 >> 29 != 0 {
            return Err(Self::unsupported(
                "MFMA broadcasts (cbsz/abid/blgp) or a wave32 MFMA",
            ));
        }
        let bf16 = inst.op == Op::VMfmaF32x32x8Bf16;
        let acc_cd = (w >> 15) & 1 == 1;
        let acc_ab = (w1 >> 27) & 3;
        let [ra, rb, rc, rd] =
            Self::matrix_registers(src, w, "an MFMA operand that is not a register")?;
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
    pub(super) fn wmma(&mut self, inst: &Inst, src: [u32; 3]) -> Result<(), Error> {
        let (w, w1) = (inst.w[0], inst.w[1]);
        if self.lanes != 32 || (w >> 8) & 0x7f != 0x40 || w1 >> 27 != 3 {
            return Err(Self::unsupported(
                "WMMA modifiers (op_sel, neg, clamp) or wave64",
            ));
        }
        let bf16 = inst.op == Op::VWmmaF32Bf16;
        let [ra, rb, rc, rd] = Self::matrix_registers(src, w, "a WMMA operand that is not a VGPR")?;
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
