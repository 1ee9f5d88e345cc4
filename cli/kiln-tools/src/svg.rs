//! Benchmark charts as plain SVG (no plotting dependency): grouped horizontal bars, one group
//! per case (a network at a batch size), one bar per series (kiln and its anchors), each bar
//! labelled with its value.

use std::fmt::Write as _;

/// One group of bars: its label and each series' value (`None`: not measured).
pub struct Group {
    /// Shown left of the group.
    pub label: String,
    /// One value per series, in the series' order.
    pub values: Vec<Option<f64>>,
}

/// Series colours, first for kiln.
const COLOURS: [&str; 5] = ["#d9480f", "#1c7ed6", "#495057", "#2b8a3e", "#862e9c"];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A grouped bar chart: `series` names the bars of every group; each group's bars are scaled
/// to the largest value of that group (so small and large cases both read), with the value
/// written at the end of each bar in `unit`.
pub fn grouped_bars(title: &str, series: &[&str], groups: &[Group], unit: &str) -> String {
    let (bar, gap, label_w, plot_w) = (14.0, 12.0, 170.0, 420.0);
    let group_h = bar * series.len() as f64 + gap;
    let top = 56.0;
    let height = top + group_h * groups.len() as f64 + 16.0;
    let width = label_w + plot_w + 90.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="100%" height="100%" fill="white"/><text x="8" y="18" font-size="14" font-weight="bold">{}</text>"#,
        escape(title)
    );
    // The legend.
    let mut x = 8.0;
    for (i, name) in series.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<rect x="{x}" y="28" width="10" height="10" fill="{}"/><text x="{}" y="37">{}</text>"#,
            COLOURS[i % COLOURS.len()],
            x + 14.0,
            escape(name)
        );
        x += 24.0 + 6.5 * name.len() as f64;
    }
    for (g, group) in groups.iter().enumerate() {
        let y0 = top + g as f64 * group_h;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            label_w - 8.0,
            y0 + bar * series.len() as f64 / 2.0 + 4.0,
            escape(&group.label)
        );
        let max = group
            .values
            .iter()
            .flatten()
            .copied()
            .fold(0.0f64, f64::max);
        for (i, v) in group.values.iter().enumerate() {
            let y = y0 + i as f64 * bar;
            match v {
                Some(v) if max > 0.0 => {
                    let w = (v / max * plot_w).max(1.0);
                    let _ = writeln!(
                        s,
                        r#"<rect x="{label_w}" y="{y}" width="{w:.1}" height="{}" fill="{}"/><text x="{:.1}" y="{}">{v:.3} {}</text>"#,
                        bar - 2.0,
                        COLOURS[i % COLOURS.len()],
                        label_w + w + 4.0,
                        y + bar - 4.0,
                        escape(unit)
                    );
                }
                _ => {
                    let _ = writeln!(
                        s,
                        r##"<text x="{}" y="{}" fill="#868e96">not measured</text>"##,
                        label_w + 4.0,
                        y + bar - 4.0
                    );
                }
            }
        }
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_within_their_group_and_are_labelled() {
        let svg = grouped_bars(
            "t <1>",
            &["kiln", "torch.compile"],
            &[
                Group {
                    label: "resnet50 N=1".into(),
                    values: vec![Some(0.5), Some(0.25)],
                },
                Group {
                    label: "x".into(),
                    values: vec![None, Some(2.0)],
                },
            ],
            "ms",
        );
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("t &lt;1&gt;"), "titles are escaped");
        // The largest bar of a group spans the plot; half the value, half the width.
        assert!(svg.contains(r#"width="420.0""#) && svg.contains(r#"width="210.0""#));
        assert!(svg.contains("0.500 ms") && svg.contains("not measured"));
    }
}
