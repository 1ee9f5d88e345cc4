//! The flag path: any sizes -> problem validation -> every solver's applicability. Property: a
//! problem that some solver accepts has exact element counts (no wrap), arguments that fit the
//! kernels' ints, and launches within the grid limits.
#![no_main]
use kiln::solvers::{registered, TargetCaps};
use kiln_format::{ConvProblem, ConvSpec, DataType, Layout, Vendor};
use libfuzzer_sys::fuzz_target;

fn word(d: &[u8], i: usize) -> u32 {
    let b = |j: usize| d.get(i * 4 + j).copied().unwrap_or(1) as u32;
    // Mostly small values, with the full range reachable through the top bits.
    let v = b(0) | b(1) << 8 | b(2) << 16 | b(3) << 24;
    if v & 0x8000_0000 != 0 { v & 0x01ff_ffff } else { v & 0x3ff }
}

fuzz_target!(|d: &[u8]| {
    let three = d.first().is_some_and(|b| b & 1 == 1);
    let layout = match (three, d.get(1).is_some_and(|b| b & 1 == 1)) {
        (false, false) => Layout::Nchw,
        (false, true) => Layout::Nhwc,
        (true, false) => Layout::Ncdhw,
        (true, true) => Layout::Ndhwc,
    };
    let dtype = [DataType::Fp32, DataType::Fp16, DataType::Bf16][d.get(2).copied().unwrap_or(0) as usize % 3];
    let w = |i| word(&d[3.min(d.len())..], i);
    let spec = ConvSpec {
        spatial_dims: if three { 3 } else { 2 },
        n: w(0),
        c: w(1),
        k: w(2),
        input: [w(3), w(4), w(5)],
        filter: [w(6), w(7), w(8)],
        pad: [w(9) % 8, w(10) % 8, w(11) % 8],
        stride: [w(12) % 5, w(13) % 5, w(14) % 5],
        dilation: [w(15) % 4, w(16) % 4, w(17) % 4],
        groups: w(18) % 9,
        layouts: [layout; 3],
        data_types: [dtype; 3],
        ..ConvSpec::default()
    };
    let Ok(p) = ConvProblem::new(spec) else { return };
    let exact = |v: &[u32]| v.iter().fold(1u128, |a, &x| a * x as u128);
    let [i, f, o] = [p.input(), p.filter(), p.output()];
    let want = [
        exact(&[p.n(), p.c(), i[0], i[1], i[2]]),
        exact(&[p.k(), p.c() / p.groups(), f[0], f[1], f[2]]),
        exact(&[p.n(), p.k(), o[0], o[1], o[2]]),
    ];
    assert_eq!(p.element_counts().map(|c| c as u128), want, "counts wrapped");
    for caps in [
        TargetCaps::describe(Vendor::Nvidia, "sm_90", "sm_90", 132),
        TargetCaps::describe(Vendor::Nvidia, "sm_87", "sm_80", 16),
        TargetCaps::describe(Vendor::Amd, "gfx90a", "gfx90a", 104),
    ] {
        for s in registered() {
            for q in s.entry.params {
                if s.applicable(&p, &caps, q).is_ok() {
                    assert!(kiln_format::abi::KernelArgs::of(&p).is_some());
                    let plan = s.plan(&p, &caps, q).unwrap();
                    assert!(plan.within_launch_limits().is_ok(), "{} [{q}]", s.id());
                    assert!(s.estimate(&p, &caps, q).unwrap().is_finite());
                }
            }
        }
        let _ = kiln::resolve::rank_unmeasured(&p, &[], &caps, None);
    }
});
