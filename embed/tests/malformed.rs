//! Malformed input fails with an error that names where: file:line, key, row or pin.

use std::path::Path;

use kiln_embed::finddb::FindDb;
use kiln_embed::kdb::{KdbEntry, KernelDb};
use kiln_embed::perfdb::PerfDb;

const GOOD: &str = "1008-14-14-1x1-192-14-14-16-0x0-1x1-1x1-0-NCHW-FP32-F=GemmFwd1x1_0_1:0.052681,0,miopenConvolutionFwdAlgoGEMM";

/// The error for `text` as a whole file (a newline added after its last line, as MIOpen ends
/// every line; the truncation check has its own test).
fn find_err(text: &str) -> String {
    let mut text = text.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    FindDb::parse(&text, Path::new("x.fdb.txt"))
        .unwrap_err()
        .to_string()
}

#[test]
fn a_file_cut_short_is_refused_as_truncated() {
    // MIOpen writes a newline after every line: a file without its final newline was cut.
    for cut in [GOOD.len() - 1, 70, 10] {
        let e = FindDb::parse(&format!("{GOOD}\n{}", &GOOD[..cut]), Path::new("x.fdb.txt"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("x.fdb.txt:2: truncated: the last line has no newline"),
            "{e}"
        );
    }
    let e = PerfDb::parse_text("2x1x1=S:1\n2x1x2=S:", Path::new("p.db.txt"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("p.db.txt:2: truncated"), "{e}");
    // An empty file is an empty database, not a truncated one.
    assert!(FindDb::parse("", Path::new("x.fdb.txt"))
        .unwrap()
        .records
        .is_empty());
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
            GOOD.replace("-NCHW-", "-NC HW-"),
            "x.fdb.txt:1: key '1008-14-14-1x1-192-14-14-16-0x0-1x1-1x1-0-NC HW-FP32-F' contains ' '",
        ),
        (
            format!("{}{GOOD}", "9".repeat(2000)),
            "x.fdb.txt:1: key of 2053 bytes (at most 1024)",
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
    // A key is opaque to the reader (MIOpen's own files hold rows kiln cannot build); the
    // problem parser, which resolving uses, names what is wrong with it.
    for (key, want) in [
        (
            GOOD.replace("NCHW", "NCWH"),
            "field 13 (layout): unknown layout",
        ),
        (
            GOOD.replace("FP32", "FP24"),
            "field 14 (data_type): unknown data type",
        ),
        (
            GOOD.replace("-14-14-16", "-14-1a-16"),
            "field 7 (out_w): not a decimal number",
        ),
    ] {
        FindDb::parse(&format!("{key}\n"), Path::new("x.fdb.txt")).unwrap();
        let e = kiln_format::ConvProblem::from_find_db_key(key.split('=').next().unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "got:  {e}\nwant: {want}");
    }
    // An item error quotes a short excerpt, not a 100 MB item.
    let huge = format!(
        "{}=A{}",
        GOOD.split('=').next().unwrap(),
        "B".repeat(10 << 20)
    );
    let e = find_err(&huge);
    assert!(e.len() < 1000, "{} bytes of error", e.len());
}

#[test]
fn a_line_of_a_million_items_is_refused_in_linear_time() {
    let key = GOOD.split('=').next().unwrap();
    let items: Vec<String> = (0..1_000_000)
        .map(|i| format!("S{i}:1.0,0,miopenConvolutionFwdAlgoDirect"))
        .collect();
    let line = format!("{key}={}", items.join(";"));
    let t = std::time::Instant::now();
    let e = find_err(&line);
    assert!(e.contains("more than 255 solutions"), "{e}");
    // Quadratic parsing took 20 s for 80,000 items; this is one pass.
    assert!(t.elapsed().as_secs_f64() < 5.0, "{:?}", t.elapsed());
}

#[test]
fn perf_db_errors() {
    let good =
        "2x64x56x56x1x3x3x1x64x32x1x1x0x1x1x0x1x1x0x0x1xNCHWxFP32xF=ConvBinWinogradRxSf3x2:78";
    let e = PerfDb::parse_text(
        &format!("{}\n", good.replace("x56x56", "x5 6")),
        Path::new("p.db.txt"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("p.db.txt:1: key '2x64x5 6x1x3x3"), "{e}");
    let e = PerfDb::parse_text(
        &format!("{}\n", good.replace(":78", "78")),
        Path::new("p.db.txt"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("p.db.txt:1: item 'ConvBinWinogradRxSf3x278' has no ':'"),
        "{e}"
    );
    // Opaque to the reader; the problem parser names the field.
    let odd = good.replace("NCHW", "NCHWc");
    PerfDb::parse_text(&format!("{odd}\n"), Path::new("p.db.txt")).unwrap();
    let e = kiln_format::ConvProblem::from_perf_db_key(odd.split('=').next().unwrap())
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
