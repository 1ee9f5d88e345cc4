//! An AMDGPU code object: an ELF64 shared object (`e_machine` EM_AMDGPU) whose `.text` holds
//! the kernels' machine code and whose symbol table names each kernel (a function symbol) and
//! its 64-byte kernel descriptor (`<kernel>.kd`, an object symbol in `.rodata`). Layouts from
//! the ELF specification and LLVM's AMDGPU usage guide (the AMDHSA kernel descriptor).

use crate::metadata::{self, KernelMeta};
use crate::Error;

/// ELF's e_machine for AMD GPUs.
const EM_AMDGPU: u16 = 224;
/// Bytes of an AMDHSA kernel descriptor.
pub const DESCRIPTOR_BYTES: usize = 64;

/// A section header's fields this reader uses.
#[derive(Clone, Debug)]
struct Section {
    name: u32,
    kind: u32,
    addr: u64,
    offset: u64,
    size: u64,
    link: u32,
    entry_size: u64,
}

/// The AMDHSA kernel descriptor of one kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    /// Bytes of LDS the kernel allocates statically (dynamic LDS is added at launch).
    pub group_segment_fixed_size: u32,
    /// Bytes of scratch per work-item.
    pub private_segment_fixed_size: u32,
    /// Bytes of the kernel-argument segment.
    pub kernarg_size: u32,
    /// Byte offset of the entry from the descriptor's own address.
    pub kernel_code_entry_byte_offset: i64,
    /// COMPUTE_PGM_RSRC3 (gfx90a/gfx940: the AGPR offset; gfx10+: shared VGPRs, ...).
    pub compute_pgm_rsrc3: u32,
    /// COMPUTE_PGM_RSRC1: register granules, float modes.
    pub compute_pgm_rsrc1: u32,
    /// COMPUTE_PGM_RSRC2: user SGPRs, workgroup-id SGPRs, work-item-id VGPRs.
    pub compute_pgm_rsrc2: u32,
    /// Which SGPRs the hardware initialises, wave32.
    pub kernel_code_properties: u16,
}

impl Descriptor {
    /// Reads a descriptor from its 64 bytes.
    pub fn parse(b: &[u8]) -> Result<Descriptor, Error> {
        if b.len() < DESCRIPTOR_BYTES {
            return Err(Error::CodeObject(format!(
                "kernel descriptor of {} bytes; it has {DESCRIPTOR_BYTES}",
                b.len()
            )));
        }
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let mut off = [0u8; 8];
        off.copy_from_slice(&b[16..24]);
        Ok(Descriptor {
            group_segment_fixed_size: u32_at(0),
            private_segment_fixed_size: u32_at(4),
            kernarg_size: u32_at(8),
            kernel_code_entry_byte_offset: i64::from_le_bytes(off),
            compute_pgm_rsrc3: u32_at(44),
            compute_pgm_rsrc1: u32_at(48),
            compute_pgm_rsrc2: u32_at(52),
            kernel_code_properties: u16::from_le_bytes([b[56], b[57]]),
        })
    }

    /// Whether waves are 32 lanes wide (KERNEL_CODE_PROPERTY_ENABLE_WAVEFRONT_SIZE32).
    pub fn wave32(&self) -> bool {
        self.kernel_code_properties & (1 << 10) != 0
    }

    /// GRANULATED_WORKITEM_VGPR_COUNT: VGPR blocks allocated, minus one.
    pub fn vgpr_granules(&self) -> u32 {
        self.compute_pgm_rsrc1 & 0x3f
    }

    /// GRANULATED_WAVEFRONT_SGPR_COUNT: SGPR blocks, minus one (gfx9; unused from gfx10).
    pub fn sgpr_granules(&self) -> u32 {
        (self.compute_pgm_rsrc1 >> 6) & 0xf
    }

    /// USER_SGPR_COUNT: SGPRs loaded before the wave starts (kernarg pointer and the rest).
    pub fn user_sgprs(&self) -> u32 {
        (self.compute_pgm_rsrc2 >> 1) & 0x1f
    }

    /// Whether s[USER_SGPR_COUNT..] hold the workgroup id in x, y and z.
    pub fn workgroup_id_sgprs(&self) -> [bool; 3] {
        [7, 8, 9].map(|bit| self.compute_pgm_rsrc2 & (1 << bit) != 0)
    }

