//! `kiln devices`: each GPU runtime this binary can load, whether it was found, its devices,
//! and the embedded target each device maps to.

use crate::CliResult;

pub fn run() -> CliResult {
    for b in kiln::backend::BACKENDS {
        let scheme = b.scheme;
        let runtime = match (b.runtime)() {
            Ok(lib) => lib,
            Err(e) => {
                println!("{scheme}: runtime not found: {}", e.message);
                continue;
            }
        };
        match (b.list)() {
            Err(e) => println!(
                "{scheme}: runtime {runtime} loaded; no usable device: {}",
                e.message
            ),
            Ok(devices) if devices.is_empty() => {
                println!("{scheme}: runtime {runtime} loaded; no device")
            }
            Ok(devices) => {
                println!(
                    "{scheme}: runtime {runtime} loaded; {} device(s)",
                    devices.len()
                );
                for d in devices {
                    let target = match kiln::select_target(&d.arch, d.compute_units) {
                        Ok(sel) => format!(
                            "{}{}",
                            sel.target.basename,
                            if sel.exact { "" } else { " (closest CU count)" }
                        ),
                        Err(e) => format!("none: {e}"),
                    };
                    println!(
                        "  {}  {}  {}  {} SMs/CUs  {}  -> embedded target {}",
                        d.spec, d.name, d.arch, d.compute_units, d.uuid, target
                    );
                }
            }
        }
    }
    if kiln::backend::BACKENDS.is_empty() {
        println!("this kiln was built without a GPU backend (features cuda, hip)");
    }
    Ok(())
}
