//! The JSON format's sink: JSON escapes only the C0 controls, so a string from outside (an
//! upstream's error message) put the C1 controls and the Unicode line and paragraph separators
//! into the log as they came, and a reader that splits lines the Unicode way (Python's
//! `splitlines`, an editor) cut a record in two. They are written as `\uXXXX` escapes, which
//! read back as the same string; outside strings a JSON record is ASCII, so nothing else
//! changes.

use std::io::{self, Write};

/// Passes JSON records on to `W` with those characters escaped.
pub struct LineSafe<W: Write>(pub W);

impl<W: Write> Write for LineSafe<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // serde_json writes whole `str` pieces; anything else goes on untouched.
        match std::str::from_utf8(buf) {
            Ok(text) if text.chars().any(breaks_lines) => {
                let mut out = String::with_capacity(text.len() + 12);
                for c in text.chars() {
                    if breaks_lines(c) {
                        out.push_str(&format!("\\u{:04x}", u32::from(c)));
                    } else {
                        out.push(c);
                    }
                }
                self.0.write_all(out.as_bytes())?;
            }
            _ => self.0.write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// A character that JSON leaves as it is but that some readers take for a line's end or a
/// terminal for a command: a C1 control or a line or paragraph separator. (JSON escapes the C0
/// controls itself; the record's own line end is one of them and stays.)
fn breaks_lines(c: char) -> bool {
    ('\u{80}'..='\u{9f}').contains(&c) || c == '\u{2028}' || c == '\u{2029}'
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    #[test]
    fn c1_controls_and_separators_are_escaped_and_read_back_the_same() {
        let text = "a\u{85}b\u{2028}c\u{2029}d\u{9b}e ü";
        let record = format!("{}\n", serde_json::json!({"msg": text}));
        let mut sink = super::LineSafe(Vec::new());
        sink.write_all(record.as_bytes()).unwrap();
        let written = String::from_utf8(sink.0).unwrap();
        assert_eq!(written, "{\"msg\":\"a\\u0085b\\u2028c\\u2029d\\u009be ü\"}\n");
        let read: serde_json::Value = serde_json::from_str(written.trim_end()).unwrap();
        assert_eq!(read["msg"], text);
    }
}
