use serde_json::json;

use super::query::{Filter, like};
use super::seed::mail_template;

#[test]
fn filters_compare_numbers_as_numbers_and_text_as_text() {
    let record = json!({"n": 10, "s": "b", "d": "9", "e": null}).as_object().cloned().unwrap();
    let check = |name: &str, value: &str| Filter::parse(name, value).unwrap().matches(&record);
    assert!(check("n-gt", "9"), "10 > 9 as numbers, not as text");
    assert!(check("d-lt", "10"));
    assert!(check("s-ge", "a") && !check("s-gt", "b"));
    assert!(check("s-in", "a,b") && check("n-in", r#"["10","11"]"#) && check("n-notin", "1,2"));
    assert!(check("e-null", "") && check("missing-null", "") && check("s-notnull", ""));
    assert!(check("s-ne", "a") && !check("s-eq", "a"));
    assert!(Filter::parse("pageSize", "1").is_none());
}

#[test]
fn like_uses_percent_as_wildcard() {
    assert!(like("leasing-missing-info", "leasing%"));
    assert!(like("leasing-missing-info", "%missing%"));
    assert!(like("abc", "a%b%c"));
    assert!(!like("abc", "a%d"));
    assert!(!like("ab", "ab%b"));
}

#[test]
fn the_seeded_mail_template_renders() {
    let template = mail_template();
    let env = minijinja::Environment::new();
    let context = minijinja::context! {
        financing_id => "F-1", request => json!({"RequestId": "180-42"}),
        lessee => json!({"CompanyName": "ACME GmbH", "Email": "a@example.com"}),
        technician_appointment_date => "2025-03-01", technician_appointment_time => "09:00",
    };
    let subject = env.render_str(template["subject"].as_str().unwrap(), &context).unwrap();
    assert_eq!(subject, "Leasing request 180-42: information missing");
    let text = env.render_str(template["text"].as_str().unwrap(), &context).unwrap();
    assert!(
        text.starts_with("<p>Hello ACME GmbH,</p>") && text.contains("Technician appointment: 2025-03-01 at 09:00."),
        "{text}"
    );
    let without = minijinja::context! { financing_id => "F-1", request => json!({}), lessee => json!({}) };
    let text = env.render_str(template["text"].as_str().unwrap(), &without).unwrap();
    assert!(text.contains("request F-1 (financing id F-1)") && !text.contains("Technician"), "{text}");
}
