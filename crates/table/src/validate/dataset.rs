//! Dataset checks across the tables of one context: one `space` and `unit`,
//! ids unique across tables, connection endpoints that exist in a skeletons
//! table (and derived fragment ids that match), consistent SWC type mappings.
//! Each table contributes the [`Facts`] these rules need.

use super::helpers::row_loc;
use super::reporter::Reporter;
use super::run::TableRun;
use super::{TableReport, ValidateOptions};
use crate::rules::RuleId;
use crate::schema::EffectiveSchema;
use std::collections::BTreeMap;

/// Facts about one table that the dataset rules need.
pub(super) struct Facts {
    report: usize,
    schema: EffectiveSchema,
    context: Option<String>,
    space: Option<String>,
    unit: Option<String>,
    swc_types: BTreeMap<String, String>,
    /// `(field, ids)` of context-unique id fields.
    unique: Vec<(String, Vec<u64>)>,
    /// Per-row sample id and fragment id (sample tables).
    samples: Option<(Vec<u64>, Vec<u64>)>,
    /// Connection endpoints and derived fragment ids.
    conns: Option<ConnFacts>,
}

struct ConnFacts {
    ids: Vec<u64>,
    src: Vec<u64>,
    tgt: Vec<u64>,
    src_frag: Vec<Option<u64>>,
    tgt_frag: Vec<Option<u64>>,
}

