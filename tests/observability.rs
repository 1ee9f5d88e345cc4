//! What the appliance says about itself: `--json` documents that parse and carry the values
//! the text shows, warnings when kiln degrades (a target without a measured find-db, a problem
//! ranked by the cost model), `KILN_LOG_LEVEL` to quiet or refuse, exit codes.

use std::process::Command;

use serde_json::Value;

fn kiln(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kiln"));
    cmd.args(args).env_remove("KILN_LOG_LEVEL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("kiln runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(args: &[&str]) -> Value {
    json_with_code(args, 0)
}

/// The JSON document a command prints, which ends with exit `want`.
fn json_with_code(args: &[&str], want: i32) -> Value {
    let (code, out, err) = kiln(args, &[]);
    assert_eq!(code, want, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}):\n{out}"))
}

const LAYER: [&str; 18] = [
    "-n", "1", "-c", "64", "-k", "64", "-H", "56", "-W", "56", "-y", "3", "-x", "3", "-p", "1",
    "-q", "1",
];

#[test]
fn info_json_lists_every_target_with_its_tables() {
    let v = json(&["info", "--json"]);
    let targets = v["targets"].as_array().unwrap();
    assert_eq!(targets.len(), kiln::targets().len());
    let h100 = targets
        .iter()
        .find(|t| t["basename"] == "sm_90_132")
        .unwrap();
    assert_eq!(h100["arch"], "sm_90");
    assert_eq!(h100["compute_units"], 132);
    assert_eq!(h100["aliases"][0], "h100");
    let measured = kiln::named_target("h100").unwrap().measured.len() as u64;
    assert!(measured > 0);
    assert_eq!(h100["measured_problems"].as_u64(), Some(measured));
    let kinds: Vec<&str> = h100["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"kdb"), "{kinds:?}");
    assert_eq!(v["kiln"], env!("CARGO_PKG_VERSION"));
}

#[test]
fn resolve_json_is_the_plan_the_text_shows() {
    let mut args = vec!["resolve", "--target", "h100", "--json"];
    args.extend(LAYER);
    let v = json(&args);
    assert_eq!(v["target"], "sm_90_132");
    assert_eq!(
        v["find_db_key"],
        "64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NCHW-FP32-F"
    );
    assert_eq!(v["plan_source"]["kind"], "find-db");
    let t = kiln::named_target("h100").unwrap();
    let p =
        kiln::ConvProblem::from_find_db_key("64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NCHW-FP32-F")
            .unwrap();
    let plan = kiln::resolve::resolve(t, &p).unwrap();
    let sols = v["solutions"].as_array().unwrap();
    assert_eq!(sols.len(), plan.len());
    for (i, (j, r)) in sols.iter().zip(plan.iter()).enumerate() {
        assert_eq!(j["rank"].as_u64(), Some(i as u64 + 1));
        assert_eq!(j["solver"], r.variant.solver.id());
        assert_eq!(j["params"], r.variant.params);
        assert_eq!(j["provenance"], r.provenance.name());
        assert!((j["time_ms"].as_f64().unwrap() - r.time_ms).abs() < 1e-9);
    }
    assert_eq!(v["folded_2d_key"], Value::Null);
    // --repeat with --json: the allocation count is in the document, and it is zero.
    args.extend(["--repeat", "100"]);
    let v = json(&args);
    assert_eq!(v["heap_allocations"], 0);
    // A 3-D layer whose depth folds away names the 2-D problem it was also ranked as.
    let v = json(&[
        "resolve",
        "--target",
        "h100",
        "--json",
        "64-16-56-56-1x3x3-144-16-56-56-2-0x1x1-1x1x1-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F",
        "--repeat",
        "100",
    ]);
    assert_eq!(
        v["folded_2d_key"],
        "64-56-56-3x3-144-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F"
    );
    assert_eq!(v["heap_allocations"], 0);
}

#[test]
fn devices_json_says_why_each_runtime_has_no_device() {
    // The document is printed whole; with no usable device the exit code is 3.
    let want = if kiln::backend::list_devices().is_empty() {
        3
    } else {
        0
    };
    let v = json_with_code(&["devices", "--json"], want);
    let backends = v["backends"].as_array().unwrap();
    assert_eq!(backends.len(), kiln::backend::BACKENDS.len());
    for b in backends {
        let devices = b["devices"].as_array().unwrap();
        // Either devices, or an error saying why none (no runtime, or no device).
        assert!(
            !devices.is_empty() || b["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{b}"
        );
    }
}

#[test]
fn selftest_json_without_a_device_is_an_error_on_stderr() {
    if !kiln::backend::list_devices().is_empty() {
        return; // a GPU machine: the device script runs selftest --json for real
    }
    let (code, out, err) = kiln(&["selftest", "--json"], &[]);
    assert_eq!(code, 3, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("no GPU found"), "{err}");
}

#[test]
fn the_cost_model_fallback_is_a_warning_that_log_level_controls() {
    // sm_80_108's find-db measured none of kiln's solvers: the cost model ranks everything.
    let mut args = vec!["resolve", "--target", "a100"];
    args.extend(LAYER);
    let (code, out, err) = kiln(&args, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("ranked by the cost model"), "{out}");
    assert!(
        err.contains("kiln: warning: sm_80_108: 64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NCHW-FP32-F ranked by the cost model"),
        "{err}"
    );
    // Quiet on request; MIOpen's numbers work too.
    for level in ["off", "error", "1"] {
        let (code, _, err) = kiln(&args, &[("KILN_LOG_LEVEL", level)]);
        assert_eq!((code, err.as_str()), (0, ""), "level {level}");
    }
    // Measured problems raise no warning.
    let mut measured = vec!["resolve", "--target", "h100"];
    measured.extend(LAYER);
    let (code, _, err) = kiln(&measured, &[]);
    assert_eq!((code, err.as_str()), (0, ""));
    // info level says how a nearest-problem plan was made.
    let (code, _, err) = kiln(
        &[
            "resolve", "--target", "h100", "-n", "1", "-c", "64", "-k", "64", "-H", "57", "-W",
            "57", "-y", "3", "-x", "3", "-p", "1", "-q", "1",
        ],
        &[("KILN_LOG_LEVEL", "info")],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("kiln: info: sm_90_132:") && err.contains("nearest measured problem"),
        "{err}"
    );
}

#[test]
fn a_bad_log_level_is_a_usage_error_naming_it() {
    let (code, out, err) = kiln(&["info"], &[("KILN_LOG_LEVEL", "loud")]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("KILN_LOG_LEVEL='loud'"), "{err}");
}
