//! One financing request, one id. The provider's ids are UUIDs, and the provider (IIS, .NET)
//! reads a UUID in any case and with or without its hyphens: `ABC…` and `abc…` without `-`
//! are the request `abc…`. Every route finds the request's owner and watch whatever spelling a
//! caller used, and asks the provider by the spelling the service first knew it by.

/// `raw` with the hyphens of a UUID when it is one written as 32 hex digits, each digit in the
/// case it was written in (a provider that compares case gets the caller's); any other id as it
/// is. The store compares ids without regard to case.
pub fn hyphenated(raw: &str) -> String {
    let is_bare_uuid = raw.len() == 32 && raw.bytes().all(|b| b.is_ascii_hexdigit());
    if !is_bare_uuid {
        return raw.to_string();
    }
    [&raw[..8], &raw[8..12], &raw[12..16], &raw[16..20], &raw[20..]].join("-")
}

#[cfg(test)]
mod tests {
    use super::hyphenated;

    #[test]
    fn a_uuid_without_hyphens_gets_them_in_the_case_written() {
        for (spelling, id) in [
            ("93f38d9ed5d64c37b260829f4bc87c7d", "93f38d9e-d5d6-4c37-b260-829f4bc87c7d"),
            ("93F38D9Ed5d64c37B260829F4BC87C7D", "93F38D9E-d5d6-4c37-B260-829F4BC87C7D"),
        ] {
            assert_eq!(hyphenated(spelling), id, "{spelling}");
        }
        for other in [
            "93f38d9e-d5d6-4c37-b260-829f4bc87c7d",
            "93F38D9E-D5D6-4C37-B260-829F4BC87C7D",
            "180-33037",
            "f-1",
            "93f38d9e-d5d64c37-b260-829f4bc87c7d",
            "93f38d9ed5d64c37b260829f4bc87c7",
            "93f38d9ed5d64c37b260829f4bc87c7g",
            "ACME",
        ] {
            assert_eq!(hyphenated(other), other, "kept as it is");
        }
    }
}
