//! `kiln-tools emulate`: an AMD target's objects checked in kiln-emu from the command line,
//! their counts printed, and bad targets, solvers and problems refused with exit code 1.

mod common;

fn tools(args: &[&str]) -> (Option<i32>, String, String) {
    common::run_in_repo(env!("CARGO_BIN_EXE_kiln-tools"), args)
}

#[test]
fn a_problem_runs_on_an_emulated_gpu_and_bad_arguments_are_refused() {
    // A small FP16 NHWC layer on MI210's matrix-core solver and its CUDA-core kin.
    let key = "8-9-7-3x3-16-9-7-2-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F";
    let (code, out, err) = tools(&[
        "emulate",
        "--target",
        "mi210",
        "--problem",
        key,
        "--solver",
        "ConvMfmaImplicitGemmFwd",
        "--solver",
        "ConvImplicitGemmFwd",
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains(
            "gfx90a68 in emulation (gfx90a 104 CUs): 1 problems, 5 checked runs, 0 failed"
        ),
        "{out}"
    );
    assert!(
        out.contains("ConvMfmaImplicitGemmFwd          1 runs    0 failed"),
        "{out}"
    );
    assert!(
        out.contains("ConvImplicitGemmFwd              4 runs    0 failed"),
        "{out}"
    );
    for (args, want) in [
        (
            vec!["emulate", "--target", "sm_90_132"],
            "kiln-emu models AMD GPUs",
        ),
        (
            vec!["emulate", "--target", "gfx90a68", "--solver", "Nope"],
            "--solver \"Nope\": no solver of that id",
        ),
        (
            vec!["emulate", "--target", "gfx90a68", "--problem", "1-2-3"],
            "--problem \"1-2-3\"",
        ),
        (
            // ResNet's first layer at N=256: far past what the CPU reference should hold.
            vec![
                "emulate",
                "--target",
                "gfx90a68",
                "--problem",
                "256-224-224-7x7-64-112-112-3-3x3-2x2-1x1-0-NHWC-NHWC-NHWC-FP16-F",
            ],
            "emulation takes at most 1073741824",
        ),
        (
            // FP32 on the FP16/BF16 solver alone: nothing applies.
            vec![
                "emulate",
                "--target",
                "gfx90a68",
                "--problem",
                "8-9-7-3x3-16-9-7-2-1x1-1x1-1x1-0-NCHW-FP32-F",
                "--solver",
                "ConvMfmaImplicitGemmFwd",
            ],
            "no solver of the target applies",
        ),
    ] {
        let (code, out, err) = tools(&args);
        assert_eq!(code, Some(1), "{args:?}: {out}{err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn a_3d_layer_whose_depth_folds_away_runs_on_the_2d_matrix_core_solver() {
    // MI210's matrix-core solver takes 2-D NHWC only: these volumes run on it as the 2-D
    // problems they fold into (a batch of 2 x 2 planes; one 3 x 63 image under a 3x1 filter),
    // checked against the 3-D CPU reference.
    for key in [
        "8-2-9-7-1x3x3-16-2-9-7-2-0x1x1-1x1x1-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F",
        "8-3-9-7-3x1x1-16-3-9-7-1-1x0x0-1x1x1-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F+bias+relu",
    ] {
        let (code, out, err) = tools(&[
            "emulate",
            "--target",
            "mi210",
            "--problem",
            key,
            "--solver",
            "ConvMfmaImplicitGemmFwd",
        ]);
        assert_eq!(code, Some(0), "{key}: {out}{err}");
        assert!(
            out.contains("1 problems, 1 checked runs, 0 failed"),
            "{key}: {out}"
        );
    }
    // Channels first, a one-plane filter does not fold (a plane is not contiguous): refused.
    let (code, out, err) = tools(&[
        "emulate",
        "--target",
        "mi210",
        "--problem",
        "8-2-9-7-1x3x3-16-2-9-7-2-0x1x1-1x1x1-1x1x1-0-NCDHW-FP16-F",
        "--solver",
        "ConvMfmaImplicitGemmFwd",
    ]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(err.contains("no solver of the target applies"), "{err}");
}
