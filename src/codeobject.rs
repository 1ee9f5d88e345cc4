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

fn within(len: usize, off: u64, size: u64) -> bool {
    off.checked_add(size).is_some_and(|end| end <= len as u64)
}

/// Checks the ELF structure and returns what the object is built for.
pub fn inspect(obj: &[u8]) -> Result<ObjectTarget, CodeObjectError> {
    let bad = |why: &str| CodeObjectError::Malformed(why.to_string());
    if obj.len() < 64 || &obj[..4] != b"\x7fELF" {
        return Err(bad("no ELF header"));
    }
    if obj[4] != 2 || obj[5] != 1 {
        return Err(bad("not a 64-bit little-endian ELF"));
    }
    let machine = u16_at(obj, 18).ok_or(bad("truncated header"))?;
    let flags = u32_at(obj, 48).ok_or(bad("truncated header"))?;
    let phoff = u64_at(obj, 32).ok_or(bad("truncated header"))?;
    let shoff = u64_at(obj, 40).ok_or(bad("truncated header"))?;
    let (phentsize, phnum) = (
        u16_at(obj, 54).unwrap_or(0) as u64,
        u16_at(obj, 56).unwrap_or(0) as u64,
    );
    let (shentsize, shnum, shstrndx) = (
        u16_at(obj, 58).unwrap_or(0) as u64,
        u16_at(obj, 60).unwrap_or(0) as u64,
        u16_at(obj, 62).unwrap_or(0) as u64,
    );
    if phnum > 0 {
        if phentsize != 56 || !within(obj.len(), phoff, phentsize * phnum) {
            return Err(bad("program header table lies outside the object"));
        }
        for i in 0..phnum {
            let at = (phoff + i * 56) as usize;
            let (off, filesz) = (
                u64_at(obj, at + 8).unwrap_or(u64::MAX),
                u64_at(obj, at + 32).unwrap_or(u64::MAX),
            );
            if !within(obj.len(), off, filesz) {
                return Err(bad(&format!("segment {i} lies outside the object")));
            }
        }
    }
    if shnum == 0 {
        return Err(bad("no section headers"));
    }
    if shentsize != 64 || !within(obj.len(), shoff, shentsize * shnum) || shstrndx >= shnum {
        return Err(bad("section header table lies outside the object"));
    }
    for i in 0..shnum {
        let at = (shoff + i * 64) as usize;
        let sh_type = u32_at(obj, at + 4).unwrap_or(0);
        let (off, size) = (
            u64_at(obj, at + 24).unwrap_or(u64::MAX),
            u64_at(obj, at + 32).unwrap_or(u64::MAX),
        );
        const SHT_NOBITS: u32 = 8;
        if sh_type != SHT_NOBITS && !within(obj.len(), off, size) {
            return Err(bad(&format!("section {i} lies outside the object")));
        }
    }
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
            let (sm, arch_specific) = if obj[8] >= 8 {
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
            let dev: u32 = device_arch
                .strip_prefix("sm_")
                .map(|s| s.trim_end_matches('a'))
                .and_then(|s| s.parse().ok())
                .ok_or_else(mismatch)?;
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
}
