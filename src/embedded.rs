//! The targets compiled into this binary: the code `build.rs` generates through `kiln-embed`
//! (every type it names is `kiln_format`'s), and accessors over it.

use kiln_format::{EmbeddedTarget, SolverEntry};

// Feature vectors hold log2 of sizes: a 10-channel layer's is log2(10), which clippy takes for
// a mistyped constant.
#[allow(clippy::approx_constant)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/kiln_embedded.rs"));
}

mod generated_models {
    include!(concat!(env!("OUT_DIR"), "/kiln_models.rs"));
}

/// The networks embedded at build time (`KILN_MODELS`), in the order given.
pub fn models() -> &'static [kiln_format::embedded::EmbeddedModel] {
    generated_models::MODELS
}

/// An embedded network by name.
pub fn model(name: &str) -> Option<&'static kiln_format::embedded::EmbeddedModel> {
    generated_models::MODELS.iter().find(|m| m.name == name)
}

/// Every embedded target, sorted by basename.
pub fn targets() -> &'static [EmbeddedTarget] {
    generated::TARGETS
}

/// An embedded target by basename or alias.
pub fn target(name: &str) -> Option<&'static EmbeddedTarget> {
    generated::TARGET_INDEX
        .get(name)
        .and_then(|&i| generated::TARGETS.get(i))
}

/// How this binary's tables were built: kiln version, rustc, profile, zstd, table format.
pub fn build_provenance() -> &'static [(&'static str, &'static str)] {
    generated::BUILD_PROVENANCE
}

/// The solvers of `kernels/manifest.toml`, as compiled into every kdb.
pub fn kernel_manifest() -> &'static [SolverEntry] {
    generated::KERNEL_MANIFEST
}

#[cfg(test)]
mod tests {
    /// The generated code is checked against the contract crate by the compiler only if it
    /// names nothing else: every absolute path starts with `::kiln_format` (or `::core`).
    #[test]
    fn generated_code_names_only_the_contract_crate() {
        let code = include_str!(concat!(env!("OUT_DIR"), "/kiln_embedded.rs"));
        let mut roots = std::collections::BTreeSet::new();
        for (i, _) in code.match_indices("::") {
            let before = code[..i].chars().last().unwrap_or(' ');
            if before.is_alphanumeric() || before == '_' || before == '>' {
                continue; // a path segment, not a root
            }
            let root: String = code[i + 2..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            roots.insert(root);
        }
        let allowed = ["kiln_format", "core"];
        assert!(
            roots.iter().all(|r| allowed.contains(&r.as_str())),
            "generated code names {roots:?}"
        );
        assert!(roots.contains("kiln_format"));
    }

    /// A vendor-only build (`--no-default-features --features hip,all-amd` or
    /// `cuda,all-nvidia`, as `make test` runs) carries only that vendor's targets and backend.
    #[test]
    fn a_vendor_only_build_carries_only_its_vendor() {
        use kiln_format::Vendor;
        let schemes: Vec<&str> = crate::backend::BACKENDS.iter().map(|b| b.scheme).collect();
        let vendors: Vec<Vendor> = super::targets().iter().map(|t| t.vendor).collect();
        if cfg!(not(feature = "cuda")) {
            assert!(!schemes.contains(&"cuda"));
        }
        if cfg!(not(feature = "hip")) {
            assert!(!schemes.contains(&"hip"));
        }
        if cfg!(all(
            feature = "hip",
            not(feature = "cuda"),
            not(feature = "all-nvidia")
        )) {
            assert!(vendors.iter().all(|v| *v == Vendor::Amd), "{vendors:?}");
        }
        if cfg!(all(
            feature = "cuda",
            not(feature = "hip"),
            not(feature = "all-amd")
        )) {
            assert!(vendors.iter().all(|v| *v == Vendor::Nvidia), "{vendors:?}");
        }
    }
}
