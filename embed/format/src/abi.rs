//! The argument block every kiln convolution kernel receives, `KilnConvArgs` in
//! `kernels/kiln_gpu.h`. The build checks this mirror against the C definition at compile
//! time: `kiln-embed` reads the header's struct and emits an `offset_of!` assertion per field
//! and one for the size into the generated code, so a drift fails the build, not a GPU run.

use crate::ConvProblem;

/// Mirror of `KilnConvArgs`: field names and order as in C (spatial sizes are `[d, h, w]`;
/// 2-D problems use `d = 1`, `pad_d = 0`, `stride_d = dil_d = 1`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)] // the names are the C struct's; the header documents them
pub struct KernelArgs {
    pub n: i32,
    pub c: i32,
    pub k: i32,
    pub groups: i32,
    pub in_d: i32,
    pub in_h: i32,
    pub in_w: i32,
    pub fil_d: i32,
    pub fil_h: i32,
    pub fil_w: i32,
    pub out_d: i32,
    pub out_h: i32,
    pub out_w: i32,
    pub pad_d: i32,
    pub pad_h: i32,
    pub pad_w: i32,
    pub stride_d: i32,
    pub stride_h: i32,
    pub stride_w: i32,
    pub dil_d: i32,
    pub dil_h: i32,
    pub dil_w: i32,
    /// 1: `N[D]HWC` activations and `K[D]HWC/G` weights; 0: `NC[D]HW` and `KC/G[D]HW`.
    pub channels_last: i32,
    /// Keeps the block at 96 bytes.
    pub reserved: i32,
}

impl KernelArgs {
    /// The arguments of a problem. `None` when a size does not fit the kernels' `int`
    /// (a solver refuses such a problem before it gets here).
    pub fn of(p: &ConvProblem) -> Option<KernelArgs> {
        let i = |v: u32| i32::try_from(v).ok();
        let [in_d, in_h, in_w] = p.input();
        let [fil_d, fil_h, fil_w] = p.filter();
        let [out_d, out_h, out_w] = p.output();
        let [pad_d, pad_h, pad_w] = p.pad();
        let [stride_d, stride_h, stride_w] = p.stride();
        let [dil_d, dil_h, dil_w] = p.dilation();
        Some(KernelArgs {
            n: i(p.n())?,
            c: i(p.c())?,
            k: i(p.k())?,
            groups: i(p.groups())?,
            in_d: i(in_d)?,
            in_h: i(in_h)?,
            in_w: i(in_w)?,
            fil_d: i(fil_d)?,
            fil_h: i(fil_h)?,
            fil_w: i(fil_w)?,
            out_d: i(out_d)?,
            out_h: i(out_h)?,
            out_w: i(out_w)?,
            pad_d: i(pad_d)?,
            pad_h: i(pad_h)?,
            pad_w: i(pad_w)?,
            stride_d: i(stride_d)?,
            stride_h: i(stride_h)?,
            stride_w: i(stride_w)?,
            dil_d: i(dil_d)?,
            dil_h: i(dil_h)?,
            dil_w: i(dil_w)?,
            channels_last: p.layouts()[0].channels_last() as i32,
            reserved: 0,
        })
    }
}

/// A TMA tensor map: CUDA's opaque, 64-byte aligned 128-byte `CUtensorMap`, as a kernel
/// argument carries it (`KilnTensorMap` in `kernels/nv/wgmma_conv.cu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct TensorMap(pub [u64; 16]);

/// Mirror of `KilnTmaConvParams` (`kernels/nv/wgmma_conv.cu`): the one argument of the Hopper
/// TMA kernels. Field names and order as in C; the header documents them.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, align(64))]
#[allow(missing_docs)]
pub struct TmaConvParams {
    pub x: TensorMap,
    pub w: TensorMap,
    pub y_map: TensorMap,
    pub z_map: TensorMap,
    pub y: u64,
    pub m: i32,
    pub k: i32,
    pub c: i32,
    pub splits: i32,
    pub out_h: i32,
    pub out_w: i32,
    pub filter_h: i32,
    pub filter_w: i32,
    pub stride_h: i32,
    pub stride_w: i32,
    pub pad_h: i32,
    pub pad_w: i32,
    pub dil_h: i32,
    pub dil_w: i32,
    pub out_d: i32,
    pub filter_d: i32,
    pub stride_d: i32,
    pub pad_d: i32,
    pub dil_d: i32,
    pub workspace: u64,
    pub x_data: u64,
    pub w_data: u64,
    pub x_packed: u64,
    pub w_packed: u64,
    pub row_flags: u64,
    pub in_h: i32,
    pub in_w: i32,
    pub row_elems: i32,
    pub lead: i32,
    pub in_d: i32,
    pub group_in: i32,
    pub group_out: i32,
    pub group_tile_in: i32,
    pub tma_epilogue: i32,
    pub reserved: i32,
    pub ep: Epilogue,
}

