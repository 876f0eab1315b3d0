//! Property-test strategies that the tests of several areas draw their inputs from.

use proptest::prelude::*;

/// A text of `len` characters, each drawn from `chars`.
pub fn text(chars: &'static str, len: std::ops::Range<usize>) -> impl Strategy<Value = String> {
    let chars: Vec<char> = chars.chars().collect();
    prop::collection::vec(prop::sample::select(chars), len).prop_map(|c| c.into_iter().collect())
}
