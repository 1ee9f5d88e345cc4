//! Checks on a code object before it reaches the driver. HIP takes no length with the image, so
//! every header, section and segment must lie within the bytes; and the object must be built for
//! the device (AMD: `e_flags` mach plus xnack/sramecc; NVIDIA: the cubin's SM).

use core::fmt;

/// ELF machine of AMD GPU code objects.
pub const EM_AMDGPU: u16 = 0xE0;
/// ELF machine of NVIDIA cubins.
pub const EM_CUDA: u16 = 190;

/// Every processor clang-19 targets for `amdgcn-amd-amdhsa` (its `--print-supported-cpus`,
/// generic targets aside) and the `EF_AMDGPU_MACH` value it writes, in mach order. Read off
/// clang-19's own objects, and checked against them by a test that builds one object per arch
/// (`amd_table_matches_clang`), so the table cannot drift from the compiler.
pub const AMD_MACH: &[(&str, u32)] = &[
    ("gfx600", 0x20),
    ("gfx601", 0x21),
    ("gfx700", 0x22),
    ("gfx701", 0x23),
    ("gfx702", 0x24),
    ("gfx703", 0x25),
    ("gfx704", 0x26),
    ("gfx801", 0x28),
    ("gfx802", 0x29),
    ("gfx803", 0x2a),
    ("gfx810", 0x2b),
    ("gfx900", 0x2c),
    ("gfx902", 0x2d),
    ("gfx904", 0x2e),
    ("gfx906", 0x2f),
    ("gfx908", 0x30),
    ("gfx909", 0x31),
    ("gfx90c", 0x32),
    ("gfx1010", 0x33),
    ("gfx1011", 0x34),
    ("gfx1012", 0x35),
    ("gfx1030", 0x36),
    ("gfx1031", 0x37),
    ("gfx1032", 0x38),
    ("gfx1033", 0x39),
    ("gfx602", 0x3a),
    ("gfx705", 0x3b),
    ("gfx805", 0x3c),
    ("gfx1035", 0x3d),
    ("gfx1034", 0x3e),
    ("gfx90a", 0x3f),
    ("gfx940", 0x40),
    ("gfx1100", 0x41),
    ("gfx1013", 0x42),
    ("gfx1150", 0x43),
    ("gfx1103", 0x44),
    ("gfx1036", 0x45),
    ("gfx1101", 0x46),
    ("gfx1102", 0x47),
    ("gfx1200", 0x48),
    ("gfx1151", 0x4a),
    ("gfx941", 0x4b),
    ("gfx942", 0x4c),
    ("gfx1201", 0x4e),
    ("gfx1152", 0x55),
];

/// `e_flags` bit of an arch-specific cubin (`sm_90a`: its features exist on that one compute
/// capability) in the ELF ABI 7 layout NVRTC 12 writes.
pub const EF_CUDA_ARCH_SPECIFIC_ABI7: u32 = 0x800;

/// What a code object is, read from its ELF header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectTarget {
    /// AMD code object: mach, xnack and sramecc settings (code object v4+ encoding).
    Amd {
        /// `EF_AMDGPU_MACH`.
        mach: u32,
        /// xnack: 0 unsupported, 1 any, 2 off, 3 on.
        xnack: u8,
        /// sramecc: 0 unsupported, 1 any, 2 off, 3 on.
        sramecc: u8,
    },
    /// NVIDIA cubin for `sm_<sm>` (`sm_<sm>a` when arch-specific).
    Nvidia {
        /// SM as major * 10 + minor.
        sm: u32,
        /// Built for exactly this compute capability (`sm_90a`: wgmma, TMA multicast...):
        /// loads on no other, not even a newer minor of the same major.
        arch_specific: bool,
    },
}

fn setting(v: u8) -> &'static str {
    ["unsupported", "any", "off", "on"][v as usize & 3]
}

impl fmt::Display for ObjectTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ObjectTarget::Amd {
                mach,
                xnack,
                sramecc,
            } => {
                let name = AMD_MACH
                    .iter()
                    .find(|(_, m)| m == mach)
                    .map_or("unknown gfx", |(n, _)| n);
                write!(
                    f,
                    "AMD {name} (mach 0x{mach:x}), xnack {}, sramecc {}",
                    setting(*xnack),
                    setting(*sramecc)
                )
            }
            ObjectTarget::Nvidia { sm, arch_specific } => write!(
                f,
                "NVIDIA cubin for sm_{sm}{}",
                if *arch_specific { "a" } else { "" }
            ),
        }
    }
}

/// Why a code object was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodeObjectError {
    /// Not a well-formed ELF, or something lies outside the bytes.
    Malformed(String),
    /// Built for another device.
    Mismatch {
        /// What the object is.
        object: String,
        /// What the device is.
        device: String,
    },
}

