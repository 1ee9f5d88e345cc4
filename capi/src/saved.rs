//! A chosen solution as bytes (`kiln_solution_save` / `kiln_solution_load`): six text lines,
//! readable in a log and stable across kiln versions that keep the solver and its perf config.
//!
//! ```text
//! kiln-solution 1
//! target sm_90_132
//! problem 64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NHWC-FP32-F
//! math default
//! solver ConvCutlass3xTf32Fwd
//! params 64,64,32,32,32,4,4,1
//! ```

use kiln::{ConvProblem, MathMode};

use crate::status::{Failure, KILN_ERROR_BAD_SOLUTION};

/// The first line.
const MAGIC: &str = "kiln-solution 1";
/// Longest saved solution accepted (the real ones are under 300 bytes).
pub(crate) const MAX_BYTES: usize = 4096;

/// A parsed saved solution.
#[derive(Debug, PartialEq)]
pub(crate) struct Saved<'a> {
    pub target: &'a str,
    pub problem: ConvProblem,
    pub solver: &'a str,
    pub params: &'a str,
}

/// The bytes of a solution.
pub(crate) fn render(target: &str, p: &ConvProblem, solver: &str, params: &str) -> String {
    format!(
        "{MAGIC}\ntarget {target}\nproblem {}\nmath {}\nsolver {solver}\nparams {params}\n",
        p.find_db_key().as_str(),
        p.math().name()
    )
}

fn bad(message: String) -> Failure {
    Failure::new(KILN_ERROR_BAD_SOLUTION, message)
}

/// Parses saved bytes; errors name the line.
pub(crate) fn parse(bytes: &[u8]) -> Result<Saved<'_>, Failure> {
    if bytes.len() > MAX_BYTES {
        return Err(bad(format!(
            "saved solution is {} bytes; kiln's are at most {MAX_BYTES}",
            bytes.len()
        )));
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|e| bad(format!("saved solution is not UTF-8 text: {e}")))?;
    let lines: Vec<&str> = text.lines().collect();
    if lines.first() != Some(&MAGIC) {
        let first: String = lines.first().unwrap_or(&"").chars().take(40).collect();
        return Err(bad(format!(
            "saved solution line 1 is '{}', expected '{MAGIC}'",
            kiln::format::text::excerpt(&first)
        )));
    }
    let fields = ["target", "problem", "math", "solver", "params"];
    if lines.len() != 1 + fields.len() {
        return Err(bad(format!(
            "saved solution has {} lines, expected {}",
            lines.len(),
            1 + fields.len()
        )));
    }
    let mut values = [""; 5];
    for (i, name) in fields.iter().enumerate() {
        let line = lines[i + 1];
        values[i] = line
            .strip_prefix(name)
            .and_then(|v| v.strip_prefix(' '))
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                let shown: String = line.chars().take(40).collect();
                bad(format!(
                    "saved solution line {}: expected '{name} <value>', found '{}'",
                    i + 2,
                    kiln::format::text::excerpt(&shown)
                ))
            })?;
    }
    let [target, key, math, solver, params] = values;
    let math = MathMode::from_name(math)
        .ok_or_else(|| bad(format!("saved solution line 4: unknown math mode '{math}'")))?;
    let problem = ConvProblem::from_find_db_key(key)
        .map_err(|e| bad(format!("saved solution line 3: bad problem key: {e}")))?
        .with_math(math);
    Ok(Saved {
        target,
        problem,
        solver,
        params,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_named_errors() {
        let p = ConvProblem::from_find_db_key(
            "64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP32-F",
        )
        .unwrap()
        .with_math(MathMode::AllowTf32);
        let text = render(
            "sm_90_132",
            &p,
            "ConvCutlassTf32Fwd",
            "64,64,32,32,32,5,4,1",
        );
        let s = parse(text.as_bytes()).unwrap();
        assert_eq!(s.problem, p);
        assert_eq!(s.problem.math(), MathMode::AllowTf32);
        assert_eq!(
            (s.target, s.solver, s.params),
            ("sm_90_132", "ConvCutlassTf32Fwd", "64,64,32,32,32,5,4,1")
        );
        for (spoiled, expected) in [
            (text.replace("kiln-solution 1", "kiln-solution 2"), "line 1"),
            (text.replace("math tf32", "math fast"), "line 4"),
            (text.replace("problem 64-56", "problem x-56"), "line 3"),
            (text.replace("solver ", "solver:"), "line 5"),
            (text.clone() + "extra\n", "7 lines"),
            ("\u{0}".repeat(5000), "5000 bytes"),
        ] {
            let e = parse(spoiled.as_bytes()).unwrap_err();
            assert!(e.message.contains(expected), "{expected}: {}", e.message);
        }
        assert!(parse(&[0xff, 0xfe]).unwrap_err().message.contains("UTF-8"));
    }
}
