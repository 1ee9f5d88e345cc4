//! The appliance binary on a table of bad command lines (the reliability review's probes and
//! more): flags, keys, demo and device options. Every case ends with a clear error or a usage
//! error (or, for valid controls, success), never a panic, abort or hang.

mod common;
mod hostile;

use hostile::{assert_all_behave, Case, Expect};
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
        ("type INT8", &["--type", "INT8"], Expect::NoSolution),
        ("direction 0", &["-F", "0"], Expect::Error),
        ("direction 3", &["-F", "3"], Expect::Error),
        ("direction 2", &["-F", "2"], Expect::NoSolution),
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
    let nhwc = good.replace("NCHW", "NHWC-NHWC-NHWC");
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
        // Fused epilogues (the key's `+` ops).
        ("fusion out of order", format!("{nhwc}+relu+bias")),
        ("fusion repeated", format!("{nhwc}+bias+bias")),
        ("fusion unknown op", format!("{nhwc}+swish")),
        ("fusion identity", format!("{nhwc}+identity")),
        ("fusion empty op", format!("{nhwc}+")),
        ("fusion slice of NCHW", format!("{good}+ld128")),
        ("fusion ld below k", format!("{nhwc}+ld8")),
        ("fusion ld not 8-aligned", format!("{nhwc}+ld100")),
        ("fusion ld overflow", format!("{nhwc}+ld99999999999")),
        ("fusion zld without add", format!("{nhwc}+zld128")),
        ("fusion gate before bias", format!("{nhwc}+gate+bias")),
        ("fusion gate repeated", format!("{nhwc}+bias+gate+gate")),
        ("fusion pool before activation", format!("{nhwc}+pool+relu")),
        ("fusion pool after gate", format!("{nhwc}+gate+pool")),
        ("fusion pool repeated", format!("{nhwc}+pool+pool")),
        ("fusion xscale (not a token)", format!("{nhwc}+xscale")),
        (
            "fusion backward",
            format!("{}+relu", good.replace("-F", "-B")),
        ),
        (
            "fusion 10000 ops",
            format!("{nhwc}{}", "+relu".repeat(10_000)),
        ),
    ];
    for (name, key) in keys {
        let expect = if key.starts_with('-') && key.len() > 1 {
            Expect::Usage
        } else if name == "cast order" {
            // A valid key no solver runs (FP8 casts).
            Expect::NoSolution
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
        (
            "run cuda:x",
            &["run", "--device", "cuda:x"],
            Expect::NoDevice,
        ),
        (
            "run cuda:99",
            &["run", "--device", "cuda:99"],
            Expect::NoDevice,
        ),
        (
            "run cuda uuid",
            &["run", "--device", "cuda://GPU-nope"],
            Expect::NoDevice,
        ),
        ("run hip:0", &["run", "--device", "hip:0"], Expect::NoDevice),
        (
            "run hip uuid",
            &["run", "--device", "hip://nope"],
            Expect::NoDevice,
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
            Expect::NoDevice,
        ),
        (
            "coldstart no device",
            &["coldstart", "--device", "hip:3"],
            Expect::NoDevice,
        ),
        ("no command", &[], Expect::Usage),
        ("bogus command", &["bogus"], Expect::Usage),
        ("db is a workshop command", &["db", "check"], Expect::Usage),
        ("info", &["info"], Expect::Ok),
        ("devices", &["devices"], Expect::NoDevice),
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
            Expect::NoDevice,
        )
        .env("KILN_HIP_LIBRARY", "/nonexistent/libamdhip64.so"),
    );
    out.push(
        Case::new(
            "KILN_HIP_LIBRARY not HIP",
            &["run", "--device", "hip:0"],
            Expect::NoDevice,
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
    assert_all_behave(
        std::path::Path::new(env!("CARGO_BIN_EXE_kiln")),
        &common::repo(),
        &cases,
        &[],
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

/// A key says everything the problem flags would: each flag beside one is refused.
fn flags_beside_a_key() -> Vec<Case> {
    let key = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F";
    let flags: [(&str, &str); 23] = [
        ("-n", "7"),
        ("-c", "3"),
        ("-H", "9"),
        ("-W", "9"),
        ("-k", "5"),
        ("-y", "1"),
        ("-x", "1"),
        ("-p", "0"),
        ("-q", "0"),
        ("-u", "1"),
        ("-v", "1"),
        ("-l", "1"),
        ("-j", "1"),
        ("-g", "1"),
        ("-F", "1"),
        ("--spatial_dim", "2"),
        ("--in_d", "1"),
        ("--fil_d", "1"),
        ("--pad_d", "0"),
        ("--conv_stride_d", "1"),
        ("--dilation_d", "1"),
        ("--layout", "NCHW"),
        ("--type", "FP16"),
    ];
    let mut out: Vec<Case> = flags
        .iter()
        .map(|(f, v)| {
            Case::new(
                format!("key with {f}"),
                &["resolve", "--target", "h100", key, f, v],
                Expect::Usage,
            )
        })
        .collect();
    // The math mode is no part of a key: allowed beside one.
    out.push(Case::new(
        "key with --math",
        &["resolve", "--target", "h100", key, "--math", "tf32"],
        Expect::Ok,
    ));
    out
}

/// Every flag and environment value the binary echoes is quoted short and escaped: a 120 KB
/// value, and one that would steer a terminal (OSC title, bidirectional override).
fn echoed_values() -> Vec<Case> {
    let long = "X".repeat(120_000);
    let steer = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{202e}FP16";
    let mut out = Vec::new();
    for (what, value) in [("120 KB", long.as_str()), ("escape sequence", steer)] {
        let resolve = ["resolve", "--target", "h100", "-c", "8", "-k", "8"];
        for (flag, expect) in [
            ("--type", Expect::Error),
            ("--layout", Expect::Error),
            ("--math", Expect::Error),
            ("--target", Expect::Error),
        ] {
            let mut c = Case::new(format!("echo {flag} {what}"), &resolve, expect);
            c.args.retain(|a| a != "--target" && a != "h100");
            if flag != "--target" {
                c.args.extend(["--target".into(), "h100".into()]);
            }
            c.args.extend([flag.to_string(), value.to_string()]);
            out.push(c);
        }
        out.push(Case::new(
            format!("echo --device {what}"),
            &["run", "--device", value],
            Expect::Error,
        ));
        out.push(Case::new(
            format!("echo demo --type {what}"),
            &["demo", "--type", value],
            Expect::Error,
        ));
        out.push(
            Case::new(format!("echo KILN_DEVICE {what}"), &["run"], Expect::Error)
                .env("KILN_DEVICE", value),
        );
        out.push(
            Case::new(
                format!("echo KILN_HIP_LIBRARY {what}"),
                &["run", "--device", "hip:0"],
                Expect::NoDevice,
            )
            .env("KILN_HIP_LIBRARY", value),
        );
        out.push(
            Case::new(
                format!("echo KILN_LOG_LEVEL {what}"),
                &["info"],
                Expect::Usage,
            )
            .env("KILN_LOG_LEVEL", value),
        );
        out.push(Case::new(
            format!("echo key {what}"),
            &["resolve", "--target", "h100", value],
            Expect::Error,
        ));
    }
    out
}

/// A device that was named and cannot be opened fails the demo (exit 3, no GPU found; a spec
/// that names no backend, exit 1); only no GPU at all with none named falls back.
fn demo_devices() -> Vec<Case> {
    vec![
        Case::new(
            "demo cuda:9",
            &["demo", "--device", "cuda:9"],
            Expect::NoDevice,
        ),
        Case::new(
            "demo hip:0",
            &["demo", "--device", "hip:0"],
            Expect::NoDevice,
        ),
        Case::new("demo bogus", &["demo", "--device", "bogus"], Expect::Error),
        Case::new("demo KILN_DEVICE", &["demo"], Expect::NoDevice).env("KILN_DEVICE", "cuda:3"),
        Case::new("demo no GPU", &["demo"], Expect::Ok),
    ]
}

/// Standard output that refuses writes: a one-line error and exit 1 for every command that
/// prints, never a panic.
fn failing_stdout() -> Vec<Case> {
    [
        &["info"][..],
        &["info", "--json"],
        &["devices", "--json"],
        &["--help"],
        &["resolve", "--target", "h100", "-c", "8", "-k", "8"],
        &[
            "resolve", "--target", "h100", "-c", "8", "-k", "8", "--json",
        ],
        &["demo"],
    ]
    .iter()
    .map(|args| {
        let expect = if args[0] == "--help" {
            // clap writes help itself and ignores the failure: still no panic.
            Expect::Ok
        } else {
            Expect::Error
        };
        // Warnings (a problem ranked by the cost model) are not what this checks.
        Case::new(
            format!("stdout /dev/full: {}", args.join(" ")),
            args,
            expect,
        )
        .stdout_to("/dev/full")
        .env("KILN_LOG_LEVEL", "error")
    })
    .collect()
}

/// Damaged libraries named by KILN_HIP_LIBRARY: refused with a clear error before dlopen (a
/// truncated ELF would kill the process with SIGBUS; a FIFO would block it).
fn damaged_libraries(dir: &std::path::Path) -> Vec<Case> {
    let libc = [
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/x86_64-linux-gnu/libc.so.6",
    ]
    .into_iter()
    .map(std::path::Path::new)
    .find(|p| p.is_file())
    .expect("libc.so.6");
    let bytes = std::fs::read(libc).unwrap();
    let mut libs: Vec<(&str, std::path::PathBuf)> = Vec::new();
    let mut put = |name: &'static str, data: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, data).unwrap();
        libs.push((name, p));
    };
    put("libc cut at 4 KiB", &bytes[..4096]);
    put("libc cut at half", &bytes[..bytes.len() / 2]);
    put("libc without its last byte", &bytes[..bytes.len() - 1]);
    put("empty", b"");
    put("ELF magic only", b"\x7fELF");
    put("text", b"not a library\n");
    let mut bad_phoff = bytes[..4096].to_vec();
    bad_phoff[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
    put("program headers past the end", &bad_phoff);
    let fifo = dir.join("fifo.so");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    libs.push(("FIFO", fifo));
    libs.push(("directory", dir.to_path_buf()));
    libs.push(("/dev/zero", "/dev/zero".into()));
    let mut out = Vec::new();
    for (name, path) in libs {
        for args in [
            &["devices"][..],
            &["devices", "--json"],
            &["run", "--device", "hip:0"],
        ] {
            out.push(
                Case::new(
                    format!("KILN_HIP_LIBRARY {name}: {}", args.join(" ")),
                    args,
                    Expect::NoDevice,
                )
                .env("KILN_HIP_LIBRARY", path.to_str().unwrap()),
            );
        }
    }
    out
}

/// `kiln selftest --problems` on hostile lists: each is refused (or read) before a device is
/// opened, quickly, in bounded memory, quoting a short escaped excerpt.
fn hostile_problem_lists(dir: &std::path::Path) -> Vec<Case> {
    let key = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F";
    let write = |name: &str, data: Vec<u8>| {
        let p = dir.join(name);
        std::fs::write(&p, data).unwrap();
        p.to_str().unwrap().to_string()
    };
    let mut hundred_k = String::new();
    for i in 0..100_000 {
        hundred_k.push_str(&format!(
            "{}-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F\n",
            1 + i % 5000
        ));
    }
    let sparse = dir.join("sparse.txt");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let fifo = dir.join("list.fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let lists: Vec<(&str, String, Expect)> = vec![
        ("/dev/zero", "/dev/zero".into(), Expect::Error),
        ("/dev/urandom", "/dev/urandom".into(), Expect::Error),
        ("FIFO", fifo.to_str().unwrap().into(), Expect::Error),
        ("directory", dir.to_str().unwrap().into(), Expect::Error),
        (
            "sparse 2 GiB",
            sparse.to_str().unwrap().into(),
            Expect::Error,
        ),
        (
            "17 MiB",
            write("big.txt", vec![b'#'; 17 << 20]),
            Expect::Error,
        ),
        (
            "10 MB line",
            write("line.txt", vec![b'9'; 10 << 20]),
            Expect::Error,
        ),
        (
            "escape sequence",
            write("esc.txt", format!("\u{1b}]0;x\u{7}{key}\n").into_bytes()),
            Expect::Error,
        ),
        (
            "bidi override",
            write("bidi.txt", format!("{key}\u{202e}\n").into_bytes()),
            Expect::Error,
        ),
        (
            "latin-1",
            write("latin1.txt", b"\xe9\n".to_vec()),
            Expect::Error,
        ),
        (
            "NUL",
            write("nul.txt", format!("{key}\0\n").into_bytes()),
            Expect::Error,
        ),
        (
            "missing",
            dir.join("absent.txt").to_str().unwrap().into(),
            Expect::Error,
        ),
        (
            "comments only",
            write("empty.txt", b"# x\n\n".to_vec()),
            Expect::Error,
        ),
        // Valid lists: read, then the device is missing.
        (
            "100,000 keys",
            write("100k.txt", hundred_k.into_bytes()),
            Expect::NoDevice,
        ),
        (
            "one key, no final newline",
            write("one.txt", key.as_bytes().to_vec()),
            Expect::NoDevice,
        ),
    ];
    lists
        .into_iter()
        .map(|(name, path, expect)| {
            Case::new(
                format!("selftest --problems {name}"),
                &["selftest", "--device", "cuda:0", "--problems", &path],
                expect,
            )
            .memory_limit(4 << 30)
        })
        .collect()
}

#[test]
fn hostile_lists_libraries_flags_and_outputs_get_clear_errors() {
    if !kiln::backend::list_devices().is_empty() {
        eprintln!("a GPU is present: the no-device cases would run; this table is for machines without one");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut cases = flags_beside_a_key();
    cases.extend(echoed_values());
    cases.extend(demo_devices());
    cases.extend(failing_stdout());
    cases.extend(damaged_libraries(tmp.path()));
    cases.extend(hostile_problem_lists(tmp.path()));
    assert!(cases.len() >= 100, "{} cases", cases.len());
    let watched: Vec<std::path::PathBuf> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && std::fs::metadata(p).unwrap().len() < 64 << 20)
        .collect();
    assert_all_behave(
        std::path::Path::new(env!("CARGO_BIN_EXE_kiln")),
        &common::repo(),
        &cases,
        &watched,
    );
}

/// A closed standard output ends a command quietly, as Unix tools end: no panic, no message.
#[test]
fn a_closed_pipe_ends_quietly() {
    use std::process::{Command, Stdio};
    for args in [
        &["info"][..],
        &["info", "--json"],
        &["resolve", "--target", "h100", "-c", "8"],
    ] {
        // Errors only: whether the child writes before the pipe closes is a race, and a
        // warning it logs after a write that still fit the pipe is not what this checks.
        let mut child = Command::new(env!("CARGO_BIN_EXE_kiln"))
            .args(args)
            .env("KILN_LOG_LEVEL", "error")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        use std::os::unix::process::ExitStatusExt;
        let quiet = out.status.code() == Some(0) || out.status.signal() == Some(libc::SIGPIPE);
        assert!(
            quiet && stderr.is_empty(),
            "{args:?}: {:?} {stderr}",
            out.status
        );
    }
}

/// `kiln net`: bad models, types, batches, weights files and inputs end in a clear error
/// before any device is opened (weights and input are read and checked first), bounded in
/// time and memory; valid command lines reach the no-device error.
#[test]
fn network_commands_name_their_bad_input() {
    if !kiln::backend::list_devices().is_empty() {
        eprintln!("a GPU is present: the no-device cases would run; this table is for machines without one");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = |name: &str, bytes: &[u8]| {
        let p = tmp.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    };
    // safetensors: 8-byte header length, JSON header, data.
    let safetensors = |header: &str, data: &[u8]| {
        let mut b = (header.len() as u64).to_le_bytes().to_vec();
        b.extend_from_slice(header.as_bytes());
        b.extend_from_slice(data);
        b
    };
    let text = file("weights.txt", b"not safetensors at all");
    let empty = file("empty.safetensors", b"");
    let huge_header = file("huge.safetensors", &u64::MAX.to_le_bytes());
    let short = file(
        "short.safetensors",
        &safetensors(
            "{\"w\":{\"dtype\":\"F32\",\"shape\":[1000000],\"data_offsets\":[0,4000000]}}",
            &[0; 16],
        ),
    );
    let ints = file(
        "ints.safetensors",
        &safetensors(
            "{\"w\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
            &[0; 4],
        ),
    );
    // Valid safetensors without the network's weights: the first node's is named missing.
    let other = file(
        "other.safetensors",
        &safetensors(
            "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
            &[0; 4],
        ),
    );
    // Network definitions as files (the text form `kiln net show` prints): a valid one, one
    // with an unknown operator, one that reads a tensor never written, binary, /dev/zero.
    let def_ok = file(
        "tiny.txt",
        b"kiln-network 1\nname tiny\ninput x 8x16x16\nnode c conv from=x to=y act=relu weight=c.weight k=8 kernel=3x3 stride=1x1 pad=1x1 groups=1 bias=c.bias\nnode s softmax from=y to=p act=identity\noutput p\n",
    );
    let def_op = file(
        "warp.txt",
        b"kiln-network 1\nname t\ninput x 8x16x16\nnode w warp from=x to=y act=relu\noutput y\n",
    );
    let def_unwritten = file(
        "unwritten.txt",
        b"kiln-network 1\nname t\ninput x 8x16x16\nnode s softmax from=z to=y act=identity\noutput y\n",
    );
    // A gate on the convolution's input (`x-scale`): of the input's own shape instead of
    // Cx1x1, and one no node writes.
    let def_gate_shape = file(
        "gate-shape.txt",
        b"kiln-network 1\nname t\ninput x 8x16x16\nnode c conv from=x to=y act=relu weight=c.weight k=8 kernel=3x3 stride=1x1 pad=1x1 groups=1 bias=c.bias x-scale=x\noutput y\n",
    );
    let def_gate_unwritten = file(
        "gate-unwritten.txt",
        b"kiln-network 1\nname t\ninput x 8x16x16\nnode c conv from=x to=y act=relu weight=c.weight k=8 kernel=3x3 stride=1x1 pad=1x1 groups=1 bias=c.bias x-scale=g\noutput y\n",
    );
    let def_binary = file("binary.txt", &[0xff, 0xfe, 0x00, 0x01]);
    let small_input = file("in-small.bin", &[0; 100]);
    let large_input = file("in-large.bin", &vec![0; 301_057]);
    let good_input = file("in-good.bin", &vec![0; 301_056]);
    // .npy: a version-1 header (padded to 64 bytes), then the data.
    let npy = |descr: &str, shape: &str, data_bytes: usize| {
        let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + h.len() + 1) % 64 != 0 {
            h.push(' ');
        }
        h.push('\n');
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend((h.len() as u16).to_le_bytes());
        b.extend(h.as_bytes());
        b.extend(vec![0u8; data_bytes]);
        b
    };
    let npy_good = file("good.npy", &npy("<f4", "(1, 3, 224, 224)", 4 * 150_528));
    let npy_nhwc = file("nhwc.npy", &npy("<f4", "(1, 224, 224, 3)", 4 * 150_528));
    let npy_ints = file("ints.npy", &npy("<i8", "(1, 3, 224, 224)", 8 * 150_528));
    let npy_short = file("short.npy", &npy("<f4", "(1, 3, 224, 224)", 1000));
    let npy_huge_header = file("huge.npy", b"\x93NUMPY\x02\x00\xff\xff\xff\xff");
    let npy_text = file("text.npy", b"not an array");
    let npy_zero = tmp.path().join("zero.npy");
    std::os::unix::fs::symlink("/dev/zero", &npy_zero).unwrap();
    let npy_zero = npy_zero.display().to_string();
    fn run<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        let mut a = vec!["net", "run"];
        a.extend_from_slice(extra);
        a
    }
    let rw = "--random-weights";
    let mut cases = Vec::new();
    for (name, args, expect) in [
        ("net unknown model", run(&["vgg", rw]), Expect::Error),
        ("net empty model", run(&["", rw]), Expect::Error),
        (
            "net type INT8",
            run(&["resnet50", rw, "--type", "INT8"]),
            Expect::Error,
        ),
        (
            "net type lower",
            run(&["resnet50", rw, "--type", "fp16"]),
            Expect::Error,
        ),
        (
            "net batch 0",
            run(&["resnet50", rw, "--batch", "0"]),
            Expect::Error,
        ),
        (
            "net batch -1",
            run(&["resnet50", rw, "--batch", "-1"]),
            Expect::Usage,
        ),
        ("net no weights", run(&["resnet50"]), Expect::Usage),
        (
            "net both weights",
            run(&["resnet50", rw, "--weights", &text]),
            Expect::Usage,
        ),
        (
            "net weights missing",
            run(&["resnet50", "--weights", "/nonexistent/w.safetensors"]),
            Expect::Error,
        ),
        (
            "net weights /dev/zero",
            run(&["resnet50", "--weights", "/dev/zero"]),
            Expect::Error,
        ),
        (
            "net weights directory",
            run(&["resnet50", "--weights", "/"]),
            Expect::Error,
        ),
        (
            "net weights text",
            run(&["resnet50", "--weights", &text]),
            Expect::Error,
        ),
        (
            "net weights empty",
            run(&["resnet50", "--weights", &empty]),
            Expect::Error,
        ),
        (
            "net weights header 2^64",
            run(&["resnet50", "--weights", &huge_header]),
            Expect::Error,
        ),
        (
            "net weights data short",
            run(&["resnet50", "--weights", &short]),
            Expect::Error,
        ),
        (
            "net weights I32",
            run(&["resnet50", "--weights", &ints]),
            Expect::Error,
        ),
        (
            "net weights not the network's",
            run(&["resnet50", "--weights", &other]),
            Expect::NoDevice,
        ),
        (
            "net input short",
            run(&["resnet50", rw, "--input", &small_input]),
            Expect::Error,
        ),
        (
            "net input long",
            run(&["resnet50", rw, "--input", &large_input]),
            Expect::Error,
        ),
        (
            "net input missing",
            run(&["resnet50", rw, "--input", "/nonexistent/x.bin"]),
            Expect::Error,
        ),
        (
            "net input /dev/zero",
            run(&["resnet50", rw, "--input", "/dev/zero"]),
            Expect::Error,
        ),
        (
            "net input right size",
            run(&["resnet50", rw, "--input", &good_input]),
            Expect::NoDevice,
        ),
        (
            "net input .npy of the network's N x C x H x W",
            run(&["resnet50", rw, "--input", &npy_good]),
            Expect::NoDevice,
        ),
        (
            "net input .npy N x H x W x C",
            run(&["resnet50", rw, "--input", &npy_nhwc]),
            Expect::Error,
        ),
        (
            "net input .npy of integers",
            run(&["resnet50", rw, "--input", &npy_ints]),
            Expect::Error,
        ),
        (
            "net input .npy data short",
            run(&["resnet50", rw, "--input", &npy_short]),
            Expect::Error,
        ),
        (
            "net input .npy header 4 GiB",
            run(&["resnet50", rw, "--input", &npy_huge_header]),
            Expect::Error,
        ),
        (
            "net input .npy text",
            run(&["resnet50", rw, "--input", &npy_text]),
            Expect::Error,
        ),
        (
            "net input .npy to /dev/zero",
            run(&["resnet50", rw, "--input", &npy_zero]),
            Expect::Error,
        ),
        (
            "net plan unknown model",
            vec!["net", "plan", "vgg"],
            Expect::Error,
        ),
        (
            "net plan batch 0",
            vec![
                "net", "plan", "resnet50", "--batch", "0", "--target", "h100",
            ],
            Expect::Error,
        ),
        (
            "net plan batch 2^32-1",
            vec![
                "net",
                "plan",
                "resnet50",
                "--batch",
                "4294967295",
                "--target",
                "h100",
            ],
            Expect::Error,
        ),
        (
            "net plan unknown target",
            vec!["net", "plan", "resnet50", "--target", "gfx9999"],
            Expect::Error,
        ),
        (
            "net plan type FP64",
            vec!["net", "plan", "resnet50", "--type", "FP64"],
            Expect::Error,
        ),
        (
            "net plan h100",
            vec!["net", "plan", "mobilenet_v2", "--brief", "--target", "h100"],
            Expect::Ok,
        ),
        (
            "net plan keys",
            vec!["net", "plan", "efficientnet_b0", "--keys", "--batch", "32"],
            Expect::Ok,
        ),
        (
            "net plan a definition file",
            vec!["net", "plan", &def_ok, "--brief", "--target", "h100"],
            Expect::Ok,
        ),
        (
            "net show a definition file",
            vec!["net", "show", &def_ok],
            Expect::Ok,
        ),
        (
            "net plan a definition with an unknown operator",
            vec!["net", "plan", &def_op],
            Expect::Error,
        ),
        (
            "net plan a definition reading an unwritten tensor",
            vec!["net", "plan", &def_unwritten],
            Expect::Error,
        ),
        (
            "net plan a gate of the input's shape",
            vec!["net", "plan", &def_gate_shape],
            Expect::Error,
        ),
        (
            "net plan a gate no node writes",
            vec!["net", "plan", &def_gate_unwritten],
            Expect::Error,
        ),
        (
            "net run unfolded excitation",
            run(&["efficientnet_b0", rw, "--unfolded-excitation"]),
            Expect::NoDevice,
        ),
        (
            "net run unfolded excitation with a value",
            run(&["efficientnet_b0", rw, "--unfolded-excitation=no"]),
            Expect::Usage,
        ),
        (
            "net run excitation heads",
            run(&["efficientnet_b0", rw, "--excitation-heads"]),
            Expect::NoDevice,
        ),
        (
            "net run excitation heads with a value",
            run(&["efficientnet_b0", rw, "--excitation-heads=yes"]),
            Expect::Usage,
        ),
        (
            "net run fused expansions",
            run(&["mobilenet_v2", rw, "--fused-expansions"]),
            Expect::NoDevice,
        ),
        (
            "net run fused expansions with a value",
            run(&["mobilenet_v2", rw, "--fused-expansions=yes"]),
            Expect::Usage,
        ),
        (
            "net plan a binary definition",
            vec!["net", "plan", &def_binary],
            Expect::Error,
        ),
        (
            "net plan /dev/zero",
            vec!["net", "plan", "/dev/zero"],
            Expect::Error,
        ),
        (
            "net run a definition file",
            run(&[&def_ok, rw]),
            Expect::NoDevice,
        ),
    ] {
        cases.push(Case::new(name, &args, expect));
    }
    // MIOpenDriver's logged lines, pasted after `resolve` / `run`.
    fn line(l: &str) -> Vec<&str> {
        l.split_whitespace().collect()
    }
    for (name, args, expect) in [
        (
            "driver line resolve",
            line("resolve ./bin/MIOpenDriver convfp16 -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 --in_layout NHWC --fil_layout NHWC --out_layout NHWC -m conv -g 1 -F 1 -t 1 --target h100"),
            Expect::Ok,
        ),
        (
            "driver line run",
            line("run conv -n 1 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1"),
            Expect::NoDevice,
        ),
        (
            "driver line transposed",
            line("resolve conv -n 1 -m trans -F 1 --target h100"),
            Expect::Usage,
        ),
        (
            "driver line two directions",
            line("resolve convfp16 -n 1 -F 3 --target h100"),
            Expect::Usage,
        ),
        (
            "driver line bad number",
            line("resolve conv -n many -F 1"),
            Expect::Usage,
        ),
        (
            "doctor without a GPU: what is missing and what to do",
            line("doctor"),
            Expect::NoDevice,
        ),
        (
            "run takes no --json (resolve's)",
            line("run -n 1 -c 8 -H 8 -W 8 -k 8 --json"),
            Expect::Usage,
        ),
        (
            "run takes no --repeat (resolve's)",
            line("run -n 1 -c 8 -H 8 -W 8 -k 8 --repeat 5"),
            Expect::Usage,
        ),
        (
            "driver line unknown kiln flag",
            line("resolve conv -n 1 -F 1 --frobnicate"),
            Expect::Usage,
        ),
    ] {
        cases.push(Case::new(name, &args, expect));
    }
    assert_all_behave(
        std::path::Path::new(env!("CARGO_BIN_EXE_kiln")),
        &common::repo(),
        &cases,
        &[],
    );
}

/// `kiln resolve` given a line MIOpenDriver logged, and given the same problem as kiln's flags,
/// prints the same find-db key. The first five lines are copied from public MIOpenDriver logs
/// and scripts (GitHub: MIOpen users' benchmark scripts and run logs); the rest exercise the
/// long names, layouts, groups and 3-D flags.
#[test]
fn driver_lines_give_the_flag_forms_key() {
    let key_of = |args: &[&str]| -> String {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kiln"))
            .arg("resolve")
            .args(args)
            .args(["--target", "h100"])
            .output()
            .expect("kiln runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // 0, or 4 for a problem no kiln solver runs (backward ones): the key is printed first.
        assert!(
            matches!(out.status.code(), Some(0 | 4)),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        text.lines()
            .find_map(|l| l.strip_prefix("find-db key:"))
            .map(|k| k.trim().to_string())
            .unwrap_or_else(|| panic!("{args:?}: no key in {text}"))
    };
    let lines = [
        (
            "./MIOpenDriver convfp16 -n 128 -c 1344 -H 14 -W 14 -k 1344 -y 5 -x 5 -p 2 -q 2 -u 1 -v 1 -l 1 -j 1 -m conv -g 1344 -F 2 -t 1",
            "-n 128 -c 1344 -H 14 -W 14 -k 1344 -y 5 -x 5 -p 2 -q 2 -g 1344 -F 2 --type FP16",
        ),
        (
            "MIOpenDriver convfp16 -n 1 -c 256 -H 512 -W 512 -k 256 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1",
            "-n 1 -c 256 -H 512 -W 512 -k 256 -y 3 -x 3 -p 1 -q 1 --type FP16",
        ),
        (
            "MIOpenDriver convfp16 -n 1 -c 16 --in_d 5 -H 104 -W 60 -k 16 --fil_d 1 -y 1 -x 1 --pad_d 0 -p 0 -q 0 --conv_stride_d 1 -u 1 -v 1 --dilation_d 1 -l 1 -j 1 --spatial_dim 3 --in_layout NDHWC --fil_layout NDHWC --out_layout NDHWC -m conv -g 1 -F 1 -t 1",
            "-n 1 -c 16 --in_d 5 -H 104 -W 60 -k 16 --fil_d 1 -y 1 -x 1 --spatial_dim 3 --layout NDHWC --type FP16",
        ),
        (
            "./bin/MIOpenDriver convfp16 -n 32 -c 192 -H 13 -W 13 -k 384 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1",
            "-n 32 -c 192 -H 13 -W 13 -k 384 -y 3 -x 3 -p 1 -q 1 --type FP16",
        ),
        (
            "MIOpenDriver convfp16 -n 128 -c 64 -H 112 -W 112 -k 32 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 2 -t 1",
            "-n 128 -c 64 -H 112 -W 112 -k 32 -y 1 -x 1 -F 2 --type FP16",
        ),
        (
            "./bin/MIOpenDriver conv -n 128 -c 3 -H 32 -W 32 -k 64 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1",
            "-n 128 -c 3 -H 32 -W 32 -k 64 -y 3 -x 3 -p 1 -q 1",
        ),
        (
            "convfp16 -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 --in_layout NHWC --fil_layout NHWC --out_layout NHWC -m conv -g 1 -F 1 -t 1",
            "-n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 --layout NHWC --type FP16",
        ),
        (
            "convbfp16 -n 16 -c 512 -H 14 -W 14 -k 512 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -l 1 -j 1 -m conv -g 32 -F 1 -t 1",
            "-n 16 -c 512 -H 14 -W 14 -k 512 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 32 --type BF16",
        ),
        (
            "conv --batchsize 2 --in_channels 16 --in_h 10 --in_w 12 --out_channels 8 --fil_h 5 --fil_w 3 --pad_h 2 --pad_w 1 --conv_stride_h 1 --conv_stride_w 1 --dilation_h 2 --dilation_w 1 --group_count 1 --forw 4",
            "-n 2 -c 16 -H 10 -W 12 -k 8 -y 5 -x 3 -p 2 -q 1 -l 2 -F 4",
        ),
        (
            "convint8 -n 8 -c 64 -H 28 -W 28 -k 128 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1 -V 0 -i 10",
            "-n 8 -c 64 -H 28 -W 28 -k 128 -y 1 -x 1 --type INT8",
        ),
    ];
    for (driver, flags) in lines {
        let words = |s: &'static str| s.split_whitespace().collect::<Vec<_>>();
        assert_eq!(key_of(&words(driver)), key_of(&words(flags)), "{driver}");
    }
}
