//! The appliance apart from the workshop: the runtime library's dependency tree holds none of
//! the build-time crates, the `kiln` binary carries no SQLite or bzip2 code and needs only
//! libc, libm and libgcc_s at load time (GPU runtimes are dlopened), and its resolve path
//! allocates nothing on the heap (counted inside the binary, `kiln resolve --repeat`).

mod common;

use std::process::Command;

/// Crates that belong to the workshop (database files, compilers, fetching, progress bars).
const WORKSHOP_CRATES: [&str; 8] = [
    "rusqlite",
    "bzip2",
    "toml",
    "serde",
    "reqwest",
    "clap",
    "indicatif",
    "kiln-embed",
];

/// The names of `package`'s normal (non-build, non-dev) dependencies, transitively.
fn normal_dependencies(package: &str, features: &[&str]) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(common::repo()).args([
        "tree",
        "--offline",
        "-p",
        package,
        "-e",
        "normal",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ]);
    if !features.is_empty() {
        cmd.args(["--features", &features.join(",")]);
    }
    let out = cmd.output().expect("cargo tree runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_runtime_library_depends_on_no_workshop_crate() {
    for features in [&[][..], &["harness"][..]] {
        let deps = normal_dependencies("kiln", features);
        assert!(deps.iter().any(|d| d == "kiln-format"), "{deps:?}");
        for bad in WORKSHOP_CRATES {
            assert!(
                !deps.iter().any(|d| d == bad),
                "kiln (features {features:?}) depends on {bad}: {deps:?}"
            );
        }
    }
    // The appliance binary: the library and clap, and serde under the safetensors crate (a
    // network's weights are the appliance's input), nothing else of the workshop.
    let deps = normal_dependencies("kiln-cli", &[]);
    assert!(deps.iter().any(|d| d == "clap") && deps.iter().any(|d| d == "safetensors"));
    for bad in WORKSHOP_CRATES
        .iter()
        .filter(|c| !matches!(**c, "clap" | "serde"))
    {
        assert!(!deps.iter().any(|d| d == bad), "kiln-cli depends on {bad}");
    }
    // The check can fail: the workshop binary has them.
    let tools = normal_dependencies("kiln-tools", &[]);
    assert!(tools.iter().any(|d| d == "rusqlite") && tools.iter().any(|d| d == "kiln-embed"));
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn the_appliance_binary_carries_no_sqlite_or_bzip2_code() {
    let kiln = std::fs::read(env!("CARGO_BIN_EXE_kiln")).unwrap();
    for marker in [
        &b"sqlite3_"[..],
        b"SQLite format 3",
        b"BZ2_bz",
        b"libsqlite",
    ] {
        assert!(
            !contains(&kiln, marker),
            "the kiln binary contains {:?}",
            String::from_utf8_lossy(marker)
        );
    }
    // The same markers are found where the code is (the check can fail).
    let tools = common::repo().join("target/debug/kiln-tools");
    if let Ok(tools) = std::fs::read(tools) {
        assert!(contains(&tools, b"SQLite format 3") && contains(&tools, b"BZ2_bz"));
    }
}

#[test]
fn the_appliance_binary_needs_only_libc_libm_and_libgcc_s() {
    let out = Command::new("readelf")
        .args(["-d", env!("CARGO_BIN_EXE_kiln")])
        .output()
        .expect("readelf (binutils) runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let needed: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| l.split('[').nth(1)?.split(']').next())
        .collect();
    assert!(!needed.is_empty(), "{text}");
    for lib in &needed {
        assert!(
            [
                "libc.so.6",
                "libm.so.6",
                "libgcc_s.so.1",
                "ld-linux-x86-64.so.2"
            ]
            .contains(lib),
            "kiln needs {lib} at load time: {needed:?}"
        );
    }
}

#[test]
fn resolving_in_the_appliance_binary_does_not_allocate() {
    for args in [
        // Measured (find-db), unmeasured near a measured problem, and the cost model.
        &[
            "--target",
            "h100",
            "64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NCHW-FP32-F",
        ][..],
        &[
            "--target",
            "h100",
            "64-57-57-3x3-64-57-57-2-1x1-1x1-1x1-0-NCHW-FP16-F",
        ],
        &[
            "--target",
            "h100",
            "64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NCHW-BF16-F",
        ],
        &[
            "--target",
            "mi300x",
            "1008-14-14-1x1-192-14-14-16-0x0-1x1-1x1-0-NCHW-FP32-F",
        ],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_kiln"))
            .arg("resolve")
            .args(args)
            .args(["--repeat", "1000"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = text
            .lines()
            .find(|l| l.starts_with("resolved 1000 times"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(line.contains(", 0 heap allocations"), "{args:?}: {line}");
    }
}
