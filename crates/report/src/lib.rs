#![warn(missing_docs)]
//! What neurochunk's validators have in common: how serious a finding is ([`Severity`]).
//!
//! The NWB validator (`neurochunk-hdmf`), the multiscale-image validator (`neurochunk-ome`) and
//! the neurarrow table validator (`neurochunk-table`) each check their own rules and report
//! their own findings, but they rank them the same way, print them with the same words and
//! exit with the same convention (errors make a file invalid, warnings do not). Nothing else
//! lives here: the crate has no dependencies.
//!
//! ```
//! use neurochunk_report::Severity;
//!
//! let mut found = vec![Severity::Warning, Severity::Error];
//! found.sort();
//! assert_eq!(found, [Severity::Error, Severity::Warning]);
//! assert_eq!(Severity::Error.to_string(), "error");
//! assert!(Severity::Error.is_error());
//! ```

use std::fmt;

/// How serious a finding is. Errors sort before warnings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// A rule the data must follow is broken (a MUST of its specification, or a rule made
    /// strict on request): the data does not conform, and readers may refuse it.
    Error,
    /// Worth a look, but the data conforms (a SHOULD, a lint, something the specification does
    /// not describe).
    Warning,
}

impl Severity {
    /// `error` or `warning`, as reports print it.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }

    /// Whether the finding makes the data invalid.
    pub fn is_error(self) -> bool {
        self == Severity::Error
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
