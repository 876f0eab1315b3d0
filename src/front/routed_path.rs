//! The path as dropshot routes it. dropshot drops empty segments (`//`, a trailing `/`) and
//! percent-decodes each segment, so `//__internal/x`, `/%5f%5finternal/x` and
//! `/api/v1/…/wait-ready-to-sign/` reach the routes of their plain spelling. The front's own
//! decisions by path (internal routes refused, unknown routes hidden, held calls watched) are
//! made on this form, or a spelling would pass them by.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;

/// `path` with empty segments dropped and each segment percent-decoded (a decoded `/` kept
/// encoded, so that segments stay segments; a segment that is not UTF-8 once decoded is kept
/// as sent, and dropshot refuses it). `/` when nothing is left. A path already in that form
/// (most are) is borrowed, not copied: every request asks.
pub fn routed(path: &str) -> Cow<'_, str> {
    let plain = path.starts_with('/') && !path.contains("//") && !path.contains('%');
    if plain && (path == "/" || !path.ends_with('/')) {
        return Cow::Borrowed(path);
    }
    let mut routed = String::with_capacity(path.len());
    for segment in path.split('/').filter(|segment| !segment.is_empty()) {
        routed.push('/');
        match percent_decode_str(segment).decode_utf8() {
            Ok(decoded) => routed.push_str(&decoded.replace('/', "%2F")),
            Err(_) => routed.push_str(segment),
        }
    }
    if routed.is_empty() {
        routed.push('/');
    }
    Cow::Owned(routed)
}

/// Whether the routed path is `prefix` or below it (`prefix` without a trailing `/`).
pub fn is_under(routed: &str, prefix: &str) -> bool {
    routed.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Whether `path` (as sent) reaches a leasing route, whose errors keep the seed's
/// `{success: false, …}`: judged on the routed form, as `//api/v1/leasing/…` reaches the same
/// routes.
pub fn is_leasing(path: &str) -> bool {
    is_under(&routed(path), "/api/v1/leasing")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_route_are_one_path() {
        assert_eq!(routed("//__internal/docs/openapi.json"), "/__internal/docs/openapi.json");
        assert_eq!(routed("/%5f%5Finternal//docs/"), "/__internal/docs");
        assert_eq!(routed("/api/v1/leasing/x/wait-ready-to-sign/"), "/api/v1/leasing/x/wait-ready-to-sign");
        assert_eq!(routed("/api/v1/fieldreport/companies/a%2Fb"), "/api/v1/fieldreport/companies/a%2Fb");
        assert_eq!(routed("/x/%ff"), "/x/%ff");
        assert_eq!(routed("//"), "/");
        assert_eq!(routed(""), "/");
        assert!(matches!(routed("/api/v1/user"), Cow::Borrowed("/api/v1/user")));
        assert!(matches!(routed("/"), Cow::Borrowed("/")));
        assert!(is_under("/api/v1", "/api/v1") && is_under("/api/v1/user", "/api/v1"));
        assert!(!is_under("/api/v1x", "/api/v1"));
    }
}
