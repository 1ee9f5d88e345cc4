//! Find-db text: any input parses or fails with an error; what parses writes back and
//! re-parses to the same records.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(db) = kiln_embed::finddb::FindDb::parse(text, std::path::Path::new("fuzz")) {
        let again = kiln_embed::finddb::FindDb::parse(&db.to_text(), std::path::Path::new("fuzz")).expect("written text parses");
        assert_eq!(again.records.len(), db.records.len());
        for (a, b) in again.records.iter().zip(&db.records) {
            assert_eq!(a.key, b.key);
            assert_eq!(a.items.len(), b.items.len());
        }
    }
});
