//! Lookup cost on the embedded gfx942130 tables (MIOpen's real find-db and perf-db): one
//! lookup per iteration, cycling through every key, blocks already decoded (the steady state
//! of a running appliance). Results: benches/RESULTS.md.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use kiln::ConvProblem;

fn load() -> (Vec<String>, Vec<ConvProblem>, Vec<(ConvProblem, String)>) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("targets/gfx942130");
    let fdb = kiln_embed::finddb::FindDb::read(&dir.join("gfx942130.HIP.fdb.txt")).unwrap();
    let pdb = kiln_embed::perfdb::PerfDb::read(&dir.join("gfx942130.db.txt")).unwrap();
    let keys: Vec<String> = fdb.records.iter().map(|r| r.key.clone()).collect();
    let problems = keys
        .iter()
        .map(|k| ConvProblem::from_find_db_key(k).unwrap())
        .collect();
    let perf = pdb
        .records
        .iter()
        .map(|r| {
            (
                ConvProblem::from_perf_db_key(&r.key).unwrap(),
                r.items.last().unwrap().solver.clone(),
            )
        })
        .collect();
    (keys, problems, perf)
}

fn lookups(c: &mut Criterion) {
    let target = kiln::named_target("gfx942130").unwrap();
    let (keys, problems, perf) = load();
    for k in &keys {
        target.find_record_by_key(k).unwrap().unwrap();
    }
    for (p, s) in &perf {
        target.perf_params(p, s).unwrap().unwrap();
    }
    let mut i = 0usize;
    c.bench_function("find-db lookup by key (9,600 keys, cycling)", |b| {
        b.iter(|| {
            i = (i + 1) % keys.len();
            black_box(target.find_record_by_key(black_box(&keys[i])).unwrap())
        })
    });
    let mut i = 0usize;
    c.bench_function("find-db lookup by problem (key built on the stack)", |b| {
        b.iter(|| {
            i = (i + 1) % problems.len();
            black_box(target.find_record(black_box(&problems[i])).unwrap())
        })
    });
    let mut i = 0usize;
    c.bench_function("find-db lookup by problem + ranked solutions", |b| {
        b.iter(|| {
            i = (i + 1) % problems.len();
            let s = target
                .find_record(black_box(&problems[i]))
                .unwrap()
                .unwrap();
            black_box(s.ranked().unwrap().first().map(|s| s.time_ms))
        })
    });
    let mut i = 0usize;
    c.bench_function(
        "perf-db lookup by problem + solver (9,393 configs, cycling)",
        |b| {
            b.iter(|| {
                i = (i + 1) % perf.len();
                let (p, s) = &perf[i];
                black_box(target.perf_params(black_box(p), black_box(s)).unwrap())
            })
        },
    );
    let miss =
        ConvProblem::from_find_db_key("3-3-3-1x1-3-3-3-3-0x0-1x1-1x1-0-NCHW-FP32-F").unwrap();
    c.bench_function("find-db miss by problem", |b| {
        b.iter(|| black_box(target.find_record(black_box(&miss)).unwrap()))
    });
}

/// Full resolution (`resolve`: find-db, perf-db, applicability, ordering) on the measured
/// sm_90_132 target, for its measured problems and for unmeasured ones (the fallback).
fn resolve(c: &mut Criterion) {
    let target = kiln::named_target("sm_90_132").unwrap();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("targets/sm_90_132");
    let fdb = kiln_embed::finddb::FindDb::read(&dir.join("sm_90_132.HIP.fdb.txt")).unwrap();
    let measured: Vec<ConvProblem> = fdb
        .records
        .iter()
        .map(|r| ConvProblem::from_find_db_key(&r.key).unwrap())
        .collect();
    // The same shapes at batch 3: none is in the find-db.
    let unmeasured: Vec<ConvProblem> = measured
        .iter()
        .map(|p| ConvProblem::new(kiln::ConvSpec { n: 3, ..p.spec() }).unwrap())
        .filter(|p| target.find_record(p).unwrap().is_none())
        .collect();
    for p in measured.iter().chain(&unmeasured) {
        kiln::resolve::resolve(target, p).unwrap();
    }
    let mut i = 0usize;
    c.bench_function("resolve a measured problem (sm_90_132, 712 cycling)", |b| {
        b.iter(|| {
            i = (i + 1) % measured.len();
            black_box(kiln::resolve::resolve(target, black_box(&measured[i])).unwrap())
        })
    });
    let mut i = 0usize;
    c.bench_function(
        "resolve an unmeasured problem: nearest measured (fallback)",
        |b| {
            b.iter(|| {
                i = (i + 1) % unmeasured.len();
                black_box(kiln::resolve::resolve(target, black_box(&unmeasured[i])).unwrap())
            })
        },
    );
}

criterion_group!(benches, lookups, resolve);

fn keys_only(c: &mut Criterion) {
    let p = ConvProblem::from_find_db_key("1008-14-14-1x1-192-14-14-16-0x0-1x1-1x1-0-NCHW-FP32-F")
        .unwrap();
    c.bench_function("find-db key of a problem", |b| {
        b.iter(|| black_box(black_box(&p).find_db_key()))
    });
    c.bench_function("perf-db key of a problem", |b| {
        b.iter(|| black_box(black_box(&p).perf_db_key()))
    });
}
criterion_group!(keys, keys_only);
criterion_main!(benches, keys);
