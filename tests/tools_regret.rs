//! `kiln-tools regret` on the committed sm_90_132 DBs and find log: the fallback meets its
//! targets on held-out problems, and the report equals the committed one
//! (`data/heuristic-regret.md`), so a change of ranking policy cannot pass unnoticed.

mod common;

#[test]
fn fallback_regret_on_held_out_problems_meets_its_targets() {
    // `kiln-tools regret` exits non-zero above median 1.15 / p90 1.5; check its figures too.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kiln-tools"))
        .arg("regret")
        .current_dir(common::repo())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The networks of the default lists, each left out (990 problems); every measured problem
    // in five folds (the four networks' fused problems, their plain depthwise layers, the
    // grouped grids, the video grid, the small dense NCHW grid and the first-layer grid
    // included: 1951, less 11 whose fallback pick, a neighbour's perf config, was never timed
    // on them; the report names them): 1940.
    for (label, problems) in [
        ("all networks, one left out at a time", 990),
        ("five folds", 1940),
    ] {
        let row = text.lines().find(|l| l.contains(label)).unwrap();
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (n, median, p90): (usize, f64, f64) = (
            cells[2].parse().unwrap(),
            cells[3].parse().unwrap(),
            cells[4].parse().unwrap(),
        );
        // Every problem: the fallback's pick for each was timed on it (a pick the log never
        // timed, e.g. a perf config added after the problem was measured, would be left out
        // and named; the picks that changed with the cluster re-find were measured).
        assert_eq!(n, problems, "{row}");
        assert!(median <= 1.15 && p90 <= 1.5, "{row}");
    }
    // Each network left out alone meets the targets too: MobileNetV3's excitation layers (1x1
    // maps, nothing like them in the other networks) are ranked by the cost model, which once
    // put CUTLASS ahead of the dot kernel there (median 1.35, p90 4.37).
    let networks: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("| network ") && !l.starts_with("| network |"))
        .collect();
    assert_eq!(networks.len(), 5, "{text}");
    for row in networks {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (median, p90): (f64, f64) = (cells[3].parse().unwrap(), cells[4].parse().unwrap());
        assert!(median <= 1.15 && p90 <= 1.5, "{row}");
    }
    // The networks never measured into the DBs, together at batch 32: the generality issue's
    // target (p90 at most 1.15).
    let row = text
        .lines()
        .find(|l| l.contains("all of them, N=32"))
        .unwrap();
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    let (n, p90): (usize, f64) = (cells[2].parse().unwrap(), cells[5].parse().unwrap());
    assert_eq!(n, 232, "{row}");
    assert!(p90 <= 1.15, "{row}");
    let committed =
        std::fs::read_to_string(common::repo().join("data/heuristic-regret.md")).unwrap();
    assert_eq!(
        text.trim_end(),
        committed.trim_end(),
        "the regret report differs from data/heuristic-regret.md (regenerate it with `kiln-tools regret --out data/heuristic-regret.md` if the change is intended)"
    );
}
