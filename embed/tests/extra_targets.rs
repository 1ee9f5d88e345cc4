//! An appliance builder's own target, outside kiln's `targets/` (`KILN_EXTRA_TARGETS`): built
//! here from kiln's kernels with clang-19 (an AMD Ryzen 7000 iGPU, gfx1036 with 1 of MIOpen's
//! half-CUs), pinned, and embedded next to the built-in targets. The generated code carries
//! it; a basename defined twice, or missing, is an error naming the folders.

use std::path::{Path, PathBuf};

use kiln_embed::codegen::{embed, EmbedRequest};
use kiln_embed::fetch::FetchOptions;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn request(extra: Vec<PathBuf>, enabled: &[&str], out: &Path) -> EmbedRequest {
    EmbedRequest {
        targets_dir: repo().join("targets"),
        extra_targets_dirs: extra,
        enabled: enabled.iter().map(|s| s.to_string()).collect(),
        out_dir: out.to_path_buf(),
        sources: Vec::new(),
        fetch: FetchOptions {
            cache_dir: out.join("cache"),
            offline: true,
        },
        provenance: Vec::new(),
        manifest: Some(repo().join("kernels/manifest.toml")),
        kernel_abi_header: None,
    }
}

/// The error of an embed that must fail (its report is too large to print on success).
fn refused<T>(r: kiln_embed::Result<T>) -> String {
    match r {
        Ok(_) => panic!("embedded what it must refuse"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_target_outside_the_repo_is_built_pinned_and_embedded() {
    let tmp = tempfile::tempdir().unwrap();
    let extra = tmp.path().join("my-targets");
    let dir = extra.join("gfx1036_1");
    std::fs::create_dir_all(&dir).unwrap();
    let head =
        "basename = \"gfx1036_1\"\nvendor = \"amd\"\narch = \"gfx1036\"\ncompute_units = 1\n\
                code_object = \"hsaco\"\naliases = [\"my-igpu\"]\norigin = \"built by a test\"\n";
    std::fs::write(dir.join("target.toml"), head).unwrap();
    let manifest =
        kiln_embed::kdbbuild::Manifest::load(&repo().join("kernels/manifest.toml")).unwrap();
    let kdb = dir.join("gfx1036_1.kdb");
    let (n, toolchain) = kiln_embed::kdbbuild::build_target_kdb(
        &manifest,
        &repo().join("kernels"),
        &dir,
        &kdb,
        None,
    )
    .expect("clang-19 builds kiln's kernels for gfx1103 (run ci/setup.sh)");
    assert!(n >= 30, "{n} objects");
    let pin = kiln_embed::fetch::sha256_file(&kdb).unwrap();
    std::fs::write(
        dir.join("target.toml"),
        format!(
            "{head}toolchain = \"{toolchain}\"\n\n[files]\nkdb = \"gfx1036_1.kdb\"\n\n[pins]\n\"gfx1036_1.kdb\" = \"{pin}\"\n"
        ),
    )
    .unwrap();

    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let report = embed(&request(
        vec![extra.clone()],
        &["gfx1036_1", "sm_90_132"],
        &out,
    ))
    .expect("embeds the extra target beside a built-in one");
    assert!(report.inputs.iter().any(|p| p.ends_with("gfx1036_1.kdb")));
    let code = std::fs::read_to_string(out.join("kiln_embedded.rs")).unwrap();
    assert!(
        code.contains("basename: \"gfx1036_1\""),
        "generated code lacks it"
    );
    assert!(code.contains("arch: \"gfx1036\""));
    assert!(code.contains("\"my-igpu\""));
    assert!(code.contains("basename: \"sm_90_132\""));

    // A wrong pin is refused, naming the file.
    let toml = std::fs::read_to_string(dir.join("target.toml")).unwrap();
    std::fs::write(dir.join("target.toml"), toml.replace(&pin, &"0".repeat(64))).unwrap();
    let e = refused(embed(&request(vec![extra.clone()], &["gfx1036_1"], &out)));
    assert!(e.contains("gfx1036_1.kdb"), "{e}");
    std::fs::write(dir.join("target.toml"), toml).unwrap();

    // The same basename as a built-in target: refused, naming both folders.
    let twin = tmp.path().join("twin");
    let twin_dir = twin.join("sm_90_132");
    std::fs::create_dir_all(&twin_dir).unwrap();
    std::fs::copy(
        repo().join("targets/sm_90_132/target.toml"),
        twin_dir.join("target.toml"),
    )
    .unwrap();
    let e = refused(embed(&request(vec![twin], &["sm_90_132"], &out)));
    assert!(e.contains("defined twice") && e.contains("twin"), "{e}");

    // Enabled but nowhere: the folders searched are named.
    let e = refused(embed(&request(vec![extra], &["gfx1152_99"], &out)));
    assert!(
        e.contains("no target.toml") && e.contains("my-targets"),
        "{e}"
    );
}
