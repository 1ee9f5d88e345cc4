//! Paths shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The repository root (these tests are built by the root package and by the binaries'
/// packages in `cli/`).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|d| d.join("kernels/manifest.toml").is_file())
        .expect("the test runs inside the kiln repository")
        .to_path_buf()
}

/// MIOpen's real perf-db, committed as a test fixture (`tests/data/miopen/README.md` names its
/// origin and sha256).
pub fn miopen_perf_db() -> PathBuf {
    repo().join("tests/data/miopen/gfx942130.db")
}

/// MIOpen's real find-db: committed once, as the gfx942130 target's find-db.
pub fn miopen_find_db() -> PathBuf {
    gfx942130().join("gfx942130.HIP.fdb.txt")
}

/// The sha256 of a file, in lowercase hex.
pub fn sha256_hex(path: &Path) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(std::fs::read(path).unwrap());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs binary `exe` with `args` in the repository root: its exit code, stdout and stderr.
pub fn run_in_repo(exe: &str, args: &[&str]) -> (Option<i32>, String, String) {
    run_in_repo_with_env(exe, args, &[])
}

/// As [`run_in_repo`], with these environment variables set for the run.
pub fn run_in_repo_with_env(
    exe: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(exe)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(repo())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The committed gfx942130 target folder.
pub fn gfx942130() -> PathBuf {
    repo().join("targets/gfx942130")
}

/// Runs python3 with `args` (a client kiln did not write, e.g. its sqlite3 module); returns its
/// standard output, failing the test on a non-zero exit.
pub fn python(args: &[&std::ffi::OsStr]) -> Vec<u8> {
    let out = std::process::Command::new("python3")
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Runs a Python script with `db` as its argument; returns its output lines.
pub fn python_lines(script: &str, db: &Path) -> Vec<String> {
    let stdout = python(&["-c".as_ref(), script.as_ref(), db.as_os_str()]);
    String::from_utf8(stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}
