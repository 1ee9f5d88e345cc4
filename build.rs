//! Embeds the databases of every enabled target feature (see `targets/README.md`).
//! All the work happens in `kiln-embed`; this only reads cargo's environment.

use std::path::PathBuf;

use kiln_embed::codegen::{embed, EmbedRequest};
use kiln_embed::fetch::{FetchOptions, Source};

fn main() {
    if let Err(e) = run() {
        // A build script reports failure through its exit status; the message names the file.
        eprintln!("error: kiln could not embed its target databases: {e}");
        std::process::exit(1);
    }
}

fn env(name: &str) -> Option<String> {
    println!("cargo:rerun-if-env-changed={name}");
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let targets_dir = manifest.join("targets");
    println!("cargo:rerun-if-changed=targets");
    println!("cargo:rerun-if-changed=kernels/manifest.toml");

    // A target is enabled by the cargo feature named by its basename.
    let mut enabled = Vec::new();
    let mut sources = Vec::new();
    for dir in kiln_embed::target::list_targets(&targets_dir)? {
        let base = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let feature = format!("CARGO_FEATURE_{}", base.to_uppercase().replace('-', "_"));
        if std::env::var_os(&feature).is_none() {
            continue;
        }
        // KILN_DB_SOURCE_<BASE> (or KILN_DB_SOURCE for all): a directory or http(s) URL holding
        // the target's files, checked against the pins in its target.toml.
        let specific = format!("KILN_DB_SOURCE_{}", base.to_uppercase());
        if let Some(src) = env(&specific).or_else(|| env("KILN_DB_SOURCE")) {
            sources.push((base.clone(), Source::parse(&src)));
        }
        enabled.push(base);
    }
    // KILN_EXTRA_TARGETS: folders of an appliance builder's own targets (same form as
    // targets/), ':'-separated; every target in them is embedded, no cargo feature needed.
    let mut extra_targets_dirs = Vec::new();
    for dir in env("KILN_EXTRA_TARGETS").iter().flat_map(|v| {
        v.split(':')
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .collect::<Vec<_>>()
    }) {
        println!("cargo:rerun-if-changed={}", dir.display());
        let listed = kiln_embed::target::list_targets(&dir)
            .map_err(|e| format!("KILN_EXTRA_TARGETS names {}: {e}", dir.display()))?;
        if listed.is_empty() {
            return Err(format!(
                "KILN_EXTRA_TARGETS names {}, which holds no <basename>/target.toml",
                dir.display()
            )
            .into());
        }
        for t in listed {
            let base = t
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            println!("cargo:rerun-if-changed={}", t.display());
            let specific = format!("KILN_DB_SOURCE_{}", base.to_uppercase());
            if let Some(src) = env(&specific) {
                sources.push((base.clone(), Source::parse(&src)));
            }
            enabled.push(base);
        }
        extra_targets_dirs.push(dir);
    }
    // A feature that names a target basename must have a folder: never silently embed nothing.
    for (var, _) in std::env::vars() {
        if let Some(feature) = var.strip_prefix("CARGO_FEATURE_") {
            let name = feature.to_lowercase();
            if kiln_format::TargetId::parse_basename(&name).is_ok() && !enabled.contains(&name) {
                return Err(format!(
                    "feature {name} is enabled but targets/{name}/target.toml does not exist"
                )
                .into());
            }
        }
    }
    let cache_dir = env("KILN_FETCH_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| manifest.join("target"))
                .join("kiln-fetch-cache")
        });
    let offline = env("KILN_OFFLINE").is_some_and(|v| v != "0")
        || env("CARGO_NET_OFFLINE").is_some_and(|v| v == "true");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = std::process::Command::new(&rustc)
        .arg("-V")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let provenance = vec![
        ("kiln".to_string(), std::env::var("CARGO_PKG_VERSION")?),
        ("rustc".to_string(), rustc_version),
        ("profile".to_string(), std::env::var("PROFILE")?),
        ("target triple".to_string(), std::env::var("TARGET")?),
        ("zstd".to_string(), kiln_embed::pack::zstd_version()),
        (
            "table format".to_string(),
            String::from_utf8_lossy(kiln_format::table::MAGIC).into_owned(),
        ),
    ];
    let req = EmbedRequest {
        targets_dir,
        extra_targets_dirs,
        enabled,
        out_dir: out_dir.clone(),
        sources,
        fetch: FetchOptions { cache_dir, offline },
        provenance,
        manifest: Some(manifest.join("kernels/manifest.toml")),
        kernel_abi_header: Some(manifest.join("kernels/kiln_gpu.h")),
    };
    let report = embed(&req)?;
    for input in &report.inputs {
        println!("cargo:rerun-if-changed={}", input.display());
    }
    // KILN_MODELS: networks to embed, ':'-separated definition files (<name>.txt, with
    // <name>.safetensors and <name>.sha256 beside each), checked against their pins.
    let models: Vec<PathBuf> = env("KILN_MODELS")
        .map(|v| {
            v.split(':')
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default();
    for input in kiln_embed::models::embed_models(&models, &out_dir)? {
        println!("cargo:rerun-if-changed={}", input.display());
    }
    // KILN_EMBED_VERBOSE=1 shows what was packed (kiln info shows it too, from the binary).
    let verbose = env("KILN_EMBED_VERBOSE").is_some_and(|v| v != "0");
    for t in report.tables.iter().filter(|_| verbose) {
        println!(
            "cargo:warning=kiln: {} {}: {} records, {} B in -> {} B embedded (dict {} B, zstd -{})",
            t.target,
            t.kind.name(),
            t.packed.records,
            t.input_bytes,
            t.packed.blob.len(),
            t.packed.dict_len,
            t.packed.level
        );
    }
    Ok(())
}
