//! Choosing the embedded target for a device: the exact basename, else the closest CU/SM
//! count of the same arch (what MIOpen's inexact fallback intends; its text-db version never
//! matched), else, for NVIDIA, the nearest lower arch of the same major version (NVIDIA's
//! binary compatibility: an sm_86, sm_87 or sm_89 device runs sm_80 cubins), else an error
//! listing what is embedded.

use kiln_format::EmbeddedTarget;

use crate::embedded::targets;
use crate::error::{Error, Result};
use crate::solvers::SmVersion;

/// The outcome of target selection.
#[derive(Clone, Copy, Debug)]
pub struct Selection {
    /// The chosen target.
    pub target: &'static EmbeddedTarget,
    /// Whether the arch and the CU/SM count both matched.
    pub exact: bool,
    /// Whether the target's arch is the device's (false: a lower arch of the same NVIDIA major
    /// version, whose cubins the device runs).
    pub same_arch: bool,
}

/// MIOpen's DbId of a device arch name: features after the first `:` dropped, `_xnack`
/// appended when the name says `xnack+` (`gfx90a:sramecc+:xnack+` -> `gfx90a_xnack`).
pub fn db_arch(device_arch: &str) -> String {
    let mut parts = device_arch.split(':');
    let mut arch = parts.next().unwrap_or_default().to_string();
    if parts.any(|p| p == "xnack+") {
        arch.push_str("_xnack");
    }
    arch
}

/// Picks from `candidates` (arch, CU count): the exact match, else the same arch with the
/// smallest CU difference (ties go to the larger count), else for an NVIDIA device the highest
/// lower arch of its major version, by the same CU rule. Returns the index, whether both arch
/// and count matched, and whether the arch did.
pub fn select_index(
    candidates: &[(&str, u32)],
    arch: &str,
    compute_units: u32,
) -> Option<(usize, bool, bool)> {
    if let Some(i) = candidates
        .iter()
        .position(|&(a, c)| a == arch && c == compute_units)
    {
        return Some((i, true, true));
    }
    let closest = |of_arch: &dyn Fn(&str) -> bool| {
        candidates
            .iter()
            .enumerate()
            .filter(|(_, (a, _))| of_arch(a))
            .min_by_key(|(_, (_, c))| (c.abs_diff(compute_units), u32::MAX - c))
            .map(|(i, _)| i)
    };
    if let Some(i) = closest(&|a| a == arch) {
        return Some((i, false, true));
    }
    // Same major, highest minor not above the device's: cubins of sm_XY run on sm_XZ, Z >= Y.
    let device = SmVersion::parse(arch)?;
    let best = candidates
        .iter()
        .filter_map(|(a, _)| SmVersion::parse(a))
        .filter(|v| v.major == device.major && v.minor <= device.minor)
        .max()?;
    closest(&|a| SmVersion::parse(a) == Some(best)).map(|i| (i, false, false))
}

/// Selects among the targets compiled into this binary.
pub fn select_target(device_arch: &str, compute_units: u32) -> Result<Selection> {
    let arch = db_arch(device_arch);
    let all = targets();
    let candidates: Vec<(&str, u32)> = all.iter().map(|t| (t.arch, t.compute_units)).collect();
    match select_index(&candidates, &arch, compute_units) {
        Some((i, exact, same_arch)) => Ok(Selection {
            target: &all[i],
            exact,
            same_arch,
        }),
        None => Err(Error::NoTarget {
            arch,
            compute_units,
            embedded: all.iter().map(|t| t.basename).collect(),
        }),
    }
}

/// A target by basename or alias, with a clear error when it is not compiled in.
pub fn named_target(name: &str) -> Result<&'static EmbeddedTarget> {
    crate::embedded::target(name).ok_or_else(|| Error::UnknownTarget {
        name: name.to_string(),
        embedded: targets()
            .iter()
            .flat_map(|t| std::iter::once(t.basename).chain(t.aliases.iter().copied()))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_then_closest_then_none() {
        let c = [
            ("gfx90a", 104),
            ("gfx90a", 110),
            ("gfx942", 304),
            ("gfx942", 228),
            ("sm_90", 132),
        ];
        assert_eq!(select_index(&c, "gfx90a", 110), Some((1, true, true)));
        assert_eq!(select_index(&c, "gfx942", 80), Some((3, false, true))); // MI308-like: 80 CUs -> 228
        assert_eq!(select_index(&c, "gfx942", 266), Some((2, false, true))); // tie 228/304 -> larger
        assert_eq!(select_index(&c, "gfx90a", 1), Some((0, false, true)));
        assert_eq!(select_index(&c, "sm_90", 114), Some((4, false, true))); // H100 PCIe -> SXM's DB
        assert_eq!(select_index(&c, "gfx1100", 48), None);
    }

    #[test]
    fn nvidia_devices_run_the_nearest_lower_arch_of_their_major() {
        let c = [
            ("sm_80", 108),
            ("sm_89", 142),
            ("sm_90", 132),
            ("sm_80", 16),
        ];
        // sm_86 (RTX 3090, 82 SMs) and sm_87 (Jetson AGX Orin, 16 SMs) -> sm_80 objects.
        assert_eq!(select_index(&c, "sm_86", 82), Some((0, false, false)));
        assert_eq!(select_index(&c, "sm_87", 16), Some((3, false, false)));
        // sm_89 has its own target; an sm_88 would fall to sm_80, never up to sm_89.
        assert_eq!(select_index(&c, "sm_89", 142), Some((1, true, true)));
        assert_eq!(select_index(&c, "sm_88", 142), Some((0, false, false)));
        // Another major: nothing (sm_90 cubins do not run on 10.0, nor sm_80 ones on 7.5).
        assert_eq!(select_index(&c, "sm_100", 148), None);
        assert_eq!(select_index(&c, "sm_75", 40), None);
        // AMD has no such rule.
        assert_eq!(select_index(&[("gfx1100", 48)], "gfx1101", 60), None);
    }

    #[test]
    fn db_arch_follows_miopen() {
        assert_eq!(db_arch("gfx90a:sramecc+:xnack-"), "gfx90a");
        assert_eq!(db_arch("gfx90a:sramecc+:xnack+"), "gfx90a_xnack");
        assert_eq!(db_arch("sm_90"), "sm_90");
    }
}
