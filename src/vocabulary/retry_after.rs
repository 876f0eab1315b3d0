//! The wait an HTTP answer asks for before the next call (`Retry-After`), read the same
//! for the upstream systems and for the receivers of the leasing events.

use std::time::Duration;

/// The longest wait the service passes on to its own clients (`Retry-After` of an
/// `upstream_busy` answer): an hour. A longer one is more likely a misreading (an
/// `X-RateLimit-Reset` written as a moment, not seconds) than a plan.
pub const LONGEST_RELAYED_WAIT: Duration = Duration::from_secs(3600);

/// The seconds of `Retry-After` to answer for a wait an upstream asked for: at least one, at
/// most [`LONGEST_RELAYED_WAIT`]; one when it named none.
pub fn relayed_seconds(wait: Option<Duration>) -> u64 {
    wait.map_or(1, |wait| wait.as_secs().clamp(1, LONGEST_RELAYED_WAIT.as_secs()))
}

/// The wait a 429 or 503 answer asks for: `Retry-After` in seconds or as an HTTP date (any
/// of its three forms: IMF-fixdate and the obsolete RFC 850 and asctime, which a recipient
/// must read too), else `X-RateLimit-Reset` (seconds).
pub fn requested_wait(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(value) = text("retry-after") {
        if let Ok(seconds) = value.parse::<u64>() {
            return Some(Duration::from_secs(seconds));
        }
        if let Ok(when) = httpdate::parse_http_date(value) {
            return Some(when.duration_since(std::time::SystemTime::now()).unwrap_or_default());
        }
        // A date with a zone other than GMT is no HTTP-date, but its meaning is plain.
        if let Ok(when) = chrono::DateTime::parse_from_rfc2822(value) {
            let seconds = (when.timestamp() - chrono::Utc::now().timestamp()).max(0);
            return Some(Duration::from_secs(seconds as u64));
        }
    }
    text("x-ratelimit-reset").and_then(|v| v.parse::<u64>().ok()).map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relayed_waits_are_between_a_second_and_an_hour() {
        assert_eq!(relayed_seconds(None), 1);
        assert_eq!(relayed_seconds(Some(Duration::ZERO)), 1);
        assert_eq!(relayed_seconds(Some(Duration::from_secs(120))), 120);
        assert_eq!(relayed_seconds(Some(Duration::from_secs(1_767_225_600))), 3600);
    }

    #[test]
    fn waits_are_read_from_retry_after_or_the_rate_limit_reset() {
        use reqwest::header::{HeaderMap, HeaderValue};
        let mut headers = HeaderMap::new();
        assert_eq!(requested_wait(&headers), None);
        headers.insert("x-ratelimit-reset", HeaderValue::from_static("7"));
        assert_eq!(requested_wait(&headers), Some(Duration::from_secs(7)));
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(requested_wait(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after", HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
        assert_eq!(requested_wait(&headers), Some(Duration::ZERO), "a date in the past means now");
        headers.insert("retry-after", HeaderValue::from_static("Wed, 21 Oct 2015 09:28:00 +0200"));
        assert_eq!(requested_wait(&headers), Some(Duration::ZERO), "a date with another zone is read too");
    }

    /// HTTP allows a date in three forms (RFC 9110, 5.6.7): a recipient must read the obsolete
    /// RFC 850 and asctime forms too.
    #[test]
    fn retry_after_dates_are_read_in_every_form_of_http_date() {
        use reqwest::header::{HeaderMap, HeaderValue};
        let wait = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert("retry-after", HeaderValue::from_str(value).unwrap());
            requested_wait(&headers)
        };
        for past in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            assert_eq!(wait(past), Some(Duration::ZERO), "{past}");
        }
        let later = chrono::Utc::now() + chrono::Duration::seconds(120);
        for format in ["%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y"] {
            let value = later.format(format).to_string();
            let seconds = wait(&value).map(|d| d.as_secs());
            assert!(seconds.is_some_and(|s| (110..=120).contains(&s)), "{value}: {seconds:?}");
        }
    }
}
