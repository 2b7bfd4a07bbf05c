//! Metadata checks: required keys, PEP 440 versions, units, identifiers,
//! `neighborhood_size`, unknown and `attr:` keys, `frag:` keys, extension keys
//! and the snake_case naming lint (shared with field names).

use super::helpers::{is_iri, is_signed_decimal, is_snake_case, is_uuid, local_part};
use super::run::TableRun;
use crate::pep440;
use crate::rules::RuleId;
use crate::schema::{
    is_reserved_prefix, is_technical_key, is_valid_unit, split_prefix, KeyPattern, MetaCheck,
    Presence,
};

impl TableRun<'_> {
    fn check_version(&mut self, key: &str, value: &str, spec_version: bool) {
        let loc = format!("metadata {key:?}");
        match pep440::parse(value) {
            Err(e) => self.rep.report(RuleId::VersionPep440, loc, e.to_string()),
            Ok(v) => {
                if v.to_string() != value {
                    self.rep.report(
                        RuleId::VersionNormalized,
                        loc.clone(),
                        format!(
                            "{value:?} is valid PEP 440 but its normal form is {:?}",
                            v.to_string()
                        ),
                    );
                }
                if spec_version {
                    let mm = (v.major(), v.minor());
                    if mm < (0, 2) {
                        self.rep.report(
                            RuleId::VersionUnsupported,
                            loc,
                            format!("neurarrow {value} predates 0.2 and is not supported"),
                        );
                    } else if mm > (0, 2) {
                        self.rep.report(
                            RuleId::VersionNewer,
                            loc,
                            format!("neurarrow {value} is newer than 0.2; checked as 0.2"),
                        );
                    }
                }
            }
        }
    }

    fn check_meta_value(&mut self, key: &str, value: &str, check: MetaCheck) {
        let loc = format!("metadata {key:?}");
        match check {
            MetaCheck::Any => {}
            MetaCheck::SpecVersion => self.check_version(key, value, true),
            MetaCheck::Version => self.check_version(key, value, false),
            MetaCheck::Unit => {
                if !is_valid_unit(value) {
                    self.rep.report(
                        RuleId::UnitInvalid,
                        loc,
                        format!("{value:?} is not \"\" or one of the 27 unit names (e.g. \"nanometer\", \"micrometer\")"),
                    );
                }
            }
            MetaCheck::Context | MetaCheck::Space => {
                let rule = if check == MetaCheck::Context {
                    RuleId::ContextFormat
                } else {
                    RuleId::SpaceFormat
                };
                if value.is_empty() {
                    self.rep.report(rule, loc, "empty identifier");
                } else if !is_iri(value) && !is_uuid(value) {
                    self.rep.report(
                        rule,
                        loc,
                        format!("{value:?} is neither an IRI nor a UUID (RECOMMENDED)"),
                    );
                }
            }
            MetaCheck::UnsignedDecimal => {
                if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                    self.rep.report(
                        RuleId::NeighborhoodSize,
                        loc,
                        format!("{value:?} is not an ASCII base-10 unsigned integer"),
                    );
                } else if value.parse::<u64>().is_err() {
                    self.rep.report(
                        RuleId::NeighborhoodSize,
                        loc,
                        format!("{value:?} does not fit in u64"),
                    );
                } else if value.len() > 1 && value.starts_with('0') {
                    self.rep.report(
                        RuleId::NeighborhoodSizeFormat,
                        loc,
                        format!("{value:?} has leading zeros"),
                    );
                } else if value == "0" {
                    self.rep.report(
                        RuleId::NeighborhoodSizeFormat,
                        loc,
                        "neighborhood size is 0",
                    );
                }
            }
        }
    }

    /// The snake_case lint on the local part of a field name or metadata key.
    pub(super) fn naming(&mut self, what: &str, name: &str) {
        let local = local_part(name);
        if local.is_empty() || is_signed_decimal(local) || name == "attr" {
            return;
        }
        if !is_snake_case(local) {
            self.rep.report(
                RuleId::Naming,
                format!("{what} {name:?}"),
                format!("{local:?} is not snake_case"),
            );
        }
    }

    /// Checks required, known, unknown, `attr:`, `frag:` and extension keys.
    pub(super) fn check_metadata(&mut self) {
        let specs = self.schema.metadata.clone();
        for m in &specs {
            if m.presence == Presence::Required && !self.meta.contains_key(&m.key) {
                self.rep.report(
                    RuleId::MetadataRequired,
                    format!("metadata {:?}", m.key),
                    format!(
                        "required metadata key {:?} (from {}) is missing",
                        m.key, m.origin
                    ),
                );
            }
        }
        let mut keys: Vec<(String, String)> = self
            .meta
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        keys.sort();
        for (k, v) in keys {
            if is_technical_key(&k) {
                continue;
            }
            if let Some(spec) = self.schema.meta(&k) {
                let check = spec.check;
                if let Some((p, _)) = split_prefix(&k) {
                    self.used_prefixes
                        .entry(p.to_string())
                        .or_insert(format!("metadata {k:?}"));
                }
                self.check_meta_value(&k, &v, check);
                self.naming("metadata", &k);
                continue;
            }
            match split_prefix(&k) {
                None => {
                    self.rep.report(
                        RuleId::MetadataUnknown,
                        format!("metadata {k:?}"),
                        format!(
                            "key is not defined by {:?}; use an attr: or extension prefix",
                            self.schema.name
                        ),
                    );
                    self.naming("metadata", &k);
                }
                Some(("attr", rest)) => {
                    if rest.is_empty() {
                        self.rep.report(
                            RuleId::AttrEmptyName,
                            format!("metadata {k:?}"),
                            "attribute key with nothing after attr:",
                        );
                    }
                }
                Some(("frag", rest)) => {
                    if !self.schema.traits.fragment_metadata {
                        self.rep.report(
                            RuleId::FragKeySchema,
                            format!("metadata {k:?}"),
                            format!(
                                "frag: keys are only allowed in point-cloud schemas, not {:?}",
                                self.schema.name
                            ),
                        );
                        continue;
                    }
                    match rest.split_once(':') {
                        Some((id, key))
                            if !key.is_empty()
                                && id.bytes().all(|b| b.is_ascii_digit())
                                && id.parse::<u64>().is_ok() =>
                        {
                            let fid = id.parse::<u64>().unwrap_or_default();
                            self.frag_keys.push((k.clone(), fid));
                            self.naming("metadata", &k);
                        }
                        _ => self.rep.report(
                            RuleId::FragKeyFormat,
                            format!("metadata {k:?}"),
                            "expected frag:{fragment_id}:{key} with a decimal fragment id",
                        ),
                    }
                }
                Some((p, rest)) if !is_reserved_prefix(p) => {
                    self.used_prefixes
                        .entry(p.to_string())
                        .or_insert(format!("metadata {k:?}"));
                    if rest == "version" {
                        self.check_version(&k, &v, false);
                        continue;
                    }
                    self.check_extension_key(&k, p, rest);
                }
                Some(_) => {}
            }
        }
    }

    fn check_extension_key(&mut self, key: &str, prefix: &str, rest: &str) {
        let Some(ext) = self.opts.registry.extension(prefix) else {
            self.naming("metadata", key);
            return;
        };
        let patterns = ext.key_patterns.clone();
        for pat in patterns {
            match pat {
                KeyPattern::Version => {}
                KeyPattern::PerFragment(name) => {
                    if rest == name {
                        return; // legacy single-value form
                    }
                    if let Some(id) = rest.strip_prefix(name).and_then(|r| r.strip_prefix(':')) {
                        if id.parse::<u64>().is_err() || !id.bytes().all(|b| b.is_ascii_digit()) {
                            self.rep.report(
                                RuleId::ExtensionKey,
                                format!("metadata {key:?}"),
                                format!("{name} key must end in a decimal fragment id"),
                            );
                        }
                        return;
                    }
                }
                KeyPattern::PerInteger(name) => {
                    if let Some(id) = rest.strip_prefix(name).and_then(|r| r.strip_prefix(':')) {
                        if !is_signed_decimal(id) {
                            self.rep.report(
                                RuleId::ExtensionKey,
                                format!("metadata {key:?}"),
                                format!("the last segment of a {name} key MUST be a signed decimal integer"),
                            );
                        }
                        return;
                    }
                }
            }
        }
        self.rep.report(
            RuleId::ExtensionUnknownKey,
            format!("metadata {key:?}"),
            format!("extension {prefix} defines no such key"),
        );
    }
}
