//! A network's input from a NumPy `.npy` file: one 4-D array, N x C x H x W (PyTorch's and
//! ONNX's order), little-endian float32, float16 or float64, C order. It is checked against
//! the batch and the network's input shape and returned as NHWC values.

/// Largest `.npy` header read (NumPy writes theirs padded to 64 bytes; 64 KiB is far beyond).
const HEADER_CAP: usize = 64 << 10;

/// The array's NCHW values, converted to f32 and reordered NHWC, checked to be
/// `batch` x `c` x `h` x `w`. Reads at most the header and the values those dimensions need.
pub fn read_nchw(
    path: &std::path::Path,
    batch: u32,
    (c, h, w): (u32, u32, u32),
) -> Result<Vec<f32>, String> {
    let count = u64::from(batch) * u64::from(c) * u64::from(h) * u64::from(w);
    let cap = HEADER_CAP as u64 + count * 8;
    let bytes = crate::format::file::read_capped(path, cap).map_err(|e| e.to_string())?;
    let (descr, shape, data) = parse(&bytes)?;
    let want = [batch, c, h, w].map(u64::from);
    if shape != want {
        return Err(format!(
            "shape {shape:?}; the network takes {want:?} (N x C x H x W)"
        ));
    }
    let size = match descr {
        "<f4" => 4,
        "<f2" => 2,
        "<f8" => 8,
        other => {
            return Err(format!(
                "dtype {other:?}: expected little-endian float32, float16 or float64 ('<f4', '<f2', '<f8')"
            ))
        }
    };
    if data.len() as u64 != count * size as u64 {
        return Err(format!(
            "{} data bytes for {count} values of {descr}",
            data.len()
        ));
    }
    let value = |i: usize| -> f32 {
        let b = &data[i * size..(i + 1) * size];
        match size {
            4 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            2 => crate::elements::f16_to_f32(u16::from_le_bytes([b[0], b[1]])),
            _ => f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32,
        }
    };
    let (c, h, w) = (c as usize, h as usize, w as usize);
    let mut out = Vec::with_capacity(count as usize);
    for n in 0..batch as usize {
        for y in 0..h {
            for x in 0..w {
                for ch in 0..c {
                    out.push(value(((n * c + ch) * h + y) * w + x));
                }
            }
        }
    }
    Ok(out)
}

/// The header's dtype and shape, and the data after it.
fn parse(bytes: &[u8]) -> Result<(&str, Vec<u64>, &[u8]), String> {
    let rest = bytes
        .strip_prefix(b"\x93NUMPY")
        .ok_or("not a .npy file (no \\x93NUMPY magic)")?;
    let (len, header_at) = match rest {
        [1, _, a, b, ..] => (usize::from(u16::from_le_bytes([*a, *b])), 10),
        [2 | 3, _, a, b, c, d, ..] => (u32::from_le_bytes([*a, *b, *c, *d]) as usize, 12),
        _ => return Err("unknown .npy version".into()),
    };
    if len > HEADER_CAP || bytes.len() < header_at + len {
        return Err(format!("header of {len} B does not fit the file"));
    }
    let header = std::str::from_utf8(&bytes[header_at..header_at + len])
        .map_err(|_| "header is not text")?;
    let field = |key: &str| -> Result<&str, String> {
        let at = header
            .find(&format!("'{key}':"))
            .ok_or_else(|| format!("header has no '{key}'"))?;
        Ok(header[at + key.len() + 3..].trim_start())
    };
    let descr = field("descr")?
        .strip_prefix('\'')
        .and_then(|s| s.split('\'').next())
        .ok_or("header's descr is not a string")?;
    if !field("fortran_order")?.starts_with("False") {
        return Err("Fortran-ordered arrays are not read; save a C-ordered one".into());
    }
    let shape_text = field("shape")?
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or("header's shape is not a tuple")?;
    let shape = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<u64>().map_err(|_| format!("shape entry {s:?}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((descr, shape, &bytes[header_at + len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + h.len() + 1) % 64 != 0 {
            h.push(' ');
        }
        h.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((h.len() as u16).to_le_bytes());
        out.extend(h.as_bytes());
        out.extend(data);
        out
    }

    #[test]
    fn nchw_arrays_read_as_nhwc_and_bad_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        // 1 x 2 x 1 x 2: channel 0 holds 0, 1; channel 1 holds 10, 11.
        let values: Vec<u8> = [0.0f32, 1.0, 10.0, 11.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        std::fs::write(&path, npy("<f4", "(1, 2, 1, 2)", &values)).unwrap();
        assert_eq!(
            read_nchw(&path, 1, (2, 1, 2)).unwrap(),
            vec![0.0, 10.0, 1.0, 11.0]
        );
        let err = read_nchw(&path, 2, (2, 1, 2)).unwrap_err();
        assert!(err.contains("shape [1, 2, 1, 2]"), "{err}");
        let halves: Vec<u8> = [0x3c00u16, 0x4000, 0x4200, 0x4400]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        std::fs::write(&path, npy("<f2", "(1, 2, 1, 2)", &halves)).unwrap();
        assert_eq!(
            read_nchw(&path, 1, (2, 1, 2)).unwrap(),
            vec![1.0, 3.0, 2.0, 4.0]
        );
        std::fs::write(&path, npy("<i8", "(1, 2, 1, 2)", &[0; 32])).unwrap();
        assert!(read_nchw(&path, 1, (2, 1, 2))
            .unwrap_err()
            .contains("dtype \"<i8\""));
        std::fs::write(&path, npy("<f4", "(1, 2, 1, 2)", &values[..12])).unwrap();
        assert!(read_nchw(&path, 1, (2, 1, 2))
            .unwrap_err()
            .contains("12 data bytes"));
        std::fs::write(&path, b"not numpy").unwrap();
        assert!(read_nchw(&path, 1, (2, 1, 2))
            .unwrap_err()
            .contains("magic"));
    }
}
