//! Small helpers shared by the checks: identifier and name syntax (IRI, UUID,
//! snake_case, signed decimals), row locations and typed column lookup.

use arrow::array::{ArrayRef, AsArray, UInt64Array};
use arrow::datatypes::UInt64Type;
use std::collections::HashMap;

pub(super) fn is_iri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !s.chars().any(char::is_whitespace)
}

pub(super) fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    match b.len() {
        32 => b.iter().all(u8::is_ascii_hexdigit),
        36 => b.iter().enumerate().all(|(i, c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                *c == b'-'
            } else {
                c.is_ascii_hexdigit()
            }
        }),
        _ => false,
    }
}

pub(super) fn is_snake_case(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The part of a name that the snake_case lint looks at (after the last `:`).
pub(super) fn local_part(name: &str) -> &str {
    name.rsplit(':').next().unwrap_or(name)
}

pub(super) fn is_signed_decimal(s: &str) -> bool {
    let d = s
        .strip_prefix('-')
        .or_else(|| s.strip_prefix('+'))
        .unwrap_or(s);
    !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) && d.parse::<i64>().is_ok()
}

/// `row N (id_name ID)`, or `row N` without an id.
pub(super) fn row_loc(row: u64, id_name: &str, id: Option<u64>) -> String {
    match id {
        Some(v) => format!("row {row} ({id_name} {v})"),
        None => format!("row {row}"),
    }
}

/// The `uint64` column `name` of a batch's prepared arrays, if usable.
pub(super) fn u64_col<'a>(
    arrays: &'a HashMap<String, ArrayRef>,
    name: &str,
) -> Option<&'a UInt64Array> {
    arrays
        .get(name)
        .and_then(|a| a.as_primitive_opt::<UInt64Type>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        assert!(is_iri("urn:uuid:00000000-0000-4000-8000-000000000001"));
        assert!(is_iri("https://example.org/space/FAFB"));
        assert!(!is_iri("some-uuid"));
        assert!(!is_iri("a b:c"));
        assert!(is_uuid("0123456789abcdef0123456789abcdef"));
        assert!(is_uuid("00000000-0000-4000-8000-000000000001"));
        assert!(!is_uuid("00000000-0000-4000-8000-00000000000g"));
        assert!(is_snake_case("sample_id") && !is_snake_case("SampleId") && !is_snake_case("1x"));
        assert!(is_signed_decimal("-1") && is_signed_decimal("42") && !is_signed_decimal("x"));
        assert_eq!(local_part("net.clbarnes.swc:type_id"), "type_id");
    }
}
