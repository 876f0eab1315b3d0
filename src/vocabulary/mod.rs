//! Shared vocabulary: the small types and lists that several areas name, each in a module that
//! imports nothing of the areas (only other vocabulary modules and other crates).
//!
//! A type two areas both need lives here rather than in either of them, so that neither has to
//! import the other: the areas import the vocabulary, never the other way round, and no files
//! import each other (`cargo xtask check` fails on an import circle, and on a file here that
//! imports a file outside `src/vocabulary/`).

pub mod address_group;
pub mod calls;
pub mod closed_set;
pub mod field_errors;
pub mod id_batches;
pub mod json_integer;
pub mod key_page;
pub mod leasing_codes;
pub mod owner;
pub mod redaction;
pub mod retry_after;
pub mod settings;
pub mod stamp;
#[cfg(test)]
pub mod strategies;
pub mod unique_keys;