/// Mirror of `KilnOpArgs` (`kernels/ops.cpp`): one standalone operator's shapes and modes.
/// Field names and order as in C; the kernel file documents each.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[allow(missing_docs)] // the names are the C struct's; ops.cpp documents them
pub struct OpArgs {
    pub n: i32,
    pub c: i32,
    pub in_h: i32,
    pub in_w: i32,
    pub out_h: i32,
    pub out_w: i32,
    pub win_h: i32,
    pub win_w: i32,
    pub stride_h: i32,
    pub stride_w: i32,
    pub pad_h: i32,
    pub pad_w: i32,
    pub mode: i32,
    pub channels_last: i32,
    pub a_ld: i32,
    pub y_ld: i32,
    pub b_ld: i32,
    pub act: i32,
    pub act_a: f32,
    pub grid_threads: i32,
    pub splits: i32,
    pub vec: i32,
    pub strips: i32,
    pub strip_group: i32,
    pub squeeze: i32,
    pub squeeze_act: i32,
    pub squeeze_act_a: f32,
    pub out_c: i32,
    pub parts: i32,
    pub tile_h: i32,
    pub tile_w: i32,
}

/// Mirror of `KilnEpilogue` (`kernels/epilogue.h`): the fused epilogue's run-time values,
/// `y = act(alpha * acc * scale[k] + bias[k] + beta * z)`. Field names and order as in C.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct Epilogue {
    /// Device address of `scale[K]` (FP32), or 0.
    pub scale: u64,
    /// Device address of `bias[K]` (FP32), or 0.
    pub bias: u64,
    /// Device address of the residual z (y's element type), or 0.
    pub z: u64,
    /// The sums' factor.
    pub alpha: f32,
    /// The residual's factor.
    pub beta: f32,
    /// The activation's parameter (clip ceiling, leaky slope).
    pub act_a: f32,
    /// The activation's code ([`crate::Activation::code`]).
    pub act: i32,
    /// Elements from one output pixel to the next (channels-last; K when dense).
    pub y_ld: i32,
    /// The same for z.
    pub z_ld: i32,
    /// Device address of the pool's FP32 partial sums ([`crate::Fusion::pool`]), or 0.
    pub pool: u64,
    /// Device address of x's gate `s[N][C]` (x's type; [`crate::Fusion::x_scale`]), or 0.
    pub x_scale: u64,
}

impl Epilogue {
    /// No epilogue: y is the sums, rounded once, dense.
    pub fn plain(p: &ConvProblem) -> Epilogue {
        let f = p.fusion();
        Epilogue {
            scale: 0,
            bias: 0,
            z: 0,
            alpha: 1.0,
            beta: 0.0,
            act_a: 0.0,
            act: f.activation.code(),
            // Both below 2^24 (checked by ConvProblem::new).
            y_ld: f.y_stride(p.k()) as i32,
            z_ld: f.z_stride(p.k()) as i32,
            pool: 0,
            x_scale: 0,
        }
    }
}

/// Mirror of `KilnBuilderInfo` (`kernels/library_abi.h`): what a library's parameter
/// builder reports. Field names and order as in C; the header documents them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
#[allow(missing_docs)]
pub struct BuilderInfo {
    pub status: i32,
    pub params_bytes: i32,
    pub threads: i32,
    pub shared_bytes: i32,
    pub grid: [i32; 3],
    pub offset_a: i32,
    pub offset_b: i32,
    pub offset_c: i32,
    pub offset_d: i32,
    pub offset_semaphore: i32,
    pub semaphore_ints: i32,
    pub a_in_workspace: i32,
    pub b_in_workspace: i32,
    pub semaphore_in_workspace: i32,
    pub y_in_workspace: i32,
}

