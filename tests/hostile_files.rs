//! The workshop binary on hostile database files (the reliability review's generators, and
//! more: `tests/hostile/make_files.py`) and hostile import/convert/regret command lines. Every
//! case ends with a clear error (or, for valid controls, success), never a panic, abort, hang
//! or unbounded memory, and no input file is modified.

mod common;
mod hostile;

use std::path::{Path, PathBuf};
use std::process::Command;

use hostile::{run_all, Case, Expect};

fn tools() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kiln-tools"))
}

/// The real text databases `make_files.py` cuts at each sixteenth.
fn cut_sources() -> [PathBuf; 2] {
    let t = common::repo().join("targets/sm_90_132");
    [t.join("sm_90_132.HIP.fdb.txt"), t.join("sm_90_132.db.txt")]
}

fn make_files(dir: &Path) {
    let script = common::repo().join("tests/hostile/make_files.py");
    let [a, b] = cut_sources();
    common::python(&[
        script.as_os_str(),
        dir.as_os_str(),
        a.as_os_str(),
        b.as_os_str(),
    ]);
}

/// Database files that must read (everything else must be refused with a clear error).
const VALID: [&str; 13] = [
    "empty.fdb.txt",
    "empty.db.txt",
    "good.fdb.txt",
    "good.db.txt",
    "crlf.fdb.txt",
    "good.db",
    "good.kdb",
    // SQLite names are case-blind: tables named in other cases are MIOpen's tables.
    "upper-case-tables.db",
    "255-items.db",
    "wal.db",
    // Valid files whose names would steer a terminal: read, and printed escaped.
    "esc-solver.fdb.txt",
    "bidi-solver.db.txt",
    "esc-name.kdb",
];

/// Whether a file is valid: listed, or a cut of a real database that fell right after a
/// newline (a shorter, whole file).
fn valid(dir: &Path, name: &str) -> bool {
    VALID.contains(&name)
        || (name.starts_with("cut")
            && std::fs::read(dir.join(name)).is_ok_and(|b| b.ends_with(b"\n")))
}

