//! Schemas of the leasing area's provider-shaped bodies, for the OpenAPI document only: the
//! bodies themselves travel as JSON (see `documented`), so unknown fields pass through and
//! every missing or bad field is named in one 422. Field names are PascalCase, as the
//! provider's.
#![allow(dead_code)]

use schemars::JsonSchema;
use serde_json::{Map, Value};

/// A postal address of the lessee.
#[derive(JsonSchema)]
#[serde(rename_all = "PascalCase")]
pub struct Address {
    pub line1: Option<String>,
    pub line2: Option<String>,
    pub post_code: Option<String>,
    pub city: Option<String>,
    /// Two-letter country code, e.g. `DE`.
    pub country: Option<String>,
    /// `Main` (exactly one is required), `Billing`, `Delivery`, `Accountholder` or `Private`.
    pub r#type: Option<String>,
}

/// A telephone number of the lessee.
#[derive(JsonSchema)]
#[serde(rename_all = "PascalCase")]
pub struct Telephone {
    /// International format, e.g. `+49 30 1234567`.
    pub number: Option<String>,
    /// `Phone`, `Mobile` or `Fax`.
    pub r#type: Option<String>,
}

/// An identifier of the lessee in another register (tax number, commercial register, ...).
#[derive(JsonSchema)]
#[serde(rename_all = "PascalCase")]
pub struct ThirdPartyIdentifier {
    pub r#type: Option<String>,
    pub value: Option<String>,
}

