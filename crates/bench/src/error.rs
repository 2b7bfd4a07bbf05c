//! The harness's error type: a message that says what was being done and why it failed.

use std::fmt;

/// A benchmark failure, with the context it happened in.
#[derive(Debug)]
pub struct BenchError(pub String);

/// Result alias for the harness.
pub type BenchResult<T> = Result<T, BenchError>;

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BenchError {}

impl BenchError {
    /// An error from a message.
    pub fn msg(message: impl Into<String>) -> Self {
        BenchError(message.into())
    }
}

/// Attach what was being done to any displayable error.
pub trait Context<T> {
    /// Prefix the error with `what` (e.g. "reading /tmp/x").
    fn context(self, what: impl fmt::Display) -> BenchResult<T>;
}

impl<T, E: fmt::Display> Context<T> for Result<T, E> {
    fn context(self, what: impl fmt::Display) -> BenchResult<T> {
        self.map_err(|e| BenchError(format!("{what}: {e}")))
    }
}
