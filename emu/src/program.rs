//! A kernel ready to run: its code decoded once into instructions (operation, encoding
//! fields, literal or SDWA dword), indexed by address so that a branch finds its target in
//! constant time, plus the descriptor and metadata a launch needs.

use crate::code_object::{CodeObject, Descriptor};
use crate::decode::{self, Extension, Family, Format};
use crate::isa::Op;
use crate::metadata::KernelMeta;
use crate::{opcodes, Error};

/// The architectures kiln builds for, which the executor models (their EF_AMDGPU_MACH values
/// are kiln's table, `kiln::codeobject::AMD_MACH`, checked against clang).
const MODELED: [&str; 10] = [
    "gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1103", "gfx1150",
    "gfx1151",
];

/// The architecture an object's EF_AMDGPU_MACH names, among those kiln builds for.
pub fn arch_of_mach(mach: u32) -> Option<&'static str> {
    kiln::codeobject::AMD_MACH
        .iter()
        .find(|(_, m)| *m == mach)
        .and_then(|(a, _)| known_arch(a))
}

/// The architecture name `arch` as kiln-emu spells it, if it models it.
pub fn known_arch(arch: &str) -> Option<&'static str> {
    MODELED.iter().find(|a| **a == arch).copied()
}

/// One decoded instruction.
#[derive(Clone, Debug)]
pub struct Inst {
    /// Its address.
    pub pc: u64,
    /// What it does.
    pub op: Op,
    /// Its encoding.
    pub format: Format,
    /// Its SDWA or DPP dword, if any.
    pub extension: Option<Extension>,
    /// Its first two dwords (the second is 0 for one-dword encodings).
    pub w: [u32; 2],
    /// Its literal constant (0 when none).
    pub literal: u32,
    /// Its SDWA dword (0 when none).
    pub sdwa: u32,
    /// Its size in bytes.
    pub bytes: u32,
    /// Its mnemonic, for messages.
    pub name: Box<str>,
}

/// A kernel decoded for execution.
#[derive(Clone, Debug)]
pub struct Program {
    /// Kernel symbol name.
    pub name: String,
    /// Architecture (`gfx90a`, ...).
    pub arch: &'static str,
    /// Its encoding family.
    pub family: Family,
    /// Address of its first instruction.
    pub entry: u64,
    /// Its descriptor.
    pub descriptor: Descriptor,
    /// Its metadata (arguments).
    pub meta: KernelMeta,
    insts: Vec<Inst>,
    /// Per dword from the entry: the index of the instruction starting there, or u32::MAX.
    at: Vec<u32>,
}

impl Program {
    /// Decodes kernel `name` of `object`.
    pub fn load(object: &CodeObject, name: &str) -> Result<Program, Error> {
        let arch = arch_of_mach(object.mach).ok_or_else(|| {
            Error::CodeObject(format!(
                "EF_AMDGPU_MACH 0x{:x} is none of the architectures kiln builds for",
                object.mach
            ))
        })?;
        let family = Family::of_arch(arch)?;
        let kernel = object
            .kernels
            .iter()
            .find(|k| k.name == name)
            .ok_or_else(|| Error::CodeObject(format!("no kernel named {name:?}")))?;
        let meta = object
            .metadata_of(name)
            .ok_or_else(|| Error::CodeObject(format!("kernel {name}: no metadata")))?
            .clone();
        // The runtime packs what the metadata lists; the hardware maps what the descriptor
        // sizes. A disagreement is a broken object.
        if meta.kernarg_segment_size != kernel.descriptor.kernarg_size {
            return Err(Error::CodeObject(format!(
                "kernel {name}: the metadata's kernarg segment is {} B, the descriptor's {} B",
                meta.kernarg_segment_size, kernel.descriptor.kernarg_size
            )));
        }
        let words = object.words_from(kernel.entry)?;
        let dwords = (kernel.code_size / 4) as usize;
        let words = &words[..dwords.min(words.len())];
        let mut insts = Vec::new();
        let mut at = vec![u32::MAX; words.len()];
        let mut i = 0usize;
        while i < words.len() {
            let pc = kernel.entry + 4 * i as u64;
            let shape = decode::shape(family, &words[i..], pc)?;
            let w = &words[i..i + shape.dwords];
            let mnemonic = opcodes::mnemonic(arch, family, shape.format, w[0], pc)
                .unwrap_or_else(|_| format!("<undefined {:?} 0x{:08x}>", shape.format, w[0]));
            let base = mnemonic
                .trim_end_matches("_e32")
                .trim_end_matches("_e64")
                .to_string();
            let op = if shape.format == Format::Vopd {
                Op::Vopd
            } else if shape.extension.is_some_and(|e| e != Extension::Sdwa) {
                // DPP is not executed yet: the instruction fails if it runs.
                Op::Unknown
            } else {
                Op::of(&base)
            };
            let two = matches!(
                shape.format,
                Format::Vop3
                    | Format::Vop3p
                    | Format::Vopd
                    | Format::Smem
                    | Format::Ds
                    | Format::Flat
                    | Format::Mubuf
                    | Format::Mtbuf
                    | Format::Mimg
            );
            let last = w[shape.dwords - 1];
            at[i] = insts.len() as u32;
            insts.push(Inst {
                pc,
                op,
                format: shape.format,
                extension: shape.extension,
                w: [w[0], if two { w[1] } else { 0 }],
                literal: if shape.literal { last } else { 0 },
                sdwa: if shape.extension == Some(Extension::Sdwa) {
                    w[1]
                } else {
                    0
                },
                bytes: 4 * shape.dwords as u32,
                name: mnemonic.into_boxed_str(),
            });
            i += shape.dwords;
        }
        Ok(Program {
            name: name.to_string(),
            arch,
            family,
            entry: kernel.entry,
            descriptor: kernel.descriptor,
            meta,
            insts,
            at,
        })
    }

    /// The instruction at `pc`; an error when no instruction of the kernel starts there.
    pub fn at(&self, pc: u64) -> Result<&Inst, Error> {
        pc.checked_sub(self.entry)
            .filter(|o| o % 4 == 0)
            .and_then(|o| self.at.get((o / 4) as usize))
            .and_then(|&i| self.insts.get(i as usize))
            .ok_or_else(|| {
                Error::Fault(format!(
                    "kernel {}: pc 0x{pc:x} is not an instruction of the kernel",
                    self.name
                ))
            })
    }

    /// Whether waves are 64 lanes wide.
    pub fn wave64(&self) -> bool {
        !self.descriptor.wave32()
    }
}
