//! Headers the service reads one of. Sent twice, a proxy in front and the service could each
//! read a different one (the first `Authorization`, the last `Idempotency-Key`): the token a
//! proxy checked would not be the one used, a retry would not be recognised as one, a body
//! would be read as another type. RFC 9110 allows a list only for fields defined as lists;
//! these are not, so a request with two of one is refused (400 `bad_request`).

/// The fields the service reads exactly one of, with their names as a message spells them.
const SINGLE: [(http::HeaderName, &str); 4] = [
    (http::header::AUTHORIZATION, "Authorization"),
    (http::header::CONTENT_TYPE, "Content-Type"),
    (http::header::HOST, "Host"),
    (http::HeaderName::from_static("idempotency-key"), "Idempotency-Key"),
];

/// The first field of [`SINGLE`] that `headers` holds more than once.
pub(super) fn repeated(headers: &http::HeaderMap) -> Option<&'static str> {
    SINGLE.iter().find(|(name, _)| headers.get_all(name).iter().nth(1).is_some()).map(|(_, spelled)| *spelled)
}

#[cfg(test)]
mod tests {
    use super::repeated;
    use http::{HeaderMap, HeaderValue};

    #[test]
    fn a_field_read_once_is_found_when_sent_twice_and_lists_are_not() {
        let mut headers = HeaderMap::new();
        headers.append("x-forwarded-for", HeaderValue::from_static("10.0.0.1"));
        headers.append("x-forwarded-for", HeaderValue::from_static("10.0.0.2"));
        headers.append("idempotency-key", HeaderValue::from_static("a"));
        headers.append("authorization", HeaderValue::from_static("Bearer x"));
        assert_eq!(repeated(&headers), None);
        headers.append("idempotency-key", HeaderValue::from_static("b"));
        assert_eq!(repeated(&headers), Some("Idempotency-Key"));
    }
}
