//! The kdb reader on arbitrary bytes (SQLite file parsing, bzip2, sizes, MD5): an error or a
//! database, never a panic, an abort or unbounded memory.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.kdb");
    std::fs::write(&path, data).unwrap();
    if let Ok(db) = kiln_embed::kdb::KernelDb::read(&path) {
        let total: usize = db.entries.iter().map(|e| e.object.len()).sum();
        assert!(total as u64 <= kiln_embed::kdb::MAX_KDB_DECODED_BYTES);
    }
});