#[test]
fn every_hostile_database_file_gets_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    make_files(dir);
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert!(files.len() >= 110, "{} files", files.len());
    let mut cases = Vec::new();
    for f in &files {
        let expect = if valid(dir, f) {
            Expect::Ok
        } else {
            Expect::Error
        };
        for cmd in ["check", "stats"] {
            cases.push(
                Case::new(format!("db {cmd} {f}"), &["db", cmd, f], expect).memory_limit(4 << 30),
            );
        }
    }
    // A failing standard output: one line, exit 1.
    for args in [
        &["db", "stats", "good.fdb.txt"][..],
        &["db", "check", "good.db"],
        &["db", "convert", "good.db", "out-full.db.txt"],
    ] {
        cases.push(
            Case::new(
                format!("stdout /dev/full: {}", args.join(" ")),
                args,
                Expect::Error,
            )
            .stdout_to("/dev/full"),
        );
    }
    for (name, value) in [
        ("KILN_LOG_LEVEL bogus", "loud"),
        ("KILN_LOG_LEVEL escape", "\u{1b}]0;x\u{7}"),
    ] {
        cases.push(
            Case::new(name, &["db", "check", "good.fdb.txt"], Expect::Usage)
                .env("KILN_LOG_LEVEL", value),
        );
    }
    // Conversions: never onto the input, never a partial output.
    std::fs::write(dir.join("keep.db.txt"), "kept").unwrap();
    // find --from-log: an empty log and a one-problem list; a text file that is neither a log
    // nor a table (plot).
    std::fs::write(dir.join("empty.tsv"), "").unwrap();
    std::fs::write(dir.join("notes.txt"), "a note, not a table\n").unwrap();
    std::fs::write(
        dir.join("list.txt"),
        "64-56-56-1x1-256-56-56-1-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F\n",
    )
    .unwrap();
    // db merge: shard directories whose provenance is /dev/zero, binary, or not one.
    for (shard, provenance) in [
        ("shard-zero", None),
        ("shard-binary", Some(&b"\x00\xff\xfe target = x"[..])),
        (
            "shard-noshard",
            Some(&b"target = sm_90_132\nshard = 7\n"[..]),
        ),
    ] {
        let d = dir.join(shard);
        std::fs::create_dir_all(&d).unwrap();
        let file = d.join("sm_90_132.shard.txt");
        match provenance {
            Some(bytes) => std::fs::write(&file, bytes).unwrap(),
            None => std::os::unix::fs::symlink("/dev/zero", &file).unwrap(),
        }
    }
    for (name, args, expect) in [
        (
            "convert onto itself (text)",
            &["db", "convert", "good.db.txt", "good.db.txt"][..],
            Expect::Error,
        ),
        (
            "convert onto itself (SQLite)",
            &["db", "convert", "good.db", "good.db"],
            Expect::Error,
        ),
        (
            "convert onto itself (find-db)",
            &["db", "convert", "good.fdb.txt", "./good.fdb.txt"],
            Expect::Error,
        ),
        (
            "convert bad input keeps output",
            &["db", "convert", "garbage.db.txt", "keep.db.txt"],
            Expect::Error,
        ),
        (
            "convert into a missing folder (text)",
            &["db", "convert", "good.db.txt", "/nonexistent/x.db.txt"],
            Expect::Error,
        ),
        (
            "convert into a missing folder (SQLite)",
            &["db", "convert", "good.db.txt", "/nonexistent/x.db"],
            Expect::Error,
        ),
        (
            "convert kdb",
            &["db", "convert", "good.kdb", "x.kdb"],
            Expect::Error,
        ),
        (
            "convert find -> perf",
            &["db", "convert", "good.fdb.txt", "x.db"],
            Expect::Error,
        ),
        (
            "convert from /dev/zero",
            &["db", "convert", "zero.fdb.txt", "x.fdb.txt"],
            Expect::Error,
        ),
        (
            "convert unknown name",
            &["db", "convert", "good.db.txt", "x.bin"],
            Expect::Error,
        ),
        (
            "convert text -> SQLite",
            &["db", "convert", "good.db.txt", "new.db"],
            Expect::Ok,
        ),
        (
            "convert SQLite -> text",
            &["db", "convert", "good.db", "new.db.txt"],
            Expect::Ok,
        ),
        ("check nothing", &["db", "check"], Expect::Error),
        (
            "check missing file",
            &["db", "check", "absent.fdb.txt"],
            Expect::Error,
        ),
        (
            "stats unknown kind",
            &["db", "stats", "keep.txt"],
            Expect::Error,
        ),
        (
            "kdb build path target",
            &["kdb", "build", "--check", "--target", "../../etc"],
            Expect::Error,
        ),
        (
            "kdb build missing target",
            &["kdb", "build", "--check", "--target", "nonesuch"],
            Expect::Error,
        ),
        (
            "kdb build --sample 0",
            &["kdb", "build", "--check", "--sample", "0"],
            Expect::Usage,
        ),
        (
            "kdb build --sample without --check",
            &["kdb", "build", "--sample", "8"],
            Expect::Usage,
        ),
        (
            "kdb build --seed without --sample",
            &["kdb", "build", "--check", "--seed", "3"],
            Expect::Usage,
        ),
        (
            "find without a device",
            &["find", "--device", "cuda:9", "--problems", "good.fdb.txt"],
            Expect::NoDevice,
        ),
        ("find without problems", &["find"], Expect::Usage),
        (
            "bench without a device",
            &["bench", "--device", "hip:4"],
            Expect::NoDevice,
        ),
        (
            "bench --net unknown network",
            &["bench", "--net", "vgg", "--torch", "none"],
            Expect::Error,
        ),
        (
            "bench --net type FP64",
            &[
                "bench", "--net", "resnet50", "--type", "FP64", "--torch", "none",
            ],
            Expect::Error,
        ),
        (
            "bench --net without a device",
            &[
                "bench", "--net", "resnet50", "--device", "hip:4", "--torch", "none",
            ],
            Expect::NoDevice,
        ),
        (
            "find --from-log /dev/zero",
            &[
                "find",
                "--from-log",
                "/dev/zero",
                "--target",
                "sm_90_132",
                "--problems",
                "list.txt",
                "--db-dir",
                "fromlog",
            ],
            Expect::Error,
        ),
        (
            "find --from-log a missing file",
            &[
                "find",
                "--from-log",
                "absent.tsv",
                "--target",
                "sm_90_132",
                "--problems",
                "list.txt",
                "--db-dir",
                "fromlog",
            ],
            Expect::Error,
        ),
        (
            "find --from-log a binary file",
            &[
                "find",
                "--from-log",
                "good.db",
                "--target",
                "sm_90_132",
                "--problems",
                "list.txt",
                "--db-dir",
                "fromlog",
            ],
            Expect::Error,
        ),
        (
            "find --from-log a file that is no find log",
            &[
                "find",
                "--from-log",
                "notes.txt",
                "--target",
                "sm_90_132",
                "--problems",
                "list.txt",
                "--db-dir",
                "fromlog",
            ],
            Expect::Error,
        ),
        (
            "find --from-log for a target not embedded",
            &[
                "find",
                "--from-log",
                "empty.tsv",
                "--target",
                "sm_99_1",
                "--problems",
                "list.txt",
                "--db-dir",
                "fromlog",
            ],
            Expect::Error,
        ),
        (
            "find --from-log without --target",
            &["find", "--from-log", "empty.tsv", "--problems", "list.txt"],
            Expect::Usage,
        ),
        (
            "find --target without --from-log",
            &["find", "--target", "sm_90_132", "--problems", "list.txt"],
            Expect::Usage,
        ),
        (
            "plot from /dev/zero",
            &["plot", "--tsv", "/dev/zero", "--out", "plot.svg"],
            Expect::Error,
        ),
        (
            "plot from a missing file",
            &["plot", "--tsv", "nonexistent.tsv", "--out", "plot.svg"],
            Expect::Error,
        ),
        (
            "plot from a file with no network table",
            &["plot", "--tsv", "notes.txt", "--out", "plot.svg"],
            Expect::Error,
        ),
        (
            "plot from a binary file",
            &["plot", "--tsv", "good.db", "--out", "plot.svg"],
            Expect::Error,
        ),
        (
            "emulate a problem too large to emulate",
            &[
                "emulate",
                "--target",
                "mi300x",
                "--problem",
                "256-224-224-3x3-256-224-224-64-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F",
            ],
            Expect::Error,
        ),
        (
            "emulate a problem of too many elements",
            &[
                "emulate",
                "--target",
                "mi300x",
                "--problem",
                "1-30000-30000-1x1-1-30000-30000-1-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F",
            ],
            Expect::Error,
        ),
        (
            "emulate an NVIDIA target",
            &["emulate", "--target", "h100"],
            Expect::Error,
        ),
        (
            "emulate an unknown target",
            &["emulate", "--target", "gfx9999"],
            Expect::Error,
        ),
        (
            "emulate a key that is no key",
            &["emulate", "--target", "mi300x", "--problem", "\u{1b}[2J"],
            Expect::Error,
        ),
        (
            "emulate with an unknown solver",
            &["emulate", "--target", "mi300x", "--solver", "ConvNope"],
            Expect::Error,
        ),
        (
            "net import /dev/zero",
            &["net", "import", "/dev/zero", "--out", "imported"],
            Expect::Error,
        ),
        (
            "net import a missing file",
            &["net", "import", "absent.onnx", "--out", "imported"],
            Expect::Error,
        ),
        (
            "net import a binary file that is not ONNX",
            &["net", "import", "good.db", "--out", "imported"],
            Expect::Error,
        ),
        (
            "net import an empty file",
            &["net", "import", "empty.tsv", "--out", "imported"],
            Expect::Error,
        ),
        (
            "net reference a definition from /dev/zero",
            &[
                "net",
                "reference",
                "/dev/zero",
                "--weights",
                "good.db",
                "--input",
                "empty.tsv",
                "--out",
                "ref.bin",
            ],
            Expect::Error,
        ),
        (
            "net reference a definition that is not one",
            &[
                "net",
                "reference",
                "notes.txt",
                "--weights",
                "good.db",
                "--input",
                "empty.tsv",
                "--out",
                "ref.bin",
            ],
            Expect::Error,
        ),
        (
            "find --model /dev/zero",
            &[
                "find",
                "--from-log",
                "empty.tsv",
                "--target",
                "sm_90_132",
                "--model",
                "/dev/zero",
                "--db-dir",
                "fromlog",
            ],
            Expect::Error,
        ),
        (
            "find --model a text file that is no definition",
            &[
                "find",
                "--from-log",
                "empty.tsv",
                "--target",
                "sm_90_132",
                "--model",
                "notes.txt",
                "--db-dir",
                "fromlog",
            ],
            Expect::Error,
        ),
        (
            "find --devices with empty names",
            &[
                "find",
                "--devices",
                ",",
                "--problems",
                "list.txt",
                "--db-dir",
                "fromlog",
            ],
            Expect::Error,
        ),
        (
            "db merge a missing shard directory",
            &[
                "db",
                "merge",
                "--target",
                "sm_90_132",
                "--into",
                "merged",
                "absent",
            ],
            Expect::Error,
        ),
        (
            "db merge a shard whose provenance is /dev/zero",
            &[
                "db",
                "merge",
                "--target",
                "sm_90_132",
                "--into",
                "merged",
                "shard-zero",
            ],
            Expect::Error,
        ),
        (
            "db merge a shard whose provenance is binary",
            &[
                "db",
                "merge",
                "--target",
                "sm_90_132",
                "--into",
                "merged",
                "shard-binary",
            ],
            Expect::Error,
        ),
        (
            "db merge a shard without a valid shard field",
            &[
                "db",
                "merge",
                "--target",
                "sm_90_132",
                "--into",
                "merged",
                "shard-noshard",
            ],
            Expect::Error,
        ),
        (
            "db merge with no shards",
            &["db", "merge", "--target", "sm_90_132"],
            Expect::Usage,
        ),
        (
            "find --shard out of range",
            &[
                "find",
                "--from-log",
                "empty.tsv",
                "--target",
                "sm_90_132",
                "--problems",
                "list.txt",
                "--db-dir",
                "fromlog",
                "--shard",
                "4/4",
            ],
            Expect::Usage,
        ),
        (
            "find --shard without --db-dir",
            &[
                "find",
                "--from-log",
                "empty.tsv",
                "--target",
                "sm_90_132",
                "--problems",
                "list.txt",
                "--shard",
                "0/4",
            ],
            Expect::Usage,
        ),
    ] {
        cases.push(Case::new(name, args, expect));
    }
    // Regret: a gate that cannot fail is refused.
    let repo = common::repo();
    let repo_path = |p: &str| repo.join(p).display().to_string();
    std::fs::write(dir.join("empty-list.txt"), "# nothing\n").unwrap();
    let (log, target, manifest) = (
        repo_path("data/find-logs/sm_90_132.tsv.zst"),
        repo_path("targets/sm_90_132"),
        repo_path("kernels/manifest.toml"),
    );
    let regret = |extra: &[&str]| {
        let mut a = vec!["regret", "--target-dir", &target, "--manifest", &manifest];
        if !extra.contains(&"--log") {
            a.extend(["--log", &log]);
        }
        a.extend_from_slice(extra);
        a.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    for (name, extra) in [
        (
            "regret empty problem list",
            &["--problems", "empty-list.txt"][..],
        ),
        ("regret NaN median", &["--max-median", "NaN"]),
        ("regret p90 below 1", &["--max-p90", "0.5"]),
        ("regret infinite median", &["--max-median", "inf"]),
        ("regret garbage log", &["--log", "garbage.db.txt"]),
        ("regret log from /dev/zero", &["--log", "zero.fdb.txt"]),
    ] {
        let mut c = Case::new(name, &[], Expect::Error);
        c.args = regret(extra);
        cases.push(c);
    }
    let watched: Vec<PathBuf> = files
        .iter()
        .map(|f| dir.join(f))
        .chain([dir.join("keep.db.txt")])
        .filter(|p| p.is_file())
        .collect();
    let failures = run_all(tools(), dir, &cases, &watched);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(cases.len() >= 250, "{} cases", cases.len());
    // Reading a WAL database left nothing beside it.
    for side in ["wal.db-wal", "wal.db-shm"] {
        assert!(!dir.join(side).exists(), "{side} was created");
    }
    // Stats print names from the file escaped: the escape sequence is visible, not sent.
    let out = Command::new(tools())
        .args(["db", "stats", "esc-solver.fdb.txt"])
        .current_dir(dir)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("S\\u{1b}[2J"), "{text}");
}

