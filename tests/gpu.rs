//! Tests that need a GPU. They are `#[ignore]`d so that a machine without one skips them
//! loudly; `ci/device-run.sh` runs them on the H100 with `--ignored`.

use kiln::backend::Stream;
use kiln::context::Context;
use kiln::harness::verify::run_checked;
use kiln::resolve::Variant;
use kiln::{ConvProblem, ConvSpec, DataType, Layout, RunError};

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
        for c in ctx.find_solutions(&p).unwrap().iter() {
            let r = run_checked(&ctx, &p, &c.variant, 42, 2).unwrap();
            assert!(
                r.passed,
                "{} [{}] on {}: error {}",
                c.variant.solver.id(),
                c.variant.params,
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
    let c = ctx.find_solutions(&p).unwrap().best().variant;
    let a = ctx.prepare(&p, &c).unwrap();
    let b = ctx.prepare(&p, &c).unwrap();
    assert!(
        std::sync::Arc::ptr_eq(&a, &b),
        "same (network config, solver, perf config) -> same invoker"
    );
    // Another perf config of the same solver is another kernel: never the cached one.
    let igemm = kiln::solvers::by_id("ConvImplicitGemmFwd").unwrap();
    for &params in igemm.entry.params {
        let v = Variant {
            solver: igemm,
            params,
        };
        let inv = ctx.prepare(&p, &v).unwrap();
        assert_eq!(inv.variant.params, params);
        let planned = igemm.imp.launch_plan(&p, params);
        assert!(inv.launches().eq(planned.kernels.iter()));
    }
    assert!(igemm.entry.params.len() >= 2);
    let dev = ctx.device();
    let small = dev.alloc(16).unwrap();
    let ok = dev.alloc(1 << 20).unwrap();
    let e = ctx
        .run(&a, &small, &ok, &ok, None, &Stream::default())
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
    // A buffer of another open device (here: a second context on the same GPU) is refused.
    let other = kiln::backend::open(Some("cuda:0")).unwrap();
    let foreign = other.alloc(1 << 20).unwrap();
    let e = ctx
        .run(&a, &foreign, &ok, &ok, None, &Stream::default())
        .unwrap_err();
    assert!(matches!(e, RunError::ForeignBuffer { which: "x" }), "{e}");
}

#[test]
#[ignore = "needs a GPU (ci/device-run.sh)"]
fn a_foreign_code_object_is_refused_before_the_driver() {
    let ctx = ctx();
    let other = kiln::named_target("gfx90a68").unwrap();
    let solver = kiln::solvers::by_id("ConvDirectNaiveFwd").unwrap();
    let (name, args) = kiln::format::manifest::kdb_key(
        solver.entry.source,
        solver.entry.options,
        DataType::Fp32.name(),
        "",
        "gfx90a",
    )
    .unwrap();
    let obj = other.code_object(&name, &args).unwrap().unwrap();
    let e = kiln::codeobject::check_for_device(obj.bytes, &ctx.device().info().arch)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the binary has AMD gfx90a") && e.contains("the device is sm_90"),
        "{e}"
    );
}
