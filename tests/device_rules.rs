//! What a device gets, decided from its description alone (no GPU needed): which embedded
//! target it runs, which code objects load on it, and which driver is too old. Each rule is
//! checked on a device description like the one the CUDA or HIP backend reports.

use kiln::backend::DeviceInfo;
use kiln::codeobject::{check_for_device, inspect, ObjectTarget, AMD_MACH};
use kiln::context::check_device;
use kiln::RunError;

fn device(arch: &str, sms: u32, driver: Option<(u32, u32)>) -> DeviceInfo {
    DeviceInfo {
        spec: "cuda:0".into(),
        name: format!("a test {arch} device"),
        arch: arch.into(),
        compute_units: sms,
        uuid: "GPU-00000000-0000-0000-0000-000000000000".into(),
        driver_version: driver,
        total_memory: 80 << 30,
    }
}

/// Every code object of a target's kdb.
fn objects(target: &str) -> Vec<&'static [u8]> {
    let t = kiln::named_target(target).unwrap();
    let kdb = t.kdb.unwrap();
    (0..kdb.len().unwrap())
        .map(|slot| {
            kiln::format::records::kdb_payload(kdb.record(slot).unwrap().payload)
                .unwrap()
                .object
        })
        .collect()
}

#[test]
fn sm_86_and_sm_88_devices_run_a_lower_arch_of_their_major() {
    // RTX 3090 (sm_86, 82 SMs) and a later 8.x: no target of their own. (Jetson AGX Orin,
    // sm_87, has `sm_87_16`; without it, it would run sm_80 objects: select.rs tests that.)
    let orin = check_device(&device("sm_87", 16, Some((12, 6)))).unwrap();
    assert!(orin.exact && orin.target.basename == "sm_87_16");
    // The nearest lower arch of the major: sm_86 -> sm_80, a hypothetical sm_88 -> sm_87.
    for (arch, sms, want) in [("sm_86", 82, "sm_80_108"), ("sm_88", 48, "sm_87_16")] {
        let sel = check_device(&device(arch, sms, Some((12, 4)))).unwrap();
        assert_eq!(sel.target.basename, want, "{arch}");
        assert!(!sel.same_arch && !sel.exact);
        let objs = objects(want);
        assert!(objs.len() > 50);
        for obj in objs {
            check_for_device(obj, arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
        }
    }
    // An sm_89 device has its own target; an sm_90 one too.
    let sel = check_device(&device("sm_89", 142, Some((12, 4)))).unwrap();
    assert!(sel.exact && sel.target.basename == "sm_89_142");
    // sm_80 objects never go to another major version, and nothing is embedded for 10.0.
    let e = check_device(&device("sm_100", 148, Some((13, 0)))).unwrap_err();
    assert!(
        e.to_string().contains("no embedded target for sm_100"),
        "{e}"
    );
    assert!(check_for_device(objects("sm_80_108")[0], "sm_100").is_err());
}

#[test]
fn an_arch_specific_cubin_loads_only_on_its_own_compute_capability() {
    // ptxas 12.9 writes e_flags 0x5a055a for sm_90 and 0x5a0d5a for sm_90a (measured): the
    // same object with bit 11 set is what an sm_90a cubin's header says.
    let all = objects("sm_90_132");
    let target = |o: &&&[u8]| inspect(o).ok();
    let plain = ObjectTarget::Nvidia {
        sm: 90,
        arch_specific: false,
    };
    let sm90 = *all.iter().find(|o| target(o) == Some(plain)).unwrap();
    // The embedded Hopper (wgmma/TMA) objects are real sm_90a cubins.
    let real: Vec<&&[u8]> = all
        .iter()
        .filter(|o| {
            matches!(
                target(o),
                Some(ObjectTarget::Nvidia {
                    arch_specific: true,
                    ..
                })
            )
        })
        .collect();
    assert!(!real.is_empty(), "no sm_90a object in the sm_90_132 kdb");
    for o in &real {
        assert!(check_for_device(o, "sm_90").is_ok());
        assert!(check_for_device(o, "sm_91").is_err());
    }
    let mut sm90a = sm90.to_vec();
    sm90a[49] |= 0x08;
    assert_eq!(
        inspect(&sm90a).unwrap(),
        ObjectTarget::Nvidia {
            sm: 90,
            arch_specific: true
        }
    );
    assert!(check_for_device(&sm90a, "sm_90").is_ok());
    let e = check_for_device(&sm90a, "sm_100").unwrap_err().to_string();
    assert!(
        e.contains("NVIDIA cubin for sm_90a; the device is sm_100"),
        "{e}"
    );
    // A later 9.x would run plain sm_90 cubins, never sm_90a ones.
    assert!(check_for_device(sm90, "sm_91").is_ok());
    assert!(check_for_device(&sm90a, "sm_91").is_err());
    // And sm_80 cubins never run sm_90a-only paths: nothing to check there; sm_90 on 8.x fails.
    assert!(check_for_device(sm90, "sm_89").is_err());
}

#[test]
fn a_driver_older_than_the_cubins_toolkit_is_refused_naming_both() {
    let t = kiln::named_target("h100").unwrap();
    assert_eq!(
        kiln::context::cuda_toolkit(t),
        Some((12, 9)),
        "{}",
        t.toolchain
    );
    let e = check_device(&device("sm_90", 132, Some((11, 8)))).unwrap_err();
    assert!(matches!(e, RunError::OldDriver { .. }));
    let text = e.to_string();
    assert!(
        text.contains("the CUDA driver supports CUDA 11.8")
            && text.contains("built with CUDA 12.9")
            && text.contains("CUDA 12.0 or newer"),
        "{text}"
    );
    // CUDA's minor-version compatibility: any 12.x driver runs 12.9 cubins; 13.x too.
    for ok in [(12, 0), (12, 4), (13, 0)] {
        assert!(
            check_device(&device("sm_90", 132, Some(ok))).is_ok(),
            "{ok:?}"
        );
    }
    // The sm_86 -> sm_80 path checks the sm_80 target's toolkit the same way.
    assert!(matches!(
        check_device(&device("sm_86", 82, Some((11, 4)))),
        Err(RunError::OldDriver {
            target: "sm_80_108",
            ..
        })
    ));
}

/// clang-19 (or `KILN_CLANG`): `ci/setup.sh` installs it.
fn clang() -> String {
    std::env::var("KILN_CLANG").unwrap_or_else(|_| "clang-19".into())
}

#[test]
fn amd_table_matches_clang_for_every_arch_it_targets() {
    let listed = std::process::Command::new(clang())
        .args([
            "--target=amdgcn-amd-amdhsa",
            "-nogpulib",
            "--print-supported-cpus",
        ])
        .output()
        .expect("clang-19 runs (ci/setup.sh installs it)");
    let text = String::from_utf8_lossy(&listed.stdout).to_string()
        + &String::from_utf8_lossy(&listed.stderr);
    let mut archs: Vec<&str> = text
        .split_whitespace()
        .filter(|w| w.starts_with("gfx") && !w.contains("generic"))
        .collect();
    archs.sort_unstable();
    archs.dedup();
    assert!(archs.len() >= 40, "clang listed: {text}");
    let mut table: Vec<&str> = AMD_MACH.iter().map(|(a, _)| *a).collect();
    table.sort_unstable();
    assert_eq!(
        table, archs,
        "kiln's AMD arch table differs from clang-19's list"
    );

    let dir = std::env::temp_dir().join(format!("kiln-amd-archs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("k.c");
    std::fs::write(&src, "void __attribute__((amdgpu_kernel)) k(void) {}\n").unwrap();
    for (i, &(arch, mach)) in AMD_MACH.iter().enumerate() {
        let obj = dir.join(format!("{arch}.o"));
        let ok = std::process::Command::new(clang())
            .args(["--target=amdgcn-amd-amdhsa", "-nogpulib", "-c"])
            .arg(format!("-mcpu={arch}"))
            .arg(&src)
            .arg("-o")
            .arg(&obj)
            .status()
            .unwrap()
            .success();
        assert!(ok, "clang-19 builds for {arch}");
        let bytes = std::fs::read(&obj).unwrap();
        match inspect(&bytes).unwrap() {
            ObjectTarget::Amd { mach: m, .. } => assert_eq!(m, mach, "{arch}"),
            other => panic!("{arch}: {other}"),
        }
        // Accepted on its own arch, refused on its neighbour in the table.
        check_for_device(&bytes, &format!("{arch}:sramecc-:xnack-"))
            .unwrap_or_else(|e| panic!("{arch}: {e}"));
        let other = AMD_MACH[(i + 1) % AMD_MACH.len()].0;
        let e = check_for_device(&bytes, other).unwrap_err().to_string();
        assert!(
            e.contains(&format!("the device is {other}")),
            "{arch} on {other}: {e}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_device_running_a_lower_arch_keeps_its_own_limits() {
    use kiln::solvers::TargetCaps;
    let a100 = kiln::named_target("a100").unwrap();
    let on_86 = TargetCaps::on_device(a100, "sm_86", 82);
    assert_eq!(
        (on_86.arch, on_86.code_arch, on_86.compute_units),
        ("sm_86", "sm_80", 82)
    );
    assert_eq!(
        TargetCaps::on_device(a100, "sm_80", 108),
        TargetCaps::of(a100)
    );
    // An FP16 NHWC layer: the 256x128x64, 3-stage tile needs 144 KiB of shared memory, which an
    // sm_80 block has and an sm_86 block (99 KiB) has not.
    let p = kiln::ConvProblem::from_find_db_key(
        "256-56-56-3x3-256-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F",
    )
    .unwrap();
    let s = kiln::solvers::by_id("ConvCutlassIgemmFwd").unwrap();
    let big = "256,128,64,64,64,3,8,1";
    assert!(s.applicable(&p, &TargetCaps::of(a100), big).is_ok());
    assert!(s.applicable(&p, &on_86, big).is_err());
    // The tensor-core solvers still apply there (the manifest builds them for sm_80, whose
    // cubins the sm_86 runs), with the configs that fit.
    assert!(s.applicable(&p, &on_86, "128,128,64,64,64,3,8,1").is_ok());
    // The plan for the sm_86 device leaves the big config out; the sm_80 one may use it.
    let plan = kiln::resolve::resolve_on(a100, &on_86, &p).unwrap();
    assert!(plan
        .iter()
        .any(|r| r.variant.solver.id() == "ConvCutlassIgemmFwd"));
    assert!(plan.iter().all(|r| r.variant.params != big));
    assert!(plan.iter().all(|r| r
        .variant
        .solver
        .applicable(&p, &on_86, r.variant.params)
        .is_ok()));
}
