//! The fallback model of a target (see `kiln_format::measured`): each find-db record whose
//! solvers are kiln's becomes a measured problem, with the perf-db's tuned config of each
//! solver. The build emits it as a static slice; `kiln-tools regret` rebuilds it from subsets of
//! the same databases to measure the fallback on problems held out of it.

use std::collections::HashMap;
use std::fmt::Write as _;

use kiln_format::measured::{self, FEATURES};
use kiln_format::ConvProblem;

use crate::finddb::FindDb;
use crate::kdbbuild::Manifest;
use crate::perfdb::PerfDb;

/// One solver of a measured problem.
#[derive(Clone, Debug, PartialEq)]
pub struct Solver {
    /// Solver id (one of the manifest's).
    pub id: String,
    /// Measured time, ms.
    pub time_ms: f64,
    /// Tuned perf config, one of the manifest's ("" when the perf-db has none).
    pub params: String,
}

/// One measured problem, owned.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// The find-db key.
    pub key: String,
    /// `measured::class`.
    pub class: u32,
    /// `measured::features`.
    pub features: [f32; FEATURES],
    /// `measured::macs`.
    pub macs: f64,
    /// kiln's solvers of the record, fastest first.
    pub solvers: Vec<Solver>,
}

/// The model of a find-db (records with none of the manifest's solvers, or keys that do not
/// parse, are left out: the fallback cannot use them) and its perf-db.
pub fn build(find: &FindDb, perf: Option<&PerfDb>, manifest: &Manifest) -> Vec<Measured> {
    let perf_index: HashMap<&str, &crate::perfdb::PerfRecord> = perf
        .map(|db| db.records.iter().map(|r| (r.key.as_str(), r)).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    for r in &find.records {
        let Ok(p) = ConvProblem::from_find_db_key(&r.key) else {
            continue;
        };
        let tuned = perf_index.get(p.perf_db_key().as_str());
        let mut solvers: Vec<Solver> = r
            .items
            .iter()
            .filter_map(|item| {
                let s = manifest.solvers.iter().find(|s| s.id == item.solver)?;
                let params = tuned
                    .and_then(|t| t.items.iter().find(|i| i.solver == s.id))
                    .map(|i| i.params.clone())
                    .filter(|q| s.params.contains(q))
                    .unwrap_or_default();
                Some(Solver {
                    id: s.id.clone(),
                    time_ms: item.time_ms,
                    params,
                })
            })
            .collect();
        if solvers.is_empty() {
            continue;
        }
        solvers.sort_by(|a, b| a.time_ms.total_cmp(&b.time_ms));
        out.push(Measured {
            key: r.key.clone(),
            class: measured::class(&p),
            features: measured::features(&p),
            macs: measured::macs(&p),
            solvers,
        });
    }
    out
}

/// Rust source of `static <ident>: &[MeasuredProblem<'static>]` holding `model`.
pub fn emit(ident: &str, model: &[Measured]) -> String {
    let mut s =
        format!("static {ident}: &[::kiln_format::measured::MeasuredProblem<'static>] = &[\n");
    for m in model {
        let features: Vec<String> = m.features.iter().map(|f| format!("{f:?}f32")).collect();
        let solvers: Vec<String> = m
            .solvers
            .iter()
            .map(|v| {
                format!(
                    "::kiln_format::measured::MeasuredSolver {{ solver: {:?}, time_ms: {:?}f32, params: {:?} }}",
                    v.id, v.time_ms as f32, v.params
                )
            })
            .collect();
        writeln!(
            s,
            "    ::kiln_format::measured::MeasuredProblem {{ key: {:?}, class: {}, features: [{}], macs: {:?}f64, solvers: &[{}] }},",
            m.key,
            m.class,
            features.join(", "),
            m.macs,
            solvers.join(", ")
        )
        .ok();
    }
    s.push_str("];\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn manifest() -> Manifest {
        Manifest::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/manifest.toml"))
            .unwrap()
    }

    #[test]
    fn keeps_kiln_solvers_with_their_tuned_configs() {
        let key = "64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NCHW-FP32-F";
        let p = ConvProblem::from_find_db_key(key).unwrap();
        let find = FindDb::parse(
            &format!(
                "{key}=ConvImplicitGemmFwd:0.05,0,miopenConvolutionFwdAlgoImplicitGEMM;\
                 ConvBinWinograd3x3U:0.01,0,miopenConvolutionFwdAlgoWinograd;\
                 ConvDirectTiledFwd:0.04,0,miopenConvolutionFwdAlgoDirect\n\
                 1-1-1-1x1-1-1-1-1-0x0-1x1-1x1-0-NCHW-FP32-F=ConvBinWinograd3x3U:0.01,0,miopenConvolutionFwdAlgoWinograd\n"
            ),
            Path::new("test.fdb.txt"),
        )
        .unwrap();
        let perf = PerfDb::parse_text(
            &format!(
                "{}=ConvImplicitGemmFwd:128,64,8;ConvDirectTiledFwd:7,7,7\n",
                p.perf_db_key()
            ),
            Path::new("test.db.txt"),
        )
        .unwrap();
        let model = build(&find, Some(&perf), &manifest());
        // The record naming only MIOpen's solvers is left out; MIOpen's solver is dropped.
        assert_eq!(model.len(), 1);
        let ids: Vec<(&str, &str)> = model[0]
            .solvers
            .iter()
            .map(|s| (s.id.as_str(), s.params.as_str()))
            .collect();
        // Fastest first; a perf config the manifest does not compile ("7,7,7") is not kept.
        assert_eq!(
            ids,
            [
                ("ConvDirectTiledFwd", ""),
                ("ConvImplicitGemmFwd", "128,64,8")
            ]
        );
        assert_eq!(model[0].features, measured::features(&p));
        let code = emit("M", &model);
        assert!(code.starts_with("static M: &[::kiln_format::measured::MeasuredProblem"));
        assert!(code
            .contains("solver: \"ConvImplicitGemmFwd\", time_ms: 0.05f32, params: \"128,64,8\""));
    }
}
