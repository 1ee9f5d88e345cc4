//! Without a GPU driver, kiln starts, answers, and reports the absence as an error (cudarc would
//! panic; kiln probes first). With one, the same calls succeed.

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
        let e = opened.err().expect("no driver: an error").to_string();
        assert!(e.contains("libcuda.so"), "{e}");
        assert!(kiln::backend::list_devices().is_empty());
        let e = kiln::backend::open(None)
            .err()
            .expect("no device")
            .to_string();
        assert!(e.contains("no GPU found"), "{e}");
    }
    let e = kiln::backend::open(Some("opencl:0"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("is not cuda:<n>"), "{e}");
    assert!(kiln::backend::open(Some("cuda:x")).is_err());
}

#[test]
fn demo_without_gpu_resolves_and_verifies_every_target() {
    if kiln::backend::cuda::driver_present() {
        return; // the GPU path is exercised by tests/gpu.rs on the device machine
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kiln"))
        .arg("demo")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("no GPU was found"), "{text}");
    for t in kiln::targets().iter().filter(|t| t.kdb.is_some()) {
        assert!(
            text.contains(&format!("{:<11} 53 layers resolved", t.basename)),
            "{}: {text}",
            t.basename
        );
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kiln"))
        .arg("info")
        .output()
        .unwrap();
    assert!(out.status.success());
}

/// The HIP backend (built against Debian's libamdhip64 in CI, no AMD GPU anywhere here):
/// no device is an error with HIP's own words, never a panic.
#[cfg(feature = "hip")]
#[test]
fn hip_without_a_device_is_an_error() {
    let devices = kiln::backend::hip::list();
    let opened = kiln::backend::open(Some("hip:0"));
    match devices {
        Ok(d) if !d.is_empty() => assert!(opened.is_ok()),
        _ => {
            let e = opened.err().expect("no AMD GPU: an error").to_string();
            assert!(
                e.contains("HIP error") || e.contains("does not exist"),
                "{e}"
            );
        }
    }
    assert!(kiln::backend::open(Some("hip://nope")).is_err());
}
