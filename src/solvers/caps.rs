//! The device description a solver plans against: arch, SM or CU count, shared memory per block
//! and per SM, thread-block clusters and TMA. Solvers read every device fact from here (as
//! CUTLASS's kernels read `KernelHardwareInfo::sm_count`), so a plan for a 108-SM A100 or a
//! 16-SM Orin uses their own counts, not an H100's.

use kiln_format::{EmbeddedTarget, Vendor};

/// An NVIDIA compute capability, parsed once from an arch name (`sm_86` -> 8.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SmVersion {
    /// Major version (9 for sm_90).
    pub major: u32,
    /// Minor version (0 for sm_90).
    pub minor: u32,
}

impl SmVersion {
    /// `sm_86` -> 8.6, `sm_90a` -> 9.0, `sm_100` -> 10.0; `None` for anything else (AMD names).
    pub fn parse(arch: &str) -> Option<SmVersion> {
        let digits = arch.strip_prefix("sm_")?;
        let digits = digits.strip_suffix('a').unwrap_or(digits);
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let n: u32 = digits.parse().ok()?;
        Some(SmVersion {
            major: n / 10,
            minor: n % 10,
        })
    }

    /// The version as NVIDIA writes it in arch names: 90 for 9.0.
    pub fn number(self) -> u32 {
        self.major * 10 + self.minor
    }
}

/// SMs of the device the cost models' throughput figures were measured on (an H100 SXM).
pub const MEASURED_SMS: f64 = 132.0;

/// Shared memory the driver keeps for each block of an SM (sm_80 and later), beside what the
/// launch asks for.
pub const RESERVED_SHARED_PER_BLOCK: u64 = 1024;

/// What a solver may ask of the device it would run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetCaps {
    /// Vendor.
    pub vendor: Vendor,
    /// Arch whose limits apply (`sm_90`, `gfx942`): the device's.
    pub arch: &'static str,
    /// `arch` parsed, for NVIDIA arches.
    pub sm: Option<SmVersion>,
    /// Arch the target's code objects were built for: the manifest's `archs` gate reads it. The
    /// same as `arch`, except on a device running a lower arch's objects (sm_86 running sm_80).
    pub code_arch: &'static str,
    /// SM or CU count: how many blocks run at once, one per SM, for kernels that fill an SM.
    pub compute_units: u32,
    /// Dynamic shared memory (AMD: LDS) one block may use, bytes (NVIDIA: the opt-in maximum).
    pub shared_per_block: u32,
    /// Shared memory of one SM or CU, bytes (how many blocks of a size fit at once).
    pub shared_per_unit: u32,
    /// Blocks a thread-block cluster may hold at most (the portable size); 1: no clusters.
    pub max_cluster: u32,
    /// Whether the device has the tensor memory accelerator (TMA tensor maps, sm_90+).
    pub tma: bool,
}

/// NVIDIA arches a device may report, as static names (a device description's arch is a
/// `String`; caps hold `&'static str`).
const NVIDIA_ARCHS: &[&str] = &[
    "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_100",
    "sm_101", "sm_103", "sm_110", "sm_120", "sm_121",
];

/// Shared memory per block (opt-in maximum) and per SM of an NVIDIA compute capability, from
/// the CUDA programming guide's table of technical specifications.
fn nvidia_shared(sm: SmVersion) -> (u32, u32) {
    const KIB: u32 = 1024;
    match sm.number() {
        70 | 72 => (96 * KIB, 96 * KIB),
        75 => (64 * KIB, 64 * KIB),
        80 | 87 => (163 * KIB, 164 * KIB),
        86 | 88 | 89 | 120 | 121 => (99 * KIB, 100 * KIB),
        90 | 100 | 101 | 103 | 110 => (227 * KIB, 228 * KIB),
        _ => (48 * KIB, 48 * KIB),
    }
}

impl TargetCaps {
    /// The description of a device of `vendor` and `arch` with `compute_units` SMs or CUs
    /// running objects built for `code_arch`; the other limits follow from the arch.
    pub fn describe(
        vendor: Vendor,
        arch: &'static str,
        code_arch: &'static str,
        compute_units: u32,
    ) -> TargetCaps {
        let sm = SmVersion::parse(arch).filter(|_| vendor == Vendor::Nvidia);
        let (shared_per_block, shared_per_unit) = match sm {
            Some(sm) => nvidia_shared(sm),
            // GCN/CDNA: 64 KiB of LDS per workgroup and per CU.
            None => (64 * 1024, 64 * 1024),
        };
        let hopper = sm.is_some_and(|v| v.major >= 9);
        TargetCaps {
            vendor,
            arch,
            sm,
            code_arch,
            compute_units: compute_units.max(1),
            shared_per_block,
            shared_per_unit,
            max_cluster: if hopper { 8 } else { 1 },
            tma: hopper,
        }
    }

