//! `targets/<base>/target.toml`: what a target is (vendor, arch, CU/SM count, code-object
//! kind), which database files it has, and the sha256 pin of each.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kiln_format::{CodeObjectKind, TargetId, Vendor};
use serde::Deserialize;

use crate::error::{Error, Result};

/// The database files of a target (names relative to its folder or source).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TargetFiles {
    /// Find-db text (`<base>.HIP.fdb.txt`).
    pub find_db: Option<String>,
    /// Perf-db, text (`<base>.db.txt`) or SQLite (`<base>.db`).
    pub perf_db: Option<String>,
    /// Kernel db (`<base>.kdb`).
    pub kdb: Option<String>,
}

/// `target.toml` as written: kinds as text, typed by [`TargetConfig::parse`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetToml {
    basename: String,
    vendor: String,
    arch: String,
    compute_units: u32,
    code_object: String,
    #[serde(default)]
    aliases: Vec<String>,
    origin: String,
    #[serde(default)]
    toolchain: Option<String>,
    #[serde(default)]
    files: TargetFiles,
    #[serde(default)]
    pins: BTreeMap<String, String>,
}

/// A parsed and validated `target.toml`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetConfig {
    /// Basename; must equal the folder name.
    pub basename: String,
    /// `amd` or `nvidia`.
    pub vendor: Vendor,
    /// Arch (`gfx942`, `sm_90`).
    pub arch: String,
    /// CU (AMD) or SM (NVIDIA) count.
    pub compute_units: u32,
    /// `hsaco` (AMD) or `cubin` (NVIDIA).
    pub code_object: CodeObjectKind,
    /// Cargo feature aliases (informational; the features live in Cargo.toml).
    pub aliases: Vec<String>,
    /// Where the data came from (printed by `kiln info`).
    pub origin: String,
    /// The compiler that built the kdb (written by `kiln kdb build`).
    pub toolchain: Option<String>,
    /// The files.
    pub files: TargetFiles,
    /// sha256 pins, file name -> lowercase hex digest.
    pub pins: BTreeMap<String, String>,
}

impl TargetConfig {
    /// Reads and validates `<dir>/target.toml`.
    pub fn load(dir: &Path) -> Result<TargetConfig> {
        let path = dir.join("target.toml");
        let text = crate::input::read_text(&path)?;
        let folder = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        TargetConfig::parse(&text, folder, &path)
    }

    /// Parses and validates `target.toml` text found in folder `folder` (at `path`, for errors).
    pub fn parse(text: &str, folder: &str, path: &Path) -> Result<TargetConfig> {
        let bad = |reason: String| Error::Target {
            target: folder.to_string(),
            reason: format!("{}: {reason}", path.display()),
        };
        let raw: TargetToml = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        let vendor = Vendor::from_name(&raw.vendor)
            .ok_or_else(|| bad(format!("vendor '{}' is not amd or nvidia", raw.vendor)))?;
        let code_object = CodeObjectKind::from_name(&raw.code_object).ok_or_else(|| {
            bad(format!(
                "code_object '{}' is not hsaco or cubin",
                raw.code_object
            ))
        })?;
        let cfg = TargetConfig {
            basename: raw.basename,
            vendor,
            arch: raw.arch,
            compute_units: raw.compute_units,
            code_object,
            aliases: raw.aliases,
            origin: raw.origin,
            toolchain: raw.toolchain,
            files: raw.files,
            pins: raw.pins,
        };
        let id = TargetId::parse_basename(&cfg.basename).map_err(|e| bad(e.to_string()))?;
        if cfg.basename != folder {
            return Err(bad(format!(
                "basename '{}' differs from the folder name",
                cfg.basename
            )));
        }
        if id.arch != cfg.arch || id.compute_units != cfg.compute_units {
            return Err(bad(format!(
                "basename {} means arch {} with {} CUs, but the file says arch {} with {}",
                cfg.basename, id.arch, id.compute_units, cfg.arch, cfg.compute_units
            )));
        }
        if cfg.vendor != id.vendor() || cfg.code_object != CodeObjectKind::of(id.vendor()) {
            return Err(bad(format!(
                "vendor '{}' / code_object '{}' do not fit arch {} (amd/hsaco or nvidia/cubin)",
                cfg.vendor.name(),
                cfg.code_object.name(),
                cfg.arch
            )));
        }
        for name in cfg.file_names() {
            let plain = name.starts_with(&format!("{}.", cfg.basename))
                && !name.contains("..")
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
            if !plain {
                return Err(bad(format!(
                    "file name '{}' is not '{}.<extension>' (a plain name inside the target's folder)",
                    crate::input::excerpt(name),
                    cfg.basename
                )));
            }
            let pin = cfg
                .pins
                .get(name)
                .ok_or_else(|| bad(format!("no sha256 pin for {name} in [pins]")))?;
            if pin.len() != 64
                || !pin
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            {
                return Err(bad(format!("pin of {name} is not 64 lowercase hex digits")));
            }
        }
        Ok(cfg)
    }

