//! Zero heap allocations per lookup, counted by a global allocator. The first touch of a
//! block decodes it into static storage (that path may allocate a zstd context); every
//! lookup after that, hit or miss, by key or by problem, allocates nothing.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
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
        target.find_solutions_by_key(k).unwrap().unwrap();
    }
    for (p, s) in &perf {
        target.perf_params(p, s).unwrap().unwrap();
    }

    let before = ALLOCS.load(Ordering::Relaxed);
    let mut checksum = 0.0;
    let mut hits = 0usize;
    for (p, k) in problems.iter().zip(&keys) {
        let s = target.find_solutions(p).unwrap().unwrap();
        for sol in s.iter() {
            checksum += sol.unwrap().time_ms;
        }
        let ranked = s.ranked().unwrap();
        hits += ranked.len();
        hits += target
            .find_solutions_by_key(k)
            .unwrap()
            .map_or(0, |s| s.len());
    }
    for (p, s) in &perf {
        hits += target.perf_params(p, s).unwrap().map_or(0, |_| 1);
        hits += target.perf_record(p).unwrap().len();
    }
    let misses = target.find_solutions(&miss).unwrap().is_none()
        && target.perf_params(&miss, "X").unwrap().is_none();
    let after = ALLOCS.load(Ordering::Relaxed);
    assert!(misses && hits > 100_000 && checksum > 0.0);
    assert_eq!(
        after - before,
        0,
        "lookups allocated {} times",
        after - before
    );
}
