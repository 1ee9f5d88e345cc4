//! MIOpen find-db text (`<base>.HIP.fdb.txt`): one record per line,
//! `KEY=Solver:time,workspace,algorithm;...` (v2.0), with the legacy v1.0 item form
//! `algorithm:Solver,time,workspace,algorithm,kcache_key` converted on read as MIOpen does
//! (`TransformFindDbItem10to20`).

use std::path::Path;

use kiln_format::records::{algorithm_index, format_g6};

use crate::error::Result;
use crate::input::excerpt;

/// One solver's entry in a find-db record.
#[derive(Clone, Debug, PartialEq)]
pub struct FindItem {
    /// Solver DB name (`ConvBinWinogradRxSf3x2`).
    pub solver: String,
    /// Measured time in milliseconds.
    pub time_ms: f64,
    /// Workspace in bytes.
    pub workspace: u64,
    /// Algorithm name (`miopenConvolutionFwdAlgoWinograd`).
    pub algorithm: String,
}

/// One line of a find-db.
#[derive(Clone, Debug, PartialEq)]
pub struct FindRecord {
    /// The problem key (`conv::ProblemDescription::Serialize`).
    pub key: String,
    /// Items in file order (MIOpen's shipped files rank them by time).
    pub items: Vec<FindItem>,
}

/// A whole find-db.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FindDb {
    /// Records in file order.
    pub records: Vec<FindRecord>,
}

fn valid_id(s: &str) -> bool {
    !s.is_empty() && !s.contains([';', ':', '=', ',']) && !s.contains(char::is_whitespace)
}

impl FindDb {
    /// Reads and validates a find-db file.
    pub fn read(path: &Path) -> Result<FindDb> {
        FindDb::parse(&crate::input::read_text(path)?, path)
    }

    /// Parses find-db text; `file` names the source in errors.
    pub fn parse(text: &str, file: &Path) -> Result<FindDb> {
        let records = crate::textdb::parse_lines(text, file, parse_line)?;
        Ok(FindDb { records })
    }

    /// Writes the v2.0 text form, one line per record, in record order.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for r in &self.records {
            out.push_str(&r.to_line());
            out.push('\n');
        }
        out
    }
}

impl FindRecord {
    /// The v2.0 line (without newline).
    pub fn to_line(&self) -> String {
        let mut out = self.key.clone();
        out.push('=');
        for (i, it) in self.items.iter().enumerate() {
            if i > 0 {
                out.push(';');
            }
            out.push_str(&it.solver);
            out.push(':');
            out.push_str(&format_g6(it.time_ms));
            out.push(',');
            out.push_str(&it.workspace.to_string());
            out.push(',');
            out.push_str(&it.algorithm);
        }
        out
    }
}

/// Parses one line; the error is a reason without location (the caller adds it).
pub fn parse_line(line: &str) -> std::result::Result<FindRecord, String> {
    let (key, content) = line
        .split_once('=')
        .ok_or("missing '=' between key and solutions")?;
    crate::input::check_key(key)?;
    if content.is_empty() {
        return Err("no solutions after '='".into());
    }
    // Counted before anything is parsed, so a line of millions of items costs one pass.
    if content.bytes().filter(|&b| b == b';').count() >= u8::MAX as usize {
        return Err("more than 255 solutions in one record".into());
    }
    let mut items: Vec<FindItem> = Vec::new();
    for item in content.split(';') {
        let (id, values) = item.split_once(':').ok_or_else(|| {
            format!(
                "item '{}' has no ':' between solver and values",
                excerpt(item)
            )
        })?;
        let fields: Vec<&str> = values.split(',').collect();
        let parsed = if algorithm_index(id).is_some() {
            // v1.0: algorithm:Solver,time,workspace,algorithm,kcache_key
            if fields.len() != 5 {
                return Err(format!(
                    "legacy item '{}' needs 5 values (solver,time,workspace,algorithm,kcache_key)",
                    excerpt(item)
                ));
            }
            (fields[0], fields[1], fields[2], id)
        } else {
            if fields.len() != 3 {
                return Err(format!(
                    "item '{}' needs 3 values (time,workspace,algorithm)",
                    excerpt(item)
                ));
            }
            (id, fields[0], fields[1], fields[2])
        };
        let (solver, time, workspace, algorithm) = parsed;
        if !valid_id(solver) {
            return Err(format!("bad solver name '{}'", excerpt(solver)));
        }
        let time_ms: f64 = time
            .parse()
            .ok()
            .filter(|t: &f64| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| format!("bad time '{}' for solver {solver}", excerpt(time)))?;
        let workspace: u64 = workspace
            .parse()
            .map_err(|_| format!("bad workspace '{}' for solver {solver}", excerpt(workspace)))?;
        if algorithm_index(algorithm).is_none() {
            return Err(format!(
                "unknown algorithm '{}' for solver {solver}",
                excerpt(algorithm)
            ));
        }
        if items.iter().any(|i| i.solver == solver) {
            return Err(format!("solver {solver} appears twice"));
        }
        items.push(FindItem {
            solver: solver.to_string(),
            time_ms,
            workspace,
            algorithm: algorithm.to_string(),
        });
    }
    Ok(FindRecord {
        key: key.to_string(),
        items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "1008-14-14-1x1-192-14-14-16-0x0-1x1-1x1-0-NCHW-FP32-F=GemmFwd1x1_0_1:0.052681,0,miopenConvolutionFwdAlgoGEMM;ConvBinWinogradRxSf3x2:0.172717,0,miopenConvolutionFwdAlgoWinograd";

    #[test]
    fn v2_line_round_trips() {
        let r = parse_line(LINE).unwrap();
        assert_eq!(r.items.len(), 2);
        assert_eq!(r.items[0].time_ms, 0.052681);
        assert_eq!(r.to_line(), LINE);
    }

    #[test]
    fn v1_items_convert_like_miopen() {
        let line = "64-28-28-3x3-64-28-28-8-1x1-1x1-1x1-0-NCHW-FP32-B=miopenConvolutionBwdDataAlgoImplicitGEMM:ConvMlirIgemmBwd,0.017439,0,miopenConvolutionBwdDataAlgoImplicitGEMM,<unused>";
        let r = parse_line(line).unwrap();
        assert_eq!(
            r.items,
            vec![FindItem {
                solver: "ConvMlirIgemmBwd".into(),
                time_ms: 0.017439,
                workspace: 0,
                algorithm: "miopenConvolutionBwdDataAlgoImplicitGEMM".into()
            }]
        );
    }

    #[test]
    fn errors_name_line_and_reason() {
        let text = format!("{LINE}\n1008-14-14-1x1-192-14-14-16-0x0-1x1-1x1-0-NCHW-FP32-W=GemmFwd1x1_0_1:0.05x,0,miopenConvolutionFwdAlgoGEMM\n");
        let e = FindDb::parse(&text, Path::new("t.fdb.txt"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.fdb.txt:2: bad time '0.05x'"), "{e}");
        let e = FindDb::parse("no-equals-here\n", Path::new("t"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("t:1: missing '='"), "{e}");
        let e = FindDb::parse(&format!("{LINE}\n{LINE}\n"), Path::new("t"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("t:2: duplicate key"), "{e}");
        let cut = &LINE[..LINE.len() - 20];
        let e = FindDb::parse(&format!("{cut}\n"), Path::new("t"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("t:1: unknown algorithm 'miopenConvol'"), "{e}");
        // A file cut short is refused as such (MIOpen ends every line with a newline).
        let e = FindDb::parse(&format!("{LINE}\n{cut}"), Path::new("t"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("t:2: truncated"), "{e}");
    }
}
