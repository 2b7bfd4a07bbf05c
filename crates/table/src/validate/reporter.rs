//! The violation collector of one table: grades each rule (strict mode turns
//! configurable rules into errors), keeps at most `max_per_rule` violations per
//! rule and adds a `... and N more` summary for the rest.

use super::{Severity, Violation};
use crate::rules::{Grade, RuleId};
use std::collections::HashMap;

/// Collects the violations of one table.
pub(super) struct Reporter {
    strict: bool,
    max: usize,
    counts: HashMap<RuleId, usize>,
    errors: Vec<Violation>,
    warnings: Vec<Violation>,
}

impl Reporter {
    pub(super) fn new(strict: bool, max: usize) -> Self {
        Reporter {
            strict,
            max: max.max(1),
            counts: HashMap::new(),
            errors: vec![],
            warnings: vec![],
        }
    }

    fn severity(&self, id: RuleId) -> Severity {
        match id.rule().grade {
            Grade::Warning => Severity::Warning,
            Grade::Configurable if !self.strict => Severity::Warning,
            _ => Severity::Error,
        }
    }

    /// Counts a violation and builds it only when it will be kept.
    pub(super) fn lazy(&mut self, id: RuleId, f: impl FnOnce() -> (String, String)) {
        let c = self.counts.entry(id).or_insert(0);
        *c += 1;
        if *c > self.max {
            return;
        }
        let (location, message) = f();
        let severity = self.severity(id);
        let v = Violation {
            severity,
            rule: id,
            check: id.rule().check,
            location,
            message,
        };
        match severity {
            Severity::Error => self.errors.push(v),
            Severity::Warning => self.warnings.push(v),
        }
    }

    pub(super) fn report(
        &mut self,
        id: RuleId,
        location: impl Into<String>,
        message: impl Into<String>,
    ) {
        let (l, m) = (location.into(), message.into());
        self.lazy(id, || (l, m));
    }

    pub(super) fn finish(mut self) -> (Vec<Violation>, Vec<Violation>) {
        let mut over: Vec<(RuleId, usize)> = self
            .counts
            .iter()
            .filter(|(_, &c)| c > self.max)
            .map(|(k, &c)| (*k, c - self.max))
            .collect();
        over.sort();
        for (id, more) in over {
            let severity = self.severity(id);
            let v = Violation {
                severity,
                rule: id,
                check: id.rule().check,
                location: "table".into(),
                message: format!("... and {more} more violations of this rule"),
            };
            match severity {
                Severity::Error => self.errors.push(v),
                Severity::Warning => self.warnings.push(v),
            }
        }
        (self.errors, self.warnings)
    }
}