impl BuilderInfo {
    /// Bytes the builder writes.
    pub const BYTES: usize = core::mem::size_of::<BuilderInfo>();

    /// The report as the device wrote it: 32-bit little-endian ints in field order.
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> BuilderInfo {
        let v = |i: usize| {
            i32::from_le_bytes([
                bytes[4 * i],
                bytes[4 * i + 1],
                bytes[4 * i + 2],
                bytes[4 * i + 3],
            ])
        };
        BuilderInfo {
            status: v(0),
            params_bytes: v(1),
            threads: v(2),
            shared_bytes: v(3),
            grid: [v(4), v(5), v(6)],
            offset_a: v(7),
            offset_b: v(8),
            offset_c: v(9),
            offset_d: v(10),
            offset_semaphore: v(11),
            semaphore_ints: v(12),
            a_in_workspace: v(13),
            b_in_workspace: v(14),
            semaphore_in_workspace: v(15),
            y_in_workspace: v(16),
        }
    }
}

/// Mirror of `KilnPointers` (`kernels/library_abi.h`): the caller's buffers, passed to
/// every library kernel beside its parameter block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Pointers {
    /// The input.
    pub x: u64,
    /// The filter.
    pub w: u64,
    /// The output.
    pub y: u64,
    /// The workspace (0: none).
    pub workspace: u64,
}

/// One field of a C struct as the header declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CField {
    /// Field name.
    pub name: String,
    /// Byte offset under the C ABI (natural alignment).
    pub offset: usize,
    /// Bytes (an array's whole extent).
    pub size: usize,
}

/// A C struct's fields, size and alignment, read from a header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CStruct {
    /// Fields in declaration order.
    pub fields: Vec<CField>,
    /// `sizeof`, padded to the alignment.
    pub size: usize,
    /// `alignof`: the largest field's, or the `__align__(N)` the declaration gives.
    pub align: usize,
}

/// Reads `struct <name> { ... };` (or `struct __align__(N) <name> { ... };`) from C source:
/// fields of the scalar types kiln's kernels use (`kiln_i32`, `kiln_u32`, `kiln_i64`,
/// `kiln_u64`, `float`, `int`), pointers (`void*`, `const void*`), one-dimensional arrays of
/// these (`kiln_i32 grid[3]`) and structs the same source declares, several names per
/// declaration allowed, `//` comments ignored. Anything else is an error naming the
/// declaration, so an unsupported field fails the build instead of being skipped.
pub fn parse_c_struct(source: &str, name: &str) -> Result<CStruct, String> {
    parse_nested(source, name, 0)
}

/// Where `struct [__align__(N)] name {` opens in `source`: the body's start and the alignment.
fn find_struct(source: &str, name: &str) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(at) = source[from..].find("struct ") {
        let rest = &source[from + at + "struct ".len()..];
        let (align, rest) = match rest.strip_prefix("__align__(") {
            Some(r) => {
                let close = r.find(')')?;
                (r[..close].trim().parse().ok()?, r[close + 1..].trim_start())
            }
            None => (1, rest),
        };
        if let Some(after) = rest.strip_prefix(name) {
            if let Some(body) = after.trim_start().strip_prefix('{') {
                return Some((source.len() - body.len(), align));
            }
        }
        from += at + "struct ".len();
    }
    None
}

