//! How the field-report system's records and pages are addressed: a record's key segment,
//! the key an address names, and the part of a next link after the service root.

/// What a key escapes in its path segment: all but RFC 3986's unreserved characters. Not a
/// form's encoding, which writes a space `+`: in a path that is a plus, another key.
const KEY_ESCAPED: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// How a record is addressed: `Companies(123L)` for numeric ids, `Companies('x')` otherwise.
pub fn key_segment(set: &str, id: &str) -> String {
    if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) {
        format!("{set}({id}L)")
    } else {
        let quoted = id.replace('\'', "''");
        format!("{set}('{}')", percent_encoding::utf8_percent_encode(&quoted, KEY_ESCAPED))
    }
}

/// The key of a record's address (`https://host/odata/Companies(123L)`, `Companies(123)`,
/// `Tags('a%20b')`, `Companies(Id=123L)`): the Id it names, as [`key_segment`] writes it.
pub fn key_of_address(address: &str) -> Option<String> {
    let path = address.split(['?', '#']).next()?;
    let (_, key) = path.trim_end_matches('/').strip_suffix(')')?.rsplit_once('(')?;
    let key = key.strip_prefix("Id=").unwrap_or(key);
    let decoded = percent_encoding::percent_decode_str(key).decode_utf8().ok()?;
    if let Some(quoted) = decoded.strip_prefix('\'').and_then(|k| k.strip_suffix('\'')) {
        return (!quoted.is_empty()).then(|| quoted.replace("''", "'"));
    }
    let digits = decoded.strip_suffix(['L', 'l']).unwrap_or(&decoded);
    let numeric = !digits.is_empty() && digits.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit());
    numeric.then(|| digits.to_string())
}

/// The part of `set`'s next link after the service root: a link may be absolute
/// (`https://host/odata/Set?…`, asked of the configured root whatever its host),
/// root-relative (`/odata/Set?…`), relative (`Set?…`) or only a query (`?$skiptoken=…`, as a
/// relative reference resolves against the set's own address). Only the path is searched for
/// the root, so a query that names `/odata/` (a filter on a URL, say) is kept whole.
pub fn link_path(set: &str, link: &str) -> String {
    if let Some(query) = link.strip_prefix('?') {
        return format!("{set}?{query}");
    }
    let (path, query) = link.split_once('?').map_or((link, None), |(path, query)| (path, Some(query)));
    let path = path.split_once("/odata/").map_or(path, |(_, rest)| rest);
    match query {
        Some(query) => format!("{path}?{query}"),
        None => path.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_give_the_key_they_name() {
        for (address, key) in [
            ("https://h/odata/Companies(123L)", Some("123")),
            ("/odata/Companies(123)", Some("123")),
            ("Companies(Id=7L)/", Some("7")),
            ("https://h/odata/Tags('a%27%27b%20c')", Some("a'b c")),
            ("https://h/odata/Companies", None),
            ("https://h/odata/Companies()", None),
        ] {
            assert_eq!(key_of_address(address).as_deref(), key, "{address}");
        }
        assert_eq!(key_of_address(&format!("https://h/odata/{}", key_segment("Tags", "a+b c'd"))).unwrap(), "a+b c'd");
    }

    #[test]
    fn keys_use_the_int64_suffix() {
        assert_eq!(key_segment("Companies", "123"), "Companies(123L)");
        assert_eq!(key_segment("Companies", "a'b c"), "Companies('a%27%27b%20c')");
    }

    /// A key is a path segment, not a form: a space is `%20` (a `+` in a path is a plus), and
    /// the characters that would end the segment or the path are escaped.
    #[test]
    fn a_key_is_escaped_as_a_path_segment() {
        assert_eq!(key_segment("Tags", "a+b c"), "Tags('a%2Bb%20c')");
        assert_eq!(key_segment("Tags", "x/y?z#w%"), "Tags('x%2Fy%3Fz%23w%25')");
        assert_eq!(key_segment("Tags", "Ä-1.2_~"), "Tags('%C3%84-1.2_~')");
    }

    mod properties {
        use super::super::*;
        use crate::vocabulary::strategies::text;
        use proptest::prelude::*;

        proptest! {
            /// An absolute, a root-relative and a relative next link lead to the same request.
            #[test]
            fn next_links_of_every_form_lead_to_the_same_path(
                set in text("ABCDEFGHabcdefgh", 1..12),
                query in text("abc019$=&' ", 0..30),
                host in text("abcdef0123.", 1..20),
            ) {
                let relative = format!("{set}?{query}");
                let (absolute, rooted) = (format!("https://{host}/odata/{relative}"), format!("/odata/{relative}"));
                prop_assert_eq!(link_path(&set, &absolute), relative.clone());
                prop_assert_eq!(link_path(&set, &rooted), relative.clone());
                prop_assert_eq!(link_path(&set, &relative), relative.clone());
                prop_assert_eq!(link_path(&set, &format!("?{query}")), relative);
            }

            /// A query that names the root (a filter on a URL) is not taken for it.
            #[test]
            fn a_query_naming_the_root_is_kept_whole(set in text("ABCDEFGHabcdefgh", 1..12), tail in text("abc019$=", 0..12)) {
                let relative = format!("{set}?$filter=Url eq 'https://x/odata/{tail}'");
                prop_assert_eq!(link_path(&set, &format!("https://host/odata/{relative}")), relative.clone());
                prop_assert_eq!(link_path(&set, &relative), relative);
            }
        }
    }
}
