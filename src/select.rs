//! Choosing the embedded target for a device: the exact basename, else the closest CU/SM
//! count of the same arch (what MIOpen's inexact fallback intends; its text-db version never
//! matched), else an error listing what is embedded.

use kiln_format::EmbeddedTarget;

use crate::embedded::targets;
use crate::error::{Error, Result};

/// The outcome of target selection.
#[derive(Clone, Copy, Debug)]
pub struct Selection {
    /// The chosen target.
    pub target: &'static EmbeddedTarget,
    /// Whether the CU/SM count matched exactly.
    pub exact: bool,
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
/// smallest CU difference (ties go to the larger count). Returns the index and exactness.
pub fn select_index(
    candidates: &[(&str, u32)],
    arch: &str,
    compute_units: u32,
) -> Option<(usize, bool)> {
    if let Some(i) = candidates
        .iter()
        .position(|&(a, c)| a == arch && c == compute_units)
    {
        return Some((i, true));
    }
    candidates
        .iter()
        .enumerate()
        .filter(|(_, (a, _))| *a == arch)
        .min_by_key(|(_, (_, c))| (c.abs_diff(compute_units), u32::MAX - c))
        .map(|(i, _)| (i, false))
}

/// Selects among the targets compiled into this binary.
pub fn select_target(device_arch: &str, compute_units: u32) -> Result<Selection> {
    let arch = db_arch(device_arch);
    let all = targets();
    let candidates: Vec<(&str, u32)> = all.iter().map(|t| (t.arch, t.compute_units)).collect();
    match select_index(&candidates, &arch, compute_units) {
        Some((i, exact)) => Ok(Selection {
            target: &all[i],
            exact,
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
        assert_eq!(select_index(&c, "gfx90a", 110), Some((1, true)));
        assert_eq!(select_index(&c, "gfx942", 80), Some((3, false))); // MI308-like: 80 CUs -> 228
        assert_eq!(select_index(&c, "gfx942", 266), Some((2, false))); // tie 228/304 -> larger
        assert_eq!(select_index(&c, "gfx90a", 1), Some((0, false)));
        assert_eq!(select_index(&c, "sm_90", 114), Some((4, false))); // H100 PCIe -> SXM's DB
        assert_eq!(select_index(&c, "gfx1100", 48), None);
    }

    #[test]
    fn db_arch_follows_miopen() {
        assert_eq!(db_arch("gfx90a:sramecc+:xnack-"), "gfx90a");
        assert_eq!(db_arch("gfx90a:sramecc+:xnack+"), "gfx90a_xnack");
        assert_eq!(db_arch("sm_90"), "sm_90");
    }
}
