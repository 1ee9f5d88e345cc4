//! `kiln-tools db ...` on real and hostile database files: every row MIOpen writes is accepted
//! (whether kiln can run a problem is asked when it is resolved), and bad files give one clear
//! error line with no input modified.

mod common;

use std::process::Command;

fn tools(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kiln-tools"))
        .args(args)
        .current_dir(common::repo())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn miopen_rows_kiln_cannot_run_are_still_read() {
    let fdb = common::repo().join("tests/fixtures/miopen-rows.HIP.fdb.txt");
    let pdb = common::repo().join("tests/fixtures/miopen-rows.db.txt");
    let (code, out, err) = tools(&["db", "check", fdb.to_str().unwrap(), pdb.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("ok, find-db, 8 records"), "{out}");
    assert!(out.contains("ok, perf-db, 5 configs"), "{out}");
    // They are the hard cases: all but the last (a control row) describe no convolution kiln
    // would build.
    let text = std::fs::read_to_string(&fdb).unwrap();
    let unbuildable = text
        .lines()
        .filter(|l| kiln::ConvProblem::from_find_db_key(l.split('=').next().unwrap()).is_err())
        .count();
    assert_eq!(unbuildable, 7);
    // Through SQLite and back, and in stats (counted apart, not an error).
    let dir = tempfile::tempdir().unwrap();
    let sqlite = dir.path().join("rows.db");
    let (code, _, err) = tools(&[
        "db",
        "convert",
        pdb.to_str().unwrap(),
        sqlite.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = tools(&["db", "check", sqlite.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("5 configs"), "{out}");
    let (code, out, err) = tools(&["db", "stats", fdb.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("not convolutions kiln can describe"), "{out}");
}