    /// ENABLE_VGPR_WORKITEM_ID: 0 (x only in v0), 1 (x, y), 2 (x, y, z).
    pub fn workitem_id_vgprs(&self) -> u32 {
        (self.compute_pgm_rsrc2 >> 11) & 3
    }
}

/// One kernel of a code object.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// Its symbol name.
    pub name: String,
    /// Address of its first instruction.
    pub entry: u64,
    /// Bytes of code from the entry (its function symbol's size).
    pub code_size: u64,
    /// Its descriptor.
    pub descriptor: Descriptor,
    /// Where the descriptor's 64 bytes lie in the file.
    pub descriptor_file_offset: u64,
}

/// A code object's kernels and code.
#[derive(Clone, Debug)]
pub struct CodeObject {
    /// `e_flags`' EF_AMDGPU_MACH field (the GPU the object is built for).
    pub mach: u32,
    /// Address of `.text`.
    pub text_addr: u64,
    /// `.text`'s bytes.
    pub text: Vec<u8>,
    /// Where `.text` lies in the file.
    pub text_file_offset: u64,
    /// Kernels by name, in symbol-table order.
    pub kernels: Vec<Kernel>,
    /// Each kernel's metadata (arguments, kernarg size) from the `NT_AMDGPU_METADATA` note;
    /// empty when the object has none.
    pub metadata: Vec<KernelMeta>,
}

