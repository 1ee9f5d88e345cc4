//! Without a GPU (CI, this machine), kiln starts, answers, and reports each absent runtime or
//! device as an error, never a panic. One default binary carries both backends, loaded at run
//! time: it starts with or without ROCm and CUDA installed, and says what it found.

mod common;

use std::process::Command;

fn kiln(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(args)
        .output()
        .expect("kiln runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn missing_driver_is_an_error_not_a_panic() {
    let present = kiln::backend::cuda::driver_present();
    let opened = kiln::backend::open(Some("cuda:0"));
    if present {
        assert!(
            opened.is_ok()
                || opened
                    .as_ref()
                    .err()
                    .is_some_and(|e| e.message.contains("does not exist"))
        );
    } else {
        let e = opened.expect_err("no driver: an error").to_string();
        assert!(e.contains("libcuda.so"), "{e}");
        let e = kiln::backend::open(None)
            .expect_err("no device")
            .to_string();
        assert!(e.contains("no GPU found") && e.contains("cuda:"), "{e}");
    }
    let e = kiln::backend::open(Some("opencl:0"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("'opencl:0' is not <backend>:<n>") && e.contains("[cuda, hip]"),
        "{e}"
    );
    assert!(kiln::backend::open(Some("cuda:x")).is_err());
    assert!(kiln::backend::open(Some("hip://nope")).is_err());
}

#[test]
fn devices_says_which_runtimes_were_found() {
    let (_, out, err) = kiln(&["devices"]);
    // With no usable device the list ends in exit 3 and says so.
    assert!(err.contains("kiln: error: no usable GPU device"), "{err}");
    let cuda = out.lines().find(|l| l.starts_with("cuda:")).expect(&out);
    let hip = out.lines().find(|l| l.starts_with("hip:")).expect(&out);
    if !kiln::backend::cuda::driver_present() {
        assert!(
            cuda.contains("runtime not found") && cuda.contains("libcuda.so"),
            "{cuda}"
        );
    }
    match kiln::backend::hip::library() {
        // This machine has Debian's ROCm 5.2 runtime (ci/setup.sh) and no AMD GPU.
        Ok(lib) => assert!(hip.contains(&format!("runtime {lib} loaded")), "{hip}"),
        Err(_) => assert!(hip.contains("runtime not found"), "{hip}"),
    }
}

#[test]
fn a_bad_hip_library_path_is_named_in_the_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .env("KILN_HIP_LIBRARY", "/nonexistent/libamdhip64.so.9")
        .arg("devices")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8_lossy(&out.stdout);
    let hip = text.lines().find(|l| l.starts_with("hip:")).expect(&text);
    assert!(
        hip.contains("KILN_HIP_LIBRARY='/nonexistent/libamdhip64.so.9' could not be loaded"),
        "{hip}"
    );
    // A library that loads but is not HIP: the missing symbol is named.
    let libc = "libc.so.6";
    let out = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .env("KILN_HIP_LIBRARY", libc)
        .args([
            "run", "--device", "hip:0", "-c", "8", "-k", "8", "-H", "8", "-W", "8",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    // The soname was found on the library path and checked: the file is named.
    assert!(
        err.contains("loading HIP failed: ") && err.contains("libc.so.6: symbol hip"),
        "{err}"
    );
}

#[test]
fn demo_without_gpu_resolves_and_verifies_every_target() {
    if kiln::backend::cuda::driver_present() {
        return; // the GPU path is exercised by tests/gpu.rs on a machine with the GPU
    }
    let (ok, text, err) = kiln(&["demo"]);
    assert!(ok, "{err}");
    assert!(text.contains("no GPU was found"), "{text}");
    for t in kiln::targets().iter().filter(|t| t.kdb.is_some()) {
        assert!(
            text.contains(&format!("{:<11} 53 layers resolved", t.basename)),
            "{}: {text}",
            t.basename
        );
    }
    assert!(kiln(&["info"]).0);
}

#[test]
fn exit_codes_are_0_success_1_error_2_usage() {
    let code = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_kiln"))
            .args(args)
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(code(&["info"]), Some(0));
    assert_eq!(code(&["--help"]), Some(0));
    assert_eq!(code(&["bogus"]), Some(2));
    assert_eq!(code(&["resolve", "--target", "h100", "-n", "x"]), Some(2));
    // Errors the review found aborting (exit 134) through the C entry point: now errors.
    assert_eq!(code(&["demo", "-n", "0"]), Some(1));
    assert_eq!(code(&["demo", "--layout", "NCDHW"]), Some(1));
    assert_eq!(
        code(&["resolve", "--target", "nonesuch", "-n", "1"]),
        Some(1)
    );
}

#[test]
fn the_binary_starts_on_a_machine_without_rocm() {
    // Hide every HIP runtime on this machine (a private mount namespace: root only) and start
    // the default binary. A build-time link to libamdhip64 would fail before main.
    let hidden: Vec<String> = ["/usr/lib/x86_64-linux-gnu", "/usr/lib", "/opt/rocm/lib"]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libamdhip64.so"))
        })
        .map(|p| p.display().to_string())
        .collect();
    let mounts: String = hidden
        .iter()
        .map(|p| format!("mount --bind /dev/null '{p}' && "))
        .collect();
    let script = format!("{mounts}exec '{}' devices", env!("CARGO_BIN_EXE_kiln"));
    let out = Command::new("unshare")
        .args(["--mount", "sh", "-c", &script])
        .output();
    let Ok(out) = out.as_ref().map_err(|e| e.to_string()).and_then(|o| {
        if String::from_utf8_lossy(&o.stderr).contains("unshare failed") {
            Err(String::from_utf8_lossy(&o.stderr).into_owned())
        } else {
            Ok(o)
        }
    }) else {
        eprintln!("not run: this machine cannot make a private mount namespace: {out:?}");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("hip: runtime not found: no HIP runtime found (tried libamdhip64.so.6"),
        "{text}"
    );
}
