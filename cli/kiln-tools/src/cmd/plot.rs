//! `kiln-tools plot`: a run's whole-network figures as an SVG chart, from the `raw.tsv` where
//! `kiln-tools bench --net` results are recorded (`benches/runs/<date>-<gpu>/raw.tsv`): the last
//! table whose header has `model`, `n` and `kiln_ms`, each network and batch a group, kiln and
//! every other `*_ms` column a bar.

use std::path::PathBuf;

use clap::Args;

use crate::svg::{grouped_bars, Group};
use crate::CliResult;

/// Largest figures file `plot` reads.
const MAX_TSV_BYTES: u64 = 16 << 20;

/// Arguments of `kiln-tools plot`.
#[derive(Args)]
pub struct PlotArgs {
    /// The tab-separated figures (`# ...` lines are comments between tables).
    #[arg(long)]
    tsv: PathBuf,
    /// Where to write the SVG.
    #[arg(long)]
    out: PathBuf,
    /// The chart's title.
    #[arg(
        long,
        default_value = "Whole networks, GPU-only, ms (shorter is faster)"
    )]
    title: String,
}

/// The last table of `text` whose header names `model`, `n` and `kiln_ms`: its header and rows.
pub fn last_network_table(text: &str) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    let mut found = None;
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let cols: Vec<String> = line.split('\t').map(str::to_string).collect();
        if ["model", "n", "kiln_ms"]
            .iter()
            .all(|c| cols.iter().any(|h| h == c))
        {
            let mut rows = Vec::new();
            while let Some(row) = lines.peek() {
                if row.trim().is_empty() || row.starts_with('#') {
                    break;
                }
                rows.push(row.split('\t').map(str::to_string).collect());
                lines.next();
            }
            found = Some((cols, rows));
        }
    }
    found
}

/// Runs `kiln-tools plot`.
pub fn run(a: &PlotArgs) -> CliResult {
    // A run's figures are kilobytes; the cap bounds a wrong path (a device, a huge file).
    let bytes = kiln::format::file::read_capped(&a.tsv, MAX_TSV_BYTES)
        .map_err(|e| format!("plot: --tsv {}: {e}", a.tsv.display()))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("plot: --tsv {}: not UTF-8 text", a.tsv.display()))?;
    let (header, rows) = last_network_table(&text).ok_or_else(|| {
        format!(
            "plot: {} has no table with model, n and kiln_ms columns",
            a.tsv.display()
        )
    })?;
    let at = |name: &str| header.iter().position(|h| h == name);
    let (model, n) = (at("model").unwrap_or(0), at("n").unwrap_or(1));
    // kiln first, then the other times, named without their `_ms`.
    let mut series: Vec<(usize, String)> = vec![(at("kiln_ms").unwrap_or(2), "kiln".into())];
    for (i, h) in header.iter().enumerate() {
        if h.ends_with("_ms") && h != "kiln_ms" {
            series.push((i, h.trim_end_matches("_ms").replace('_', " ")));
        }
    }
    let mut groups = Vec::new();
    for (line, row) in rows.iter().enumerate() {
        let label = format!(
            "{} N={}",
            row.get(model).map_or("?", String::as_str),
            row.get(n).map_or("?", String::as_str)
        );
        let values = series
            .iter()
            .map(|(i, _)| row.get(*i).and_then(|v| v.parse::<f64>().ok()))
            .collect::<Vec<_>>();
        if values[0].is_none() {
            return Err(format!(
                "plot: {}: row {} ({label}) has no kiln_ms value",
                a.tsv.display(),
                line + 1
            )
            .into());
        }
        groups.push(Group { label, values });
    }
    let names: Vec<&str> = series.iter().map(|(_, s)| s.as_str()).collect();
    let svg = grouped_bars(&a.title, &names, &groups, "ms");
    std::fs::write(&a.out, svg).map_err(|e| format!("plot: --out {}: {e}", a.out.display()))?;
    kiln::outln!(
        "plot: {} groups, {} series -> {}",
        groups.len(),
        names.len(),
        a.out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_network_table_is_read() {
        let text = "# old\nmodel\tn\tkiln_ms\teager_ms\nresnet50\t1\t0.5\t0.9\n\n# new\nmodel\tn\tkiln_ms\tcompile_ms\nresnet50\t1\t0.44\t0.39\nyolov8n\t32\t4.2\t2.6\n# other\nlayer\tms\nx\t1\n";
        let (header, rows) = last_network_table(text).unwrap();
        assert_eq!(header, ["model", "n", "kiln_ms", "compile_ms"]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1][2], "4.2");
        assert!(last_network_table("layer\tms\n").is_none());
    }
}