impl CodeObject {
    /// Reads a code object; every offset and size is checked against the file.
    pub fn parse(bytes: &[u8]) -> Result<CodeObject, Error> {
        let bad = |why: &str| Error::CodeObject(why.to_string());
        let get = |off: u64, len: u64| -> Result<&[u8], Error> {
            let end = off
                .checked_add(len)
                .ok_or_else(|| bad("offset overflows"))?;
            bytes
                .get(off as usize..end as usize)
                .filter(|_| end <= bytes.len() as u64)
                .ok_or_else(|| {
                    Error::CodeObject(format!(
                        "bytes {off}..{end} lie outside the {}-byte file",
                        bytes.len()
                    ))
                })
        };
        let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u32_at = |b: &[u8], o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |b: &[u8], o: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[o..o + 8]);
            u64::from_le_bytes(a)
        };
        let header = get(0, 64)?;
        if &header[..4] != b"\x7fELF" || header[4] != 2 || header[5] != 1 {
            return Err(bad("not a little-endian ELF64 file"));
        }
        if u16_at(header, 18) != EM_AMDGPU {
            return Err(bad("not an AMDGPU object (e_machine is not 224)"));
        }
        let mach = u32_at(header, 48) & 0xff;
        let (shoff, shentsize, shnum) = (
            u64_at(header, 40),
            u64::from(u16_at(header, 58)),
            u64::from(u16_at(header, 60)),
        );
        if shentsize < 64 {
            return Err(bad("section headers shorter than ELF64's"));
        }
        let sections: Vec<Section> = (0..shnum)
            .map(|i| {
                let at = i
                    .checked_mul(shentsize)
                    .and_then(|o| o.checked_add(shoff))
                    .ok_or_else(|| bad("section header offset overflows"))?;
                let h = get(at, 64)?;
                Ok(Section {
                    name: u32_at(h, 0),
                    kind: u32_at(h, 4),
                    addr: u64_at(h, 16),
                    offset: u64_at(h, 24),
                    size: u64_at(h, 32),
                    link: u32_at(h, 40),
                    entry_size: u64_at(h, 56),
                })
            })
            .collect::<Result<_, Error>>()?;
        let shstrndx = usize::from(u16_at(header, 62));
        let names = sections
            .get(shstrndx)
            .ok_or_else(|| bad("no section-name table"))?;
        let names = get(names.offset, names.size)?;
        let c_str = |table: &[u8], at: u32| -> String {
            let s = table.get(at as usize..).unwrap_or_default();
            let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
            String::from_utf8_lossy(&s[..end]).into_owned()
        };
        let text = sections
            .iter()
            .find(|s| c_str(names, s.name) == ".text")
            .ok_or_else(|| bad("no .text section"))?;
        let text_bytes = get(text.offset, text.size)?.to_vec();
        // SHT_SYMTAB (2) and the string table it links to.
        let symtab = sections
            .iter()
            .find(|s| s.kind == 2)
            .ok_or_else(|| bad("no symbol table"))?;
        let strtab = sections
            .get(symtab.link as usize)
            .ok_or_else(|| bad("the symbol table links to no string table"))?;
        let strings = get(strtab.offset, strtab.size)?;
        let entry = symtab.entry_size.max(24);
        let mut funcs = Vec::new();
        let mut descriptors = Vec::new();
        for i in 0..symtab.size / entry {
            let s = get(symtab.offset.saturating_add(i * entry), 24)?;
            let (name, info, shndx) = (u32_at(s, 0), s[4], usize::from(u16_at(s, 6)));
            let (value, size) = (u64_at(s, 8), u64_at(s, 16));
            let name = c_str(strings, name);
            match info & 0xf {
                // STT_FUNC: a kernel's code.
                2 => funcs.push((name, value, size)),
                // STT_OBJECT named `<kernel>.kd`: its descriptor, read through its section.
                1 if name.ends_with(".kd") => {
                    let sec = sections
                        .get(shndx)
                        .ok_or_else(|| bad("a descriptor symbol names no section"))?;
                    let at = value
                        .checked_sub(sec.addr)
                        .ok_or_else(|| bad("a descriptor lies before its section"))?;
                    let file_offset = sec.offset.saturating_add(at);
                    let b = get(file_offset, DESCRIPTOR_BYTES as u64)?;
                    descriptors.push((name, value, file_offset, Descriptor::parse(b)?));
                }
                _ => {}
            }
        }
        let mut kernels = Vec::new();
        for (kd_name, kd_addr, descriptor_file_offset, descriptor) in descriptors {
            let name = kd_name.trim_end_matches(".kd").to_string();
            let entry =
                (kd_addr as i64).wrapping_add(descriptor.kernel_code_entry_byte_offset) as u64;
            let code_size = funcs
                .iter()
                .find(|(n, _, _)| *n == name)
                .map(|&(_, v, s)| {
                    if v == entry {
                        Ok(s)
                    } else {
                        Err(Error::CodeObject(format!(
                            "kernel {name}: the descriptor's entry 0x{entry:x} is not its symbol's 0x{v:x}"
                        )))
                    }
                })
                .transpose()?
                .ok_or_else(|| Error::CodeObject(format!("kernel {name}: no function symbol")))?;
            if entry < text.addr
                || entry.saturating_add(code_size) > text.addr.saturating_add(text.size)
            {
                return Err(Error::CodeObject(format!(
                    "kernel {name}: code 0x{entry:x}+{code_size} lies outside .text"
                )));
            }
            kernels.push(Kernel {
                name,
                entry,
                code_size,
                descriptor,
                descriptor_file_offset,
            });
        }
        // SHT_NOTE (7) sections: the AMDGPU metadata note.
        let mut metadata = Vec::new();
        for note in sections.iter().filter(|s| s.kind == 7) {
            let body = get(note.offset, note.size)?;
            let mut at = 0usize;
            while at + 12 <= body.len() {
                let (namesz, descsz, kind) = (
                    u32_at(body, at) as usize,
                    u32_at(body, at + 4) as usize,
                    u32_at(body, at + 8),
                );
                let name_at = at + 12;
                let desc_at = name_at.saturating_add(namesz.next_multiple_of(4));
                let end = desc_at.saturating_add(descsz.next_multiple_of(4));
                let (Some(name), Some(desc)) = (
                    body.get(name_at..name_at.saturating_add(namesz)),
                    body.get(desc_at..desc_at.saturating_add(descsz)),
                ) else {
                    return Err(bad("a note runs past its section"));
                };
                if name.strip_suffix(b"\0").unwrap_or(name) == b"AMDGPU"
                    && kind == metadata::NT_AMDGPU_METADATA
                {
                    metadata = metadata::parse(desc)?;
                }
                at = end;
            }
        }
        Ok(CodeObject {
            mach,
            text_addr: text.addr,
            text: text_bytes,
            text_file_offset: text.offset,
            kernels,
            metadata,
        })
    }

    /// The metadata of the kernel `name`.
    pub fn metadata_of(&self, name: &str) -> Option<&KernelMeta> {
        self.metadata.iter().find(|m| m.name == name)
    }

    /// The 32-bit words of `.text` from `addr` to its end (instructions are dword-aligned).
    pub fn words_from(&self, addr: u64) -> Result<Vec<u32>, Error> {
        let start = addr
            .checked_sub(self.text_addr)
            .filter(|o| o % 4 == 0 && *o <= self.text.len() as u64)
            .ok_or_else(|| Error::CodeObject(format!("0x{addr:x} is not a dword of .text")))?;
        Ok(self.text[start as usize..]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}
