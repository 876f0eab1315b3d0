//! The message of a field-report error answer: OData JSON (v4 `error`, v3 `odata.error`),
//! OData XML (`<m:error>`) or an HTML error page, shortened and without our secrets.

use serde_json::Value;

use crate::upstream::summarise;

/// The message of an OData error body (v4 or v3 JSON, v3 XML `<m:error>`, an HTML error
/// page's title), or the body itself, shortened.
pub fn odata_message(body: &str) -> String {
    if body.trim_start().starts_with('<') {
        return summarise(&markup_message(body));
    }
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let from_error = parsed.as_ref().and_then(|v| {
        let error = v.get("error").or_else(|| v.get("odata.error"))?;
        let message = error.get("message")?;
        let text = message
            .as_str()
            .map(str::to_string)
            .or_else(|| message.get("value").and_then(Value::as_str).map(str::to_string))?;
        let code = error.get("code").and_then(Value::as_str).unwrap_or_default();
        Some(if code.is_empty() { text } else { format!("{code}: {text}") })
    });
    summarise(&from_error.unwrap_or_else(|| body.to_string()))
}

/// The message of an XML or HTML error body: an OData XML error's `code: message`, else an
/// HTML page's `title` (or first heading), else its text without the markup.
fn markup_message(body: &str) -> String {
    let text = |name: &str| element_text(body, name).filter(|t| !t.is_empty());
    if let Some(message) = text("message") {
        return match text("code") {
            Some(code) => format!("{code}: {message}"),
            None => message,
        };
    }
    if let Some(title) = text("title").or_else(|| text("h1")) {
        return title;
    }
    let mut plain = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                plain.push(' ');
            }
            c if !in_tag => plain.push(c),
            _ => {}
        }
    }
    let plain = unescape(&plain.split_whitespace().collect::<Vec<_>>().join(" "));
    if plain.is_empty() { body.to_string() } else { plain }
}

/// The text of the first element named `name` (in any namespace prefix, any case), its
/// whitespace collapsed and its character references read.
fn element_text(body: &str, name: &str) -> Option<String> {
    let mut rest = body;
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        let tag_end = rest.find('>')?;
        let tag = &rest[..tag_end];
        let tag_name = tag.split(|c: char| c.is_whitespace() || c == '/').next().unwrap_or_default();
        let local = tag_name.rsplit(':').next().unwrap_or_default();
        if local.eq_ignore_ascii_case(name) && !tag.ends_with('/') {
            let content = &rest[tag_end + 1..];
            let content = &content[..content.find("</").unwrap_or(content.len())];
            return Some(unescape(&content.split_whitespace().collect::<Vec<_>>().join(" ")));
        }
    }
    None
}

/// The five predefined XML entities read.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odata_errors_of_both_versions_are_summarised() {
        assert_eq!(odata_message(r#"{"error": {"code": "Conflict", "message": "stale"}}"#), "Conflict: stale");
        assert_eq!(
            odata_message(r#"{"odata.error": {"code": "", "message": {"lang": "en", "value": "gone"}}}"#),
            "gone"
        );
        assert_eq!(odata_message("plain text"), "plain text");
        let xml = r#"<?xml version="1.0"?><m:error xmlns:m="x"><m:code>Conflict</m:code>
            <m:message xml:lang="en-US">Version 3 &lt; 4</m:message><m:innererror><m:message>inner</m:message></m:innererror></m:error>"#;
        assert_eq!(odata_message(xml), "Conflict: Version 3 < 4");
        let html = "<html><head><style>p{}</style><title>503 Service Unavailable</title></head><body>x</body></html>";
        assert_eq!(odata_message(html), "503 Service Unavailable");
        assert_eq!(odata_message("<html><body><p>Bad  <b>gateway</b></p></body></html>"), "Bad gateway");
    }

    #[test]
    fn markup_without_elements_is_shown_as_text() {
        assert_eq!(odata_message("<error/>"), "<error/>");
        assert_eq!(odata_message("<p>a &amp; b"), "a & b");
    }
}
