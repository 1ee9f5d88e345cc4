//! GPU target identities and MIOpen's database basenames (`gfx906_60`, `gfx90a68`,
//! `gfx942130`, and kiln's NVIDIA form `sm_90_132`).

use core::fmt;

/// Which vendor's code objects a target uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vendor {
    /// AMD: HSA code objects (ELF, `e_machine` EM_AMDGPU) loaded with `hipModuleLoadData`.
    Amd,
    /// NVIDIA: cubins (ELF, `e_machine` EM_CUDA) loaded with `cuModuleLoadData`.
    Nvidia,
}

impl Vendor {
    /// `amd` or `nvidia`.
    pub const fn name(self) -> &'static str {
        match self {
            Vendor::Amd => "amd",
            Vendor::Nvidia => "nvidia",
        }
    }

    /// From its name (`amd`, `nvidia`).
    pub fn from_name(name: &str) -> Option<Vendor> {
        match name {
            "amd" => Some(Vendor::Amd),
            "nvidia" => Some(Vendor::Nvidia),
            _ => None,
        }
    }
}

/// A parsed basename: arch (with MIOpen's `_xnack` DbId suffix if any) and CU/SM count.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TargetId {
    /// `gfx942`, `gfx90a_xnack`, `sm_90`, ...
    pub arch: String,
    /// Compute units (AMD) or streaming multiprocessors (NVIDIA).
    pub compute_units: u32,
}

/// Why a basename could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BasenameError {
    /// The text that was given.
    pub basename: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for BasenameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bad target basename '{}': {}",
            self.basename, self.reason
        )
    }
}

impl std::error::Error for BasenameError {}

/// AMD architecture names MIOpen ships databases for, plus the ones kiln compiles for.
/// Longest names first so that prefix matching is unambiguous (`gfx1030` before `gfx103`).
pub const KNOWN_AMD_ARCHS: &[&str] = &[
    "gfx1010", "gfx1011", "gfx1012", "gfx1030", "gfx1031", "gfx1032", "gfx1034", "gfx1035",
    "gfx1036", "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152",
    "gfx1200", "gfx1201", "gfx803", "gfx900", "gfx906", "gfx908", "gfx90a", "gfx90c", "gfx940",
    "gfx941", "gfx942", "gfx950",
];

impl TargetId {
    /// A target from its parts.
    pub fn new(arch: &str, compute_units: u32) -> Self {
        TargetId {
            arch: arch.to_string(),
            compute_units,
        }
    }

    /// The vendor, from the arch prefix.
    pub fn vendor(&self) -> Vendor {
        if self.arch.starts_with("sm_") {
            Vendor::Nvidia
        } else {
            Vendor::Amd
        }
    }

    /// The basename MIOpen would use (`Handle::GetDbBasename`): `_` + decimal CU when
    /// CU <= 64, else lowercase hex with no separator. NVIDIA targets always use `_` + decimal.
    pub fn basename(&self) -> String {
        match self.vendor() {
            Vendor::Nvidia => format!("{}_{}", self.arch, self.compute_units),
            Vendor::Amd if self.compute_units <= 64 => {
                format!("{}_{}", self.arch, self.compute_units)
            }
            Vendor::Amd => format!("{}{:x}", self.arch, self.compute_units),
        }
    }

    /// Parses a basename. AMD arches are matched against [`KNOWN_AMD_ARCHS`] (optionally with
    /// `_xnack`), since `gfx90a68` cannot be split without knowing where the arch ends.
    pub fn parse_basename(basename: &str) -> Result<Self, BasenameError> {
        let err = |reason| BasenameError {
            basename: basename.to_string(),
            reason,
        };
        if let Some(rest) = basename.strip_prefix("sm_") {
            let (arch_num, cu) = rest
                .split_once('_')
                .ok_or(err("NVIDIA basenames are sm_<arch>_<SM count>"))?;
            if arch_num.is_empty() || !arch_num.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Err(err(
                    "the sm arch must be alphanumeric, e.g. sm_90 or sm_90a",
                ));
            }
            let cu = crate::problem::parse_u32(cu)
                .filter(|&c| c > 0)
                .ok_or(err("SM count must be a positive decimal"))?;
            return Ok(TargetId::new(&basename[..3 + arch_num.len()], cu));
        }
        let arch = KNOWN_AMD_ARCHS
            .iter()
            .filter(|a| basename.starts_with(**a))
            .max_by_key(|a| a.len())
            .ok_or(err("unknown arch (expected gfx... or sm_...)"))?;
        let mut arch = arch.to_string();
        let mut rest = &basename[arch.len()..];
        if let Some(r) = rest.strip_prefix("_xnack") {
            arch.push_str("_xnack");
            rest = r;
        }
        let cu = if let Some(dec) = rest.strip_prefix('_') {
            let cu =
                crate::problem::parse_u32(dec).ok_or(err("CU count after '_' must be decimal"))?;
            if cu > 64 {
                return Err(err("CU counts above 64 are written in hex without '_'"));
            }
            cu
        } else {
            if rest.is_empty()
                || !rest
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            {
                return Err(err("CU count missing or not lowercase hex"));
            }
            u32::from_str_radix(rest, 16).map_err(|_| err("CU count out of range"))?
        };
        if cu == 0 {
            return Err(err("CU count must be positive"));
        }
        Ok(TargetId {
            arch,
            compute_units: cu,
        })
    }
}

impl fmt::Display for TargetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.basename())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basenames_both_ways() {
        for (base, arch, cu) in [
            ("gfx906_60", "gfx906", 60),
            ("gfx90a68", "gfx90a", 104),
            ("gfx942130", "gfx942", 304),
            ("gfx90878", "gfx908", 120),
            ("gfx1030_36", "gfx1030", 36),
            ("gfx950100", "gfx950", 256),
            ("gfx90a_xnack68", "gfx90a_xnack", 104),
            ("sm_90_132", "sm_90", 132),
            ("sm_89_128", "sm_89", 128),
        ] {
            let t = TargetId::parse_basename(base).unwrap();
            assert_eq!((t.arch.as_str(), t.compute_units), (arch, cu), "{base}");
            assert_eq!(t.basename(), base);
        }
        assert_eq!(TargetId::new("sm_90", 132).vendor(), Vendor::Nvidia);
        assert_eq!(TargetId::new("gfx942", 304).vendor(), Vendor::Amd);
    }

    #[test]
    fn bad_basenames() {
        for bad in [
            "gfx999_4",
            "gfx906_",
            "gfx906_100",
            "gfx942XYZ",
            "sm_90",
            "sm_90_0",
            "gfx942_0",
        ] {
            assert!(TargetId::parse_basename(bad).is_err(), "{bad}");
        }
    }
}
