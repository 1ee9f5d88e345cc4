//! `target.toml` written then read: whatever text origin, aliases and toolchain hold (newlines,
//! quotes, control characters), the file reads back to the same configuration.
#![no_main]
use kiln_embed::target::{render_target_toml, TargetConfig, TargetFiles};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut parts = text.splitn(3, '\u{0}');
    let origin = parts.next().unwrap_or("").to_string();
    let alias = parts.next().unwrap_or("").to_string();
    let toolchain = parts.next().map(str::to_string);
    let cfg = TargetConfig {
        basename: "gfx90a68".into(),
        vendor: kiln_format::Vendor::Amd,
        arch: "gfx90a".into(),
        compute_units: 104,
        code_object: kiln_format::CodeObjectKind::Hsaco,
        aliases: vec![alias],
        origin,
        toolchain,
        files: TargetFiles {
            find_db: Some("gfx90a68.HIP.fdb.txt".into()),
            perf_db: None,
            kdb: None,
        },
        pins: [("gfx90a68.HIP.fdb.txt".to_string(), "0".repeat(64))].into(),
    };
    let rendered = render_target_toml(&cfg);
    let back = TargetConfig::parse(&rendered, "gfx90a68", std::path::Path::new("fuzz"))
        .expect("a rendered target.toml parses");
    assert_eq!(back, cfg);
});
