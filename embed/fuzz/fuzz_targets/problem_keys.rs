//! Find-db and perf-db keys: a key that parses serializes back to itself.
#![no_main]
use kiln_format::ConvProblem;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(key) = std::str::from_utf8(data) else { return };
    if let Ok(p) = ConvProblem::from_find_db_key(key) {
        assert_eq!(p.find_db_key().as_str(), key);
        let _ = p.network_config();
        let pk = p.perf_db_key();
        assert_eq!(ConvProblem::from_perf_db_key(pk.as_str()).expect("own perf key parses").perf_db_key(), pk);
    }
    if let Ok(p) = ConvProblem::from_perf_db_key(key) {
        assert_eq!(p.perf_db_key().as_str(), key);
    }
});
