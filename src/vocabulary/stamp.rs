//! A field-report record's `DateModified`, ordered by the instant it names.
//!
//! The field-report system writes its stamps with a zone (`2022-03-24T17:30:56Z`) or without
//! one (`2024-03-28T17:31:17`), with any number of fractional digits or none: their texts do
//! not sort as their instants do (`…:00.5Z` sorts before `…:00Z`). The sync's keys and the
//! simulator's filters compare stamps here, by instant; a stamp without a zone is read as UTC.
//! OData v2's JSON (and v3's verbose JSON) writes a stamp `/Date(<ms>)/`, milliseconds since
//! the epoch, or `/Date(<ms>+hhmm)/` for a `DateTimeOffset`: it is read as the instant it
//! names, and written (in a `$filter`, a cursor) as an ISO 8601 timestamp of milliseconds,
//! the only form a `datetime'…'` literal takes; without a zone when the upstream wrote none.
//! A stamp derived from another (a window before a cursor, a step after a stamp) is written in
//! the zone the upstream wrote: a .NET server whose `Edm.DateTime` stamps are of its local
//! kind writes them with its own offset and compares a literal written with `Z` by its digits,
//! as its local time, so that `…Z` names another instant there than the same instant written
//! with the server's offset.
//! A text that is no timestamp sorts after every timestamp, by its text.

use std::cmp::Ordering;
use std::time::Duration;

use chrono::{DateTime, FixedOffset, NaiveDateTime, SecondsFormat, Utc};

#[derive(Debug, Clone)]
pub struct Stamp {
    text: String,
    instant: Option<DateTime<Utc>>,
    /// The zone it was written with, its offset and its text (`Z`, `+01:00`): the stamps
    /// derived from it are written in it too. None for a stamp written without one.
    zone: Option<(FixedOffset, String)>,
}

/// The zone `Z`.
fn utc() -> Option<(FixedOffset, String)> {
    Some((FixedOffset::east_opt(0).expect("a zero offset"), "Z".to_string()))
}

impl Stamp {
    pub fn parse(text: &str) -> Stamp {
        let text = text.trim().trim_matches('\'');
        if let Some(stamp) = Stamp::of_epoch_json(text) {
            return stamp;
        }
        let (instant, zone) = match DateTime::parse_from_rfc3339(text) {
            Ok(zoned) => {
                // RFC 3339 writes an offset `±hh:mm`, or `Z`.
                let written = match text.ends_with(['Z', 'z']) {
                    true => "Z",
                    false => text.get(text.len().saturating_sub(6)..).unwrap_or("Z"),
                };
                (Some(zoned.with_timezone(&Utc)), Some((*zoned.offset(), written.to_string())))
            }
            Err(_) => {
                let naive = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
                    .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f"));
                (naive.ok().map(|naive| naive.and_utc()), None)
            }
        };
        Stamp { text: text.to_string(), instant, zone }
    }

    /// A stamp of OData v2's JSON, `/Date(<ms>)/` or `/Date(<ms>±hhmm)/` (the milliseconds are
    /// UTC's; the offset only names the writer's zone), written as an ISO 8601 timestamp of
    /// milliseconds, with a zone when the upstream wrote an offset.
    fn of_epoch_json(text: &str) -> Option<Stamp> {
        let inner = text.trim_matches(|c| c == '/' || c == '\\').strip_prefix("Date(")?.strip_suffix(')')?;
        // The offset's sign follows the first digit; a minus before it is the epoch's.
        let split = inner.char_indices().skip(1).find(|(_, c)| *c == '+' || *c == '-').map(|(at, _)| at);
        let (millis, offset) = split.map_or((inner, ""), |at| inner.split_at(at));
        let zoned = !offset.is_empty();
        if zoned && !(offset.len() == 5 && offset[1..].bytes().all(|b| b.is_ascii_digit())) {
            return None;
        }
        let instant = DateTime::<Utc>::from_timestamp_millis(millis.parse().ok()?)?;
        let written = instant.naive_utc().format("%Y-%m-%dT%H:%M:%S%.3f");
        let text = if zoned { format!("{written}Z") } else { written.to_string() };
        Some(Stamp { text, instant: Some(instant), zone: if zoned { utc() } else { None } })
    }

    /// A stamp of an instant, written with a zone and as many fractional digits as it needs.
    pub fn at(instant: DateTime<Utc>) -> Stamp {
        Stamp { text: instant.to_rfc3339_opts(SecondsFormat::AutoSi, true), instant: Some(instant), zone: utc() }
    }

