//! kiln-emu against LLVM on every AMD code object kiln embeds (`targets/gfx*/<base>.kdb`):
//! `llvm-objdump-19` is the decode oracle (each instruction's address and dwords, and its
//! mnemonic's format class), `llvm-readobj-19 --notes` the descriptor's (the metadata note's
//! LDS, kernarg, register counts and wave size). Both come from Debian's llvm-19
//! (`ci/setup.sh`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use kiln_emu::code_object::CodeObject;
use kiln_emu::decode::{self, Extension, Family, Format, Shape};
use kiln_emu::{opcodes, operands};

/// The formats whose gfx9 opcodes and operands kiln's tables hold.
const NAMED: [Format; 14] = [
    Format::Sop2,
    Format::Sop1,
    Format::Sopc,
    Format::Sopk,
    Format::Sopp,
    Format::Smem,
    Format::Vop1,
    Format::Vop2,
    Format::Vopc,
    Format::Vop3,
    Format::Vop3p,
    Format::Ds,
    Format::Flat,
    Format::Mubuf,
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every embedded AMD code object: (target, arch, object bytes).
fn amd_objects() -> Vec<(String, String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(repo().join("targets"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("gfx"))
        .collect();
    dirs.sort();
    for dir in dirs {
        let base = dir.file_name().unwrap().to_string_lossy().into_owned();
        let db = kiln_embed::kdb::KernelDb::read(&dir.join(format!("{base}.kdb"))).unwrap();
        for e in db.entries {
            let arch = e
                .kernel_args
                .split_whitespace()
                .find_map(|a| a.strip_prefix("-mcpu="))
                .unwrap()
                .to_string();
            out.push((base.clone(), arch, e.object));
        }
    }
    out
}

fn tool(name: &str) -> String {
    let ok = Command::new(name).arg("--version").output().is_ok();
    assert!(
        ok,
        "{name} is needed (Debian's llvm-19; ci/setup.sh installs it)"
    );
    name.to_string()
}

/// What one of LLVM's tools prints for `file` with `flag`; the test fails if it fails.
fn run(tool: &str, flag: &str, file: &Path) -> String {
    let out = Command::new(tool).arg(flag).arg(file).output().unwrap();
    assert!(
        out.status.success(),
        "{tool} {flag} {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// llvm-objdump's instructions: address -> (mnemonic, operands, dwords).
fn objdump(objdump: &str, file: &Path) -> HashMap<u64, (String, String, usize)> {
    let mut map = HashMap::new();
    for line in run(objdump, "-d", file).lines() {
        let Some((insn, comment)) = line.split_once("//") else {
            continue;
        };
        let Some((addr, words)) = comment.trim().split_once(':') else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr.trim(), 16) else {
            continue;
        };
        let mut parts = insn.split_whitespace();
        let mnemonic = parts.next().unwrap_or("").to_string();
        let operands = parts.collect::<Vec<_>>().join(" ");
        // The dwords, then for a branch its target (`<kernel+0x244>`).
        let dwords = words
            .split_whitespace()
            .take_while(|w| w.len() == 8 && w.chars().all(|c| c.is_ascii_hexdigit()))
            .count();
        map.insert(addr, (mnemonic, operands, dwords));
    }
    map
}

/// How the scalar memory mnemonics begin (any other `s_` mnemonic is scalar ALU or control).
const SMEM_PREFIXES: [&str; 10] = [
    "s_load",
    "s_buffer_",
    "s_store",
    "s_dcache",
    "s_memtime",
    "s_memrealtime",
    "s_scratch_",
    "s_atc_",
    "s_atomic",
    "s_gl1_inv",
];

/// Whether LLVM's mnemonic fits the decoded shape's format and extension.
fn agrees(m: &str, s: &Shape) -> bool {
    use Format::*;
    let ext_ok = match s.extension {
        Some(Extension::Sdwa) => m.ends_with("_sdwa"),
        Some(Extension::Dpp16 | Extension::Dpp8) => m.ends_with("_dpp"),
        None => !m.ends_with("_sdwa") && !m.ends_with("_dpp"),
    };
    let prefix = |p: &[&str]| p.iter().any(|x| m.starts_with(x));
    let fmt_ok = match s.format {
        Sop1 | Sop2 | Sopk | Sopc | Sopp => m.starts_with("s_") && !prefix(&SMEM_PREFIXES),
        Smem => prefix(&SMEM_PREFIXES),
        // LLVM writes `_e32` where a VOP3 form exists (v_readfirstlane_b32 and v_nop have none).
        Vop1 | Vop2 | Vopc => {
            m.starts_with("v_")
                && !m.contains("_e64")
                && (s.format != Vopc || m.starts_with("v_cmp"))
        }
        Vop3 => {
            m.starts_with("v_")
                && !m.contains("_e32")
                && !prefix(&["v_pk_", "v_mfma", "v_wmma", "v_dual_", "v_accvgpr"])
        }
        Vop3p => prefix(&[
            "v_pk_",
            "v_dot",
            "v_mfma",
            "v_wmma",
            "v_fma_mix",
            "v_mad_mix",
            "v_accvgpr",
            "v_swmmac",
        ]),
        Vopd => m.starts_with("v_dual_"),
        Vintrp | Vinterp => m.starts_with("v_interp"),
        Ldsdir => prefix(&[
            "lds_param_load",
            "lds_direct_load",
            "ds_param_load",
            "ds_direct_load",
        ]),
        Ds => m.starts_with("ds_"),
        Flat => prefix(&["flat_", "global_", "scratch_"]),
        Mubuf => m.starts_with("buffer_"),
        Mtbuf => m.starts_with("tbuffer_"),
        Mimg => m.starts_with("image_"),
        Exp => m.starts_with("exp"),
    };
    ext_ok && fmt_ok
}

#[test]
fn every_instruction_decodes_to_llvms_boundaries_and_format() {
    let objdump_bin = tool("llvm-objdump-19");
    let dir = tempfile::tempdir().unwrap();
    let mut per_target: Vec<(String, usize, usize, usize, usize)> = Vec::new();
    let mut mismatched: Vec<(String, String)> = Vec::new();
    for (i, (target, arch, bytes)) in amd_objects().iter().enumerate() {
        let family = Family::of_arch(arch).unwrap();
        let co = CodeObject::parse(bytes).unwrap_or_else(|e| panic!("{target} object {i}: {e}"));
        let path = dir.path().join(format!("{i}.o"));
        std::fs::write(&path, bytes).unwrap();
        let llvm = objdump(&objdump_bin, &path);
        let (mut count, mut named, mut with_operands) = (0, 0, 0);
        for k in &co.kernels {
            let words = co.words_from(k.entry).unwrap();
            let words = &words[..(k.code_size as usize / 4).min(words.len())];
            for (pc, s) in decode::walk(family, words, k.entry)
                .unwrap_or_else(|e| panic!("{target} ({arch}) object {i}, kernel {}: {e}", k.name))
            {
                let Some((m, ops, dwords)) = llvm.get(&pc) else {
                    panic!("{target} object {i}, kernel {}: kiln decodes an instruction at 0x{pc:x} ({s:?}); LLVM has none there", k.name);
                };
                assert_eq!(
                    (*dwords, agrees(m, &s)),
                    (s.dwords, true),
                    "{target} ({arch}) object {i}, kernel {}, 0x{pc:x}: LLVM `{m}` in {dwords} dwords; kiln {s:?}",
                    k.name
                );
                count += 1;
                // Where kiln's opcode tables cover the format, the same mnemonic.
                let first = words[((pc - k.entry) / 4) as usize];
                if let Ok(name) = opcodes::mnemonic(arch, family, s.format, first, pc) {
                    let bare = ["_e32", "_e64", "_sdwa", "_dpp"]
                        .iter()
                        .fold(m.as_str(), |m, suffix| m.strip_suffix(suffix).unwrap_or(m));
                    assert_eq!(name, bare, "{target} ({arch}) object {i}, 0x{pc:x}: {s:?}");
                    named += 1;
                    let at = ((pc - k.entry) / 4) as usize;
                    let written = operands::operands(arch, family, &s, &name, &words[at..], pc);
                    // Every operand is written as LLVM writes it; the first few differences
                    // (one per mnemonic) are reported together.
                    let wrong = match written {
                        Ok(text) if &text == ops => {
                            with_operands += 1;
                            None
                        }
                        Ok(text) => Some(format!("kiln `{text}`")),
                        Err(e) => Some(e.to_string()),
                    };
                    if let Some(why) = wrong {
                        if mismatched.len() < 40 && !mismatched.iter().any(|(n, _)| n == m) {
                            mismatched.push((
                                m.clone(),
                                format!("{target} ({arch}) object {i}, 0x{pc:x}: LLVM `{m} {ops}`, {why}"),
                            ));
                        }
                    }
                } else if NAMED.contains(&s.format) || s.format == Format::Vopd {
                    panic!("{target} ({arch}) object {i}, 0x{pc:x}: LLVM `{m}`, kiln has no name for 0x{first:08x}");
                }
            }
        }
        match per_target.iter_mut().find(|(t, ..)| t == target) {
            Some(t) => {
                t.1 += 1;
                t.2 += count;
                t.3 += named;
                t.4 += with_operands;
            }
            None => per_target.push((target.clone(), 1, count, named, with_operands)),
        }
    }
    for (t, objects, n, named, ops) in &per_target {
        println!("{t}: {objects} objects, {n} instructions decoded as LLVM does, {named} of them named as LLVM names them, {ops} with its operands");
    }
    assert_eq!(per_target.len(), 10, "{per_target:?}");
    assert!(per_target.iter().all(|(_, o, n, ..)| *o > 0 && *n > 1000));
    let report: Vec<&str> = mismatched.iter().map(|(_, why)| why.as_str()).collect();
    assert!(
        report.is_empty(),
        "operands unlike LLVM's:\n{}",
        report.join("\n")
    );
    // Every instruction carries LLVM's name and operands.
    assert!(per_target
        .iter()
        .all(|(_, _, n, named, ops)| named == n && ops == n));
}

/// The metadata note's numbers for each kernel, from llvm-readobj's YAML dump: the entries of
/// `amdhsa.kernels` (keys at one indentation; their argument lists, deeper, are skipped).
fn notes(readobj: &str, file: &Path) -> HashMap<String, HashMap<String, u64>> {
    let text = run(readobj, "--notes", file);
    let mut kernels = Vec::new();
    let mut names: HashMap<usize, String> = HashMap::new();
    let mut item_indent = None;
    let mut in_list = false;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let l = line.trim();
        if l.starts_with("amdhsa.kernels:") {
            in_list = true;
            continue;
        }
        if !in_list {
            continue;
        }
        let key_value = if let Some(rest) = l.strip_prefix("- ") {
            if item_indent.is_none() {
                item_indent = Some(indent);
            }
            if Some(indent) != item_indent {
                continue;
            }
            kernels.push(HashMap::new());
            rest
        } else if item_indent.is_some_and(|k| indent == k + 2) {
            l
        } else {
            if item_indent.is_some_and(|k| indent < k) {
                in_list = false;
            }
            continue;
        };
        let Some((key, value)) = key_value.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        let Some(current) = kernels.last_mut() else {
            continue;
        };
        if key == ".name" {
            names.insert(kernels.len() - 1, value.to_string());
        } else if let Ok(v) = value.parse::<u64>() {
            current.insert(key.to_string(), v);
        }
    }
    kernels
        .into_iter()
        .enumerate()
        .filter_map(|(i, k)| Some((names.get(&i)?.clone(), k)))
        .collect()
}

#[test]
fn every_descriptor_agrees_with_the_metadata_note() {
    let readobj = tool("llvm-readobj-19");
    let dir = tempfile::tempdir().unwrap();
    let mut kernels = 0;
    for (i, (target, arch, bytes)) in amd_objects().iter().enumerate() {
        let co = CodeObject::parse(bytes).unwrap();
        let path = dir.path().join(format!("{i}.o"));
        std::fs::write(&path, bytes).unwrap();
        let meta = notes(&readobj, &path);
        assert!(!co.kernels.is_empty(), "{target} object {i}: no kernels");
        for k in &co.kernels {
            let m = meta
                .get(&k.name)
                .unwrap_or_else(|| panic!("{target} object {i}: no metadata for {}", k.name));
            let d = &k.descriptor;
            let wave = m[".wavefront_size"];
            assert_eq!(d.wave32(), wave == 32, "{target} {}", k.name);
            assert_eq!(
                u64::from(d.group_segment_fixed_size),
                m[".group_segment_fixed_size"]
            );
            assert_eq!(u64::from(d.kernarg_size), m[".kernarg_segment_size"]);
            assert_eq!(
                u64::from(d.private_segment_fixed_size),
                m[".private_segment_fixed_size"]
            );
            // VGPRs are allocated in granules: 8 on gfx90a/gfx942 (AGPRs after the VGPRs) and
            // wave32 gfx10+, 4 elsewhere; gfx908's AGPRs are a file of their own, allocated
            // alike (the larger of the two counts).
            let agprs = m.get(".agpr_count").copied().unwrap_or(0);
            let vgprs = if arch == "gfx908" {
                m[".vgpr_count"].max(agprs)
            } else {
                m[".vgpr_count"]
            };
            let granule = match (arch.as_str(), wave) {
                ("gfx90a" | "gfx942", _) => 8,
                (_, 32) => 8,
                _ => 4,
            };
            let unified = if matches!(arch.as_str(), "gfx90a" | "gfx942") {
                // AGPRs start at the 4-aligned offset after the VGPRs.
                let agpr = m.get(".agpr_count").copied().unwrap_or(0);
                if agpr == 0 {
                    m[".vgpr_count"]
                } else {
                    m[".vgpr_count"].div_ceil(4) * 4 + agpr
                }
            } else {
                vgprs
            };
            assert_eq!(
                u64::from(d.vgpr_granules()),
                unified.max(1).div_ceil(granule) - 1,
                "{target} ({arch}) {}: rsrc1 0x{:x}, note {m:?}",
                k.name,
                d.compute_pgm_rsrc1
            );
            kernels += 1;
        }
    }
    println!("{kernels} kernel descriptors agree with their metadata notes");
    assert!(kernels >= 600);
}
