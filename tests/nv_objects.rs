//! kiln's own NVIDIA code objects keep out of local memory. NVRTC compiles them straight to
//! cubins, with no `ptxas -v` report for the build to gate on (the CUTLASS objects have one), so
//! a register-hungry change can give a kernel a stack frame unnoticed: the wgmma kernels' early
//! epilogue loads did, and cost a plain 1x1 layer 6%. Each cubin's `.nv.info` section says how
//! much stack every function uses (EIATTR_MAX_STACK_SIZE, what `cuobjdump -res-usage` reports
//! as STACK); this test reads it from every object of the committed NV kdbs and holds it to
//! `tests/data/nv-stack-baseline.tsv`.

mod common;

use std::collections::BTreeMap;

use kiln_embed::kdb::KernelDb;

const NV_TARGETS: [&str; 4] = ["sm_90_132", "sm_80_108", "sm_87_16", "sm_89_142"];

/// `.nv.info` attribute formats (a format byte, then an attribute byte, then the value).
const EIFMT_NVAL: u8 = 0x01;
const EIFMT_BVAL: u8 = 0x02;
const EIFMT_HVAL: u8 = 0x03;
const EIFMT_SVAL: u8 = 0x04;
/// A function's largest stack use: (symbol index, bytes), both u32.
const EIATTR_MAX_STACK_SIZE: u8 = 0x12;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Every function's largest stack use in a cubin: (offset of the value in the object, bytes).
fn stack_sizes(cubin: &[u8]) -> Result<Vec<(usize, u32)>, String> {
    let Some(info) = kiln::codeobject::section(cubin, ".nv.info").map_err(|e| e.to_string())?
    else {
        return Ok(Vec::new());
    };
    let base = info.as_ptr() as usize - cubin.as_ptr() as usize;
    let (mut at, mut sizes) = (0, Vec::new());
    while at + 2 <= info.len() {
        let (format, attribute) = (info[at], info[at + 1]);
        at += 2;
        at += match format {
            EIFMT_NVAL => 0,
            EIFMT_BVAL => 1,
            EIFMT_HVAL => 2,
            EIFMT_SVAL => {
                let size = u16_at(info, at).ok_or("truncated .nv.info")? as usize;
                if attribute == EIATTR_MAX_STACK_SIZE {
                    // (symbol index, bytes)
                    let bytes = u32_at(info, at + 6).ok_or("truncated stack size")?;
                    sizes.push((base + at + 6, bytes));
                }
                2 + size
            }
            other => return Err(format!(".nv.info: unknown attribute format {other:#x}")),
        };
    }
    Ok(sizes)
}

/// The largest stack any function of a cubin uses, in bytes.
fn max_stack_bytes(cubin: &[u8]) -> Result<u32, String> {
    Ok(stack_sizes(cubin)?
        .into_iter()
        .map(|(_, b)| b)
        .max()
        .unwrap_or(0))
}

/// (kernel_name, kernel_args without ` -mcpu=...`) -> bytes allowed.
fn baseline() -> BTreeMap<(String, String), u32> {
    let path = common::repo().join("tests/data/nv-stack-baseline.tsv");
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 3, "{}: {l}", path.display());
            ((f[0].into(), f[1].into()), f[2].parse().unwrap())
        })
        .collect()
}

#[test]
fn no_nvrtc_object_gains_a_stack_frame() {
    let allowed = baseline();
    let mut seen = BTreeMap::new();
    let mut grown = Vec::new();
    let mut objects = 0;
    for target in NV_TARGETS {
        let path = common::repo().join(format!("targets/{target}/{target}.kdb"));
        for e in KernelDb::read(&path).unwrap().entries {
            // CUTLASS's objects are gated by ptxas's own report when they are built.
            if e.kernel_name.contains("cutlass") || !e.object.starts_with(b"\x7fELF") {
                continue;
            }
            objects += 1;
            let stack = max_stack_bytes(&e.object).unwrap_or_else(|err| {
                panic!("{target} {} {}: {err}", e.kernel_name, e.kernel_args)
            });
            let args = e
                .kernel_args
                .split(" -mcpu=")
                .next()
                .unwrap()
                .trim()
                .to_string();
            let key = (e.kernel_name.clone(), args);
            if stack > allowed.get(&key).copied().unwrap_or(0) {
                grown.push(format!("{target} {} {}: {stack} bytes", key.0, key.1));
            }
            if stack > 0 {
                seen.insert(key, stack);
            }
        }
    }
    assert!(objects > 700, "read only {objects} NVRTC objects");
    assert!(
        grown.is_empty(),
        "objects with a stack frame larger than tests/data/nv-stack-baseline.tsv allows:\n{}",
        grown.join("\n")
    );
    // The reader finds the frames it should: every listed object still has one (a shrunk frame
    // is welcome; update the baseline then).
    let missing: Vec<_> = allowed.keys().filter(|k| !seen.contains_key(*k)).collect();
    assert!(
        missing.is_empty(),
        "listed objects with no stack frame now (update the baseline): {missing:?}"
    );
}

#[test]
fn the_stack_reader_reads_what_it_is_given() {
    assert!(max_stack_bytes(b"not an object").is_err());
    // A real object's frame, then the same object with its stack attribute's value raised.
    let path = common::repo().join("targets/sm_90_132/sm_90_132.kdb");
    let db = KernelDb::read(&path).unwrap();
    let streamk = db
        .entries
        .iter()
        .find(|e| {
            e.kernel_name == "nv/wgmma_conv.cu.o"
                && e.kernel_args
                    .contains("-DKILN_STREAM_K -DKILN_BM=256 -DKILN_BN=128 ")
                && !e.kernel_args.contains("IM2COL")
        })
        .unwrap();
    assert_eq!(max_stack_bytes(&streamk.object), Ok(40));
    // kiln's section lookup: a section the object lacks is none, not an error.
    assert!(matches!(
        kiln::codeobject::section(&streamk.object, ".no.such.section"),
        Ok(None)
    ));
    let mut raised = streamk.object.clone();
    let (at, _) = stack_sizes(&raised).unwrap()[0];
    raised[at..at + 4].copy_from_slice(&4096u32.to_le_bytes());
    assert_eq!(max_stack_bytes(&raised), Ok(4096));
}
