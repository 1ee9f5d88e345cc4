//! Tests that need a GPU. They are `#[ignore]`d so that a machine without one skips them
//! loudly; `ci/device-run.sh` runs them on the H100 with `--ignored`.

use kiln::backend::Stream;
use kiln::context::{Buffer, Context, RunError};
use kiln::{ConvProblem, ConvSpec, DataType, Layout};

fn ctx() -> Context {
    Context::new(kiln::backend::open(Some("cuda:0")).expect("a CUDA device"))
        .expect("an embedded target for it")
}

#[test]
#[ignore = "needs a GPU (ci/device-run.sh)"]
fn every_solver_matches_the_reference() {
    let ctx = ctx();
    let problems = [
        ConvSpec {
            n: 2,
            c: 32,
            k: 48,
            input: [1, 19, 17],
            filter: [1, 3, 3],
            pad: [0, 1, 1],
            ..ConvSpec::default()
        },
        ConvSpec {
            n: 2,
            c: 32,
            k: 48,
            input: [1, 12, 12],
            filter: [1, 1, 1],
            layouts: [Layout::Nhwc; 3],
            data_types: [DataType::Fp16; 3],
            ..ConvSpec::default()
        },
        ConvSpec {
            spatial_dims: 3,
            n: 1,
            c: 8,
            k: 8,
            input: [6, 8, 8],
            filter: [3, 3, 3],
            pad: [1, 1, 1],
            groups: 8,
            layouts: [Layout::Ncdhw; 3],
            data_types: [DataType::Bf16; 3],
            ..ConvSpec::default()
        },
    ];
    let mut runs = 0;
    for spec in problems {
        let p = ConvProblem::new(spec).unwrap();
        for c in ctx.find_solutions(&p).unwrap() {
            let r = kiln::verify::run_checked(&ctx, &p, &c, 42, 2).unwrap();
            assert!(
                r.passed,
                "{} [{}] on {}: error {}",
                c.solver.id,
                c.params,
                p.find_db_key(),
                r.error
            );
            runs += 1;
        }
    }
    assert!(runs >= 6);
}

#[test]
#[ignore = "needs a GPU (ci/device-run.sh)"]
fn buffers_are_checked_and_invokers_cached() {
    let ctx = ctx();
    let p = ConvProblem::new(ConvSpec {
        n: 1,
        c: 8,
        k: 8,
        input: [1, 8, 8],
        filter: [1, 3, 3],
        ..ConvSpec::default()
    })
    .unwrap();
    let c = ctx.find_solutions(&p).unwrap()[0];
    let a = ctx.prepare(&p, &c).unwrap();
    let b = ctx.prepare(&p, &c).unwrap();
    assert!(
        std::sync::Arc::ptr_eq(&a, &b),
        "same (network config, solver, perf config) -> same invoker"
    );
    // Another perf config of the same solver is another kernel: never the cached one.
    let igemm = kiln::solvers::by_id("ConvImplicitGemmFwd").unwrap();
    for &params in igemm.params {
        let cand = kiln::context::Candidate {
            solver: igemm,
            params,
            ..c
        };
        let inv = ctx.prepare(&p, &cand).unwrap();
        assert_eq!(inv.params, params);
        assert_eq!(inv.dims(), kiln::solvers::launch_dims(igemm, &p, params));
    }
    assert!(igemm.params.len() >= 2);
    let be = ctx.backend();
    let small = Buffer {
        ptr: be.alloc(16).unwrap(),
        bytes: 16,
    };
    let ok = Buffer {
        ptr: be.alloc(1 << 20).unwrap(),
        bytes: 1 << 20,
    };
    let e = ctx
        .run(&a, small, ok, ok, None, Stream::default())
        .unwrap_err();
    assert!(
        matches!(
            e,
            RunError::BufferTooSmall {
                which: "x",
                needed: 2048,
                given: 16
            }
        ),
        "{e}"
    );
    be.free(small.ptr);
    be.free(ok.ptr);
}

#[test]
#[ignore = "needs a GPU (ci/device-run.sh)"]
fn a_foreign_code_object_is_refused_before_the_driver() {
    let ctx = ctx();
    let other = kiln::named_target("gfx90a68").unwrap();
    let solver = kiln::solvers::by_id("ConvDirectNaiveFwd").unwrap();
    let obj = other
        .code_object(
            &kiln::solvers::kernel_name(solver),
            &kiln::solvers::kernel_args(solver, DataType::Fp32, "", "gfx90a"),
        )
        .unwrap()
        .unwrap();
    let e = kiln::codeobject::check_for_device(obj.bytes, &ctx.backend().info().arch)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the binary has AMD gfx90a") && e.contains("the device is sm_90"),
        "{e}"
    );
}