    /// The file names this target lists.
    pub fn file_names(&self) -> Vec<&str> {
        [&self.files.find_db, &self.files.perf_db, &self.files.kdb]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect()
    }

    /// The pin of a listed file.
    pub fn pin(&self, file: &str) -> Option<&str> {
        self.pins.get(file).map(String::as_str)
    }
}

/// Lists the target folders under `targets_dir` (those with a `target.toml`), sorted.
pub fn list_targets(targets_dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let rd = std::fs::read_dir(targets_dir).map_err(|e| Error::io(targets_dir, e))?;
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(targets_dir, e))?;
        let p = entry.path();
        if p.join("target.toml").is_file() {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// A TOML basic string holding `s` exactly: `\\`, `"` and every control character escaped.
pub fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Renders a `target.toml`.
pub fn render_target_toml(cfg: &TargetConfig) -> String {
    let q = |s: &str| toml_string(s);
    let mut out = String::new();
    out.push_str(&format!("basename = {}\n", q(&cfg.basename)));
    out.push_str(&format!("vendor = {}\n", q(cfg.vendor.name())));
    out.push_str(&format!("arch = {}\n", q(&cfg.arch)));
    out.push_str(&format!("compute_units = {}\n", cfg.compute_units));
    out.push_str(&format!("code_object = {}\n", q(cfg.code_object.name())));
    let aliases: Vec<String> = cfg.aliases.iter().map(|a| q(a)).collect();
    out.push_str(&format!("aliases = [{}]\n", aliases.join(", ")));
    out.push_str(&format!("origin = {}\n", q(&cfg.origin)));
    if let Some(t) = &cfg.toolchain {
        out.push_str(&format!("toolchain = {}\n", q(t)));
    }
    out.push_str("\n[files]\n");
    for (k, v) in [
        ("find_db", &cfg.files.find_db),
        ("perf_db", &cfg.files.perf_db),
        ("kdb", &cfg.files.kdb),
    ] {
        if let Some(v) = v {
            out.push_str(&format!("{k} = {}\n", q(v)));
        }
    }
    out.push_str("\n[pins]\n");
    for (k, v) in &cfg.pins {
        out.push_str(&format!("{} = {}\n", q(k), q(v)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, body: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("target.toml"), body).unwrap();
    }

    #[test]
    fn round_trip_and_checks() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("gfx90a68");
        let mut cfg = TargetConfig {
            basename: "gfx90a68".into(),
            vendor: Vendor::Amd,
            arch: "gfx90a".into(),
            compute_units: 104,
            code_object: CodeObjectKind::Hsaco,
            aliases: vec!["mi210".into()],
            origin: "test".into(),
            toolchain: Some("clang version 19.1.7".into()),
            files: TargetFiles {
                find_db: Some("gfx90a68.HIP.fdb.txt".into()),
                perf_db: None,
                kdb: None,
            },
            pins: [("gfx90a68.HIP.fdb.txt".to_string(), "a".repeat(64))]
                .into_iter()
                .collect(),
        };
        write(&dir, &render_target_toml(&cfg));
        assert_eq!(TargetConfig::load(&dir).unwrap(), cfg);

        cfg.compute_units = 110;
        write(&dir, &render_target_toml(&cfg));
        let e = TargetConfig::load(&dir).unwrap_err().to_string();
        assert!(e.contains("means arch gfx90a with 104 CUs"), "{e}");

        // Whatever text origin and aliases hold, the rendered file reads back the same.
        cfg.compute_units = 104;
        cfg.origin = "line one\nline \"two\"\t\u{1}\\ end".into();
        cfg.aliases = vec!["a\u{7f}b".into()];
        write(&dir, &render_target_toml(&cfg));
        assert_eq!(TargetConfig::load(&dir).unwrap(), cfg);

        // File names stay inside the folder.
        let mut escaping = cfg.clone();
        escaping.files.find_db = Some("../../x.fdb.txt".into());
        escaping.pins = [("../../x.fdb.txt".to_string(), "a".repeat(64))].into();
        write(&dir, &render_target_toml(&escaping));
        let e = TargetConfig::load(&dir).unwrap_err().to_string();
        assert!(e.contains("is not 'gfx90a68.<extension>'"), "{e}");

        cfg.pins.clear();
        write(&dir, &render_target_toml(&cfg));
        let e = TargetConfig::load(&dir).unwrap_err().to_string();
        assert!(e.contains("no sha256 pin for gfx90a68.HIP.fdb.txt"), "{e}");
    }
}