/// The lessee: the company that leases the objects.
#[derive(JsonSchema)]
#[serde(rename_all = "PascalCase")]
pub struct Lessee {
    /// Required on create.
    pub company_name: Option<String>,
    /// The lessee's identifier in the caller's system.
    pub external_id: Option<String>,
    /// Also the recipient of the missing-info mail; checked to be an email address.
    #[schemars(email)]
    pub email: Option<String>,
    /// From the provider's legal forms.
    pub legal_form_id: Option<i32>,
    pub addresses: Option<Vec<Address>>,
    pub telephones: Option<Vec<Telephone>>,
    pub third_party_identifiers: Option<Vec<ThirdPartyIdentifier>>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// An object to be financed.
#[derive(JsonSchema)]
#[serde(rename_all = "PascalCase")]
pub struct FinancingObject {
    /// A whole number greater than 0.
    #[schemars(range(min = 1))]
    pub quantity: Option<i32>,
    /// From the provider's object types.
    pub object_type_id: Option<i32>,
    pub name: Option<String>,
    pub manufacturer: Option<String>,
    pub details: Option<String>,
    /// Net price of one object, from 0 to a trillion.
    #[schemars(range(min = 0.0, max = 1_000_000_000_000.0))]
    pub net_price_per_object: Option<f64>,
}

/// A financing request as sent to the provider. Required on create: `FinancingAmount` > 0,
/// `Period`, `ProductType`, `Lessee.CompanyName`, exactly one `Main` address, at least one
/// financing object, and `FinancingAmount` equal to the sum of `Quantity × NetPricePerObject`
/// to the cent. Further fields are passed to the provider untouched.
#[derive(JsonSchema)]
#[serde(rename_all = "PascalCase")]
#[schemars(example = "FinancingRequestPayload::example")]
pub struct FinancingRequestPayload {
    /// `ClassicLease`, `PartialAmortisation`, `Rent`, `AllIn`, ...
    pub product_type: Option<String>,
    /// Net amount to be financed, from a cent to a trillion.
    #[schemars(range(min = 0.01, max = 1_000_000_000_000.0))]
    pub financing_amount: Option<f64>,
    /// Months, from 1 to 240; the provider offers 48, 60, 72 or 84.
    #[schemars(range(min = 1, max = 240))]
    pub period: Option<i32>,
    /// `Monthly` or `Quarterly`.
    pub payment_frequency: Option<String>,
    /// `DirectDebit` or `Invoice`.
    pub payment_method: Option<String>,
    /// `EUR`.
    pub currency: Option<String>,
    pub residual_value: Option<f64>,
    pub has_repurchase: Option<bool>,
    pub lessee: Option<Lessee>,
    pub financing_objects: Option<Vec<FinancingObject>>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl FinancingRequestPayload {
    fn example() -> Value {
        serde_json::json!({
            "ProductType": "ClassicLease", "FinancingAmount": 2598.0, "Period": 48,
            "PaymentFrequency": "Monthly", "PaymentMethod": "DirectDebit", "Currency": "EUR",
            "ResidualValue": 0, "HasRepurchase": false,
            "Lessee": {"CompanyName": "ACME GmbH", "ExternalId": "C-1001", "Email": "office@acme.example", "LegalFormId": 1,
                       "Addresses": [{"Line1": "Hauptstr. 1", "PostCode": "10115", "City": "Berlin", "Country": "DE", "Type": "Main"}],
                       "Telephones": [{"Number": "+49 30 1234567", "Type": "Phone"}]},
            "FinancingObjects": [{"Quantity": 2, "ObjectTypeId": 1, "Name": "Laptop", "Manufacturer": "Lenovo", "Details": "T14", "NetPricePerObject": 1299.0}]
        })
    }
}

/// A financing request as the provider reports it: the request fields plus `FinancingId`,
/// `RequestId` and `State`. Fields the provider leaves out are filled with empty values
/// (strings "", numbers 0, objects {}, lists []); unknown fields are passed through.
#[derive(JsonSchema)]
#[serde(rename_all = "PascalCase")]
pub struct FinancingRequestResponse {
    /// The provider's identifier (a UUID); "" when absent.
    pub financing_id: String,
    /// The provider's request number, e.g. `180-33037`.
    pub request_id: String,
    /// e.g. `RequestToGrenke`, `ReadyToSign`, `MissingInfo`, `Declined`.
    pub state: String,
    pub product_type: String,
    pub financing_amount: f64,
    #[schemars(range(min = 0))]
    pub period: i32,
    pub payment_frequency: String,
    pub payment_method: String,
    pub currency: String,
    pub residual_value: f64,
    pub has_repurchase: bool,
    pub lessee: Lessee,
    pub financing_objects: Vec<FinancingObject>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// Fields of the request to change (not the lessee); e.g. `{"PaymentMethod": "Invoice"}`.
#[derive(JsonSchema)]
#[serde(rename_all = "PascalCase")]
pub struct PatchRequestPayload {
    pub payment_method: Option<String>,
    pub payment_frequency: Option<String>,
    /// Months, from 1 to 240.
    #[schemars(range(min = 1, max = 240))]
    pub period: Option<i32>,
    /// From a cent to a trillion.
    #[schemars(range(min = 0.01, max = 1_000_000_000_000.0))]
    pub financing_amount: Option<f64>,
    pub financing_objects: Option<Vec<FinancingObject>>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// Fields of the lessee to change; e.g. `{"CompanyName": "ACME Holding GmbH"}`.
#[derive(JsonSchema)]
#[serde(rename_all = "PascalCase")]
pub struct PatchLesseePayload {
    pub company_name: Option<String>,
    /// Checked to be an email address.
    #[schemars(email)]
    pub email: Option<String>,
    pub addresses: Option<Vec<Address>>,
    pub telephones: Option<Vec<Telephone>>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// One person who signs.
#[derive(JsonSchema)]
#[serde(rename_all = "PascalCase")]
pub struct Signee {
    pub title: Option<String>,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub email: Option<String>,
    /// e.g. `de-DE`.
    pub culture: Option<String>,
    pub mobile_number: Option<String>,
    pub signing_order: Option<i32>,
}

/// Start of an electronic signature.
#[derive(JsonSchema)]
pub struct ESignaturePayload {
    #[serde(rename = "SignerName")]
    pub signer_name: Option<String>,
    #[serde(rename = "SignerEmail")]
    pub signer_email: Option<String>,
    pub signees: Option<Vec<Signee>>,
    /// `DocuSign`.
    #[serde(rename = "ESignatureType")]
    pub e_signature_type: Option<String>,
    #[serde(rename = "UseDeliveryConfirmation")]
    pub use_delivery_confirmation: Option<bool>,
    #[serde(rename = "CustomerContractSignees")]
    pub customer_contract_signees: Option<Vec<Signee>>,
    #[serde(rename = "PartnerContractSignees")]
    pub partner_contract_signees: Option<Vec<Signee>>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// The provider's limits for an electronic signature.
#[derive(JsonSchema)]
pub struct ESignatureConfiguration {
    #[serde(rename = "DocuSign")]
    pub docu_sign: Option<Map<String, Value>>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// Input of a lease calculation at the provider; further fields (`ProductType`, `Currency`,
/// `PaymentFrequency`, ...) are passed to the provider untouched.
#[derive(JsonSchema)]
#[serde(rename_all = "PascalCase")]
pub struct CalculationPayload {
    /// Net amount to be financed, from a cent to a trillion.
    #[schemars(range(min = 0.01, max = 1_000_000_000_000.0))]
    pub financing_amount: f64,
    /// Contract term in months; without it the provider calculates every period it offers.
    #[schemars(range(min = 1))]
    pub period: Option<i32>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// An answer of the provider, passed through.
#[derive(JsonSchema)]
pub struct ProviderAnswer {
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

/// The contract document: `Content` is the PDF in base64.
#[derive(JsonSchema)]
pub struct ContractDocument {
    #[serde(rename = "Content")]
    pub content: String,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}