impl fmt::Display for CodeObjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodeObjectError::Malformed(why) => {
                write!(f, "code object is not a well-formed ELF: {why}")
            }
            CodeObjectError::Mismatch { object, device } => {
                write!(f, "code object does not fit the device: the binary has {object}; the device is {device}")
            }
        }
    }
}

impl std::error::Error for CodeObjectError {}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The ELF header fields kiln reads after [`check_elf_layout`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct ElfHeader {
    /// `e_machine`.
    pub machine: u16,
    /// `e_flags`.
    pub flags: u32,
    /// `EI_ABIVERSION`.
    pub abi_version: u8,
}

/// Checks that a 64-bit little-endian ELF of `len` bytes holds everything its headers point at:
/// the program and section header tables, every segment's and every section's file bytes.
/// `read_at(offset, size)` gives the bytes of a range inside the file (`None` past its end), so
/// a file on disk (a driver library, checked before `dlopen` maps it) need not be read whole.
pub(crate) fn check_elf_layout(
    len: u64,
    read_at: &dyn Fn(u64, u64) -> Option<Vec<u8>>,
) -> Result<ElfHeader, String> {
    let within = |off: u64, size: u64| off.checked_add(size).is_some_and(|end| end <= len);
    let head = read_at(0, 64).filter(|h| h.len() == 64 && &h[..4] == b"\x7fELF");
    let Some(head) = head else {
        return Err("no ELF header".into());
    };
    if head[4] != 2 || head[5] != 1 {
        return Err("not a 64-bit little-endian ELF".into());
    }
    let field = |at: usize, width: usize| -> u64 {
        let mut v = [0u8; 8];
        v[..width].copy_from_slice(&head[at..at + width]);
        u64::from_le_bytes(v)
    };
    let (phoff, shoff) = (field(32, 8), field(40, 8));
    let (phentsize, phnum) = (field(54, 2), field(56, 2));
    let (shentsize, shnum, shstrndx) = (field(58, 2), field(60, 2), field(62, 2));
    if phnum > 0 {
        if phentsize != 56 || !within(phoff, phentsize * phnum) {
            return Err("program header table lies outside the file".into());
        }
        let table = read_at(phoff, phentsize * phnum).ok_or("program header table unreadable")?;
        for (i, ph) in table.chunks_exact(56).enumerate() {
            let (off, filesz) = (
                u64_at(ph, 8).unwrap_or(u64::MAX),
                u64_at(ph, 32).unwrap_or(u64::MAX),
            );
            if !within(off, filesz) {
                return Err(format!("segment {i} lies outside the file"));
            }
        }
    }
    if shnum == 0 {
        return Err("no section headers".into());
    }
    if shentsize != 64 || !within(shoff, shentsize * shnum) || shstrndx >= shnum {
        return Err("section header table lies outside the file".into());
    }
    let table = read_at(shoff, shentsize * shnum).ok_or("section header table unreadable")?;
    for (i, sh) in table.chunks_exact(64).enumerate() {
        let sh_type = u32_at(sh, 4).unwrap_or(0);
        let (off, size) = (
            u64_at(sh, 24).unwrap_or(u64::MAX),
            u64_at(sh, 32).unwrap_or(u64::MAX),
        );
        const SHT_NOBITS: u32 = 8;
        if sh_type != SHT_NOBITS && !within(off, size) {
            return Err(format!("section {i} lies outside the file"));
        }
    }
    Ok(ElfHeader {
        machine: field(18, 2) as u16,
        flags: field(48, 4) as u32,
        abi_version: head[8],
    })
}

/// Checks the ELF structure and returns what the object is built for.
pub fn inspect(obj: &[u8]) -> Result<ObjectTarget, CodeObjectError> {
    let bad = |why: &str| CodeObjectError::Malformed(why.to_string());
    let read_at = |off: u64, size: u64| {
        let end = off.checked_add(size)?;
        obj.get(usize::try_from(off).ok()?..usize::try_from(end).ok()?)
            .map(<[u8]>::to_vec)
    };
    let header = check_elf_layout(obj.len() as u64, &read_at)
        .map_err(|why| bad(&why.replace("the file", "the object")))?;
    let (machine, flags) = (header.machine, header.flags);
    match machine {
        EM_AMDGPU => Ok(ObjectTarget::Amd {
            mach: flags & 0xff,
            xnack: ((flags >> 8) & 3) as u8,
            sramecc: ((flags >> 10) & 3) as u8,
        }),
        EM_CUDA => {
            // cubin ELF ABI 7 (CUDA 12) keeps the SM in the low byte; ABI 8 (CUDA 13) one byte
            // up. ABI 7 marks arch-specific cubins with bit 11; kiln builds ABI 7 (NVRTC 12.9),
            // and an ABI 8 cubin's arch-specific mark is not decoded here.
            let (sm, arch_specific) = if header.abi_version >= 8 {
                ((flags >> 8) & 0xff, false)
            } else {
                (flags & 0xff, flags & EF_CUDA_ARCH_SPECIFIC_ABI7 != 0)
            };
            Ok(ObjectTarget::Nvidia { sm, arch_specific })
        }
        m => Err(bad(&format!(
            "e_machine {m} is neither AMDGPU (224) nor CUDA (190)"
        ))),
    }
}

/// The bytes of the section called `name` (`.nv.info`, `.note`, ...), if the object has one.
/// The layout is checked first ([`inspect`]'s checks), so every section lies inside `obj`.
pub fn section<'a>(obj: &'a [u8], name: &str) -> Result<Option<&'a [u8]>, CodeObjectError> {
    inspect(obj)?;
    let bad = |why: &str| CodeObjectError::Malformed(why.to_string());
    let (Some(table), Some(count), Some(names_index)) =
        (u64_at(obj, 40), u16_at(obj, 60), u16_at(obj, 62))
    else {
        return Err(bad("truncated ELF header"));
    };
    // (name offset, file offset, size) of section i; the layout check bounds every one.
    let header = |i: usize| -> Option<(usize, usize, usize)> {
        let at = usize::try_from(table)
            .ok()?
            .checked_add(i.checked_mul(64)?)?;
        Some((
            u32_at(obj, at)? as usize,
            usize::try_from(u64_at(obj, at + 24)?).ok()?,
            usize::try_from(u64_at(obj, at + 32)?).ok()?,
        ))
    };
    let bytes = |offset: usize, size: usize| obj.get(offset..offset.checked_add(size)?);
    let names = header(names_index as usize)
        .and_then(|(_, at, size)| bytes(at, size))
        .ok_or_else(|| bad("section name table unreadable"))?;
    for i in 0..count as usize {
        let (name_at, offset, size) = header(i).ok_or_else(|| bad("section header unreadable"))?;
        let tail = names
            .get(name_at..)
            .ok_or_else(|| bad("section name past the name table"))?;
        let end = tail
            .iter()
            .position(|&c| c == 0)
            .ok_or_else(|| bad("unterminated section name"))?;
        if &tail[..end] == name.as_bytes() {
            return bytes(offset, size)
                .map(Some)
                .ok_or_else(|| bad("section lies outside the object"));
        }
    }
    Ok(None)
}

