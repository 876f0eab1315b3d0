//! The Prometheus text exposition format, version 0.0.4: `# HELP` and `# TYPE` lines, then
//! one `name{label="value",...} value` line per sample.

use std::fmt::{Display, Write};

use super::timing::{BUCKET_BOUNDS, TimingSnapshot};

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A label value with `\`, `"` and line feeds escaped, as the format requires.
pub fn escape_label_value(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '"' => escaped.push_str("\\\""),
            '\n' => escaped.push_str("\\n"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// Help text with `\` and line feeds escaped.
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// The text being written.
#[derive(Default)]
pub struct Exposition {
    text: String,
}

impl Exposition {
    /// Starts a family: its help line and its type (`counter`, `gauge`, `histogram`).
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl Display) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (label, value)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{label}=\"{}\"", escape_label_value(value));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {value}");
    }

    /// The `_bucket` (cumulative, `le` last), `_sum` and `_count` samples of one histogram.
    pub fn histogram(&mut self, name: &str, labels: &[(&str, &str)], timing: &TimingSnapshot) {
        let bucket = format!("{name}_bucket");
        let mut with_le: Vec<(&str, &str)> = labels.to_vec();
        let bounds: Vec<String> = BUCKET_BOUNDS.iter().map(|b| b.to_string()).chain(["+Inf".to_string()]).collect();
        for (bound, count) in bounds.iter().zip(timing.cumulative) {
            with_le.push(("le", bound));
            self.sample(&bucket, &with_le, count);
            with_le.pop();
        }
        self.sample(&format!("{name}_sum"), labels, timing.sum_seconds);
        let total = timing.cumulative[BUCKET_BOUNDS.len()];
        self.sample(&format!("{name}_count"), labels, total);
    }

    pub fn into_text(self) -> String {
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label_value(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape_label_value("two\nlines"), r"two\nlines");
        assert_eq!(escape_label_value("plain_value-1.0"), "plain_value-1.0");
    }

    #[test]
    fn samples_and_families_are_written_in_the_format() {
        let mut out = Exposition::default();
        out.family("jobs_total", "counter", "Jobs done.\nBy kind \\ state.");
        out.sample("jobs_total", &[("kind", "say \"hi\"")], 3);
        out.sample("up", &[], 1);
        assert_eq!(
            out.into_text(),
            "# HELP jobs_total Jobs done.\\nBy kind \\\\ state.\n# TYPE jobs_total counter\n\
             jobs_total{kind=\"say \\\"hi\\\"\"} 3\nup 1\n"
        );
    }
}
