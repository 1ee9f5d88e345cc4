//! Problem lists: one find-db key per line, `#` comments, blank lines ignored (the format of
//! `ci/problems/*.txt`, read by `kiln selftest --problems` and `kiln-tools find`).

use kiln_format::ConvProblem;

/// Parses a problem list's text; `origin` (a file name) starts every error, which names the
/// line and quotes it: `list.txt:3: key: ...: '64-56-...'`. Keys stay as written, in order.
pub fn parse(text: &str, origin: &str) -> Result<Vec<(String, ConvProblem)>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let p = ConvProblem::from_find_db_key(line)
            .map_err(|e| format!("{origin}:{}: {e}: '{line}'", i + 1))?;
        out.push((line.to_string(), p));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_keys_and_names_the_bad_line() {
        let key = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F";
        let list = parse(&format!("# ResNet\n\n  {key}  \n"), "l.txt").unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].0, key);
        assert_eq!(list[0].1.find_db_key().as_str(), key);
        let err = parse(&format!("{key}\n64-56-x\n"), "l.txt").unwrap_err();
        assert!(err.starts_with("l.txt:2: "), "{err}");
        assert!(err.ends_with("'64-56-x'"), "{err}");
    }
}
