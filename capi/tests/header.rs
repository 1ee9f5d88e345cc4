//! kiln.h is generated from this crate's source: the committed header must be what cbindgen
//! makes of it now. `KILN_BLESS=1 cargo test -p kiln-c --test header` (or `make header`)
//! rewrites it.

use std::path::Path;

#[test]
fn committed_header_is_fresh() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates kiln.h")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("UTF-8 header");
    let path = dir.join("include/kiln.h");
    if std::env::var_os("KILN_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write kiln.h");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "capi/include/kiln.h is stale: run `make header` and commit it"
    );
}