fn parse_nested(source: &str, name: &str, depth: usize) -> Result<CStruct, String> {
    if depth > 4 {
        return Err(format!("struct {name}: nested more than 4 deep"));
    }
    let (start, declared_align) =
        find_struct(source, name).ok_or_else(|| format!("no `struct {name} {{` in the header"))?;
    let body_len = source[start..]
        .find("};")
        .ok_or_else(|| format!("struct {name} has no closing `}};`"))?;
    let body: String = source[start..start + body_len]
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ");
    let (mut fields, mut offset, mut align_max) = (Vec::new(), 0usize, declared_align);
    for decl in body.split(';').map(str::trim).filter(|d| !d.is_empty()) {
        let decl_type = decl.strip_prefix("const ").unwrap_or(decl).trim_start();
        let (ty, names) = decl_type
            .split_once(char::is_whitespace)
            .ok_or_else(|| format!("struct {name}: cannot read `{decl}`"))?;
        let (size, align) = match ty {
            "kiln_i32" | "kiln_u32" | "float" | "int" => (4, 4),
            "kiln_i64" | "kiln_u64" | "void*" => (8, 8),
            _ if ty.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => {
                let inner = parse_nested(source, ty, depth + 1).map_err(|e| {
                    format!("struct {name}: field type `{ty}` is not supported ({e})")
                })?;
                (inner.size, inner.align)
            }
            _ => return Err(format!("struct {name}: field type `{ty}` is not supported")),
        };
        align_max = align_max.max(align);
        for field in names.split(',').map(str::trim) {
            let (field, count) = match field.split_once('[') {
                Some((f, n)) => {
                    let n = n
                        .strip_suffix(']')
                        .and_then(|n| n.trim().parse::<usize>().ok())
                        .filter(|&n| n > 0)
                        .ok_or_else(|| format!("struct {name}: cannot read array `{field}`"))?;
                    (f.trim(), n)
                }
                None => (field, 1),
            };
            if field.is_empty()
                || !field
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return Err(format!(
                    "struct {name}: cannot read field `{field}` of `{decl}`"
                ));
            }
            offset = offset.next_multiple_of(align);
            fields.push(CField {
                name: field.to_string(),
                offset,
                size: size * count,
            });
            offset += size * count;
        }
    }
    Ok(CStruct {
        fields,
        size: offset.next_multiple_of(align_max),
        align: align_max,
    })
}

