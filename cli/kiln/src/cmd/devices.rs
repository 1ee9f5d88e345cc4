//! `kiln devices`: each GPU runtime this binary can load, whether it was found, its devices,
//! and the embedded target each device maps to.

use kiln::harness::output::{Classified, ExitClass};

use crate::args::JsonArgs;
use crate::json::Json;
use crate::CliResult;

/// One device's embedded target: (basename, exact), or why it has none (no target of its
/// arch or major version, or a driver too old for the target's cubins).
fn target_of(d: &kiln::backend::DeviceInfo) -> Result<(&'static str, bool), String> {
    kiln::context::check_device(d)
        .map(|sel| (sel.target.basename, sel.exact))
        .map_err(|e| e.to_string())
}

/// Lists every runtime and device; with no usable device (no runtime, no GPU), says so after
/// the list and ends with an error of exit class 3.
pub fn run(a: &JsonArgs) -> CliResult {
    // Each runtime is probed once: the listing counts the devices it shows.
    let found = if a.json {
        let (doc, found) = as_json();
        kiln::outln!("{doc}");
        found
    } else {
        list()?
    };
    if found == 0 {
        return Err(Classified::boxed(
            ExitClass::NoDevice,
            "no usable GPU device: no runtime was found, or it found no device (see the list above)",
        ));
    }
    Ok(())
}

/// Prints each runtime and its devices; returns how many devices it listed.
fn list() -> Result<usize, Box<dyn std::error::Error>> {
    let mut found = 0;
    for b in kiln::backend::BACKENDS {
        let scheme = b.scheme;
        let runtime = match (b.runtime)() {
            Ok(lib) => lib,
            Err(e) => {
                kiln::outln!("{scheme}: runtime not found: {}", e.message);
                continue;
            }
        };
        match (b.list)() {
            Err(e) => kiln::outln!(
                "{scheme}: runtime {runtime} loaded; no usable device: {}",
                e.message
            ),
            Ok(devices) if devices.is_empty() => {
                kiln::outln!("{scheme}: runtime {runtime} loaded; no device")
            }
            Ok(devices) => {
                found += devices.len();
                kiln::outln!(
                    "{scheme}: runtime {runtime} loaded; {} device(s)",
                    devices.len()
                );
                for d in devices {
                    let target = match target_of(&d) {
                        Ok((t, exact)) => {
                            format!(
                                "{t}{}",
                                if exact {
                                    ""
                                } else {
                                    " (inexact target: closest CU count or a lower arch; see the log)"
                                }
                            )
                        }
                        Err(e) => format!("none: {e}"),
                    };
                    let driver = d
                        .driver_version
                        .map(|(a, b)| format!("  driver CUDA {a}.{b}"))
                        .unwrap_or_default();
                    kiln::outln!(
                        "  {}  {}  {}  {} SMs/CUs  {:.1} GiB  {}{driver}  -> embedded target {}",
                        d.spec,
                        d.name,
                        d.arch,
                        d.compute_units,
                        d.total_memory as f64 / (1u64 << 30) as f64,
                        d.uuid,
                        target
                    );
                }
            }
        }
    }
    if kiln::backend::BACKENDS.is_empty() {
        kiln::outln!("this kiln was built without a GPU backend (features cuda, hip)");
    }
    Ok(found)
}

/// The JSON document of every runtime and its devices, and how many devices it lists.
fn as_json() -> (Json, usize) {
    let mut found = 0;
    let backends = kiln::backend::BACKENDS
        .iter()
        .map(|b| {
            let (runtime, error, devices) = match (b.runtime)() {
                Err(e) => (None, Some(e.message), Vec::new()),
                Ok(lib) => match (b.list)() {
                    Err(e) => (Some(lib), Some(e.message), Vec::new()),
                    Ok(devices) => (Some(lib), None, devices),
                },
            };
            found += devices.len();
            let devices = devices
                .iter()
                .map(|d| {
                    let (target, exact, why) = match target_of(d) {
                        Ok((t, exact)) => (Json::str(t), Json::Bool(exact), Json::Null),
                        Err(e) => (Json::Null, Json::Null, Json::str(e)),
                    };
                    Json::obj([
                        ("spec", Json::str(&d.spec)),
                        ("name", Json::str(&d.name)),
                        ("arch", Json::str(&d.arch)),
                        ("compute_units", Json::uint(d.compute_units.into())),
                        ("uuid", Json::str(&d.uuid)),
                        ("total_memory_bytes", Json::uint(d.total_memory)),
                        (
                            "driver_cuda_version",
                            d.driver_version
                                .map_or(Json::Null, |(a, b)| Json::str(format!("{a}.{b}"))),
                        ),
                        ("target", target),
                        ("exact_target", exact),
                        ("no_target_reason", why),
                    ])
                })
                .collect();
            Json::obj([
                ("scheme", Json::str(b.scheme)),
                ("runtime", Json::opt_str(runtime)),
                ("error", Json::opt_str(error)),
                ("devices", Json::Arr(devices)),
            ])
        })
        .collect();
    (Json::obj([("backends", Json::Arr(backends))]), found)
}
