//! Malformed input fails with an error that names where: file:line, key, row or pin.

use std::path::Path;

use kiln_embed::finddb::FindDb;
use kiln_embed::kdb::{KdbEntry, KernelDb};
use kiln_embed::perfdb::PerfDb;

const GOOD: &str = "1008-14-14-1x1-192-14-14-16-0x0-1x1-1x1-0-NCHW-FP32-F=GemmFwd1x1_0_1:0.052681,0,miopenConvolutionFwdAlgoGEMM";

fn find_err(text: &str) -> String {
    FindDb::parse(text, Path::new("x.fdb.txt"))
        .unwrap_err()
        .to_string()
}

#[test]
fn find_db_errors() {
    let cases = [
        (
            format!("{GOOD}\n{}", &GOOD[..70]),
            "x.fdb.txt:2: item 'GemmFwd1x1_0_1:0' needs 3 values",
        ),
        (
            GOOD.replace("0.052681", "0.05e2x"),
            "x.fdb.txt:1: bad time '0.05e2x'",
        ),
        (
            GOOD.replace(",0,", ",-4,"),
            "x.fdb.txt:1: bad workspace '-4'",
        ),
        (GOOD.replace('=', ""), "x.fdb.txt:1: missing '='"),
        (
            GOOD.replace("NCHW", "NCWH"),
            "x.fdb.txt:1: bad problem key: field 13 (layout): unknown layout",
        ),
        (
            GOOD.replace("FP32", "FP24"),
            "x.fdb.txt:1: bad problem key: field 14 (data_type): unknown data type",
        ),
        (
            GOOD.replace("-14-14-16", "-14-1a-16"),
            "x.fdb.txt:1: bad problem key: field 7 (out_w): not a decimal number",
        ),
        (
            GOOD.replace("GEMM", "Magic"),
            "x.fdb.txt:1: unknown algorithm 'miopenConvolutionFwdAlgoMagic'",
        ),
        (
            format!("\n\n{GOOD}\n{GOOD}\n"),
            "x.fdb.txt:4: duplicate key",
        ),
    ];
    for (text, want) in cases {
        let e = find_err(&text);
        assert!(e.starts_with(want), "got:  {e}\nwant: {want}");
    }
}

#[test]
fn perf_db_errors() {
    let good =
        "2x64x56x56x1x3x3x1x64x32x1x1x0x1x1x0x1x1x0x0x1xNCHWxFP32xF=ConvBinWinogradRxSf3x2:78";
    let e = PerfDb::parse_text(&good.replace("x56x56", "x56"), Path::new("p.db.txt"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("p.db.txt:1: bad perf-db key: key: expected 24 'x' separated fields"),
        "{e}"
    );
    let e = PerfDb::parse_text(&good.replace(":78", "78"), Path::new("p.db.txt"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("p.db.txt:1: item 'ConvBinWinogradRxSf3x278' has no ':'"),
        "{e}"
    );
    let e = PerfDb::parse_text(&good.replace("NCHW", "NCHWc"), Path::new("p.db.txt"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("(layout): unknown layout"), "{e}");
}

fn write_kdb(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("t.kdb");
    let obj: Vec<u8> = (0..4096u32).map(|i| (i % 7) as u8).collect();
    KernelDb {
        entries: vec![KdbEntry {
            kernel_name: "k.cpp.o".into(),
            kernel_args: " -mcpu=gfx942".into(),
            object: obj,
        }],
    }
    .write(&p)
    .unwrap();
    p
}

fn sqlite(path: &Path, sql: &str) {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()"])
        .arg(path)
        .arg(sql)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn kdb_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_kdb(dir.path());
    // Corrupted blob: flip bytes inside the bzip2 stream.
    {
        let c = rusqlite::Connection::open(&p).unwrap();
        let mut blob: Vec<u8> = c
            .query_row("SELECT kernel_blob FROM kern_db", [], |r| r.get(0))
            .unwrap();
        for b in &mut blob[20..30] {
            *b ^= 0x5a;
        }
        c.execute("UPDATE kern_db SET kernel_blob = ?1", [&blob])
            .unwrap();
    }
    let e = KernelDb::read(&p).unwrap_err().to_string();
    assert!(
        e.contains("kernel 'k.cpp.o' args ' -mcpu=gfx942'")
            && (e.contains("bzip2") || e.contains("decompresses")),
        "{e}"
    );

    let p = write_kdb(dir.path());
    sqlite(
        &p,
        "UPDATE kern_db SET kernel_hash = '00000000000000000000000000000000'",
    );
    let e = KernelDb::read(&p).unwrap_err().to_string();
    assert!(
        e.contains("MD5 mismatch: kernel_hash is 00000000000000000000000000000000"),
        "{e}"
    );

    let p = write_kdb(dir.path());
    sqlite(&p, "ALTER TABLE kern_db DROP COLUMN uncompressed_size");
    let e = KernelDb::read(&p).unwrap_err().to_string();
    assert!(
        e.contains("wrong schema: table 'kern_db' lacks column(s) uncompressed_size"),
        "{e}"
    );

    let lfs = dir.path().join("gfx90a.kdb");
    std::fs::write(
        &lfs,
        "version https://git-lfs.github.com/spec/v1\noid sha256:1234\nsize 233781575\n",
    )
    .unwrap();
    let e = KernelDb::read(&lfs).unwrap_err().to_string();
    assert!(
        e.contains("gfx90a.kdb: this is a Git LFS pointer file"),
        "{e}"
    );

    let junk = dir.path().join("junk.kdb");
    std::fs::write(&junk, vec![b'x'; 4096]).unwrap();
    let e = KernelDb::read(&junk).unwrap_err().to_string();
    assert!(e.contains("not a SQLite database"), "{e}");
}

#[test]
fn wrong_perf_db_schema() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("w.db");
    sqlite(&p, "CREATE TABLE config(id INTEGER PRIMARY KEY); CREATE TABLE perf_db(id INTEGER PRIMARY KEY, solver TEXT, config INTEGER, params TEXT);");
    let e = PerfDb::read(&p).unwrap_err().to_string();
    assert!(
        e.contains("w.db: wrong schema: table 'config' lacks column(s) spatial_dim, in_channels"),
        "{e}"
    );
}
