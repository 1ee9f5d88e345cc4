//! The SQLite perf-db reader on arbitrary bytes: an error or a database whose text form reads
//! back the same, never a panic or a hang.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.db");
    std::fs::write(&path, data).unwrap();
    if let Ok(db) = kiln_embed::perfdb::PerfDb::read(&path) {
        let again = kiln_embed::perfdb::PerfDb::parse_text(&db.to_text(), &path)
            .expect("written text parses");
        assert_eq!(again, db);
    }
});