fn sha(p: &Path) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(std::fs::read(p).unwrap()).to_vec()
}

/// A scratch copy of a committed target folder.
fn scratch_target(base: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(base);
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(common::repo().join("targets").join(base)).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    (tmp, dir)
}

fn import(targets: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(tools())
        .args(["db", "import", "--targets-dir"])
        .arg(targets)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn import_validates_everything_then_merges_atomically() {
    let (tmp, dir) = scratch_target("sm_90_132");
    let targets = tmp.path();
    let kdb = dir.join("sm_90_132.kdb");
    let (fdb, pdb, toml) = (
        dir.join("sm_90_132.HIP.fdb.txt"),
        dir.join("sm_90_132.db.txt"),
        dir.join("target.toml"),
    );
    let before = kiln_embed::target::TargetConfig::load(&dir).unwrap();
    let kdb_sha = sha(&kdb);

    // D2: importing the target's own kdb onto itself keeps it whole and pinned.
    let (code, err) = import(
        targets,
        &[
            "--target",
            "sm_90_132",
            "--kdb",
            kdb.to_str().unwrap(),
            "--origin",
            "same file",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(sha(&kdb), kdb_sha, "the kdb was modified");
    let after = kiln_embed::target::TargetConfig::load(&dir).unwrap();
    // Merged: the other files, their pins and the toolchain are kept.
    assert_eq!(after.files, before.files);
    assert_eq!(after.pins, before.pins);
    assert_eq!(after.toolchain, before.toolchain);
    assert_eq!(after.origin, "same file");

    // One file only: the others stay listed.
    let (code, err) = import(
        targets,
        &[
            "--target",
            "sm_90_132",
            "--find-db",
            fdb.to_str().unwrap(),
            "--origin",
            "o",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        kiln_embed::target::TargetConfig::load(&dir).unwrap().files,
        before.files
    );

    // A bad input anywhere: nothing is touched.
    let garbage = tmp.path().join("garbage.db.txt");
    std::fs::write(&garbage, [0xffu8, 0xfe, 0x00]).unwrap();
    let snapshot: Vec<Vec<u8>> = [&fdb, &pdb, &kdb, &toml].iter().map(|p| sha(p)).collect();
    let other = tmp.path().join("other.fdb.txt");
    std::fs::write(
        &other,
        "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F=S:1,0,miopenConvolutionFwdAlgoDirect\n",
    )
    .unwrap();
    let (code, err) = import(
        targets,
        &[
            "--target",
            "sm_90_132",
            "--find-db",
            other.to_str().unwrap(),
            "--perf-db",
            garbage.to_str().unwrap(),
            "--origin",
            "o",
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("garbage.db.txt"), "{err}");
    let now: Vec<Vec<u8>> = [&fdb, &pdb, &kdb, &toml].iter().map(|p| sha(p)).collect();
    assert_eq!(now, snapshot, "a failed import modified the target");

    // Control characters in the origin are escaped: the file reads back.
    let (code, err) = import(
        targets,
        &[
            "--target",
            "sm_90_132",
            "--perf-db",
            pdb.to_str().unwrap(),
            "--origin",
            "line1\nline2 \"q\"\t\u{1}",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        kiln_embed::target::TargetConfig::load(&dir).unwrap().origin,
        "line1\nline2 \"q\"\t\u{1}"
    );
    // Refused before anything is read: a bad alias, a path as target, nothing to import.
    for (args, want) in [
        (
            &[
                "--target",
                "sm_90_132",
                "--perf-db",
                "x",
                "--origin",
                "o",
                "--alias",
                "a\u{1}b",
            ][..],
            "--alias",
        ),
        (
            &["--target", "../evil", "--perf-db", "x", "--origin", "o"],
            "basename",
        ),
        (
            &[
                "--target",
                "sm_90_132/../../evil",
                "--perf-db",
                "x",
                "--origin",
                "o",
            ],
            "basename",
        ),
        (
            &["--target", "sm_90_132", "--origin", "o"],
            "nothing to import",
        ),
    ] {
        let (code, err) = import(targets, args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn a_failed_conversion_leaves_the_old_output_whole() {
    // D5: the output file system refuses the write (file size limit); the old output is kept
    // whole and the input untouched.
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in.db.txt");
    std::fs::copy(
        common::repo().join("targets/sm_90_132/sm_90_132.db.txt"),
        &input,
    )
    .unwrap();
    let out = tmp.path().join("out.db.txt");
    std::fs::write(&out, "old output\n").unwrap();
    let (in_sha, out_sha) = (sha(&input), sha(&out));
    let script = format!(
        "trap '' XFSZ; ulimit -f 8; exec '{}' db convert '{}' '{}'",
        tools().display(),
        input.display(),
        out.display()
    );
    let o = Command::new("bash").args(["-c", &script]).output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("out.db.txt"),
        "the error names the output: {err}"
    );
    assert_eq!(sha(&out), out_sha, "the old output was truncated");
    assert_eq!(sha(&input), in_sha);
}

/// Import is all or nothing: when the file system refuses a later file (here the file-size
/// limit, as a full disk would), no file of the target changes and the pins match the files.
/// An alias that names another target, a kdb of another arch and a symlink planted where the
/// old import wrote its check copy are refused or harmless.
#[test]
fn import_is_all_or_nothing_and_checks_what_it_pins() {
    let (tmp, dir) = scratch_target("sm_90_132");
    let targets = tmp.path();
    // A second target whose alias a bad import would take.
    let other = targets.join("gfx942130");
    std::fs::create_dir_all(&other).unwrap();
    for e in std::fs::read_dir(common::repo().join("targets/gfx942130")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), other.join(e.file_name())).unwrap();
    }
    let names = [
        "sm_90_132.HIP.fdb.txt",
        "sm_90_132.db.txt",
        "sm_90_132.kdb",
        "target.toml",
    ];
    let snapshot = |d: &Path| -> Vec<Vec<u8>> { names.iter().map(|n| sha(&d.join(n))).collect() };
    let before = snapshot(&dir);
    let new_fdb = tmp.path().join("new.fdb.txt");
    let fdb_text = std::fs::read_to_string(dir.join("sm_90_132.HIP.fdb.txt")).unwrap();
    std::fs::write(&new_fdb, fdb_text.replacen("0.0", "0.9", 1)).unwrap();
    let kdb = common::repo().join("targets/sm_90_132/sm_90_132.kdb");
    // The find-db (small) stages, the kdb (4.9 MB) cannot: nothing may change.
    let script = format!(
        "trap '' XFSZ; ulimit -f 2048; exec '{}' db import --targets-dir '{}' --target sm_90_132 --find-db '{}' --kdb '{}' --origin x",
        tools().display(),
        targets.display(),
        new_fdb.display(),
        kdb.display()
    );
    let o = Command::new("bash").args(["-c", &script]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(
        snapshot(&dir),
        before,
        "a failed import changed the target: {err}"
    );
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("kiln-tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
    let cfg = kiln_embed::target::TargetConfig::load(&dir).unwrap();
    for (file, pin) in &cfg.pins {
        let digest: String = sha(&dir.join(file))
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(&digest, pin, "{file} does not match its pin");
    }

    // An alias another target has.
    let (code, err) = import(
        targets,
        &[
            "--target",
            "sm_90_132",
            "--find-db",
            new_fdb.to_str().unwrap(),
            "--origin",
            "o",
            "--alias",
            "mi300x",
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("--alias 'mi300x' already names target gfx942130"),
        "{err}"
    );
    // A kdb built for another arch.
    let amd = common::repo().join("targets/gfx942130/gfx942130.kdb");
    let (code, err) = import(
        targets,
        &[
            "--target",
            "sm_90_132",
            "--kdb",
            amd.to_str().unwrap(),
            "--origin",
            "o",
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("is built for gfx942 (-mcpu), not this target's sm_90"),
        "{err}"
    );
    assert_eq!(snapshot(&dir), before);

    // A symlink planted in TMPDIR under the name the old import used: never written through.
    let tmpdir = tmp.path().join("tmpdir");
    std::fs::create_dir_all(&tmpdir).unwrap();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let kdb_sha: String = sha(&kdb).iter().map(|b| format!("{b:02x}")).collect();
    let script = format!(
        "ln -s '{}' \"$TMPDIR/kiln-import-$$-{kdb_sha}.kdb\"; exec '{}' db import --targets-dir '{}' --target sm_90_132 --kdb '{}' --origin o",
        victim.display(),
        tools().display(),
        targets.display(),
        kdb.display()
    );
    let o = Command::new("bash")
        .args(["-c", &script])
        .env("TMPDIR", &tmpdir)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
}
