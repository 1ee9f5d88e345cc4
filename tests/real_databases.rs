//! MIOpen's real gfx942130 find-db (9,600 lines) and perf-db (21,058 SQLite rows): everything
//! parses, keys round-trip through `ConvProblem`, and the embedded tables return exactly what
//! the files hold.

mod common;

use kiln::ConvProblem;
use kiln_embed::finddb::FindDb;
use kiln_embed::perfdb::PerfDb;

#[test]
fn fixtures_are_miopen_files_and_the_target_was_imported_from_them() {
    // The sha256 of MIOpen's files (commit 2d1fd997, tests/data/miopen/README.md): the fixtures
    // are unmodified, and targets/gfx942130 holds the find-db byte for byte and the perf-db as
    // the text form of the same rows.
    assert_eq!(
        common::sha256_hex(&common::miopen_find_db()),
        "4c7d43ffa83256d530b7a77da0677a4077f2bb6c79d407b8f0af69a57c7e6698"
    );
    assert_eq!(
        common::sha256_hex(&common::miopen_perf_db()),
        "e44243d9535c4e482b99321d688f3f34f540d4bc8c69520d8b5703cb436bd3f7"
    );
    let sqlite = PerfDb::read(&common::miopen_perf_db()).unwrap();
    let text = PerfDb::read(&common::gfx942130().join("gfx942130.db.txt")).unwrap();
    assert_eq!(sqlite, text);
}

#[test]
fn every_find_db_line_parses_and_round_trips() {
    let path = common::miopen_find_db();
    let text = std::fs::read_to_string(&path).unwrap();
    let db = FindDb::parse(&text, &path).unwrap();
    assert_eq!(db.records.len(), 9600);
    assert_eq!(
        db.records.iter().map(|r| r.items.len()).sum::<usize>(),
        37792
    );
    // Writing back gives the file byte for byte (keys, %g times, item order).
    assert_eq!(db.to_text(), text);
    for r in &db.records {
        let p = ConvProblem::from_find_db_key(&r.key).unwrap_or_else(|e| panic!("{}: {e}", r.key));
        assert_eq!(p.find_db_key().as_str(), r.key);
        // The perf-db key of the same problem parses back to the same perf-db key.
        let pk = p.perf_db_key();
        assert_eq!(
            ConvProblem::from_perf_db_key(pk.as_str())
                .unwrap()
                .perf_db_key(),
            pk
        );
    }
}

#[test]
fn every_perf_db_row_parses_and_keys_round_trip() {
    let db = PerfDb::read(&common::miopen_perf_db()).unwrap();
    assert_eq!(db.records.len(), 9393);
    assert_eq!(
        db.records.iter().map(|r| r.items.len()).sum::<usize>(),
        21058
    );
    for r in &db.records {
        let p = ConvProblem::from_perf_db_key(&r.key).unwrap_or_else(|e| panic!("{}: {e}", r.key));
        assert_eq!(p.perf_db_key().as_str(), r.key);
    }
    // Independent check of the key order against a plain SQL query of one known row.
    let conn = rusqlite_free_row_check();
    assert!(
        conn.contains(&"2x1000x13x13x1x1x1x1x512x16x0x0x0x1x1x0x1x1x0x0x1xNCHWxFP16xB".to_string())
    );
    assert!(db
        .records
        .iter()
        .any(|r| r.key == "2x1000x13x13x1x1x1x1x512x16x0x0x0x1x1x0x1x1x0x0x1xNCHWxFP16xB"));
}

/// Reads config row 1 with the sqlite3 module of Python, a client kiln did not write.
fn rusqlite_free_row_check() -> Vec<String> {
    let script = "import sqlite3,sys\nc=sqlite3.connect(sys.argv[1])\nr=c.execute('select spatial_dim,in_channels,in_h,in_w,in_d,fil_h,fil_w,fil_d,out_channels,batchsize,pad_h,pad_w,pad_d,conv_stride_h,conv_stride_w,conv_stride_d,dilation_h,dilation_w,dilation_d,bias,group_count,layout,data_type,direction from config where id=1').fetchone()\nprint('x'.join(str(v) for v in r))";
    common::python_lines(script, &common::miopen_perf_db())
}

