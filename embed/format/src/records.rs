//! Payload encodings of the three table kinds, and the MIOpen value vocabulary they use
//! (algorithm names, `%g` time formatting).
//!
//! - find-db payload: `n u8`, then `n x (solver u16, algorithm u8, time f64, workspace u64)`,
//!   in the file's order (ranked by time); `solver` indexes the table's string section.
//! - perf-db payload: `n u8`, then `n x (solver u16, params_len u32, params)`.
//! - kdb payload: `md5 [u8; 16]`, `sha256 [u8; 32]`, then the uncompressed code object. The
//!   key is `kernel_name`, NUL, `kernel_args`.

use core::fmt;

/// MIOpen's algorithm names (`conv_algo_name.cpp`), stored by index.
pub const ALGORITHM_NAMES: [&str; 16] = [
    "miopenConvolutionFwdAlgoGEMM",
    "miopenConvolutionFwdAlgoDirect",
    "miopenConvolutionFwdAlgoFFT",
    "miopenConvolutionFwdAlgoWinograd",
    "miopenConvolutionFwdAlgoImplicitGEMM",
    "miopenConvolutionBwdDataAlgoGEMM",
    "miopenConvolutionBwdDataAlgoDirect",
    "miopenConvolutionBwdDataAlgoFFT",
    "miopenConvolutionBwdDataAlgoWinograd",
    "miopenConvolutionBwdDataAlgoImplicitGEMM",
    "miopenConvolutionBwdWeightsAlgoGEMM",
    "miopenConvolutionBwdWeightsAlgoDirect",
    "miopenConvolutionBwdWeightsAlgoFFT",
    "miopenConvolutionBwdWeightsAlgoWinograd",
    "miopenConvolutionBwdWeightsAlgoImplicitGEMM",
    "miopenTransposeBwdDataAlgoGEMM",
];

/// Index of an algorithm name in [`ALGORITHM_NAMES`].
pub fn algorithm_index(name: &str) -> Option<u8> {
    ALGORITHM_NAMES
        .iter()
        .position(|n| *n == name)
        .map(|i| i as u8)
}

/// A malformed payload (only possible if the binary's data is damaged).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PayloadError(pub &'static str);

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "embedded record payload is malformed: {}", self.0)
    }
}

impl std::error::Error for PayloadError {}

/// Bytes of one encoded find-db item.
pub const FIND_ITEM_LEN: usize = 19;

/// One find-db item as stored: indices instead of names.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RawFindItem {
    /// String index of the solver name.
    pub solver: u16,
    /// Index into [`ALGORITHM_NAMES`].
    pub algorithm: u8,
    /// Measured time in milliseconds.
    pub time_ms: f64,
    /// Workspace bytes.
    pub workspace: u64,
}

/// Encodes a find-db payload.
pub fn encode_find_payload(items: &[RawFindItem]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + items.len() * FIND_ITEM_LEN);
    out.push(items.len() as u8);
    for it in items {
        out.extend_from_slice(&it.solver.to_le_bytes());
        out.push(it.algorithm);
        out.extend_from_slice(&it.time_ms.to_le_bytes());
        out.extend_from_slice(&it.workspace.to_le_bytes());
    }
    out
}

/// Iterates a find-db payload without allocating.
pub fn find_items(
    payload: &[u8],
) -> Result<impl ExactSizeIterator<Item = RawFindItem> + '_, PayloadError> {
    let (&n, rest) = payload
        .split_first()
        .ok_or(PayloadError("empty find-db payload"))?;
    if rest.len() != n as usize * FIND_ITEM_LEN {
        return Err(PayloadError(
            "find-db payload length does not match its item count",
        ));
    }
    Ok(rest.chunks_exact(FIND_ITEM_LEN).map(|c| RawFindItem {
        solver: u16::from_le_bytes([c[0], c[1]]),
        algorithm: c[2],
        time_ms: f64::from_le_bytes([c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10]]),
        workspace: u64::from_le_bytes([c[11], c[12], c[13], c[14], c[15], c[16], c[17], c[18]]),
    }))
}

