//! One module per command of the appliance binary, and the helpers they share.

pub mod coldstart;
pub mod demo;
pub mod devices;
pub mod doctor;
pub mod info;
pub mod net;
pub mod resolve;
pub mod run;
pub mod selftest;

/// A byte count for people: `712.3 KiB`.
pub fn human(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.2} MiB", bytes as f64 / (1u64 << 20) as f64)
    } else if bytes >= 1 << 10 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

/// The target `--target` names, else the only embedded one.
pub fn pick_target(
    name: Option<&str>,
) -> Result<&'static kiln::EmbeddedTarget, Box<dyn std::error::Error>> {
    match name {
        Some(n) => Ok(kiln::named_target(n)?),
        None => match kiln::targets() {
            [only] => Ok(only),
            all => Err(format!(
                "{} targets are embedded ([{}]); choose one with --target",
                all.len(),
                all.iter()
                    .map(|t| t.basename)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
            .into()),
        },
    }
}