    /// The text as the upstream wrote it: what a `$filter` compares against.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The stamp as a `$filter` literal: typed with `prefix` (`datetime'…'`, OData v3) or bare
    /// (OData v4); see `generated::fieldreport::STAMP_LITERAL`.
    pub fn literal(&self, prefix: Option<&str>) -> String {
        match prefix {
            Some(prefix) => format!("{prefix}'{}'", self.text),
            None => self.text.clone(),
        }
    }

    pub fn instant(&self) -> Option<DateTime<Utc>> {
        self.instant
    }

    /// The stamp `by` earlier, written the way this one is (in its zone or without one, and with
    /// as many fractional digits: an upstream parses the stamps it writes, and a .NET one
    /// refuses a fraction of more than seven, the digits of its ticks); a text that is no
    /// timestamp stays as it is.
    pub fn earlier_by(&self, by: Duration) -> Stamp {
        self.shifted(-chrono::Duration::from_std(by).unwrap_or(chrono::Duration::MAX))
    }

    /// The stamp `by` later, written the way this one is (see [`Stamp::earlier_by`]).
    pub fn later_by(&self, by: Duration) -> Stamp {
        self.shifted(chrono::Duration::from_std(by).unwrap_or(chrono::Duration::MAX))
    }

    /// The unit of the text's last digit: a second without a fraction, a tenth for one digit,
    /// and so on. A server that keeps its stamps finer than it writes them keeps a stamp it
    /// writes `T` somewhere within a step of `T` (after it when it cuts the digits off, either
    /// side when it rounds them); trailing zeros left out only make the step wider.
    pub fn step(&self) -> Duration {
        let digits = self.fraction_digits().min(9) as u32;
        Duration::from_nanos(10u64.pow(9 - digits))
    }

    fn fraction_digits(&self) -> usize {
        self.text.split_once('.').map_or(0, |(_, rest)| rest.bytes().take_while(u8::is_ascii_digit).count())
    }

    fn shifted(&self, by: chrono::Duration) -> Stamp {
        let Some(instant) = self.instant else { return self.clone() };
        let shifted = instant.checked_add_signed(by).unwrap_or(if by < chrono::Duration::zero() {
            DateTime::<Utc>::MIN_UTC
        } else {
            DateTime::<Utc>::MAX_UTC
        });
        let digits = self.fraction_digits();
        // Every digit the instant needs, should `by` have a finer fraction than the stamp.
        let nanos = format!("{:09}", shifted.timestamp_subsec_nanos() % 1_000_000_000);
        let fraction = &nanos[..digits.clamp(nanos.trim_end_matches('0').len(), 9)];
        let local = match &self.zone {
            Some((offset, _)) => shifted.with_timezone(offset).naive_local(),
            None => shifted.naive_utc(),
        };
        let seconds = local.format("%Y-%m-%dT%H:%M:%S");
        let dot = if fraction.is_empty() { "" } else { "." };
        let zone = self.zone.as_ref().map_or("", |(_, written)| written.as_str());
        Stamp { text: format!("{seconds}{dot}{fraction}{zone}"), instant: Some(shifted), zone: self.zone.clone() }
    }

    /// This stamp, or `instant` (to the second, written as this stamp is) when this one is
    /// later and written with a zone. A stamp without a zone may be in the upstream's local
    /// time, which no instant here can be compared with: it stays as it is.
    pub fn no_later_than(&self, instant: DateTime<Utc>) -> Stamp {
        let whole = instant - chrono::Duration::nanoseconds(i64::from(instant.timestamp_subsec_nanos()));
        match self.instant {
            Some(own) if self.zone.is_some() && own > whole => {
                self.earlier_by((own - whole).to_std().unwrap_or_default())
            }
            _ => self.clone(),
        }
    }
}

impl Ord for Stamp {
    fn cmp(&self, other: &Stamp) -> Ordering {
        match (self.instant, other.instant) {
            (Some(a), Some(b)) => a.cmp(&b),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => self.text.cmp(&other.text),
        }
    }
}

