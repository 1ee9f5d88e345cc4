//! `kiln info`: embedded targets, per-table records, raw vs embedded bytes, provenance.

use kiln::TableKind;

use super::human;
use crate::args::JsonArgs;
use crate::json::Json;
use crate::CliResult;

pub fn run(a: &JsonArgs) -> CliResult {
    if a.json {
        kiln::outln!("{}", as_json()?);
        return Ok(());
    }
    let targets = kiln::targets();
    kiln::outln!(
        "kiln {} — {} embedded target(s)",
        env!("CARGO_PKG_VERSION"),
        targets.len()
    );
    for t in targets {
        kiln::outln!();
        let aliases = if t.aliases.is_empty() {
            String::new()
        } else {
            format!(" (aliases: {})", t.aliases.join(", "))
        };
        kiln::outln!(
            "{}{}: {} {} with {} {}, {} code objects",
            t.basename,
            aliases,
            t.vendor.name(),
            t.arch,
            t.compute_units,
            if t.vendor == kiln::Vendor::Amd {
                "CUs"
            } else {
                "SMs"
            },
            t.code_object.name()
        );
        kiln::outln!("  origin: {}", t.origin);
        if t.measured.is_empty() {
            kiln::outln!(
                "  find-db: no measurement of kiln's solvers (plans come from the cost model)"
            );
        } else {
            kiln::outln!(
                "  find-db: {} problems measured with kiln's solvers",
                t.measured.len()
            );
        }
        kiln::outln!(
            "  {:<8} {:>9} {:>12} {:>12} {:>12} {:>7} {:>9}",
            "table",
            "records",
            "raw",
            "embedded",
            "decoded",
            "blocks",
            "dict"
        );
        let (mut raw_total, mut emb_total) = (0, 0);
        for kind in [TableKind::FindDb, TableKind::PerfDb, TableKind::KernelDb] {
            let Some(table) = t.table(kind) else { continue };
            let s = table.stats()?;
            let raw = t.input(kind).map_or(0, |i| i.bytes);
            raw_total += raw;
            emb_total += s.embedded_bytes as u64;
            kiln::outln!(
                "  {:<8} {:>9} {:>12} {:>12} {:>12} {:>7} {:>9}",
                kind.name(),
                s.records,
                human(raw),
                human(s.embedded_bytes as u64),
                human(s.decoded_bytes),
                s.blocks,
                human(s.dict_bytes as u64)
            );
        }
        kiln::outln!(
            "  {:<8} {:>9} {:>12} {:>12}",
            "total",
            "",
            human(raw_total),
            human(emb_total)
        );
        for i in t.inputs {
            kiln::outln!(
                "  input {} ({}, {} B, {} records)\n    from {}\n    sha256 {}",
                i.name,
                i.kind.name(),
                i.bytes,
                i.records,
                i.source,
                i.sha256
            );
        }
    }
    let models = kiln::embedded::models();
    if !models.is_empty() {
        kiln::outln!("\nembedded networks (KILN_MODELS):");
    }
    for m in models {
        // The definition is read as `kiln net run` reads it: a bad one is named here.
        let (summary, detail) = match model_summaries(m.definition) {
            Ok((input, [one, many])) => {
                let coverage: Vec<String> = one
                    .find_db_coverage
                    .iter()
                    .zip(&many.find_db_coverage)
                    .map(|((t, a), (_, b))| format!("{t} {a}/{b}"))
                    .collect();
                (
                    format!(
                        "{} operators ({} convolutions), input {input}",
                        one.operators, one.convolutions
                    ),
                    format!(
                        "\n    activations (FP16) {:.2} MiB at N=1, {:.2} MiB at N={COVERAGE_BATCH}\n    convolutions ranked by their own find-db records (FP16, N=1/N={COVERAGE_BATCH}, of {}): {}",
                        one.activation_bytes as f64 / 1048576.0,
                        many.activation_bytes as f64 / 1048576.0,
                        one.convolutions,
                        coverage.join(", ")
                    ),
                )
            }
            Err(e) => (format!("definition does not read: {e}"), String::new()),
        };
        kiln::outln!(
            "  {:<20} {summary}; weights {} B ({} B embedded), sha256 {}{detail}",
            m.name,
            m.weights_len,
            m.weights_zst.len(),
            m.weights_sha256
        );
    }
    kiln::outln!("\nbuild provenance:");
    for (k, v) in kiln::build_provenance() {
        kiln::outln!("  {k}: {v}");
    }
    Ok(())
}

