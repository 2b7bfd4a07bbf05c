//! One table through the checks: identify the schema, then file, metadata and
//! field checks, the streamed row pass and the table-wide checks after it; the
//! state kept between them ([`TableRun`], [`Collected`]).

use super::dataset::Facts;
use super::fields::ColumnPlan;
use super::file::unreadable;
use super::reporter::Reporter;
use super::{identify, TableReport, ValidateOptions};
use crate::io::TableSource;
use crate::rules::RuleId;
use crate::schema::EffectiveSchema;
use crate::tree::FragmentInterner;
use arrow::array::ArrayRef;
use std::collections::{BTreeMap, HashMap};

/// Columns and state kept across batches.
#[derive(Default)]
pub(super) struct Collected {
    pub(super) rows: u64,
    pub(super) sample_ids: Vec<u64>,
    pub(super) fragments: FragmentInterner,
    pub(super) frag_rows: Vec<u32>,
    pub(super) parents: Vec<u64>,
    pub(super) parent_valid: Vec<bool>,
    /// Other context-unique id columns (connection_id, connector_id).
    pub(super) unique: BTreeMap<String, Vec<u64>>,
    pub(super) conn_src: Vec<u64>,
    pub(super) conn_tgt: Vec<u64>,
    pub(super) conn_src_frag: Vec<Option<u64>>,
    pub(super) conn_tgt_frag: Vec<Option<u64>>,
    /// `(src, tgt, row)` of gap junctions.
    pub(super) gap: Vec<(u64, u64, u32)>,
    pub(super) checked_dicts: Vec<ArrayRef>,
    pub(super) derived_non_null: HashMap<String, usize>,
}

/// The validation of one table, from the file checks to the facts handed to the
/// dataset checks.
pub(super) struct TableRun<'a> {
    pub(super) opts: &'a ValidateOptions,
    pub(super) src: &'a TableSource,
    pub(super) schema: EffectiveSchema,
    pub(super) meta: HashMap<String, String>,
    pub(super) rep: Reporter,
    /// One plan per known field present (see `check_fields`).
    pub(super) plans: Vec<ColumnPlan>,
    /// Extension prefixes in use, with where each was first seen.
    pub(super) used_prefixes: BTreeMap<String, String>,
    /// `frag:` keys and the fragment each names.
    pub(super) frag_keys: Vec<(String, u64)>,
    pub(super) col: Collected,
    /// Per field: nulls in a non-nullable field, first row.
    pub(super) null_counts: BTreeMap<String, (u64, u64)>,
    /// Per aggregated rule: rows, first row, message (see `tally`).
    pub(super) counters: BTreeMap<RuleId, (u64, u64, String)>,
}

impl<'a> TableRun<'a> {
    fn new(opts: &'a ValidateOptions, src: &'a TableSource, schema: EffectiveSchema) -> Self {
        TableRun {
            opts,
            src,
            schema,
            meta: HashMap::from(src.schema().metadata()),
            rep: Reporter::new(opts.strict, opts.max_per_rule),
            plans: vec![],
            used_prefixes: BTreeMap::new(),
            frag_keys: vec![],
            col: Collected::default(),
            null_counts: BTreeMap::new(),
            counters: BTreeMap::new(),
        }
    }

    fn plan(&self, name: &str) -> Option<&ColumnPlan> {
        self.plans.iter().find(|p| p.name == name && !p.unusable)
    }

    pub(super) fn has_usable(&self, name: &str) -> bool {
        self.plan(name).is_some()
    }

    /// Counts an aggregated row-level problem; reported once after the pass.
    pub(super) fn tally(
        &mut self,
        id: RuleId,
        n: u64,
        first_row: u64,
        what: impl FnOnce() -> String,
    ) {
        if n == 0 {
            return;
        }
        match self.counters.get_mut(&id) {
            Some(e) => e.0 += n,
            None => {
                self.counters.insert(id, (n, first_row, what()));
            }
        }
    }
}

/// Validates one table; also returns its facts for the dataset checks when
/// `keep_facts`.
pub(super) fn run_table(
    src: &TableSource,
    opts: &ValidateOptions,
    keep_facts: bool,
    report_index: usize,
) -> (TableReport, Option<Facts>) {
    let path = src.path().to_path_buf();
    let Some((schema, how)) = identify(&opts.registry, opts.schema.as_deref(), src) else {
        let mut rep = Reporter::new(opts.strict, opts.max_per_rule);
        rep.report(
            RuleId::SchemaUnknown,
            "table",
            "cannot identify the schema from the file name or the columns; pass --schema",
        );
        let (errors, warnings) = rep.finish();
        return (
            TableReport {
                path,
                schema: None,
                schema_source: None,
                format: Some(src.format()),
                rows: 0,
                errors,
                warnings,
                unreadable: false,
            },
            None,
        );
    };
    let mut run = TableRun::new(opts, src, schema);
    run.check_file();
    run.check_metadata();
    run.check_fields();
    let result = run.row_pass().and_then(|_| run.post());
    if let Err(e) = result {
        return (unreadable(&path, &e, Some(src.format())), None);
    }
    let facts = keep_facts.then(|| run.facts(report_index));
    let rows = run.col.rows;
    let name = run.schema.name.clone();
    let (errors, warnings) = run.rep.finish();
    (
        TableReport {
            path,
            schema: Some(name),
            schema_source: Some(how),
            format: Some(src.format()),
            rows,
            errors,
            warnings,
            unreadable: false,
        },
        facts,
    )
}
