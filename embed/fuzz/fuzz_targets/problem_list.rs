//! Problem lists (`kiln selftest --problems`, `kiln-tools find`): any bytes, read from a file
//! as the appliance reads them, give problems whose keys parse back to themselves, or one
//! short error naming the line; never a panic.
#![no_main]
use kiln::harness::problem_list;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("kiln-fuzz-list-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("list.txt");
    std::fs::write(&path, data).unwrap();
    match problem_list::read(&path) {
        Ok(list) => {
            let mut seen = std::collections::HashSet::new();
            for (key, p) in list {
                assert!(seen.insert(p), "a repeated problem was kept");
                assert_eq!(kiln_format::ConvProblem::from_find_db_key(&key).unwrap(), p);
            }
        }
        Err(e) => {
            assert!(e.starts_with(&path.display().to_string()), "{e}");
            assert!(!e.contains('\n') && e.len() < 1500, "{e}");
        }
    }
});