impl PartialOrd for Stamp {
    fn partial_cmp(&self, other: &Stamp) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Stamp {
    fn eq(&self, other: &Stamp) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Stamp {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_sort_by_instant_not_text() {
        let half = Stamp::parse("2026-01-01T00:00:00.5Z");
        let whole = Stamp::parse("2026-01-01T00:00:00Z");
        assert!(whole < half, "the text sorts the other way");
        assert_eq!(Stamp::parse("2026-01-01T01:00:00+01:00"), whole);
        assert_eq!(Stamp::parse("2026-01-01T00:00:00"), whole, "no zone is UTC");
        assert!(Stamp::parse("not a time") > half);
    }

    /// OData v2's JSON stamps name the instants they count to, and are written as timestamps
    /// a `datetime'…'` literal takes.
    #[test]
    fn stamps_of_odata_v2_json_are_read_as_instants() {
        let plain = Stamp::parse("/Date(1700000000123)/");
        assert_eq!((plain.text(), plain.step()), ("2023-11-14T22:13:20.123", Duration::from_millis(1)));
        assert_eq!(plain, Stamp::parse("2023-11-14T22:13:20.123Z"));
        let offset = Stamp::parse("/Date(1700000000000+0100)/");
        assert_eq!(offset.text(), "2023-11-14T22:13:20.000Z", "the milliseconds are UTC's");
        assert_eq!(Stamp::parse("\\/Date(-1000)\\/").text(), "1969-12-31T23:59:59.000");
        assert!(Stamp::parse("/Date(1700000000000)/") < Stamp::parse("/Date(1700000000001-0500)/"));
        assert!(Stamp::parse("/Date(999999999999)/") < Stamp::parse("/Date(1000000000000)/"), "not by text");
        assert_eq!(plain.earlier_by(Duration::from_secs(300)).text(), "2023-11-14T22:08:20.123");
        for text in ["/Date()/", "/Date(12x)/", "/Date(1+01)/", "/Date(99999999999999999)/"] {
            assert_eq!(Stamp::parse(text).instant(), None, "{text}");
        }
    }

    #[test]
    fn an_earlier_stamp_is_written_as_the_first() {
        let by = Duration::from_secs(300);
        assert_eq!(Stamp::parse("2026-01-01T00:05:00.25Z").earlier_by(by).text(), "2026-01-01T00:00:00.25Z");
        assert_eq!(Stamp::parse("2026-01-01T00:05:00").earlier_by(by).text(), "2026-01-01T00:00:00");
        assert_eq!(Stamp::parse("2026-01-01T00:05:00.1234567").earlier_by(by).text(), "2026-01-01T00:00:00.1234567");
        assert_eq!(Stamp::parse("2026-01-01T01:05:00.5+01:00").earlier_by(by).text(), "2026-01-01T01:00:00.5+01:00");
        assert_eq!(Stamp::parse("2026-01-01T00:02:00-05:00").earlier_by(by).text(), "2025-12-31T23:57:00-05:00");
        assert_eq!(Stamp::parse("2026-01-01T00:02:00+00:00").earlier_by(by).text(), "2025-12-31T23:57:00+00:00");
        let finer = Duration::from_millis(300_250);
        assert_eq!(Stamp::parse("2026-01-01T00:05:00Z").earlier_by(finer).text(), "2025-12-31T23:59:59.75Z");
        assert_eq!(Stamp::parse("x").earlier_by(by).text(), "x");
        assert_eq!(Stamp::parse("2026-01-01T00:05:00.1234567").later_by(by).text(), "2026-01-01T00:10:00.1234567");
    }

    #[test]
    fn a_step_is_the_unit_of_the_last_digit() {
        assert_eq!(Stamp::parse("2026-01-01T00:05:00Z").step(), Duration::from_secs(1));
        assert_eq!(Stamp::parse("2026-01-01T00:05:00+02:00").step(), Duration::from_secs(1));
        assert_eq!(Stamp::parse("2026-01-01T00:05:00.12").step(), Duration::from_millis(10));
        assert_eq!(Stamp::parse("2026-01-01T00:05:00.1234567Z").step(), Duration::from_nanos(100));
        let at = Stamp::parse("2026-01-01T00:05:00.25Z");
        assert_eq!(at.later_by(at.step()).text(), "2026-01-01T00:05:00.26Z");
    }

    #[test]
    fn a_stamp_ahead_of_an_instant_is_brought_back_to_it() {
        let at = Stamp::parse("2026-01-01T00:00:00.75Z").instant().unwrap();
        assert_eq!(
            Stamp::parse("2026-01-01T01:00:00.1234567Z").no_later_than(at).text(),
            "2026-01-01T00:00:00.0000000Z"
        );
        assert_eq!(Stamp::parse("2026-01-01T02:30:00+02:00").no_later_than(at).text(), "2026-01-01T02:00:00+02:00");
        assert_eq!(Stamp::parse("2025-12-31T23:59:59Z").no_later_than(at).text(), "2025-12-31T23:59:59Z");
        assert_eq!(Stamp::parse("2026-01-01T01:00:00").no_later_than(at).text(), "2026-01-01T01:00:00", "no zone");
    }
}