/// A code object that passed every check for a device: the only form a backend loads.
#[derive(Clone, Copy, Debug)]
pub struct CheckedObject<'a> {
    bytes: &'a [u8],
    device_arch: &'a str,
    target: ObjectTarget,
}

impl<'a> CheckedObject<'a> {
    /// The object's bytes (every ELF header, section and segment lies within them).
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The device arch it was checked for.
    pub fn device_arch(&self) -> &'a str {
        self.device_arch
    }

    /// What the object was built for.
    pub fn target(&self) -> ObjectTarget {
        self.target
    }
}

/// Checks `obj` against a device: AMD `gcnArchName` (`gfx90a:sramecc+:xnack-`) or NVIDIA
/// `sm_<major><minor>`.
pub fn check_for_device<'a>(
    obj: &'a [u8],
    device_arch: &'a str,
) -> Result<CheckedObject<'a>, CodeObjectError> {
    let target = check_target(obj, device_arch)?;
    Ok(CheckedObject {
        bytes: obj,
        device_arch,
        target,
    })
}

fn check_target(obj: &[u8], device_arch: &str) -> Result<ObjectTarget, CodeObjectError> {
    let target = inspect(obj)?;
    let mismatch = || CodeObjectError::Mismatch {
        object: target.to_string(),
        device: device_arch.to_string(),
    };
    match target {
        ObjectTarget::Amd {
            mach,
            xnack,
            sramecc,
        } => {
            let mut parts = device_arch.split(':');
            let name = parts.next().unwrap_or_default();
            let want = AMD_MACH
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, m)| *m)
                .ok_or_else(mismatch)?;
            if want != mach {
                return Err(mismatch());
            }
            for feature in parts {
                let (obj_setting, on) = match feature {
                    "xnack+" => (xnack, true),
                    "xnack-" => (xnack, false),
                    "sramecc+" => (sramecc, true),
                    "sramecc-" => (sramecc, false),
                    _ => continue,
                };
                // "unsupported" and "any" load in either mode; "on"/"off" must match the device.
                if (obj_setting == 3 && !on) || (obj_setting == 2 && on) {
                    return Err(mismatch());
                }
            }
            Ok(target)
        }
        ObjectTarget::Nvidia { sm, arch_specific } => {
            let dev = crate::solvers::SmVersion::parse(device_arch)
                .ok_or_else(mismatch)?
                .number();
            // SASS runs on the same major version with an equal or newer minor; an
            // arch-specific cubin on its own compute capability only.
            let fits = if arch_specific {
                sm == dev
            } else {
                sm / 10 == dev / 10 && sm % 10 <= dev % 10
            };
            if !fits {
                return Err(mismatch());
            }
            Ok(target)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The naive solver's FP32 object of an embedded target.
    #[allow(dead_code)] // the tests using it need particular target features
    fn object(target: &str) -> &'static [u8] {
        let t = crate::named_target(target).unwrap();
        let e = crate::solvers::by_id("ConvDirectNaiveFwd").unwrap().entry;
        let (name, args) = e.kdb_key("FP32", "", t.arch).unwrap();
        t.code_object(&name, &args).unwrap().unwrap().bytes
    }

    #[test]
    fn every_embedded_object_fits_its_target() {
        for t in crate::targets() {
            let Some(kdb) = t.kdb else { continue };
            for slot in 0..kdb.len().unwrap() {
                let rec = kdb.record(slot).unwrap();
                let obj = kiln_format::records::kdb_payload(rec.payload)
                    .unwrap()
                    .object;
                let device = if t.arch.starts_with("gfx") {
                    format!("{}:sramecc+:xnack-", t.arch)
                } else {
                    t.arch.to_string()
                };
                check_for_device(obj, &device).unwrap_or_else(|e| panic!("{}: {e}", t.basename));
            }
        }
    }

    #[test]
    #[cfg(all(feature = "gfx90a68", feature = "sm_90_132", feature = "sm_80_108"))]
    fn mismatches_name_both_sides() {
        let gfx90a = object("gfx90a68");
        let e = check_for_device(gfx90a, "gfx942:sramecc+:xnack-")
            .unwrap_err()
            .to_string();
        assert!(e.contains("the binary has AMD gfx90a (mach 0x3f), xnack any, sramecc any; the device is gfx942"), "{e}");
        let sm90 = object("sm_90_132");
        assert_eq!(
            inspect(sm90).unwrap(),
            ObjectTarget::Nvidia {
                sm: 90,
                arch_specific: false
            }
        );
        let e = check_for_device(sm90, "sm_80").unwrap_err().to_string();
        assert!(
            e.contains("NVIDIA cubin for sm_90; the device is sm_80"),
            "{e}"
        );
        assert!(check_for_device(object("sm_80_108"), "sm_86").is_ok());
        assert!(check_for_device(gfx90a, "sm_90").is_err());
    }

    #[test]
    #[cfg(feature = "gfx942130")]
    fn structure_outside_the_bytes_is_refused() {
        let obj = object("gfx942130");
        assert!(
            inspect(&obj[..obj.len() - 1]).is_err(),
            "sections end at the last byte"
        );
        assert!(inspect(&obj[..40]).is_err());
        let mut bad = obj.to_vec();
        bad[40..48].copy_from_slice(&(obj.len() as u64).to_le_bytes()); // e_shoff past the end
        assert!(matches!(inspect(&bad), Err(CodeObjectError::Malformed(_))));
        let mut bad = obj.to_vec();
        bad[0] = 0;
        assert!(inspect(&bad).is_err());
    }

    #[test]
    #[cfg(feature = "gfx942130")]
    fn sections_are_found_and_hostile_name_tables_refused() {
        let obj = object("gfx942130");
        let text = section(obj, ".text")
            .unwrap()
            .expect("a code object has .text");
        let at = text.as_ptr() as usize - obj.as_ptr() as usize;
        assert!(!text.is_empty() && at + text.len() <= obj.len());
        assert!(section(obj, ".no.such.section").unwrap().is_none());
        assert!(section(&obj[..obj.len() - 1], ".text").is_err());
        // Section 1's name offset at the name table's end (an unterminated name), then past it.
        let shoff = u64_at(obj, 40).unwrap() as usize;
        let names = shoff + 64 * u16_at(obj, 62).unwrap() as usize;
        let names_len = u64_at(obj, names + 32).unwrap() as u32;
        for (name_at, error) in [
            (names_len, "unterminated section name"),
            (u32::MAX, "section name past the name table"),
        ] {
            let mut bad = obj.to_vec();
            bad[shoff + 64..shoff + 68].copy_from_slice(&name_at.to_le_bytes());
            let e = section(&bad, ".text").unwrap_err().to_string();
            assert!(e.contains(error), "{e}");
        }
    }
}
