//! The catalogue of validation rules: id, checklist number, grade and summary.
//!
//! Every violation the validator reports names one of these rules. A rule's grade
//! is fixed: `Error` (a MUST is broken), `Warning` (a SHOULD is broken, or a lint),
//! or `Configurable` (an inferred rule, or one the spec softens: a warning by
//! default and an error with `--strict`). `docs/neurarrow.md` lists the same table.

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

macro_rules! rules {
    ($($id:literal, $check:literal, $grade:ident, $summary:literal;)*) => {
        /// All rules, in checklist order.
        pub const RULES: &[Rule] = &[$(Rule { id: $id, check: $check, grade: Grade::$grade, summary: $summary },)*];
    };
}

rules! {
    "metadata-encoding", 1, Error, "metadata keys and values are UTF-8 strings (no Parquet entry without a value)";
    "metadata-required", 2, Error, "every required metadata key of the effective schema is present";
    "version-pep440", 3, Error, "`version` and every `{ext}:version` parse as PEP 440";
    "version-normalized", 3, Warning, "a version string is valid PEP 440 but not in normal form";
    "version-unsupported", 4, Error, "`version` is older than 0.2 (0.1 tables are a different format)";
    "version-newer", 4, Warning, "`version` is newer than 0.2; validated as 0.2 on a best-effort basis";
    "unit-invalid", 5, Error, "`unit` is \"\" or one of the 27 UDUNITS-2 length names";
    "neighborhood-size", 6, Error, "`neighborhood_size` is an ASCII decimal unsigned integer fitting u64";
    "neighborhood-size-format", 6, Warning, "`neighborhood_size` has leading zeros or is 0";
    "context-format", 7, Warning, "`context` is non-empty and an IRI or UUID (RECOMMENDED)";
    "space-format", 8, Warning, "`space` is non-empty and an IRI or UUID (RECOMMENDED)";
    "extension-version", 9, Error, "a used extension prefix has a `{ext}:version` key";
    "extension-key", 9, Error, "an extension key follows the extension's pattern (e.g. `net.clbarnes.swc:type:{int}`)";
    "extension-unknown-key", 9, Warning, "a key under a known extension prefix that the extension does not define";
    "frag-key-schema", 10, Error, "`frag:` keys appear only in schemas descending from point clouds";
    "frag-key-format", 10, Warning, "a `frag:` key has the form `frag:{decimal u64}:{key}`";
    "frag-key-fragment", 10, Warning, "the fragment named by a `frag:` key exists in the table";
    "metadata-unknown", 11, Configurable, "unknown unprefixed metadata key";
    "attr-empty-name", 11, Warning, "an `attr:` key or field with nothing after the prefix";
    "naming", 12, Warning, "field names and metadata keys are snake_case (local part)";
    "field-duplicate", 13, Error, "no two fields share a name";
    "field-required", 14, Error, "every required field of the effective schema (and of used extensions) exists";
    "field-type", 15, Error, "a known field has the spec's Arrow type (no lossless cast exists)";
    "field-type-cast", 15, Configurable, "a known field has a type that casts losslessly to the spec's (cast applied)";
    "field-nullability", 16, Configurable, "declared nullability equals the spec's";
    "attr-field", 17, Error, "the `attr` field is a nullable map<utf8, utf8|binary>";
    "attr-key-prefix", 17, Warning, "keys inside the `attr` map do not start with `attr:`";
    "field-unknown", 18, Configurable, "unknown unprefixed field";
    "field-metadata", 19, Warning, "field metadata other than `attr:` keys (SHOULD NOT be used)";
    "field-null", 20, Error, "a field the spec calls non-nullable holds no nulls";
    "sample-id-unique", 21, Error, "`sample_id` is unique within the table";
    "id-unique", 21, Error, "other context-unique ids (e.g. `connector_id`) are unique within the table";
    "skeleton-root-count", 22, Error, "each fragment has exactly one row with a null `parent_id`";
    "skeleton-parent-missing", 23, Error, "every non-null `parent_id` is a `sample_id` of the (logical) table";
    "skeleton-self-parent", 24, Error, "no sample is its own parent";
    "skeleton-parent-fragment", 24, Error, "a parent lies in the same fragment as its child";
    "skeleton-cycle", 24, Error, "parent links contain no cycle";
    "derived-child-ids", 25, Configurable, "non-null `child_ids` equal (as a set) the samples whose parent is the row";
    "derived-n-children", 25, Configurable, "non-null `n_children` equals the number of children";
    "derived-strahler", 25, Configurable, "non-null `strahler` equals the computed Strahler number";
    "derived-leaf-null", 26, Warning, "known leaves have `[]` / `0` rather than null when the column is populated";
    "derived-null-item", 26, Error, "`child_ids` lists contain no null items";
    "radius-value", 27, Warning, "`radius` is finite and non-negative";
    "coordinate-finite", 28, Warning, "`x`, `y`, `z` are finite";
    "colinearity-range", 29, Configurable, "`colinearity` lies in [0, 1]";
    "tangent-normalized", 30, Warning, "tangent vectors have unit length (relative tolerance 1e-6)";
    "connection-id-unique", 31, Error, "`connection_id` is unique within the table";
    "connection-type", 32, Error, "every used `type` is `synapse`, `gap_junction` or `{ext}:{name}` with `{ext}:version` present";
    "gap-junction-duplicate", 33, Warning, "an undirected `gap_junction` is not stored once per direction";
    "self-connection", 34, Warning, "`src_sample_id` differs from `tgt_sample_id`";
    "context-id-unique", 35, Error, "ids (`sample_id`, `connection_id`, `connector_id`) are unique across the tables of a context";
    "connection-sample-missing", 37, Error, "`src_sample_id`/`tgt_sample_id` exist in a skeletons table of the context";
    "derived-fragment-id", 38, Configurable, "non-null `src_fragment_id`/`tgt_fragment_id` equal the sample's `fragment_id`";
    "context-space", 39, Error, "all spatial tables of one context share one `space`";
    "context-space-missing", 39, Warning, "some spatial tables of a context set `space` and others do not";
    "context-unit", 40, Warning, "spatial tables of one context use one `unit`";
    "hive-metadata", 41, Error, "every file of a Hive-partitioned table carries identical neurarrow metadata";
    "hive-partition", 41, Error, "partition values restore to the column's spec type and nullability";
    "extension-consistency", 42, Warning, "extension metadata (e.g. SWC type mappings) agrees across a context";
    "file-name", 43, Warning, "the file name ends in `.{schema}.arrow` / `.{schema}.parquet`";
    "file-format", 44, Error, "a `.arrow`/`.feather` file is Arrow IPC file format and a `.parquet` file is Parquet";
    "abstract-schema", 45, Warning, "an abstract schema (base, spatial) is not written as a file";
    "parquet-footer-metadata", 46, Warning, "Parquet metadata is present as footer key/values, not only in ARROW:schema";
    "schema-unknown", 0, Error, "the table's schema can be identified (explicitly, by file name or by columns)";
    "table-unreadable", 0, Error, "the input can be opened and decoded";
}

/// Looks a rule up by id.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_unique_and_found() {
        for (i, r) in RULES.iter().enumerate() {
            assert!(
                RULES[i + 1..].iter().all(|o| o.id != r.id),
                "duplicate {}",
                r.id
            );
        }
        assert_eq!(rule("skeleton-cycle").unwrap().check, 24);
        assert!(rule("nope").is_none());
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
