//! Perf-db text: parse, write, parse again gives the same database.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(db) = kiln_embed::perfdb::PerfDb::parse_text(text, std::path::Path::new("fuzz")) {
        let again = kiln_embed::perfdb::PerfDb::parse_text(&db.to_text(), std::path::Path::new("fuzz")).expect("written text parses");
        assert_eq!(again, db);
    }
});