    /// The device an embedded target was tuned for: its arch and SM/CU count.
    pub fn of(t: &EmbeddedTarget) -> TargetCaps {
        TargetCaps::describe(t.vendor, t.arch, t.arch, t.compute_units)
    }

    /// What a device running target `t` gives: its own SM/CU count (a 114-SM H100 PCIe runs
    /// the 132-SM target's objects with 114 SMs), and, on a higher arch of the same NVIDIA
    /// major version (an sm_86 running sm_80 objects), its own limits (sm_86 gives a block
    /// 99 KiB of shared memory, sm_80 163 KiB).
    pub fn on_device(t: &EmbeddedTarget, device_arch: &str, compute_units: u32) -> TargetCaps {
        let arch = match NVIDIA_ARCHS.iter().find(|a| **a == device_arch) {
            Some(arch) if t.vendor == Vendor::Nvidia => arch,
            _ => t.arch,
        };
        let units = if compute_units == 0 {
            t.compute_units
        } else {
            compute_units
        };
        TargetCaps::describe(t.vendor, arch, t.arch, units)
    }

    /// The device's throughput relative to the one the cost models' rates were measured on
    /// ([`MEASURED_SMS`]), by SM or CU count: per-SM rates are taken as the H100's, a
    /// first-order model for other devices of its generation.
    pub fn throughput_scale(&self) -> f64 {
        self.compute_units as f64 / MEASURED_SMS
    }

    /// Whether the device is exactly compute capability `major.minor` (sm_90a objects load
    /// on 9.0 only).
    pub fn is_sm(&self, major: u32, minor: u32) -> bool {
        self.sm == Some(SmVersion { major, minor })
    }

    /// Whether the objects the device runs were built for compute capability `major.minor` or
    /// later (an sm_90 feature in their code: `griddepcontrol`, clusters).
    pub fn code_at_least(&self, major: u32, minor: u32) -> bool {
        SmVersion::parse(self.code_arch).is_some_and(|v| v >= SmVersion { major, minor })
    }
}

/// Devices the solver tests plan against.
#[cfg(test)]
pub(crate) mod devices {
    use super::*;

    /// An H100 SXM or H200: sm_90, 132 SMs.
    pub fn h100() -> TargetCaps {
        TargetCaps::describe(Vendor::Nvidia, "sm_90", "sm_90", 132)
    }

    /// An A100: sm_80, 108 SMs.
    pub fn a100() -> TargetCaps {
        TargetCaps::describe(Vendor::Nvidia, "sm_80", "sm_80", 108)
    }

    /// A Jetson AGX Orin: sm_87, 16 SMs, running sm_80 objects.
    pub fn orin() -> TargetCaps {
        TargetCaps::describe(Vendor::Nvidia, "sm_87", "sm_80", 16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sm_versions_parse_once_for_every_use() {
        assert_eq!(
            SmVersion::parse("sm_86"),
            Some(SmVersion { major: 8, minor: 6 })
        );
        assert_eq!(SmVersion::parse("sm_90a").map(SmVersion::number), Some(90));
        assert_eq!(SmVersion::parse("sm_100").map(SmVersion::number), Some(100));
        for bad in ["gfx942", "sm_", "sm_9", "sm_+90", "sm_9x", "sm_90aa"] {
            assert_eq!(SmVersion::parse(bad), None, "{bad}");
        }
        assert!(SmVersion::parse("sm_89") < SmVersion::parse("sm_90"));
    }

    #[test]
    fn each_device_brings_its_own_limits() {
        let h = devices::h100();
        assert_eq!((h.compute_units, h.shared_per_block), (132, 227 * 1024));
        assert!(h.tma && h.max_cluster == 8 && h.is_sm(9, 0));
        let a = devices::a100();
        assert_eq!((a.compute_units, a.shared_per_block), (108, 163 * 1024));
        assert!(!a.tma && a.max_cluster == 1);
        let o = devices::orin();
        assert_eq!((o.compute_units, o.shared_per_unit), (16, 164 * 1024));
        assert!(o.code_at_least(8, 0) && !o.code_at_least(9, 0));
        let amd = TargetCaps::describe(Vendor::Amd, "gfx942", "gfx942", 304);
        assert_eq!((amd.sm, amd.shared_per_block), (None, 64 * 1024));
    }
}
