//! Mail templates: where they come from, the built-in ones, and rendering them.

use serde_json::Value;

use super::error::MailError;

/// A mail template as the ERP keeps them (`mailTemplate`): subject and text with
/// placeholders, fixed recipients, and whether the text is HTML.
#[derive(Debug, Clone, PartialEq)]
pub struct MailTemplate {
    pub name: String,
    pub subject: String,
    pub text: String,
    pub html: bool,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
}

/// Where templates come from.
#[async_trait::async_trait]
pub trait TemplateSource: Send + Sync {
    async fn template(&self, name: &str) -> Result<MailTemplate, MailError>;
}

/// The templates shipped with the service.
pub struct BuiltInTemplates;

pub const MISSING_INFO_SUBJECT: &str = "Financing request {{ request.RequestId or financing_id }}: information missing";
pub const MISSING_INFO_TEXT: &str = "Hello {{ lessee.CompanyName or 'customer' }},\n\n\
the leasing provider needs more information before financing request {{ request.RequestId or financing_id }} \
(financing id {{ financing_id }}) can be signed.\n\
{% if technician_appointment_date %}Technician appointment: {{ technician_appointment_date }}{% if technician_appointment_time %} at {{ technician_appointment_time }}{% endif %}.\n{% endif %}\n\
Please get in touch with us.\n";

#[async_trait::async_trait]
impl TemplateSource for BuiltInTemplates {
    async fn template(&self, name: &str) -> Result<MailTemplate, MailError> {
        Ok(MailTemplate {
            name: name.to_string(),
            subject: MISSING_INFO_SUBJECT.into(),
            text: MISSING_INFO_TEXT.into(),
            html: false,
            to: Vec::new(),
            cc: Vec::new(),
            bcc: Vec::new(),
        })
    }
}

/// A rendered mail ready to deliver.
#[derive(Debug, Clone)]
pub struct RenderedMail {
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    pub subject: String,
    pub body: String,
    pub html: bool,
}

/// Renders subject and text with `context`; HTML templates escape inserted values.
pub fn render(template: &MailTemplate, context: &Value) -> Result<(String, String), MailError> {
    let mut env = minijinja::Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    let fail = |e: minijinja::Error| MailError::Template { name: template.name.clone(), detail: e.to_string() };
    let subject = env.render_str(&template.subject, context).map_err(fail)?;
    let mut body_env = minijinja::Environment::new();
    let html = template.html;
    body_env.set_auto_escape_callback(
        move |_| if html { minijinja::AutoEscape::Html } else { minijinja::AutoEscape::None },
    );
    let body = body_env.render_str(&template.text, context).map_err(fail)?;
    Ok((subject.replace(['\r', '\n'], " "), body))
}
