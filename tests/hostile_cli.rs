//! The appliance binary on a table of bad command lines (the reliability review's probes and
//! more): flags, keys, demo and device options. Every case ends with a clear error or a usage
//! error (or, for valid controls, success), never a panic, abort or hang.

mod common;
mod hostile;

use hostile::{run_all, Case, Expect};
use kiln::{ConvProblem, ConvSpec};

const BASE: [&str; 13] = [
    "resolve", "--target", "h100", "-n", "1", "-c", "8", "-k", "8", "-H", "8", "-W", "8",
];

/// What the binary must do for `value` of a size flag: usage error if it is no u32, else
/// whatever building the problem says.
fn expect_for(flag: &str, value: &str) -> Expect {
    let Ok(v) = value.parse::<u32>() else {
        return Expect::Usage;
    };
    let mut s = ConvSpec {
        n: 1,
        c: 8,
        k: 8,
        input: [1, 8, 8],
        ..ConvSpec::default()
    };
    match flag {
        "-n" => s.n = v,
        "-c" => s.c = v,
        "-k" => s.k = v,
        "-H" => s.input[1] = v,
        "-W" => s.input[2] = v,
        "-y" => s.filter[1] = v,
        "-x" => s.filter[2] = v,
        "-p" => s.pad[1] = v,
        "-q" => s.pad[2] = v,
        "-u" => s.stride[1] = v,
        "-v" => s.stride[2] = v,
        "-l" => s.dilation[1] = v,
        "-j" => s.dilation[2] = v,
        "-g" => s.groups = v,
        _ => unreachable!(),
    }
    if ConvProblem::new(s).is_ok() {
        Expect::Ok
    } else {
        Expect::Error
    }
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    // Every size flag with bad and boundary values.
    let flags = [
        "-n", "-c", "-k", "-H", "-W", "-y", "-x", "-p", "-q", "-u", "-v", "-l", "-j", "-g",
    ];
    let values = [
        "0",
        "-1",
        "abc",
        "1.5",
        "0x10",
        "4294967296",
        "4294967295",
        "16777217",
        "",
        "+5",
        "16777216",
    ];
    for f in flags {
        for v in values {
            let mut args: Vec<&str> = BASE.to_vec();
            // Replace the flag's value when BASE sets it, else append it.
            match args.iter().position(|a| *a == f) {
                Some(i) => args[i + 1] = v,
                None => args.extend([f, v]),
            }
            let mut c = Case::new(format!("flag {f} {v:?}"), &args, expect_for(f, v));
            if v.starts_with('-') {
                c.args.retain(|a| a != f && a != v);
                c.args.push(format!("{f}={v}"));
                c.expect = Expect::Usage;
            }
            out.push(c);
        }
    }
    // The wrapping problem of review D1, through flags; and the grid-limit problem of D8.
    let big = "16777216";
    out.push(Case::new(
        "D1 flags",
        &[
            "resolve", "--target", "h100", "-n", "1", "-c", "65536", "-k", "1", "-H", big, "-W",
            big, "-y", big, "-x", big,
        ],
        Expect::Error,
    ));
    out.push(Case::new(
        "D8 grid.y",
        &[
            "resolve", "--target", "h100", "-n", "1", "-c", "1", "-k", "4194304", "-H", "1", "-W",
            "1", "--type", "FP16",
        ],
        Expect::Ok,
    ));
    // Layouts, types, directions, dimensions, targets.
    for (name, extra, expect) in [
        ("layout NCWH", &["--layout", "NCWH"][..], Expect::Error),
        ("layout lower", &["--layout", "nchw"], Expect::Error),
        ("layout empty", &["--layout", ""], Expect::Error),
        (
            "layout 3-D with 2-D flags",
            &["--layout", "NCDHW"],
            Expect::Error,
        ),
        ("type FP33", &["--type", "FP33"], Expect::Error),
        ("type empty", &["--type", ""], Expect::Error),
        // No kiln solver runs it: resolve says so and exits 1.
        ("type INT8", &["--type", "INT8"], Expect::Error),
        ("direction 0", &["-F", "0"], Expect::Error),
        ("direction 3", &["-F", "3"], Expect::Error),
        ("direction 2", &["-F", "2"], Expect::Error),
        ("spatial 1", &["--spatial_dim", "1"], Expect::Error),
        ("spatial 0", &["--spatial_dim", "0"], Expect::Error),
        ("spatial 256", &["--spatial_dim", "256"], Expect::Usage),
        (
            "spatial 3 with NCHW",
            &["--spatial_dim", "3", "--in_d", "4", "--layout", "NCHW"],
            Expect::Error,
        ),
        (
            "depth flags in 2-D",
            &["--in_d", "0", "--fil_d", "99"],
            Expect::Error,
        ),
        ("depth pad in 2-D", &["--pad_d", "1"], Expect::Error),
        ("flag twice", &["-n", "2"], Expect::Usage),
        ("unknown flag", &["--bogus"], Expect::Usage),
    ] {
        let mut args = BASE.to_vec();
        args.extend_from_slice(extra);
        out.push(Case::new(name, &args, expect));
    }
    for (name, target, expect) in [
        ("unknown target", "gfx9999", Expect::Error),
        ("empty target", "", Expect::Error),
        ("unicode target", "h100é", Expect::Error),
        ("path target", "../targets/sm_90_132", Expect::Error),
        ("alias target", "mi300x", Expect::Ok),
    ] {
        out.push(Case::new(
            name,
            &["resolve", "--target", target, "-n", "1"],
            expect,
        ));
    }
    out.push(Case::new(
        "no target, several embedded",
        &["resolve", "-n", "1"],
        Expect::Error,
    ));
    // Keys: every malformation of the review's list, and more.
    let good = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F";
    let long = "1".repeat(120_000);
    let many = vec!["1"; 1000].join("-");
    let keys: Vec<(&str, String)> = vec![
        ("empty", String::new()),
        ("dash", "-".into()),
        (
            "14 fields",
            "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32".into(),
        ),
        ("16 fields", format!("{good}-X")),
        ("trailing dash", format!("{good}-")),
        ("24 fields", vec!["1"; 24].join("-")),
        ("25 fields", vec!["1"; 25].join("-")),
        ("1000 fields", many),
        ("non-numeric", good.replacen("64", "sixty", 1)),
        ("negative", format!("-{good}")),
        ("leading zero", good.replacen("64", "064", 1)),
        ("u32 overflow", good.replacen("64", "4294967296", 1)),
        ("11 digits", good.replacen("64", "99999999999", 1)),
        ("zero c", good.replacen("64", "0", 1)),
        ("3x3x3 in 2-D", good.replace("3x3", "3x3x3")),
        ("3xx3", good.replace("3x3", "3xx3")),
        ("wrong output", good.replacen("-56-56-32", "-55-56-32", 1)),
        ("bias 2", good.replace("-0-NCHW", "-2-NCHW")),
        ("lower layout", good.replace("NCHW", "nchw")),
        ("three layouts", good.replace("NCHW", "NCHW-NCHW-NCHW")),
        ("types glued", good.replace("FP32", "FP32FP32FP32")),
        ("two types", good.replace("FP32", "FP32-FP16")),
        ("direction X", good.replace("-F", "-X")),
        ("direction f", good.replace("-F", "-f")),
        ("groups 0", format!("{good}_g0")),
        ("groups empty", format!("{good}_g")),
        ("groups 3", format!("{good}_g3")),
        ("groups huge", format!("{good}_g4294967295")),
        ("trailing junk", format!("{good}junk")),
        ("accent", good.replacen("64", "6É", 1)),
        ("arabic digits", good.replacen("64", "٦٤", 1)),
        ("fullwidth", good.replacen("64", "６４", 1)),
        ("emoji", good.replacen("64", "🙂", 1)),
        ("times sign", good.replace("3x3", "3×3")),
        ("tab", good.replacen("-", "\t", 1)),
        ("spaces", good.replacen("-", " - ", 1)),
        ("newline", good.replacen("-", "\n", 1)),
        ("120 KB", long),
        (
            "D1 key",
            "65536-16777216-16777216-16777216x16777216-1-1-1-1-0x0-1x1-1x1-0-NCHW-FP32-F".into(),
        ),
        (
            "filter larger than input",
            "512-1-1-4x4-128-1-1-1-0x0-1x1-1x1-0-NCHW-FP32-F".into(),
        ),
        ("stride 0", good.replace("1x1-1x1-0", "0x0-1x1-0")),
        ("dilation 0", good.replace("1x1-0-NCHW", "0x0-0-NCHW")),
        (
            "3-D key short pad",
            "1024-4-14-14-1x1x1-2048-2-7-7-4-0x0-2x2x2-1x1x1-0-NCDHW-FP32-F".into(),
        ),
        (
            "perf key as find key",
            "2x64x56x56x1x3x3x1x64x32x1x1x0x1x1x0x1x1x0x0x1xNCHWxFP32xF".into(),
        ),
        ("only dashes", "--------------".into()),
        ("cast order", format!("{good}_ciFP8_cwFP8")),
        ("unknown cast", format!("{good}_cxFP8")),
    ];
    for (name, key) in keys {
        let expect = if key.starts_with('-') && key.len() > 1 {
            Expect::Usage
        } else {
            Expect::Error
        };
        let mut c = Case::new(
            format!("key {name}"),
            &["resolve", "--target", "h100"],
            expect,
        );
        c.args.push(key);
        out.push(c);
    }
    // demo, run and the other device commands without a device.
    for (name, args, expect) in [
        ("demo n 0", &["demo", "-n", "0"][..], Expect::Error),
        ("demo n 2^24+1", &["demo", "-n", "16777217"], Expect::Error),
        (
            "demo n u32 max",
            &["demo", "-n", "4294967295"],
            Expect::Error,
        ),
        ("demo NCDHW", &["demo", "--layout", "NCDHW"], Expect::Error),
        ("demo NDHWC", &["demo", "--layout", "NDHWC"], Expect::Error),
        ("demo FP8", &["demo", "--type", "FP8"], Expect::Error),
        ("demo INT8", &["demo", "--type", "INT8"], Expect::Error),
        ("demo n abc", &["demo", "-n", "abc"], Expect::Usage),
        (
            "run vulkan",
            &[
                "run", "--device", "vulkan:0", "-c", "8", "-k", "8", "-H", "8", "-W", "8",
            ],
            Expect::Error,
        ),
        ("run cuda:x", &["run", "--device", "cuda:x"], Expect::Error),
        (
            "run cuda:99",
            &["run", "--device", "cuda:99"],
            Expect::Error,
        ),
        (
            "run cuda uuid",
            &["run", "--device", "cuda://GPU-nope"],
            Expect::Error,
        ),
        ("run hip:0", &["run", "--device", "hip:0"], Expect::Error),
        (
            "run hip uuid",
            &["run", "--device", "hip://nope"],
            Expect::Error,
        ),
        ("run empty device", &["run", "--device", ""], Expect::Error),
        (
            "run D1 problem",
            &[
                "run", "-n", "1", "-c", "65536", "-k", "1", "-H", "16777216", "-W", "16777216",
                "-y", "16777216", "-x", "16777216",
            ],
            Expect::Error,
        ),
        (
            "selftest no device",
            &["selftest", "--device", "cuda:7"],
            Expect::Error,
        ),
        (
            "coldstart no device",
            &["coldstart", "--device", "hip:3"],
            Expect::Error,
        ),
        ("no command", &[], Expect::Usage),
        ("bogus command", &["bogus"], Expect::Usage),
        ("db is a workshop command", &["db", "check"], Expect::Usage),
        ("info", &["info"], Expect::Ok),
        ("devices", &["devices"], Expect::Ok),
        ("help", &["--help"], Expect::Ok),
        ("version", &["--version"], Expect::Ok),
    ] {
        out.push(Case::new(name, args, expect));
    }
    out.push(
        Case::new(
            "KILN_DEVICE bogus",
            &["run", "-c", "8", "-k", "8", "-H", "8", "-W", "8"],
            Expect::Error,
        )
        .env("KILN_DEVICE", "opencl:0"),
    );
    out.push(
        Case::new(
            "KILN_HIP_LIBRARY missing",
            &["run", "--device", "hip:0"],
            Expect::Error,
        )
        .env("KILN_HIP_LIBRARY", "/nonexistent/libamdhip64.so"),
    );
    out.push(
        Case::new(
            "KILN_HIP_LIBRARY not HIP",
            &["run", "--device", "hip:0"],
            Expect::Error,
        )
        .env("KILN_HIP_LIBRARY", "libm.so.6"),
    );
    out
}

