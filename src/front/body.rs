//! The body type of the requests and answers the front passes on: a file of its own, so that
//! the body wrappers (`slow_body`) name it without importing the front.

use bytes::Bytes;
use http_body_util::combinators::BoxBody;

/// The error of a body the front passes on.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub type FrontBody = BoxBody<Bytes, BoxError>;
