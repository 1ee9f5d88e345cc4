//! Zero heap allocations per lookup, counted by a global allocator. The first touch of a
//! block decodes it into static storage (that path may allocate a zstd context); every
//! lookup after that, hit or miss, by key or by problem, allocates nothing.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    // Per thread, so tests running side by side do not count each other's allocations
    // (const-initialized: touching it never allocates).
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}

fn allocations() -> usize {
    ALLOCS.with(Cell::get)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn lookups_do_not_allocate() {
    let target = kiln::named_target("gfx942130").unwrap();
    let fdb = kiln_embed::finddb::FindDb::read(&common::gfx942130().join("gfx942130.HIP.fdb.txt"))
        .unwrap();
    let pdb =
        kiln_embed::perfdb::PerfDb::read(&common::gfx942130().join("gfx942130.db.txt")).unwrap();
    let problems: Vec<kiln::ConvProblem> = fdb
        .records
        .iter()
        .map(|r| kiln::ConvProblem::from_find_db_key(&r.key).unwrap())
        .collect();
    let keys: Vec<&str> = fdb.records.iter().map(|r| r.key.as_str()).collect();
    let perf: Vec<(kiln::ConvProblem, &str)> = pdb
        .records
        .iter()
        .map(|r| {
            (
                kiln::ConvProblem::from_perf_db_key(&r.key).unwrap(),
                r.items.last().unwrap().solver.as_str(),
            )
        })
        .collect();
    let miss =
        kiln::ConvProblem::from_find_db_key("3-3-3-1x1-3-3-3-3-0x0-1x1-1x1-0-NCHW-FP32-F").unwrap();
    // Warm up: decode every block once.
    for k in &keys {
        target.find_record_by_key(k).unwrap().unwrap();
    }
    for (p, s) in &perf {
        target.perf_params(p, s).unwrap().unwrap();
    }

    let before = allocations();
    let mut checksum = 0.0;
    let mut hits = 0usize;
    for (p, k) in problems.iter().zip(&keys) {
        let s = target.find_record(p).unwrap().unwrap();
        for sol in s.iter() {
            checksum += sol.unwrap().time_ms;
        }
        let ranked = s.ranked().unwrap();
        hits += ranked.len();
        hits += target.find_record_by_key(k).unwrap().map_or(0, |s| s.len());
    }
    for (p, s) in &perf {
        hits += target.perf_params(p, s).unwrap().map_or(0, |_| 1);
        hits += target.perf_record(p).unwrap().len();
    }
    let misses = target.find_record(&miss).unwrap().is_none()
        && target.perf_params(&miss, "X").unwrap().is_none();
    let after = allocations();
    assert!(misses && hits > 100_000 && checksum > 0.0);
    assert_eq!(
        after - before,
        0,
        "lookups allocated {} times",
        after - before
    );
}

#[test]
fn resolving_does_not_allocate() {
    // Problems the measured sm_90_132 find-db lacks (batch 2 and 3, odd sizes), ranked by the
    // nearest measured problem and the cost model, perf-db consulted (a 3-D one also as the
    // 2-D problem it folds into); and a measured one
    // through the find-db: all on the stack.
    let target = kiln::named_target("sm_90_132").unwrap();
    let caps = kiln::solvers::TargetCaps::of(target);
    assert!(!target.measured.is_empty());
    let unseen: Vec<kiln::ConvProblem> = [
        "64-56-56-3x3-64-56-56-2-1x1-1x1-1x1-0-NCHW-FP32-F",
        "256-14-14-1x1-1024-14-14-3-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F",
        "96-37-37-3x3-96-37-37-2-1x1-1x1-1x1-0-NCHW-FP16-F_g96",
        "3-33-33-3x3-8-33-33-1-1x1-1x1-1x1-0-NCHW-BF16-F",
        // 3-D, its depth folding away: also ranked as the 2-D problem it folds into.
        "64-16-56-56-1x3x3-144-16-56-56-2-0x1x1-1x1x1-1x1x1-0-NDHWC-NDHWC-NDHWC-FP16-F",
    ]
    .iter()
    .map(|k| kiln::ConvProblem::from_find_db_key(k).unwrap())
    .collect();
    let measured =
        kiln::ConvProblem::from_find_db_key("64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NCHW-FP32-F")
            .unwrap();
    kiln::resolve::resolve(target, &measured).unwrap();
    for p in &unseen {
        assert!(target.find_record(p).unwrap().is_none());
        kiln::resolve::resolve(target, p).unwrap();
        kiln::resolve::rank_unmeasured(p, target.measured, &caps, Some(target)).unwrap();
    }
    let before = allocations();
    let mut ranked = 0;
    for _ in 0..100 {
        for p in &unseen {
            ranked += kiln::resolve::rank_unmeasured(p, target.measured, &caps, Some(target))
                .unwrap()
                .len();
            ranked += kiln::resolve::resolve(target, p).unwrap().len();
        }
        ranked += kiln::resolve::resolve(target, &measured).unwrap().len();
    }
    let after = allocations();
    assert!(ranked >= 400);
    assert_eq!(
        after - before,
        0,
        "the fallback allocated {} times",
        after - before
    );
}