#[test]
fn every_bad_command_line_gets_a_clear_error() {
    if !kiln::backend::list_devices().is_empty() {
        eprintln!("a GPU is present: the no-device cases would run; this table is for machines without one");
        return;
    }
    let cases = cases();
    assert!(cases.len() >= 200, "{} cases", cases.len());
    let failures = run_all(
        std::path::Path::new(env!("CARGO_BIN_EXE_kiln")),
        &common::repo(),
        &cases,
        &[],
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `kiln selftest --problems` reads its lists before opening a device: a bad key fails with
/// the file, line and key named (on any machine), a missing file with its name, an empty
/// list as empty.
#[test]
fn selftest_problem_lists_name_the_bad_line() {
    let tmp = tempfile::tempdir().unwrap();
    let list = tmp.path().join("layers.txt");
    let good = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F";
    let run = |file: &std::path::Path| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kiln"))
            .args(["selftest", "--device", "cuda:7", "--problems"])
            .arg(file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    std::fs::write(&list, format!("# a network\n{good}\n64-56-56-3x3-64-56\n")).unwrap();
    let err = run(&list);
    assert!(
        err.contains(&format!("{}:3: ", list.display())) && err.contains("'64-56-56-3x3-64-56'"),
        "{err}"
    );
    std::fs::write(&list, "# nothing\n\n").unwrap();
    assert!(run(&list).contains("hold no problem"));
    let missing = tmp.path().join("missing.txt");
    assert!(run(&missing).contains("missing.txt"));
}