/// Checks a Rust mirror against the C struct: the same field names in the same order at the
/// same offsets, and the same size and alignment. `fields` are the mirror's names and offsets
/// (`core::mem::offset_of!`).
pub fn check_mirror(
    c: &CStruct,
    fields: &[(&str, usize)],
    size: usize,
    align: usize,
) -> Result<(), String> {
    let names: Vec<&str> = c.fields.iter().map(|f| f.name.as_str()).collect();
    let mine: Vec<&str> = fields.iter().map(|f| f.0).collect();
    if names != mine {
        return Err(format!(
            "fields differ: C has {names:?}, the mirror {mine:?}"
        ));
    }
    for (cf, &(name, at)) in c.fields.iter().zip(fields) {
        if cf.offset != at {
            return Err(format!("{name} is at {at}, C puts it at {}", cf.offset));
        }
    }
    if (c.size, c.align) != (size, align) {
        return Err(format!(
            "size and alignment {size}/{align}, C's {}/{}",
            c.size, c.align
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_structs_are_read_with_natural_alignment() {
        let s = parse_c_struct(
            "struct A {\n  kiln_i32 a, b; // two\n  kiln_i64 c;\n  float d;\n};",
            "A",
        )
        .unwrap();
        let offs: Vec<(&str, usize)> = s
            .fields
            .iter()
            .map(|f| (f.name.as_str(), f.offset))
            .collect();
        assert_eq!(offs, [("a", 0), ("b", 4), ("c", 8), ("d", 16)]);
        assert_eq!(s.size, 24);
        let nested = parse_c_struct(
            concat!(
                "struct __align__(16) T { kiln_u64 o[2]; };\n",
                "struct B { int n; T t; const void* p; void* q; kiln_i32 g[3]; };"
            ),
            "B",
        )
        .unwrap();
        let offs: Vec<(&str, usize, usize)> = nested
            .fields
            .iter()
            .map(|f| (f.name.as_str(), f.offset, f.size))
            .collect();
        assert_eq!(
            offs,
            [
                ("n", 0, 4),
                ("t", 16, 16),
                ("p", 32, 8),
                ("q", 40, 8),
                ("g", 48, 12)
            ]
        );
        assert_eq!((nested.size, nested.align), (64, 16));
        assert!(parse_c_struct("struct B { U u; };", "B").is_err());
        assert!(parse_c_struct("struct B { int g[]; };", "B").is_err());
        assert!(parse_c_struct("struct A { double x; };", "A").is_err());
        assert!(parse_c_struct("struct B { int x; };", "A").is_err());
    }

    #[test]
    fn every_mirror_matches_its_c_struct() {
        use core::mem::{align_of, offset_of, size_of};
        let epilogue = include_str!("../../../kernels/epilogue.h");
        let wgmma = &format!(
            "{epilogue}\n{}",
            include_str!("../../../kernels/nv/wgmma_conv.cu")
        );
        let cutlass = include_str!("../../../kernels/library_abi.h");
        let check = |source: &str, name: &str, fields: &[(&str, usize)], size, align| {
            let c = parse_c_struct(source, name).unwrap();
            check_mirror(&c, fields, size, align).map_err(|e| format!("{name}: {e}"))
        };
        check(
            wgmma,
            "KilnTensorMap",
            &[("opaque", offset_of!(TensorMap, 0))],
            size_of::<TensorMap>(),
            align_of::<TensorMap>(),
        )
        .unwrap();
        macro_rules! fields {
            ($t:ty: $($f:ident),*) => { [$((stringify!($f), offset_of!($t, $f))),*] };
        }
        let tma = fields!(TmaConvParams: x, w, y_map, z_map, y, m, k, c, splits, out_h, out_w, filter_h,
            filter_w, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, out_d, filter_d, stride_d, pad_d,
            dil_d, workspace, x_data, w_data,
            x_packed, w_packed, row_flags, in_h, in_w, row_elems, lead, in_d, group_in, group_out,
            group_tile_in, tma_epilogue, reserved, ep);
        let ep =
            fields!(Epilogue: scale, bias, z, alpha, beta, act_a, act, y_ld, z_ld, pool, x_scale);
        check(epilogue, "KilnEpilogue", &ep, size_of::<Epilogue>(), 8).unwrap();
        check(
            wgmma,
            "KilnTmaConvParams",
            &tma,
            size_of::<TmaConvParams>(),
            64,
        )
        .unwrap();
        let info = fields!(BuilderInfo: status, params_bytes, threads, shared_bytes, grid,
            offset_a, offset_b, offset_c, offset_d, offset_semaphore, semaphore_ints,
            a_in_workspace, b_in_workspace, semaphore_in_workspace, y_in_workspace);
        check(cutlass, "KilnBuilderInfo", &info, BuilderInfo::BYTES, 4).unwrap();
        let pointers = fields!(Pointers: x, w, y, workspace);
        check(cutlass, "KilnPointers", &pointers, size_of::<Pointers>(), 8).unwrap();
        let ops = include_str!("../../../kernels/ops.cpp");
        let op = fields!(OpArgs: n, c, in_h, in_w, out_h, out_w, win_h, win_w, stride_h,
            stride_w, pad_h, pad_w, mode, channels_last, a_ld, y_ld, b_ld, act, act_a,
            grid_threads, splits, vec, strips, strip_group, squeeze, squeeze_act, squeeze_act_a,
            out_c, parts, tile_h, tile_w);
        check(ops, "KilnOpArgs", &op, size_of::<OpArgs>(), 4).unwrap();
        // A drifted mirror is named.
        let mut moved = pointers;
        moved.swap(0, 1);
        let e = check(cutlass, "KilnPointers", &moved, 32, 8).unwrap_err();
        assert!(e.contains("fields differ"), "{e}");
    }

    #[test]
    fn builder_reports_read_in_field_order() {
        let mut raw = [0u8; BuilderInfo::BYTES];
        for (i, b) in raw.chunks_exact_mut(4).enumerate() {
            b.copy_from_slice(&(i as i32 - 1).to_le_bytes());
        }
        let info = BuilderInfo::from_bytes(&raw);
        assert_eq!(
            (info.status, info.grid, info.y_in_workspace),
            (-1, [3, 4, 5], 15)
        );
    }

    #[test]
    fn the_mirror_matches_the_committed_header() {
        let header = include_str!("../../../kernels/kiln_gpu.h");
        let c = parse_c_struct(header, "KilnConvArgs").unwrap();
        assert_eq!(c.size, core::mem::size_of::<KernelArgs>());
        assert_eq!(c.fields.len(), 24);
        assert_eq!(c.fields[4].name, "in_d");
        assert_eq!(core::mem::offset_of!(KernelArgs, in_d), c.fields[4].offset);
    }
}
