//! The text format's decorator: a message, key or value that holds a line break or another
//! control character has it escaped (`\n`, `\u{1b}`), so that text from outside (an
//! upstream's error message, a client's value) cannot start a line of its own in the log and
//! pass for one of the service's, nor drive a terminal that shows the log.

use std::cell::RefCell;
use std::io::{self, Write};

use slog::{OwnedKVList, Record};
use slog_term::{Decorator, RecordDecorator};

/// Writes records as `slog_term::PlainDecorator` does, with control characters escaped in
/// everything but the format's own separators and the line's end.
pub struct EscapingDecorator<W: Write>(RefCell<W>);

impl<W: Write> EscapingDecorator<W> {
    pub fn new(sink: W) -> Self {
        EscapingDecorator(RefCell::new(sink))
    }
}

impl<W: Write> Decorator for EscapingDecorator<W> {
    fn with_record<F>(&self, _record: &Record, _values: &OwnedKVList, f: F) -> io::Result<()>
    where
        F: FnOnce(&mut dyn RecordDecorator) -> io::Result<()>,
    {
        let mut record = EscapingRecord { sink: &self.0, escaping: false };
        let written = f(&mut record);
        record.flush()?;
        written
    }
}

struct EscapingRecord<'a, W: Write> {
    sink: &'a RefCell<W>,
    /// Whether what is written now is a message, key or value (escaped) or the format's own
    /// text (the time, the level, separators and the line's end).
    escaping: bool,
}

impl<W: Write> EscapingRecord<'_, W> {
    fn part(&mut self, escaping: bool) -> io::Result<()> {
        self.escaping = escaping;
        Ok(())
    }
}

impl<W: Write> Write for EscapingRecord<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut sink = self.sink.borrow_mut();
        if self.escaping {
            sink.write_all(escaped(buf).as_bytes())?;
        } else {
            sink.write_all(buf)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.sink.borrow_mut().flush()
    }
}

impl<W: Write> RecordDecorator for EscapingRecord<'_, W> {
    fn reset(&mut self) -> io::Result<()> {
        self.part(false)
    }
    fn start_msg(&mut self) -> io::Result<()> {
        self.part(true)
    }
    fn start_key(&mut self) -> io::Result<()> {
        self.part(true)
    }
    fn start_value(&mut self) -> io::Result<()> {
        self.part(true)
    }
    fn start_location(&mut self) -> io::Result<()> {
        self.part(true)
    }
}

/// `text` with every control character (C0, DEL, C1) and Unicode line or paragraph separator
/// escaped. The formatter writes whole `str` pieces, so `text` is UTF-8.
fn escaped(text: &[u8]) -> String {
    let mut out = String::with_capacity(text.len());
    for c in String::from_utf8_lossy(text).chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use slog::{Drain, Logger, o};

    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn messages_keys_and_values_stay_on_their_line() {
        let sink = Sink::default();
        let drain = slog_term::FullFormat::new(super::EscapingDecorator::new(sink.clone())).build().fuse();
        let log = Logger::root(Mutex::new(drain).fuse(), o!("from" => "a\u{2028}b"));
        let message = "m\nFAKE";
        slog::warn!(log, "{}", message; "detail" => "x\r\nFAKE\u{1b}[2K\u{85}", "tab" => "a\tb");
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text:?}");
        assert!(text.ends_with('\n'), "{text:?}");
        for shown in [r"m\nFAKE", r"x\r\nFAKE\u{1b}[2K\u{85}", r"a\tb", r"a\u{2028}b"] {
            assert!(text.contains(shown), "{shown} in {text:?}");
        }
    }
}
