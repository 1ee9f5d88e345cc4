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

/// One field of a C struct as the header declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CField {
    /// Field name.
    pub name: String,
    /// Byte offset under the C ABI (natural alignment).
    pub offset: usize,
}

/// A C struct's fields and size, read from a header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CStruct {
    /// Fields in declaration order.
    pub fields: Vec<CField>,
    /// `sizeof`, padded to the largest alignment.
    pub size: usize,
}

/// Reads `struct <name> { ... };` from C source: scalar fields of the types kiln's kernels use
/// (`kiln_i32`, `kiln_u32`, `kiln_i64`, `kiln_u64`, `float`, `int`), several names per
/// declaration allowed, `//` comments ignored. Anything else is an error naming the
/// declaration, so an unsupported field fails the build instead of being skipped.
pub fn parse_c_struct(source: &str, name: &str) -> Result<CStruct, String> {
    let open = format!("struct {name} {{");
    let start = source
        .find(&open)
        .ok_or_else(|| format!("no `{open}` in the header"))?
        + open.len();
    let body_len = source[start..]
        .find("};")
        .ok_or_else(|| format!("struct {name} has no closing `}};`"))?;
    let body: String = source[start..start + body_len]
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ");
    let (mut fields, mut offset, mut align_max) = (Vec::new(), 0usize, 1usize);
    for decl in body.split(';').map(str::trim).filter(|d| !d.is_empty()) {
        let (ty, names) = decl
            .split_once(char::is_whitespace)
            .ok_or_else(|| format!("struct {name}: cannot read `{decl}`"))?;
        let size = match ty {
            "kiln_i32" | "kiln_u32" | "float" | "int" => 4,
            "kiln_i64" | "kiln_u64" => 8,
            _ => return Err(format!("struct {name}: field type `{ty}` is not supported")),
        };
        align_max = align_max.max(size);
        for field in names.split(',').map(str::trim) {
            if field.is_empty()
                || !field
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return Err(format!(
                    "struct {name}: cannot read field `{field}` of `{decl}`"
                ));
            }
            offset = offset.next_multiple_of(size);
            fields.push(CField {
                name: field.to_string(),
                offset,
            });
            offset += size;
        }
    }
    Ok(CStruct {
        fields,
        size: offset.next_multiple_of(align_max),
    })
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
        assert!(parse_c_struct("struct A { double x; };", "A").is_err());
        assert!(parse_c_struct("struct B { int x; };", "A").is_err());
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
