//! `kiln info`: embedded targets, per-table records, raw vs embedded bytes, provenance.

use kiln::TableKind;

use super::human;
use crate::CliResult;

pub fn run() -> CliResult {
    let targets = kiln::targets();
    println!(
        "kiln {} — {} embedded target(s)",
        env!("CARGO_PKG_VERSION"),
        targets.len()
    );
    for t in targets {
        println!();
        let aliases = if t.aliases.is_empty() {
            String::new()
        } else {
            format!(" (aliases: {})", t.aliases.join(", "))
        };
        println!(
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
        println!("  origin: {}", t.origin);
        println!(
            "  {:<8} {:>9} {:>12} {:>12} {:>12} {:>7} {:>9}",
            "table", "records", "raw", "embedded", "decoded", "blocks", "dict"
        );
        let (mut raw_total, mut emb_total) = (0, 0);
        for kind in [TableKind::FindDb, TableKind::PerfDb, TableKind::KernelDb] {
            let Some(table) = t.table(kind) else { continue };
            let s = table.stats()?;
            let raw = t.input(kind).map_or(0, |i| i.bytes);
            raw_total += raw;
            emb_total += s.embedded_bytes as u64;
            println!(
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
        println!(
            "  {:<8} {:>9} {:>12} {:>12}",
            "total",
            "",
            human(raw_total),
            human(emb_total)
        );
        for i in t.inputs {
            println!(
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
    println!("\nbuild provenance:");
    for (k, v) in kiln::build_provenance() {
        println!("  {k}: {v}");
    }
    Ok(())
}
