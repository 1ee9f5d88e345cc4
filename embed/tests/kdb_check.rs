//! `check_target_kdb` on the committed gfx942130 kdb (its objects rebuilt by clang-19): a fresh
//! kdb passes a sampled check, and a kdb missing an object, holding an extra one or holding
//! different bytes for a sampled source is reported stale, naming the object.

use std::path::{Path, PathBuf};

use kiln_embed::kdb::KernelDb;
use kiln_embed::kdbbuild::{check_target_kdb, CheckScope, Manifest};

const TARGET: &str = "gfx942130";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A copy of the target folder under a scratch directory (returned), its kdb edited by `edit`.
fn scratch_target(tag: &str, edit: impl FnOnce(&mut KernelDb)) -> (PathBuf, PathBuf) {
    // The folder must carry the target's name.
    let root = std::env::temp_dir().join(format!("kiln-kdb-check-{}-{tag}", std::process::id()));
    let dir = root.join(TARGET);
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&dir).unwrap();
    let src = repo().join("targets").join(TARGET);
    std::fs::copy(src.join("target.toml"), dir.join("target.toml")).unwrap();
    let mut db = KernelDb::read(&src.join(format!("{TARGET}.kdb"))).unwrap();
    edit(&mut db);
    let kdb = dir.join(format!("{TARGET}.kdb"));
    db.write(&kdb).unwrap();
    (root, kdb)
}

fn check(tag: &str, edit: impl FnOnce(&mut KernelDb)) -> kiln_embed::kdbbuild::KdbCheck {
    let manifest = Manifest::load(&repo().join("kernels/manifest.toml")).unwrap();
    let (root, kdb) = scratch_target(tag, edit);
    let dir = root.join(TARGET);
    let scope = CheckScope::Sample { one_in: 8, seed: 7 };
    let report = check_target_kdb(&manifest, &repo().join("kernels"), &dir, &kdb, scope)
        .expect("clang-19 builds kiln's kernels (run ci/setup.sh)");
    let _ = std::fs::remove_dir_all(&root);
    report
}

#[test]
fn the_committed_kdb_passes_a_sampled_check() {
    let r = check("fresh", |_| {});
    assert!(r.stale.is_empty(), "{:?}", r.stale);
    assert!(r.objects > 50, "{} objects", r.objects);
    // At least one object per source file, about an eighth of the rest.
    assert!(
        r.rebuilt >= 9 && r.rebuilt < r.objects / 3,
        "{} of {}",
        r.rebuilt,
        r.objects
    );
}

#[test]
fn a_missing_or_extra_object_is_named() {
    let r = check("missing", |db| {
        db.entries.retain(|e| e.kernel_name != "conv_mma_amd.cpp.o");
    });
    assert!(
        r.stale
            .iter()
            .any(|l| l.starts_with("missing conv_mma_amd.cpp.o")),
        "{:?}",
        r.stale
    );
    let r = check("extra", |db| {
        let mut extra = db.entries[0].clone();
        extra.kernel_args.push_str(" -DEXTRA");
        db.entries.push(extra);
    });
    assert!(
        r.stale
            .iter()
            .any(|l| l.starts_with("not in the manifest:") && l.ends_with("-DEXTRA")),
        "{:?}",
        r.stale
    );
}

#[test]
fn different_bytes_in_a_sampled_source_are_found() {
    // Both objects of the source are changed, so whichever the sample picks differs.
    let r = check("bytes", |db| {
        for e in db
            .entries
            .iter_mut()
            .filter(|e| e.kernel_name == "conv_mma_amd.cpp.o")
        {
            e.object.push(0);
        }
    });
    assert_eq!(r.stale.len(), 1, "{:?}", r.stale);
    assert!(
        r.stale[0].starts_with("conv_mma_amd.cpp.o ")
            && r.stale[0].ends_with("rebuilds to different bytes"),
        "{:?}",
        r.stale
    );
}