/// Encodes a perf-db payload from (solver index, params) pairs.
pub fn encode_perf_payload(items: &[(u16, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.push(items.len() as u8);
    for (solver, params) in items {
        out.extend_from_slice(&solver.to_le_bytes());
        out.extend_from_slice(&(params.len() as u32).to_le_bytes());
        out.extend_from_slice(params.as_bytes());
    }
    out
}

/// Iterator over a perf-db payload's (solver index, params) pairs.
#[derive(Clone, Debug)]
pub struct PerfItems<'a> {
    rest: &'a [u8],
    left: u8,
}

impl<'a> Iterator for PerfItems<'a> {
    type Item = Result<(u16, &'a str), PayloadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let r = self.rest;
        let parsed = (|| {
            let head = r.get(..6).ok_or(PayloadError("truncated perf-db item"))?;
            let solver = u16::from_le_bytes([head[0], head[1]]);
            let len = u32::from_le_bytes([head[2], head[3], head[4], head[5]]) as usize;
            let params = r
                .get(6..6 + len)
                .ok_or(PayloadError("truncated perf-db params"))?;
            let params = core::str::from_utf8(params)
                .map_err(|_| PayloadError("perf-db params are not UTF-8"))?;
            Ok((solver, params, 6 + len))
        })();
        match parsed {
            Ok((solver, params, used)) => {
                self.rest = &r[used..];
                Some(Ok((solver, params)))
            }
            Err(e) => {
                self.left = 0;
                Some(Err(e))
            }
        }
    }
}

/// Iterates a perf-db payload without allocating.
pub fn perf_items(payload: &[u8]) -> Result<PerfItems<'_>, PayloadError> {
    let (&n, rest) = payload
        .split_first()
        .ok_or(PayloadError("empty perf-db payload"))?;
    Ok(PerfItems { rest, left: n })
}

/// A kdb payload's parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KdbPayload<'a> {
    /// MIOpen's `kernel_hash` (MD5 of the uncompressed object), raw bytes.
    pub md5: [u8; 16],
    /// sha256 of the uncompressed object.
    pub sha256: [u8; 32],
    /// The code object.
    pub object: &'a [u8],
}

/// Encodes a kdb payload.
pub fn encode_kdb_payload(md5: [u8; 16], sha256: [u8; 32], object: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(48 + object.len());
    out.extend_from_slice(&md5);
    out.extend_from_slice(&sha256);
    out.extend_from_slice(object);
    out
}

/// Splits a kdb payload.
pub fn kdb_payload(payload: &[u8]) -> Result<KdbPayload<'_>, PayloadError> {
    if payload.len() < 48 {
        return Err(PayloadError("kdb payload shorter than its digests"));
    }
    let mut md5 = [0u8; 16];
    md5.copy_from_slice(&payload[..16]);
    let mut sha256 = [0u8; 32];
    sha256.copy_from_slice(&payload[16..48]);
    Ok(KdbPayload {
        md5,
        sha256,
        object: &payload[48..],
    })
}

/// The kdb key bytes of (kernel_name, kernel_args): name, NUL, args.
pub fn kdb_key(kernel_name: &str, kernel_args: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(kernel_name.len() + 1 + kernel_args.len());
    k.extend_from_slice(kernel_name.as_bytes());
    k.push(0);
    k.extend_from_slice(kernel_args.as_bytes());
    k
}

/// Formats a float as C++'s default `ostream << double` does (`%g`, 6 significant digits),
/// which is how MIOpen writes find-db times: `0.0863205`, `1566.28`, `1e-05`, `2.5e+06`.
pub fn format_g6(v: f64) -> String {
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    // Round to 6 significant digits first; the exponent after rounding picks the style.
    let sci = format!("{:.5e}", v);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let m = trim_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (5 - exp).max(0) as usize;
        trim_zeros(&format!("{:.*}", decimals, v)).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g6_matches_cpp_ostream() {
        for (v, s) in [
            (0.0863205, "0.0863205"),
            (1566.28, "1566.28"),
            (6.73167, "6.73167"),
            (0.00001, "1e-05"),
            (0.0001234, "0.0001234"),
            (2500000.0, "2.5e+06"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (0.1, "0.1"),
            (3.0, "3"),
            (999999.5, "1e+06"),
        ] {
            assert_eq!(format_g6(v), s, "{v}");
        }
    }

    #[test]
    fn find_payload_round_trip() {
        let items = [
            RawFindItem {
                solver: 3,
                algorithm: 4,
                time_ms: 0.052681,
                workspace: 0,
            },
            RawFindItem {
                solver: 0,
                algorithm: 0,
                time_ms: 6.73167,
                workspace: 15052800,
            },
        ];
        let p = encode_find_payload(&items);
        let back: Vec<_> = find_items(&p).unwrap().collect();
        assert_eq!(back, items);
        assert!(find_items(&p[..p.len() - 1]).is_err());
    }

    #[test]
    fn perf_payload_round_trip_and_truncation() {
        let p = encode_perf_payload(&[(1, "a,b,c"), (2, "DeviceConv<256, 128>")]);
        let back: Vec<_> = perf_items(&p).unwrap().collect::<Result<_, _>>().unwrap();
        assert_eq!(back, vec![(1, "a,b,c"), (2, "DeviceConv<256, 128>")]);
        let cut: Result<Vec<_>, _> = perf_items(&p[..10]).unwrap().collect();
        assert!(cut.is_err());
    }
}
