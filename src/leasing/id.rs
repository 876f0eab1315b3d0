//! One financing request, one id. The provider's ids are UUIDs, and the provider (IIS, .NET)
//! reads a UUID in any case and with or without its hyphens: `ABC…` and `abc…` without `-`
//! are the request `abc…`. Every route names the request by the one spelling of its id, so
//! that who owns it and its watch are found whatever spelling a caller used.

/// `raw` as the request's id: a UUID (hyphenated or 32 hex digits, any case) in lower case with
/// hyphens, as the provider answers it; any other id as it is (compared without regard to case
/// by the store).
pub fn canonical(raw: &str) -> String {
    match uuid::Uuid::try_parse(raw) {
        Ok(uuid) if raw.len() == 32 || raw.len() == 36 => uuid.hyphenated().to_string(),
        _ => raw.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::canonical;

    #[test]
    fn a_uuid_in_any_spelling_is_one_id() {
        let id = "93f38d9e-d5d6-4c37-b260-829f4bc87c7d";
        for spelling in [
            id,
            "93F38D9E-D5D6-4C37-B260-829F4BC87C7D",
            "93f38d9ed5d64c37b260829f4bc87c7d",
            "93F38D9Ed5d64c37B260829F4BC87C7D",
        ] {
            assert_eq!(canonical(spelling), id, "{spelling}");
        }
        for other in
            ["180-33037", "f-1", "93f38d9e-d5d64c37-b260-829f4bc87c7d", "93f38d9ed5d64c37b260829f4bc87c7", "ACME"]
        {
            assert_eq!(canonical(other), other, "not a UUID: kept as it is");
        }
    }
}
