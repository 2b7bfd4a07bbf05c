//! The catalogue of validation rules: id, checklist number, grade and summary.
//!
//! Every violation the validator reports names one of these rules by its
//! [`RuleId`], an enum generated from the table below together with [`RULES`], so a
//! rule the table does not define cannot be reported. A rule's grade
//! is fixed: `Error` (a MUST is broken), `Warning` (a SHOULD is broken, or a lint),
//! or `Configurable` (an inferred rule, or one the spec softens: a warning by
//! default and an error with `--strict`). `docs/neurarrow.md` lists the same table.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// How a rule is graded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grade {
    /// Always an error.
    Error,
    /// Always a warning.
    Warning,
    /// Warning by default, error in strict mode.
    Configurable,
}

/// One validation rule.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// Stable id printed with every violation.
    pub id: &'static str,
    /// Item number in the digest's 46-item checklist (0: file/IO level extras).
    pub check: u8,
    /// Grade.
    pub grade: Grade,
    /// One-line summary.
    pub summary: &'static str,
}

/// A rule id that is not in the catalogue (from user input).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRule(pub String);

impl fmt::Display for UnknownRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown rule {:?}", self.0)
    }
}

impl std::error::Error for UnknownRule {}

/// Generates [`RuleId`] (one variant per rule) and [`RULES`] (the same rules, in
/// the same order) from one table of `Variant => "id", check, Grade, "summary";`.
macro_rules! rules {
    ($($variant:ident => $id:literal, $check:literal, $grade:ident, $summary:literal;)*) => {
        /// The id of a rule of [`RULES`]; printed (and parsed) as its kebab-case
        /// string, e.g. `skeleton-root-count`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum RuleId {
            $(
                #[doc = $summary]
                $variant,
            )*
        }

        /// All rules, in checklist order (the order of [`RuleId`]'s variants).
        pub const RULES: &[Rule] = &[$(Rule { id: $id, check: $check, grade: Grade::$grade, summary: $summary },)*];

        impl RuleId {
            /// Every rule id, in checklist order.
            pub const ALL: &'static [RuleId] = &[$(RuleId::$variant,)*];

            /// The stable kebab-case id printed with every violation.
            pub const fn id(self) -> &'static str {
                match self {
                    $(RuleId::$variant => $id,)*
                }
            }
        }

        impl FromStr for RuleId {
            type Err = UnknownRule;

            fn from_str(s: &str) -> Result<Self, UnknownRule> {
                match s {
                    $($id => Ok(RuleId::$variant),)*
                    _ => Err(UnknownRule(s.to_string())),
                }
            }
        }
    };
}

