//! Target basenames and target.toml text.
#![no_main]
use kiln_format::TargetId;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(id) = TargetId::parse_basename(text) {
        let again = TargetId::parse_basename(&id.basename()).expect("canonical basename parses");
        assert_eq!(again, id);
    }
    let _ = kiln_embed::target::TargetConfig::parse(text, "gfx942130", std::path::Path::new("fuzz/target.toml"));
});