impl TableRun<'_> {
    /// Hands the kept columns and context metadata over to the dataset checks.
    pub(super) fn facts(&mut self, report: usize) -> Facts {
        let m = &self.meta;
        let swc_types: BTreeMap<String, String> = m
            .iter()
            .filter(|(k, _)| k.starts_with("net.clbarnes.swc:type:"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let n = self.col.rows as usize;
        let samples = (self.schema.traits.samples
            && self.col.sample_ids.len() == n
            && self.col.frag_rows.len() == n)
            .then(|| {
                let f: Vec<u64> = self
                    .col
                    .frag_rows
                    .iter()
                    .map(|&i| self.col.fragments.ids[i as usize])
                    .collect();
                (std::mem::take(&mut self.col.sample_ids), f)
            });
        let mut unique: Vec<(String, Vec<u64>)> = std::mem::take(&mut self.col.unique)
            .into_iter()
            .filter(|(_, v)| v.len() == n)
            .collect();
        if let Some((ids, _)) = &samples {
            unique.push(("sample_id".into(), ids.clone()));
        }
        let conns = (self.schema.traits.connections
            && self.col.conn_src.len() == n
            && self.col.conn_tgt.len() == n)
            .then(|| ConnFacts {
                ids: unique
                    .iter()
                    .find(|(k, _)| k == "connection_id")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default(),
                src: std::mem::take(&mut self.col.conn_src),
                tgt: std::mem::take(&mut self.col.conn_tgt),
                src_frag: std::mem::take(&mut self.col.conn_src_frag),
                tgt_frag: std::mem::take(&mut self.col.conn_tgt_frag),
            });
        Facts {
            report,
            schema: self.schema.clone(),
            context: m.get("context").cloned(),
            space: m.get("space").cloned(),
            unit: m.get("unit").cloned(),
            swc_types,
            unique,
            samples,
            conns,
        }
    }
}

/// Runs the dataset rules and appends their violations to the reports.
pub(super) fn dataset_checks(reports: &mut [TableReport], facts: &[Facts], opts: &ValidateOptions) {
    let mut reps: Vec<Reporter> = (0..reports.len())
        .map(|_| Reporter::new(opts.strict, opts.max_per_rule))
        .collect();
    let mut contexts: BTreeMap<&str, Vec<&Facts>> = BTreeMap::new();
    for f in facts {
        if let Some(c) = &f.context {
            contexts.entry(c.as_str()).or_default().push(f);
        }
    }
    let name = |i: usize| reports[i].path.display().to_string();
    for (ctx, group) in &contexts {
        if group.len() < 2 {
            continue;
        }
        // 39/40: one space (and unit) per context.
        let spatial: Vec<&&Facts> = group.iter().filter(|f| f.schema.is_a("spatial")).collect();
        if let Some(first) = spatial.iter().find(|f| f.space.is_some()) {
            let s0 = first.space.clone().unwrap_or_default();
            for f in &spatial {
                match &f.space {
                    Some(s) if *s != s0 => reps[f.report].report(
                        RuleId::ContextSpace,
                        "metadata \"space\"",
                        format!(
                            "space {s:?} differs from {s0:?} in {} (context {ctx:?})",
                            name(first.report)
                        ),
                    ),
                    None => reps[f.report].report(
                        RuleId::ContextSpaceMissing,
                        "metadata \"space\"",
                        format!(
                            "no space, while {} sets {s0:?} (context {ctx:?})",
                            name(first.report)
                        ),
                    ),
                    _ => {}
                }
            }
        }
        if let Some(first) = spatial.iter().find(|f| f.unit.is_some()) {
            let u0 = first.unit.clone().unwrap_or_default();
            for f in &spatial {
                if let Some(u) = &f.unit {
                    if *u != u0 {
                        reps[f.report].report(
                            RuleId::ContextUnit,
                            "metadata \"unit\"",
                            format!("unit {u:?} differs from {u0:?} in {}", name(first.report)),
                        );
                    }
                }
            }
        }
        // 35/36: ids unique across the context's tables.
        let mut by_field: BTreeMap<&str, Vec<(&Facts, &Vec<u64>)>> = BTreeMap::new();
        for f in group {
            for (k, v) in &f.unique {
                by_field.entry(k.as_str()).or_default().push((f, v));
            }
        }
        for (field, tables) in by_field {
            if tables.len() < 2 {
                continue;
            }
            let mut all: Vec<(u64, usize, u32)> = Vec::new();
            for (t, ids) in &tables {
                all.extend(
                    ids.iter()
                        .enumerate()
                        .map(|(r, &id)| (id, t.report, r as u32)),
                );
            }
            all.sort_unstable();
            for w in all.windows(2) {
                if w[0].0 == w[1].0 && w[0].1 != w[1].1 {
                    let (id, other, row) = (w[0].0, w[0].1, w[1].2);
                    let other_name = name(other);
                    reps[w[1].1].lazy(RuleId::ContextIdUnique, || {
                        (
                            row_loc(row as u64, field, Some(id)),
                            format!("{field} {id} also appears in {other_name} (context {ctx:?})"),
                        )
                    });
                }
            }
        }
        // 37/38: connections refer to samples of the context.
        let skel: Vec<&&Facts> = group
            .iter()
            .filter(|f| f.samples.is_some() && f.schema.is_a("skeletons"))
            .collect();
        let other: Vec<&&Facts> = group
            .iter()
            .filter(|f| f.samples.is_some() && !f.schema.is_a("skeletons"))
            .collect();
        let conns: Vec<&&Facts> = group.iter().filter(|f| f.conns.is_some()).collect();
        if conns.is_empty() || (skel.is_empty() && (opts.strict || other.is_empty())) {
            continue;
        }
        let build = |tables: &[&&Facts]| -> Vec<(u64, u64)> {
            let mut v: Vec<(u64, u64)> = Vec::new();
            for t in tables {
                if let Some((ids, frags)) = &t.samples {
                    v.extend(ids.iter().copied().zip(frags.iter().copied()));
                }
            }
            v.sort_unstable();
            v
        };
        let primary = if opts.strict {
            build(&skel)
        } else {
            let mut all = skel.clone();
            all.extend(other.iter());
            build(&all)
        };
        let secondary = if opts.strict { build(&other) } else { vec![] };
        let lookup = |v: &[(u64, u64)], id: u64| -> Option<u64> {
            let i = v.partition_point(|p| p.0 < id);
            v.get(i).filter(|p| p.0 == id).map(|p| p.1)
        };
        for c in conns {
            let Some(cf) = &c.conns else { continue };
            let rep = &mut reps[c.report];
            for (which, ends, frags) in [
                ("src", &cf.src, &cf.src_frag),
                ("tgt", &cf.tgt, &cf.tgt_frag),
            ] {
                for (r, &sid) in ends.iter().enumerate() {
                    let cid = cf.ids.get(r).copied();
                    match lookup(&primary, sid) {
                        None => {
                            let elsewhere = lookup(&secondary, sid).is_some();
                            rep.lazy(RuleId::ConnectionSampleMissing, || {
                                (
                                    row_loc(r as u64, "connection_id", cid),
                                    if elsewhere {
                                        format!("{which}_sample_id {sid} is only in a non-skeleton table (strict mode resolves against skeletons)")
                                    } else {
                                        format!("{which}_sample_id {sid} is not a sample of any skeleton table of context {ctx:?}")
                                    },
                                )
                            });
                        }
                        Some(fid) => {
                            if let Some(Some(g)) = frags.get(r) {
                                if *g != fid {
                                    let g = *g;
                                    rep.lazy(RuleId::DerivedFragmentId, || {
                                        (
                                            row_loc(r as u64, "connection_id", cid),
                                            format!("{which}_fragment_id {g}, but sample {sid} is in fragment {fid}"),
                                        )
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
        // 42: SWC type mappings agree.
        let swc: Vec<&&Facts> = group.iter().filter(|f| !f.swc_types.is_empty()).collect();
        if let Some(first) = swc.first() {
            for f in swc.iter().skip(1) {
                let differ: Vec<&String> = f
                    .swc_types
                    .iter()
                    .filter(|(k, v)| first.swc_types.get(*k).is_some_and(|v0| v0 != *v))
                    .map(|(k, _)| k)
                    .collect();
                if !differ.is_empty() {
                    reps[f.report].report(
                        RuleId::ExtensionConsistency,
                        "metadata",
                        format!(
                            "SWC type mapping differs from {} for {}",
                            name(first.report),
                            differ
                                .iter()
                                .map(|s| s.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    );
                }
            }
        }
    }
    for (i, rep) in reps.into_iter().enumerate() {
        let (e, w) = rep.finish();
        reports[i].errors.extend(e);
        reports[i].warnings.extend(w);
    }
}