fn as_json() -> Result<Json, Box<dyn std::error::Error>> {
    let mut targets = Vec::new();
    for t in kiln::targets() {
        let mut tables = Vec::new();
        for kind in [TableKind::FindDb, TableKind::PerfDb, TableKind::KernelDb] {
            let Some(table) = t.table(kind) else { continue };
            let s = table.stats()?;
            tables.push(Json::obj([
                ("kind", Json::str(kind.name())),
                ("records", Json::uint(s.records as u64)),
                (
                    "raw_bytes",
                    Json::uint(t.input(kind).map_or(0, |i| i.bytes)),
                ),
                ("embedded_bytes", Json::uint(s.embedded_bytes as u64)),
                ("decoded_bytes", Json::uint(s.decoded_bytes)),
                ("blocks", Json::uint(s.blocks as u64)),
                ("dict_bytes", Json::uint(s.dict_bytes as u64)),
            ]));
        }
        let inputs = t
            .inputs
            .iter()
            .map(|i| {
                Json::obj([
                    ("name", Json::str(i.name)),
                    ("kind", Json::str(i.kind.name())),
                    ("bytes", Json::uint(i.bytes)),
                    ("records", Json::uint(i.records)),
                    ("source", Json::str(i.source)),
                    ("sha256", Json::str(i.sha256)),
                ])
            })
            .collect();
        targets.push(Json::obj([
            ("basename", Json::str(t.basename)),
            (
                "aliases",
                Json::Arr(t.aliases.iter().map(|a| Json::str(*a)).collect()),
            ),
            ("vendor", Json::str(t.vendor.name())),
            ("arch", Json::str(t.arch)),
            ("compute_units", Json::uint(t.compute_units.into())),
            ("code_object", Json::str(t.code_object.name())),
            ("origin", Json::str(t.origin)),
            ("measured_problems", Json::uint(t.measured.len() as u64)),
            ("has_kernels", Json::Bool(t.kdb.is_some())),
            ("tables", Json::Arr(tables)),
            ("inputs", Json::Arr(inputs)),
        ]));
    }
    let provenance = kiln::build_provenance()
        .iter()
        .map(|(k, v)| Json::obj([("key", Json::str(*k)), ("value", Json::str(*v))]))
        .collect();
    let models = kiln::embedded::models()
        .iter()
        .map(|m| {
            let summaries = model_summaries(m.definition).ok();
            let one = summaries.as_ref().map(|(_, [one, _])| one);
            let coverage = summaries
                .as_ref()
                .map(|(_, [one, many])| {
                    one.find_db_coverage
                        .iter()
                        .zip(&many.find_db_coverage)
                        .map(|((t, a), (_, b))| {
                            Json::obj([
                                ("target", Json::str(*t)),
                                ("ranked_by_find_db_n1", Json::uint(*a as u64)),
                                ("ranked_by_find_db_n32", Json::uint(*b as u64)),
                            ])
                        })
                        .collect()
                })
                .unwrap_or_default();
            Json::obj([
                ("name", Json::str(m.name)),
                (
                    "operators",
                    Json::uint(one.map_or(0, |s| s.operators as u64)),
                ),
                (
                    "convolutions",
                    Json::uint(one.map_or(0, |s| s.convolutions as u64)),
                ),
                (
                    "activation_bytes_fp16_n1",
                    Json::uint(one.map_or(0, |s| s.activation_bytes)),
                ),
                ("weights_bytes", Json::uint(m.weights_len as u64)),
                ("embedded_bytes", Json::uint(m.weights_zst.len() as u64)),
                ("weights_sha256", Json::str(m.weights_sha256)),
                ("definition_reads", Json::Bool(summaries.is_some())),
                ("find_db_coverage", Json::Arr(coverage)),
            ])
        })
        .collect();
    Ok(Json::obj([
        ("kiln", Json::str(env!("CARGO_PKG_VERSION"))),
        ("targets", Json::Arr(targets)),
        ("models", Json::Arr(models)),
        ("build_provenance", Json::Arr(provenance)),
    ]))
}

/// The larger batch `kiln info` reports an embedded network at (beside N=1).
const COVERAGE_BATCH: u32 = 32;

/// An embedded network's input shape and its summaries at N=1 and N=[`COVERAGE_BATCH`] (FP16)
/// on every embedded target; an error when its definition does not read.
fn model_summaries(
    definition: &str,
) -> Result<(kiln::net::Shape, [kiln::net::NetworkSummary; 2]), String> {
    let def = kiln::net::NetworkDef::from_text(definition).map_err(|e| e.to_string())?;
    let targets = kiln::embedded::targets();
    let at = |n| {
        def.summary(n, kiln::DataType::Fp16, targets)
            .map_err(|e| e.to_string())
    };
    Ok((def.input.1, [at(1)?, at(COVERAGE_BATCH)?]))
}