#[test]
fn embedded_find_db_returns_exactly_the_file() {
    let target = kiln::named_target("gfx942130").unwrap();
    let db = FindDb::read(&common::gfx942130().join("gfx942130.HIP.fdb.txt")).unwrap();
    for r in &db.records {
        let by_key = target
            .find_record_by_key(&r.key)
            .unwrap()
            .expect("key is embedded");
        let got: Vec<_> = by_key.iter().map(Result::unwrap).collect();
        assert_eq!(got.len(), r.items.len(), "{}", r.key);
        for (g, want) in got.iter().zip(&r.items) {
            assert_eq!(g.solver, want.solver);
            assert_eq!(g.time_ms.to_bits(), want.time_ms.to_bits());
            assert_eq!(g.workspace, want.workspace);
            assert_eq!(g.algorithm, want.algorithm);
        }
        // The same record through the problem (key built on the stack).
        let p = ConvProblem::from_find_db_key(&r.key).unwrap();
        let by_problem = target.find_record(&p).unwrap().unwrap();
        assert_eq!(by_problem.len(), r.items.len());
    }
    // Misses are misses.
    assert!(target
        .find_record_by_key("1-1-1-1x1-1-1-1-1-0x0-1x1-1x1-0-NCHW-FP32-F")
        .unwrap()
        .is_none());
    assert!(target.find_record_by_key("not a key").unwrap().is_none());
}

#[test]
fn embedded_perf_db_returns_exactly_the_file() {
    let target = kiln::named_target("mi300x").unwrap();
    let db = PerfDb::read(&common::gfx942130().join("gfx942130.db.txt")).unwrap();
    for r in &db.records {
        let p = ConvProblem::from_perf_db_key(&r.key).unwrap();
        let got = target.perf_record(&p).unwrap();
        let got: Vec<(String, String)> = got
            .iter()
            .map(|(s, q)| (s.to_string(), q.to_string()))
            .collect();
        let want: Vec<(String, String)> = r
            .items
            .iter()
            .map(|i| (i.solver.clone(), i.params.clone()))
            .collect();
        assert_eq!(got, want, "{}", r.key);
        for i in &r.items {
            assert_eq!(
                target.perf_params_by_key(&r.key, &i.solver).unwrap(),
                Some(i.params.as_str())
            );
        }
        assert_eq!(
            target.perf_params_by_key(&r.key, "NoSuchSolver").unwrap(),
            None
        );
    }
}

#[test]
fn embedded_sizes_meet_the_budget() {
    let target = kiln::named_target("gfx942130").unwrap();
    let fdb = target.find_db.unwrap().stats().unwrap();
    let pdb = target.perf_db.unwrap().stats().unwrap();
    let total = fdb.embedded_bytes + pdb.embedded_bytes;
    assert!(
        total <= 1_000_000,
        "find-db + perf-db embed in {total} B, budget 1 MB"
    );
    assert_eq!((fdb.records, pdb.records), (9600, 9393));
}

#[test]
fn target_selection_exact_and_closest() {
    let exact = kiln::select_target("gfx942:sramecc+:xnack-", 304).unwrap();
    assert!(exact.exact && exact.target.basename == "gfx942130");
    // An MI308X reports 80 CUs: no exact DB, the closest gfx942 one is used (MIOpen's intent).
    let close = kiln::select_target("gfx942", 80).unwrap();
    assert!(!close.exact && close.target.basename == "gfx942130");
    let e = kiln::select_target("gfx1201", 32).unwrap_err().to_string();
    assert!(
        e.contains("gfx1201 with 32 compute units")
            && e.contains("gfx942130")
            && e.contains("sm_90_132"),
        "{e}"
    );
}
