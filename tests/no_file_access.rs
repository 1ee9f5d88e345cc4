//! `kiln resolve` under `strace -f -e trace=%file`: the only file accesses are the dynamic
//! loader's (its cache and shared libraries) before `main`; resolving reads nothing.

mod common;

use std::process::Command;

#[test]
fn resolve_touches_no_files() {
    let strace = Command::new("strace").arg("-V").output();
    assert!(
        strace.is_ok(),
        "strace is needed for this test (ci/setup.sh installs it)"
    );
    // The trace goes to its own file: kiln's stderr (a warning: gfx942130's plans come from
    // the cost model) must not be read as trace lines.
    let trace_path =
        std::env::temp_dir().join(format!("kiln-no-file-access-{}.txt", std::process::id()));
    let out = Command::new("strace")
        // cargo test points LD_LIBRARY_PATH at build folders; the loader would probe them.
        .env_remove("LD_LIBRARY_PATH")
        .args(["-f", "-qq", "-e", "trace=%file", "-o"])
        .arg(&trace_path)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_kiln"))
        .args([
            "resolve",
            "--target",
            "gfx942130",
            "1008-14-14-1x1-192-14-14-16-0x0-1x1-1x1-0-NCHW-FP32-F",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("GemmFwd1x1_0_1"),
        "resolve did not answer:\n{stdout}"
    );
    let trace = std::fs::read_to_string(&trace_path).expect("strace wrote its trace");
    let _ = std::fs::remove_file(&trace_path);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ranked by the cost model"),
        "the warning reached stderr"
    );
    let mut calls = 0;
    for line in trace.lines().filter(|l| l.contains('(')) {
        calls += 1;
        // With -o and -f, strace starts each line with the pid.
        let line = line
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .trim_start();
        // The loader fstat()s each library it opened through the descriptor (empty path).
        let loader = line.starts_with("execve(")
            || (line.starts_with("newfstatat(")
                && line.contains("\"\"")
                && line.contains("AT_EMPTY_PATH"))
            || line.contains("/etc/ld.so.preload")
            || line.contains("/etc/ld.so.cache")
            || (line.contains(".so") && (line.contains("/lib") || line.contains("glibc-hwcaps")));
        assert!(
            loader,
            "file access after start-up: {line}\nfull trace:\n{trace}"
        );
    }
    assert!(calls > 0, "strace saw no syscalls at all:\n{trace}");
}
