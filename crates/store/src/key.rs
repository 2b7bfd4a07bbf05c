//! Key validation and joining: the rules that keep every key inside the store.

use crate::{StoreError, StoreResult};

fn invalid(key: &str, reason: &'static str) -> StoreError {
    StoreError::InvalidKey {
        key: key.to_string(),
        reason,
    }
}

/// Check that `key` is a relative, normalised key that cannot escape the store root.
pub fn validate_key(key: &str) -> StoreResult<()> {
    if key.is_empty() {
        return Err(invalid(key, "empty key"));
    }
    validate_segments(key)
}

/// Like [`validate_key`] but allows `""` (the root) and a trailing `/`.
pub fn validate_prefix(prefix: &str) -> StoreResult<()> {
    let trimmed = prefix.strip_suffix('/').unwrap_or(prefix);
    if trimmed.is_empty() {
        return if prefix.is_empty() {
            Ok(())
        } else {
            Err(invalid(prefix, "absolute path"))
        };
    }
    validate_segments(trimmed)
}

fn validate_segments(key: &str) -> StoreResult<()> {
    if key.starts_with('/') {
        return Err(invalid(key, "absolute path"));
    }
    if key.contains('\\') {
        return Err(invalid(key, "backslash in key"));
    }
    if key.contains('\0') {
        return Err(invalid(key, "NUL byte in key"));
    }
    for segment in key.split('/') {
        match segment {
            "" => return Err(invalid(key, "empty path segment")),
            "." | ".." => return Err(invalid(key, "'.' or '..' segment would leave the store")),
            _ => {}
        }
    }
    // A Windows drive prefix such as `C:` would make a path absolute there.
    if key.len() >= 2 && key.as_bytes()[1] == b':' && key.as_bytes()[0].is_ascii_alphabetic() {
        return Err(invalid(key, "drive prefix"));
    }
    Ok(())
}

/// Join a node prefix (`""` for the root, or `a/b`) and a relative key.
pub fn join_key(prefix: &str, key: &str) -> String {
    let prefix = prefix.trim_matches('/');
    if prefix.is_empty() {
        key.to_string()
    } else if key.is_empty() {
        prefix.to_string()
    } else {
        format!("{prefix}/{key}")
    }
}
