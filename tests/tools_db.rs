//! `kiln-tools db ...` on real and hostile database files: every row MIOpen writes is accepted
//! (whether kiln can run a problem is asked when it is resolved), and bad files give one clear
//! error line with no input modified.

mod common;

fn tools(args: &[&str]) -> (Option<i32>, String, String) {
    common::run_in_repo(env!("CARGO_BIN_EXE_kiln-tools"), args)
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

/// `find --from-log` records problems from another machine's find log, without a GPU: the
/// last line of a variant wins, configs the manifest no longer offers are dropped, and a bad
/// line is an error naming file:line with no database written.
#[test]
fn find_from_log_records_what_the_log_measured() {
    let dir = tempfile::tempdir().unwrap();
    let key = "64-56-56-1x1-256-56-56-1-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F+scale+bias+relu";
    let list = dir.path().join("list.txt");
    std::fs::write(&list, format!("# one fused problem\n{key}\n")).unwrap();
    let log = dir.path().join("find-log.tsv");
    std::fs::write(
        &log,
        [
            format!("{key}\tConvWgmmaGemm1x1Fwd\t128,128,4,1\t0.0050\t1.0e-4\ttrue"),
            format!("{key}\tConvDirectNaiveFwd\t\t0.2\t0.0e0\ttrue"),
            // A config the manifest does not hold: dropped.
            format!("{key}\tConvWgmmaGemm1x1Fwd\t96,96,9,1\t0.0001\t0.0e0\ttrue"),
            // Failed runs never win.
            format!("{key}\tConvImplicitGemmFwd\t64,64,16\t0.0002\t1.0e0\tfalse"),
            // Measured again later: this line wins.
            format!("{key}\tConvWgmmaGemm1x1Fwd\t128,128,4,1\t0.0040\t1.0e-4\ttrue"),
            // Another problem: ignored.
            "1-1-1-1x1-1-1-1-1-0x0-1x1-1x1-0-NCHW-FP32-F\tConvDirectNaiveFwd\t\t0.1\t0.0e0\ttrue"
                .to_string(),
        ]
        .join("\n"),
    )
    .unwrap();
    let db = dir.path().join("db");
    let (l, d) = (list.to_str().unwrap(), db.to_str().unwrap());
    let find = |extra: &[&str]| {
        let mut args = vec![
            "find",
            "--from-log",
            log.to_str().unwrap(),
            "--target",
            "sm_90_132",
        ];
        args.extend_from_slice(&["--problems", l, "--db-dir", d]);
        args.extend_from_slice(extra);
        tools(&args)
    };
    let (code, out, err) = find(&[]);
    assert_eq!(code, Some(0), "{out}{err}");
    let fdb = std::fs::read_to_string(db.join("sm_90_132.HIP.fdb.txt")).unwrap();
    let record = fdb
        .lines()
        .find(|r| r.starts_with(key))
        .expect("the record");
    let items: Vec<&str> = record.split('=').nth(1).unwrap().split(';').collect();
    assert_eq!(items.len(), 2, "{record}");
    assert!(
        items[0].starts_with("ConvWgmmaGemm1x1Fwd:0.004,"),
        "{record}"
    );
    assert!(items[1].starts_with("ConvDirectNaiveFwd:0.2,"), "{record}");
    let pdb = std::fs::read_to_string(db.join("sm_90_132.db.txt")).unwrap();
    assert!(pdb.contains("ConvWgmmaGemm1x1Fwd:128,128,4,1"), "{pdb}");

    // A bad line: the error names it, and the databases are left as they were.
    std::fs::write(
        &log,
        format!("{key}\tConvWgmmaGemm1x1Fwd\t128,128,4,1\tfast\t0\ttrue\n"),
    )
    .unwrap();
    let (code, _, err) = find(&["--force"]);
    assert_ne!(code, Some(0));
    assert!(
        err.contains("find-log.tsv:1: time \"fast\" is not a number"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(db.join("sm_90_132.HIP.fdb.txt")).unwrap(),
        fdb
    );
    // No target named: refused before anything is read.
    let (code, _, err) = tools(&["find", "--from-log", "x.tsv", "--problems", l]);
    assert_ne!(code, Some(0));
    assert!(err.contains("--target"), "{err}");
}

/// Writes `keys` as a problem list and `log` as a find log into `dir`: their paths.
fn problems_and_log(
    dir: &std::path::Path,
    keys: &[String],
    log: &[String],
) -> (std::path::PathBuf, std::path::PathBuf) {
    let (list_path, log_path) = (dir.join("list.txt"), dir.join("find-log.tsv"));
    std::fs::write(&list_path, keys.join("\n") + "\n").unwrap();
    std::fs::write(&log_path, log.join("\n") + "\n").unwrap();
    (list_path, log_path)
}

/// `find --shard I/N` over a problem list and `db merge` of the shard directories: every problem
/// measured by exactly one shard, the merged DBs the same bytes whatever the shard count and
/// order, and shards measured elsewhere, given twice or holding records they did not measure
/// refused, naming the directory. Measurements come from a find log (no GPU needed).
#[test]
fn shards_cover_the_list_once_and_merge_to_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let keys: Vec<String> = (1..=12)
        .map(|i| {
            let c = 8 * i;
            format!("{c}-14-14-3x3-{c}-14-14-1-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F")
        })
        .collect();
    let lines: Vec<String> = keys
        .iter()
        .enumerate()
        .flat_map(|(i, k)| {
            let t = i as f64 / 100.0;
            [
                format!("{k}\tConvDirectNaiveFwd\t\t{}\t0.0e0\ttrue", 0.1 + t),
                format!(
                    "{k}\tConvImplicitGemmFwd\t64,64,16\t{}\t1.0e-4\ttrue",
                    0.05 + t
                ),
            ]
        })
        .collect();
    let (list, log) = problems_and_log(dir.path(), &keys, &lines);
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let find_into = |db: &std::path::Path, extra: &[&str]| {
        let (l, f, d) = (path(&list), path(&log), path(db));
        let mut args = vec!["find", "--from-log", &f, "--target", "sm_90_132"];
        args.extend(["--problems", &l, "--db-dir", &d]);
        args.extend_from_slice(extra);
        tools(&args)
    };
    let find_shard = |shard: &str, db: &std::path::Path| find_into(db, &["--shard", shard]);
    let merged = |count: u32, order: &[u32]| -> (String, String) {
        let root = dir.path().join(format!("n{count}-{order:?}"));
        let mut shard_dirs = Vec::new();
        for &i in order {
            let d = root.join(format!("shard-{i}"));
            let (code, out, err) = find_shard(&format!("{i}/{count}"), &d);
            assert_eq!(code, Some(0), "{out}{err}");
            shard_dirs.push(path(&d));
        }
        let into = root.join("merged");
        let mut args = vec![
            "db".to_string(),
            "merge".into(),
            "--target".into(),
            "sm_90_132".into(),
        ];
        args.extend(["--into".to_string(), path(&into)]);
        args.extend(shard_dirs);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = tools(&args);
        assert_eq!(code, Some(0), "{out}{err}");
        assert!(
            out.contains(&format!("{} of {count} shards", order.len())),
            "{out}"
        );
        (
            std::fs::read_to_string(into.join("sm_90_132.HIP.fdb.txt")).unwrap(),
            std::fs::read_to_string(into.join("sm_90_132.db.txt")).unwrap(),
        )
    };
    // Each key in exactly one of three shards' find-dbs.
    let mut owners = vec![0; keys.len()];
    for i in 0..3 {
        let d = dir.path().join(format!("cover-{i}"));
        let (code, out, err) = find_shard(&format!("{i}/3"), &d);
        assert_eq!(code, Some(0), "{out}{err}");
        let fdb = std::fs::read_to_string(d.join("sm_90_132.HIP.fdb.txt")).unwrap_or_default();
        for (k, n) in keys.iter().zip(owners.iter_mut()) {
            *n += fdb
                .lines()
                .filter(|l| l.starts_with(&format!("{k}=")))
                .count();
        }
    }
    assert!(owners.iter().all(|&n| n == 1), "{owners:?}");
    // The same bytes from one shard, three in two orders, and five.
    let one = merged(1, &[0]);
    assert_eq!(one.0.lines().count(), keys.len(), "{}", one.0);
    assert_eq!(one.1.lines().count(), keys.len(), "{}", one.1);
    assert!(one.1.contains("ConvImplicitGemmFwd:64,64,16"), "{}", one.1);
    assert_eq!(merged(3, &[0, 1, 2]), one);
    assert_eq!(merged(3, &[2, 0, 1]), one);
    assert_eq!(merged(5, &[4, 2, 0, 3, 1]), one);

    // Worker processes fed from one queue (here reading the log; on GPUs --devices): the same
    // DBs, byte for byte, as one process, and every line of its log.
    let pooled = |workers: &str| {
        let db = dir.path().join(format!("workers-{workers}"));
        let run_log = dir.path().join(format!("workers-{workers}.tsv"));
        let (code, out, err) = find_into(&db, &["--log", &path(&run_log), "--workers", workers]);
        assert_eq!(code, Some(0), "{out}{err}");
        let read = |name: &str| std::fs::read_to_string(db.join(name)).unwrap_or_default();
        let mut lines: Vec<String> = std::fs::read_to_string(&run_log)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        lines.sort();
        (
            read("sm_90_132.HIP.fdb.txt"),
            read("sm_90_132.db.txt"),
            lines,
            out,
        )
    };
    let single = pooled("1");
    let three = pooled("3");
    assert_eq!(
        (&three.0, &three.1, &three.2),
        (&single.0, &single.1, &single.2)
    );
    assert_eq!(single.2.len(), 2 * keys.len());
    assert_eq!(single.1.lines().count(), keys.len(), "{}", single.1);
    assert!(
        three.3.contains("on 3 workers (find log find-log.tsv)"),
        "{}",
        three.3
    );
    let (code, _, err) = tools(&[
        "find",
        "--devices",
        "cuda:0",
        "--from-log",
        "x",
        "--target",
        "sm_90_132",
        "--problems",
        "l",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("give one"), "{err}");

    // Refusals, each naming the shard directory; the target DBs are left as they were.
    let root = dir.path().join("refused");
    let (a, b) = (root.join("a"), root.join("b"));
    assert_eq!(find_shard("0/2", &a).0, Some(0));
    assert_eq!(find_shard("1/2", &b).0, Some(0));
    let into = root.join("into");
    let merge = |shards: &[&std::path::Path]| {
        let into = path(&into);
        let mut args = vec!["db", "merge", "--target", "sm_90_132", "--into", &into];
        let dirs: Vec<String> = shards.iter().map(|d| path(d)).collect();
        args.extend(dirs.iter().map(String::as_str));
        tools(&args)
    };
    let provenance = b.join("sm_90_132.shard.txt");
    let text = std::fs::read_to_string(&provenance).unwrap();
    std::fs::write(&provenance, text.replace("driver = none", "driver = 12")).unwrap();
    let (code, _, err) = merge(&[&a, &b]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&path(&b)) && err.contains("driver \"12\""),
        "{err}"
    );
    assert!(!into.exists(), "nothing written on a refusal");
    std::fs::write(&provenance, &text).unwrap();
    let (code, _, err) = merge(&[&a, &a]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("shard 0/2 is also"), "{err}");
    // A shard directory holding the other shard's records (a DB copied in) is refused.
    std::fs::copy(
        a.join("sm_90_132.HIP.fdb.txt"),
        b.join("sm_90_132.HIP.fdb.txt"),
    )
    .unwrap();
    let (code, _, err) = merge(&[&a, &b]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("which shard 1/2 does not measure"), "{err}");
    // A directory measured as another shard, or without a provenance, is refused too.
    let (code, _, err) = find_shard("0/2", &b);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("this directory is shard 1/2, not 0/2"),
        "{err}"
    );
    let (code, _, err) = merge(&[&root]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("not a shard directory"), "{err}");
    let (code, _, err) = tools(&[
        "find",
        "--from-log",
        "x",
        "--target",
        "sm_90_132",
        "--problems",
        "l",
        "--db-dir",
        "d",
        "--shard",
        "2/2",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("\"2/2\""), "{err}");
}

/// A worker that dies mid-run (SIGABRT, injected when it is handed the fifth problem) stops the
/// run with an error naming the worker and the problem; the DBs hold every problem finished
/// before it, whole; running again measures only the rest and ends with the bytes of a run
/// that was never interrupted.
#[test]
fn a_dead_worker_loses_only_the_problem_in_flight_and_a_rerun_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let keys: Vec<String> = (1..=8)
        .map(|i| {
            let c = 8 * i;
            format!("{c}-28-28-1x1-{c}-28-28-1-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F")
        })
        .collect();
    let lines: Vec<String> = keys
        .iter()
        .map(|k| format!("{k}\tConvDirectNaiveFwd\t\t0.25\t0.0e0\ttrue"))
        .collect();
    let (list, log) = problems_and_log(dir.path(), &keys, &lines);
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let find = |db: &std::path::Path, die_at: Option<&str>| {
        let (l, f, d) = (path(&list), path(&log), path(db));
        let args = [
            "find",
            "--from-log",
            &f,
            "--target",
            "sm_90_132",
            "--problems",
            &l,
            "--db-dir",
            &d,
            "--workers",
            "1",
        ];
        let env: Vec<(&str, &str)> = die_at
            .map(|i| ("KILN_FIND_WORKER_DIES_AT", i))
            .into_iter()
            .collect();
        common::run_in_repo_with_env(env!("CARGO_BIN_EXE_kiln-tools"), &args, &env)
    };
    let whole = dir.path().join("whole");
    let (code, out, err) = find(&whole, None);
    assert_eq!(code, Some(0), "{out}{err}");
    let fdb = |d: &std::path::Path| std::fs::read_to_string(d.join("sm_90_132.HIP.fdb.txt"));
    let want = fdb(&whole).unwrap();
    assert_eq!(want.lines().count(), 8, "{want}");

    let cut = dir.path().join("cut");
    let (code, out, err) = find(&cut, Some("4"));
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("the worker for") && err.contains(&keys[4]) && err.contains("ended"),
        "{err}"
    );
    // The four problems finished before it, each record whole, and nothing half-written.
    let kept = fdb(&cut).unwrap();
    let first_four: Vec<&str> = want.lines().take(4).collect();
    assert_eq!(kept.lines().collect::<Vec<_>>(), first_four);
    let stray: Vec<_> = std::fs::read_dir(&cut)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".HIP.fdb.txt") && !n.ends_with(".db.txt"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");

    let (code, out, err) = find(&cut, None);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("8 problems, 4 already measured, 4 to measure"),
        "{out}"
    );
    assert_eq!(fdb(&cut).unwrap(), want);
    assert_eq!(
        std::fs::read_to_string(cut.join("sm_90_132.db.txt")).unwrap_or_default(),
        std::fs::read_to_string(whole.join("sm_90_132.db.txt")).unwrap_or_default()
    );
}
