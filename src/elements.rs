//! Element encodings: f32 to and from IEEE half and bfloat16 bits (rounded to nearest even,
//! as `kernels/kiln_gpu.h` rounds), and whole buffers of a data type to and from bytes.

use kiln_format::DataType;

/// f32 -> IEEE half bits, round to nearest even (as `kernels/kiln_gpu.h`).
pub fn f32_to_f16(f: f32) -> u16 {
    let b = f.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let abs = b & 0x7fff_ffff;
    if abs > 0x7f80_0000 {
        return sign | 0x7e00;
    }
    if abs >= 0x477f_f000 {
        return sign | 0x7c00;
    }
    if abs < 0x3880_0000 {
        let a = f32::from_bits(abs) * 16_777_216.0;
        let mut r = a as u32;
        let frac = a - r as f32;
        if frac > 0.5 || (frac == 0.5 && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let rounded = abs + 0xfff + ((abs >> 13) & 1);
    sign | ((rounded - 0x3800_0000) >> 13) as u16
}

/// IEEE half bits -> f32.
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    match exp {
        0x1f => f32::from_bits(sign | 0x7f80_0000 | (man << 13)),
        0 if man == 0 => f32::from_bits(sign),
        0 => {
            let v = man as f32 / 16_777_216.0;
            if sign != 0 {
                -v
            } else {
                v
            }
        }
        _ => f32::from_bits(sign | ((exp + 112) << 23) | (man << 13)),
    }
}

/// f32 -> bfloat16 bits, round to nearest even.
pub fn f32_to_bf16(f: f32) -> u16 {
    let b = f.to_bits();
    if b & 0x7fff_ffff > 0x7f80_0000 {
        return ((b >> 16) | 0x40) as u16;
    }
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

/// bfloat16 bits -> f32.
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// Encodes values in `dtype`; returns the bytes and the values as stored (rounded).
pub fn encode(dtype: DataType, values: &[f32]) -> (Vec<u8>, Vec<f64>) {
    let mut bytes = Vec::with_capacity(values.len() * dtype.size_bytes());
    let mut stored = Vec::with_capacity(values.len());
    for &v in values {
        match dtype {
            DataType::Fp16 => {
                let h = f32_to_f16(v);
                bytes.extend_from_slice(&h.to_le_bytes());
                stored.push(f16_to_f32(h) as f64);
            }
            DataType::Bf16 => {
                let h = f32_to_bf16(v);
                bytes.extend_from_slice(&h.to_le_bytes());
                stored.push(bf16_to_f32(h) as f64);
            }
            _ => {
                bytes.extend_from_slice(&v.to_le_bytes());
                stored.push(v as f64);
            }
        }
    }
    (bytes, stored)
}

/// `v` rounded to `dtype` (to nearest even, as [`encode`] stores values), as an f64.
pub fn round_to(dtype: DataType, v: f64) -> f64 {
    let single = v as f32;
    match dtype {
        DataType::Fp16 => f16_to_f32(f32_to_f16(single)) as f64,
        DataType::Bf16 => bf16_to_f32(f32_to_bf16(single)) as f64,
        _ => single as f64,
    }
}

/// Decodes device bytes of `dtype`.
pub fn decode(dtype: DataType, bytes: &[u8]) -> Vec<f64> {
    match dtype {
        DataType::Fp16 => bytes
            .chunks_exact(2)
            .map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]])) as f64)
            .collect(),
        DataType::Bf16 => bytes
            .chunks_exact(2)
            .map(|c| bf16_to_f32(u16::from_le_bytes([c[0], c[1]])) as f64)
            .collect(),
        _ => bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
            .collect(),
    }
}
