//! `kiln doctor`: why a GPU is not usable here, and what to do about it. It checks what the
//! driver needs before kiln can open a device: the device nodes and this user's access to them
//! (through file mode and group membership), then each GPU runtime this binary can load, its
//! devices, and whether an embedded target and the driver's version fit each. Every problem is
//! one line saying what is wrong and what to do.
//!
//! Unlike the other commands it reads the filesystem (`/dev`, `/proc/self/status`,
//! `/etc/group`): it diagnoses the machine, it does not run kernels.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use kiln::harness::output::{Classified, ExitClass};

use crate::CliResult;

/// One finding: fine, or a problem with its fix.
enum Finding {
    Ok(String),
    Problem { what: String, fix: String },
}

/// The groups this process belongs to (the `Groups:` line of `/proc/self/status`) and its uid.
fn identity() -> (u32, Vec<u32>) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or("")
            .split_whitespace()
            .filter_map(|v| v.parse::<u32>().ok())
            .collect::<Vec<_>>()
    };
    let uid = field("Uid:").first().copied().unwrap_or(u32::MAX);
    (uid, field("Groups:"))
}

/// A group's name from `/etc/group` (its number when not listed).
fn group_name(gid: u32) -> String {
    std::fs::read_to_string("/etc/group")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let _ = f.next();
            (f.next()?.parse::<u32>().ok()? == gid).then(|| name.to_string())
        })
        .unwrap_or_else(|| gid.to_string())
}

/// Whether this user may read and write `path`, and the finding.
fn node(path: &Path, uid: u32, groups: &[u32]) -> Finding {
    let shown = path.display();
    let m = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            return Finding::Problem {
                what: format!("{shown}: {e}"),
                fix: "the driver's device node is missing: is the driver loaded (lsmod), and, in a container, is the device passed in (--gpus / --device)?".into(),
            }
        }
    };
    let mode = m.permissions().mode();
    let rw = |shift: u32| (mode >> shift) & 0o6 == 0o6;
    let allowed =
        uid == 0 || (m.uid() == uid && rw(6)) || (groups.contains(&m.gid()) && rw(3)) || rw(0);
    if allowed {
        Finding::Ok(format!("{shown}: read-write for this user"))
    } else {
        let group = group_name(m.gid());
        Finding::Problem {
            what: format!(
                "{shown}: mode {:o}, group '{group}', and this user is not in it",
                mode & 0o777
            ),
            fix: format!(
                "add the user to the group: sudo usermod -aG {group} $USER (then log in again)"
            ),
        }
    }
}

/// The device nodes of the vendors whose runtimes this binary can load.
fn device_nodes() -> Vec<std::path::PathBuf> {
    let mut nodes = Vec::new();
    let schemes: Vec<&str> = kiln::backend::BACKENDS.iter().map(|b| b.scheme).collect();
    let listed = |dir: &str, prefix: &str| {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with(prefix))
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    if schemes.contains(&"cuda") {
        let nv = listed("/dev", "nvidia");
        if nv.is_empty() {
            nodes.push("/dev/nvidiactl".into());
        }
        nodes.extend(nv.into_iter().filter(|p| !p.is_dir()));
    }
    if schemes.contains(&"hip") {
        nodes.push("/dev/kfd".into());
        let render = listed("/dev/dri", "renderD");
        if render.is_empty() {
            nodes.push("/dev/dri/renderD128".into());
        }
        nodes.extend(render);
    }
    nodes
}

/// Runs `kiln doctor`: prints every finding; an error (exit class 3) when a GPU is not usable.
pub fn run() -> CliResult {
    let (uid, groups) = identity();
    let mut findings = Vec::new();
    let nodes = device_nodes();
    // A vendor whose nodes are all missing is simply absent; only report its nodes when one of
    // them exists or its runtime loads.
    for b in kiln::backend::BACKENDS {
        let mine: Vec<_> = nodes
            .iter()
            .filter(|p| {
                let s = p.to_string_lossy();
                (b.scheme == "cuda" && s.contains("nvidia"))
                    || (b.scheme == "hip" && (s.contains("kfd") || s.contains("renderD")))
            })
            .collect();
        let runtime = (b.runtime)();
        let any_node = mine.iter().any(|p| p.exists());
        if any_node || runtime.is_ok() {
            for p in &mine {
                findings.push(node(p, uid, &groups));
            }
        }
        match runtime {
            Err(e) => {
                if any_node {
                    findings.push(Finding::Problem {
                        what: format!("{}: runtime not found: {}", b.scheme, e.message),
                        fix: match b.scheme {
                            "cuda" => "install the NVIDIA driver's libcuda.so (the driver package, not the CUDA toolkit)".into(),
                            _ => "install ROCm's HIP runtime (libamdhip64.so), or name it with KILN_HIP_LIBRARY".into(),
                        },
                    });
                } else {
                    findings.push(Finding::Ok(format!(
                        "{}: no runtime and no device node (no such GPU here)",
                        b.scheme
                    )));
                }
            }
            Ok(lib) => match (b.list)() {
                Err(e) => findings.push(Finding::Problem {
                    what: format!("{}: runtime {lib} loaded, but: {}", b.scheme, e.message),
                    fix: "the driver refused: check the device nodes above, dmesg, and that the driver and its library are the same version".into(),
                }),
                Ok(devices) if devices.is_empty() => findings.push(Finding::Problem {
                    what: format!("{}: runtime {lib} loaded, no device", b.scheme),
                    fix: "no GPU is visible to this process: check CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES and the container's device list".into(),
                }),
                Ok(devices) => {
                    for d in devices {
                        match kiln::context::check_device(&d) {
                            Ok(sel) => findings.push(Finding::Ok(format!(
                                "{}: {} ({}, {} SMs/CUs) runs on embedded target {}{}",
                                d.spec,
                                d.name,
                                d.arch,
                                d.compute_units,
                                sel.target.basename,
                                if sel.exact {
                                    ""
                                } else {
                                    " (not its own: closest CU count or a lower arch)"
                                }
                            ))),
                            Err(e) => findings.push(Finding::Problem {
                                what: format!("{}: {} ({}): {e}", d.spec, d.name, d.arch),
                                fix: "update the GPU driver, or build kiln with this device's target (a cargo feature, or KILN_EXTRA_TARGETS)".into(),
                            }),
                        }
                    }
                }
            },
        }
    }
    let mut problems = 0;
    for f in &findings {
        match f {
            Finding::Ok(what) => kiln::outln!("ok       {what}"),
            Finding::Problem { what, fix } => {
                problems += 1;
                kiln::outln!("PROBLEM  {what}\n         fix: {fix}");
            }
        }
    }
    let usable = findings
        .iter()
        .any(|f| matches!(f, Finding::Ok(w) if w.contains("runs on embedded target")));
    kiln::outln!(
        "kiln doctor: {problems} problem(s); {}",
        if usable {
            "a GPU is usable"
        } else {
            "no GPU is usable"
        }
    );
    if usable {
        Ok(())
    } else {
        Err(Classified::boxed(
            ExitClass::NoDevice,
            "no usable GPU: see the problems above",
        ))
    }
}
