//! Reading a perf config's values (`"64,64,16"`) on the stack: ranking never allocates.

/// Most values a perf config holds.
pub const MAX_PARAM_VALUES: usize = 8;

/// The values of a perf config; values that do not parse are skipped.
pub fn values(params: &str) -> heapless::Vec<u32, MAX_PARAM_VALUES> {
    params
        .split(',')
        .filter_map(|v| v.parse().ok())
        .take(MAX_PARAM_VALUES)
        .collect()
}

/// `Some([a, b, c])` when the config is exactly three positive values.
pub fn three(params: &str) -> Option<[u32; 3]> {
    match values(params).as_slice() {
        &[a, b, c] if a > 0 && b > 0 && c > 0 => Some([a, b, c]),
        _ => None,
    }
}

/// Whether `p` runs on an object built for one square filter of `filter` taps a side and
/// horizontal stride `stride_w`, with undilated rows (the depthwise kernels' unrolled loops).
pub fn built_for_square_filter(
    p: &kiln_format::ConvProblem,
    filter: u32,
    stride_w: u32,
) -> Result<(), super::NotApplicable> {
    let [_, fh, fw] = p.filter();
    if fh != filter || fw != filter {
        return Err("built for another filter size (square filters)");
    }
    if p.stride()[2] != stride_w || p.dilation()[2] != 1 {
        return Err("built for another horizontal stride (or dilated)");
    }
    Ok(())
}

/// Whether `p` is what kiln's mma.sync kernels read: FP16 or BF16, 2-D, channels-last.
pub fn half_nhwc_2d(p: &kiln_format::ConvProblem) -> Result<(), super::NotApplicable> {
    if !matches!(
        p.data_types()[0],
        kiln_format::DataType::Fp16 | kiln_format::DataType::Bf16
    ) {
        return Err("FP16 or BF16 only");
    }
    if p.spatial_dims() != 2 || !p.layouts()[0].channels_last() {
        return Err("needs 2-D NHWC tensors");
    }
    Ok(())
}

/// A 2-D NHWC FP16 problem for solver tests: batch `n`, `c` -> `k` channels, a square `hw`
/// input and a square `filter` padded to keep the size.
#[cfg(test)]
pub fn nhwc_fp16(n: u32, c: u32, k: u32, hw: u32, filter: u32) -> kiln_format::ConvProblem {
    use kiln_format::{ConvSpec, DataType, Layout};
    kiln_format::ConvProblem::new(ConvSpec {
        n,
        c,
        k,
        input: [1, hw, hw],
        filter: [1, filter, filter],
        pad: [0, filter / 2, filter / 2],
        layouts: [Layout::Nhwc; 3],
        data_types: [DataType::Fp16; 3],
        ..ConvSpec::default()
    })
    .unwrap()
}

/// The share of tiles of `tile` that `size` keeps busy (a 1-channel problem in a 32-tall tile
/// fills 1/32 of it).
pub fn tile_fill(size: f64, tile: f64) -> f64 {
    size / ((size / tile).ceil() * tile)
}

/// Bytes of x, w and y together in the problem's data type: what a direct kernel moves at least
/// once (the memory side of its cost estimate).
pub fn tensor_bytes(p: &kiln_format::ConvProblem) -> f64 {
    (p.element_counts().iter().sum::<u64>() * p.data_types()[0].size_bytes() as u64) as f64
}

/// The product of a `[d, h, w]` size (a 2-D problem's depth is 1): a tensor's pixels per image,
/// a filter's taps.
pub fn volume(v: [u32; 3]) -> u64 {
    v.iter().map(|&x| x as u64).product()
}

/// Input rows and columns a `tile` (output rows x columns) of a 2-D convolution reads: the
/// patch a direct kernel stages in shared memory.
pub fn patch_extent(p: &kiln_format::ConvProblem, tile: [u32; 2]) -> [u64; 2] {
    let [_, fh, fw] = p.filter();
    let [_, sh, sw] = p.stride();
    let [_, dh, dw] = p.dilation();
    let extent = |tile: u32, s: u32, f: u32, d: u32| {
        (tile as u64 - 1) * s as u64 + (f as u64 - 1) * d as u64 + 1
    };
    [extent(tile[0], sh, fh, dh), extent(tile[1], sw, fw, dw)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_fill() {
        assert_eq!(values("64,32,8").as_slice(), &[64, 32, 8]);
        assert_eq!(three("64,32,8"), Some([64, 32, 8]));
        assert_eq!(three("64,0,8"), None);
        assert_eq!(three(""), None);
        assert_eq!(tile_fill(1.0, 32.0), 1.0 / 32.0);
        assert_eq!(tile_fill(64.0, 32.0), 1.0);
    }
}