impl RuleId {
    /// The rule's entry in [`RULES`].
    pub fn rule(self) -> &'static Rule {
        &RULES[self as usize]
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// Rule ids sort by their string id (reports list aggregated rules in that order).
impl Ord for RuleId {
    fn cmp(&self, other: &Self) -> Ordering {
        self.id().cmp(other.id())
    }
}

impl PartialOrd for RuleId {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

rules! {
    MetadataEncoding => "metadata-encoding", 1, Error, "metadata keys and values are UTF-8 strings (no Parquet entry without a value)";
    MetadataRequired => "metadata-required", 2, Error, "every required metadata key of the effective schema is present";
    VersionPep440 => "version-pep440", 3, Error, "`version` and every `{ext}:version` parse as PEP 440";
    VersionNormalized => "version-normalized", 3, Warning, "a version string is valid PEP 440 but not in normal form";
    VersionUnsupported => "version-unsupported", 4, Error, "`version` is older than 0.2 (0.1 tables are a different format)";
    VersionNewer => "version-newer", 4, Warning, "`version` is newer than 0.2; validated as 0.2 on a best-effort basis";
    UnitInvalid => "unit-invalid", 5, Error, "`unit` is \"\" or one of the 27 UDUNITS-2 length names";
    NeighborhoodSize => "neighborhood-size", 6, Error, "`neighborhood_size` is an ASCII decimal unsigned integer fitting u64";
    NeighborhoodSizeFormat => "neighborhood-size-format", 6, Warning, "`neighborhood_size` has leading zeros or is 0";
    ContextFormat => "context-format", 7, Warning, "`context` is non-empty and an IRI or UUID (RECOMMENDED)";
    SpaceFormat => "space-format", 8, Warning, "`space` is non-empty and an IRI or UUID (RECOMMENDED)";
    ExtensionVersion => "extension-version", 9, Error, "a used extension prefix has a `{ext}:version` key";
    ExtensionKey => "extension-key", 9, Error, "an extension key follows the extension's pattern (e.g. `net.clbarnes.swc:type:{int}`)";
    ExtensionUnknownKey => "extension-unknown-key", 9, Warning, "a key under a known extension prefix that the extension does not define";
    FragKeySchema => "frag-key-schema", 10, Error, "`frag:` keys appear only in schemas descending from point clouds";
    FragKeyFormat => "frag-key-format", 10, Warning, "a `frag:` key has the form `frag:{decimal u64}:{key}`";
    FragKeyFragment => "frag-key-fragment", 10, Warning, "the fragment named by a `frag:` key exists in the table";
    MetadataUnknown => "metadata-unknown", 11, Configurable, "unknown unprefixed metadata key";
    AttrEmptyName => "attr-empty-name", 11, Warning, "an `attr:` key or field with nothing after the prefix";
    Naming => "naming", 12, Warning, "field names and metadata keys are snake_case (local part)";
    FieldDuplicate => "field-duplicate", 13, Error, "no two fields share a name";
    FieldRequired => "field-required", 14, Error, "every required field of the effective schema (and of used extensions) exists";
    FieldType => "field-type", 15, Error, "a known field has the spec's Arrow type (no lossless cast exists)";
    FieldTypeCast => "field-type-cast", 15, Configurable, "a known field has a type that casts losslessly to the spec's (cast applied)";
    FieldNullability => "field-nullability", 16, Configurable, "declared nullability equals the spec's";
    AttrField => "attr-field", 17, Error, "the `attr` field is a nullable map<utf8, utf8|binary>";
    AttrKeyPrefix => "attr-key-prefix", 17, Warning, "keys inside the `attr` map do not start with `attr:`";
    FieldUnknown => "field-unknown", 18, Configurable, "unknown unprefixed field";
    FieldMetadata => "field-metadata", 19, Warning, "field metadata other than `attr:` keys (SHOULD NOT be used)";
    FieldNull => "field-null", 20, Error, "a field the spec calls non-nullable holds no nulls";
    SampleIdUnique => "sample-id-unique", 21, Error, "`sample_id` is unique within the table";
    IdUnique => "id-unique", 21, Error, "other context-unique ids (e.g. `connector_id`) are unique within the table";
    SkeletonRootCount => "skeleton-root-count", 22, Error, "each fragment has exactly one row with a null `parent_id`";
    SkeletonParentMissing => "skeleton-parent-missing", 23, Error, "every non-null `parent_id` is a `sample_id` of the (logical) table";
    SkeletonSelfParent => "skeleton-self-parent", 24, Error, "no sample is its own parent";
    SkeletonParentFragment => "skeleton-parent-fragment", 24, Error, "a parent lies in the same fragment as its child";
    SkeletonCycle => "skeleton-cycle", 24, Error, "parent links contain no cycle";
    DerivedChildIds => "derived-child-ids", 25, Configurable, "non-null `child_ids` equal (as a set) the samples whose parent is the row";
    DerivedNChildren => "derived-n-children", 25, Configurable, "non-null `n_children` equals the number of children";
    DerivedStrahler => "derived-strahler", 25, Configurable, "non-null `strahler` equals the computed Strahler number";
    DerivedLeafNull => "derived-leaf-null", 26, Warning, "known leaves have `[]` / `0` rather than null when the column is populated";
    DerivedNullItem => "derived-null-item", 26, Error, "`child_ids` lists contain no null items";
    RadiusValue => "radius-value", 27, Warning, "`radius` is finite and non-negative";
    CoordinateFinite => "coordinate-finite", 28, Warning, "`x`, `y`, `z` are finite";
    ColinearityRange => "colinearity-range", 29, Configurable, "`colinearity` lies in [0, 1]";
    TangentNormalized => "tangent-normalized", 30, Warning, "tangent vectors have unit length (relative tolerance 1e-6)";
    ConnectionIdUnique => "connection-id-unique", 31, Error, "`connection_id` is unique within the table";
    ConnectionType => "connection-type", 32, Error, "every used `type` is `synapse`, `gap_junction` or `{ext}:{name}` with `{ext}:version` present";
    GapJunctionDuplicate => "gap-junction-duplicate", 33, Warning, "an undirected `gap_junction` is not stored once per direction";
    SelfConnection => "self-connection", 34, Warning, "`src_sample_id` differs from `tgt_sample_id`";
    ContextIdUnique => "context-id-unique", 35, Error, "ids (`sample_id`, `connection_id`, `connector_id`) are unique across the tables of a context";
    ConnectionSampleMissing => "connection-sample-missing", 37, Error, "`src_sample_id`/`tgt_sample_id` exist in a skeletons table of the context";
    DerivedFragmentId => "derived-fragment-id", 38, Configurable, "non-null `src_fragment_id`/`tgt_fragment_id` equal the sample's `fragment_id`";
    ContextSpace => "context-space", 39, Error, "all spatial tables of one context share one `space`";
    ContextSpaceMissing => "context-space-missing", 39, Warning, "some spatial tables of a context set `space` and others do not";
    ContextUnit => "context-unit", 40, Warning, "spatial tables of one context use one `unit`";
    HiveMetadata => "hive-metadata", 41, Error, "every file of a Hive-partitioned table carries identical neurarrow metadata";
    HiveSchema => "hive-schema", 41, Configurable, "every file of a Hive-partitioned table has the table's columns with the table's types, and no others";
    HivePartition => "hive-partition", 41, Error, "partition values restore to the column's spec type and nullability";
    ExtensionConsistency => "extension-consistency", 42, Warning, "extension metadata (e.g. SWC type mappings) agrees across a context";
    FileName => "file-name", 43, Warning, "the file name ends in `.{schema}.arrow` / `.{schema}.parquet`";
    FileFormat => "file-format", 44, Error, "a `.arrow`/`.feather` file is Arrow IPC file format and a `.parquet` file is Parquet";
    AbstractSchema => "abstract-schema", 45, Warning, "an abstract schema (base, spatial) is not written as a file";
    ParquetFooterMetadata => "parquet-footer-metadata", 46, Warning, "Parquet metadata is present as footer key/values, not only in ARROW:schema";
    SchemaUnknown => "schema-unknown", 0, Error, "the table's schema can be identified (explicitly, by file name or by columns)";
    TableUnreadable => "table-unreadable", 0, Error, "the input can be opened and decoded";
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `SkeletonRootCount` -> `skeleton-root-count`.
    fn kebab(variant: &str) -> String {
        let mut s = String::new();
        for c in variant.chars() {
            if c.is_ascii_uppercase() {
                if !s.is_empty() {
                    s.push('-');
                }
                s.push(c.to_ascii_lowercase());
            } else {
                s.push(c);
            }
        }
        s
    }

    #[test]
    fn rule_ids_round_trip() {
        assert_eq!(RuleId::ALL.len(), RULES.len());
        for (i, &r) in RuleId::ALL.iter().enumerate() {
            assert_eq!(r as usize, i);
            assert_eq!(r.rule().id, r.id());
            assert_eq!(r.to_string(), r.id());
            assert_eq!(r.id().parse::<RuleId>(), Ok(r));
            assert_eq!(kebab(&format!("{r:?}")), r.id(), "variant name of {r}");
        }
        assert_eq!(
            "nope".parse::<RuleId>(),
            Err(UnknownRule("nope".to_string()))
        );
        assert_eq!(RuleId::SkeletonCycle.rule().check, 24);
    }

    #[test]
    fn ids_unique_and_documented() {
        for (i, r) in RULES.iter().enumerate() {
            assert!(
                RULES[i + 1..].iter().all(|o| o.id != r.id),
                "duplicate {}",
                r.id
            );
        }
        // docs/neurarrow.md documents every rule.
        let docs = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/neurarrow.md"
        ));
        if let Ok(docs) = docs {
            for r in RULES {
                assert!(
                    docs.contains(&format!("`{}`", r.id)),
                    "docs/neurarrow.md lacks rule {}",
                    r.id
                );
            }
        }
        // Every checklist item 1..=46 except 36 (merged into context-id-unique) has a rule.
        for c in 1..=46u8 {
            if c == 36 {
                continue;
            }
            assert!(RULES.iter().any(|r| r.check == c), "no rule for check {c}");
        }
    }
}
