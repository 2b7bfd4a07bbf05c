//! Skeleton checks on the logical table: one root per fragment, parents that
//! exist, lie in the same fragment and form no cycle (no self-parents); then,
//! when the tree is sound, the derived fields `child_ids`, `n_children` and
//! `strahler` against the computed tree (a second, projected pass).

use super::helpers::row_loc;
use super::run::TableRun;
use crate::error::TableError;
use crate::rules::RuleId;
use crate::tree::{build_forest, resolve_parents, IdIndex, Tree, TreeProblems};
use arrow::array::{Array, AsArray};
use arrow::datatypes::{UInt32Type, UInt64Type};
use std::collections::HashMap;

impl TableRun<'_> {
    /// Builds the forest from the kept parent links and reports its problems;
    /// checks the derived fields when the tree is sound and the ids are unique.
    pub(super) fn check_skeleton(
        &mut self,
        ids: &[u64],
        index: IdIndex,
        ids_unique: bool,
    ) -> Result<(), TableError> {
        let parents = std::mem::take(&mut self.col.parents);
        let valid = std::mem::take(&mut self.col.parent_valid);
        let (parent_row, problems) = resolve_parents(ids, &parents, &valid, &index);
        drop((parents, valid, index));
        let (tree, problems) = build_forest(
            parent_row,
            &self.col.frag_rows,
            &self.col.fragments.ids,
            problems,
        );
        self.report_tree(ids, &problems);
        if problems.is_clean() && ids_unique {
            self.check_derived(ids, &tree)?;
        }
        Ok(())
    }

    /// Reports roots, missing and self parents, cross-fragment parents and
    /// cycles; counts the problems beyond the kept ones for the summary.
    fn report_tree(&mut self, ids: &[u64], p: &TreeProblems) {
        for (fid, count, rows) in &p.root_counts {
            let roots: Vec<String> = rows.iter().map(|&r| ids[r as usize].to_string()).collect();
            let msg = if *count == 0 {
                "fragment has no root (no sample with a null parent_id)".to_string()
            } else {
                format!(
                    "fragment has {count} roots (samples {}{}); exactly one is required",
                    roots.join(", "),
                    if (*count as usize) > roots.len() {
                        ", ..."
                    } else {
                        ""
                    }
                )
            };
            self.rep
                .report(RuleId::SkeletonRootCount, format!("fragment {fid}"), msg);
        }
        for &(r, parent) in &p.missing_parent {
            let r = r as usize;
            self.rep.report(
                RuleId::SkeletonParentMissing,
                row_loc(r as u64, "sample_id", Some(ids[r])),
                format!("parent_id {parent} is not a sample_id of the table"),
            );
        }
        for &r in &p.self_parent {
            let r = r as usize;
            self.rep.report(
                RuleId::SkeletonSelfParent,
                row_loc(r as u64, "sample_id", Some(ids[r])),
                "sample is its own parent",
            );
        }
        for &(r, pr) in &p.cross_fragment {
            let (r, pr) = (r as usize, pr as usize);
            let (fc, fp) = (
                self.col.fragments.ids[self.col.frag_rows[r] as usize],
                self.col.fragments.ids[self.col.frag_rows[pr] as usize],
            );
            self.rep.report(
                RuleId::SkeletonParentFragment,
                row_loc(r as u64, "sample_id", Some(ids[r])),
                format!(
                    "parent {} is in fragment {fp}, the sample in fragment {fc}",
                    ids[pr]
                ),
            );
        }
        for (members, len) in &p.cycles {
            let m: Vec<String> = members
                .iter()
                .map(|&r| ids[r as usize].to_string())
                .collect();
            let fid = self.col.fragments.ids[self.col.frag_rows[members[0] as usize] as usize];
            self.rep.report(
                RuleId::SkeletonCycle,
                format!("fragment {fid}"),
                format!(
                    "parent links form a cycle of {len} sample(s): {}{}",
                    m.join(" -> "),
                    if *len > m.len() { " -> ..." } else { "" }
                ),
            );
        }
        for (i, total) in p.counts.iter().enumerate() {
            let (rule, kept) = match i {
                0 => (RuleId::SkeletonParentMissing, p.missing_parent.len()),
                1 => (RuleId::SkeletonSelfParent, p.self_parent.len()),
                2 => (RuleId::SkeletonParentFragment, p.cross_fragment.len()),
                3 => (RuleId::SkeletonRootCount, p.root_counts.len()),
                _ => (RuleId::SkeletonCycle, p.cycles.len()),
            };
            if *total > kept {
                // Make the summary count right: register the unreported ones.
                for _ in kept..*total {
                    self.rep
                        .lazy(rule, || ("table".into(), "(not kept)".into()));
                }
            }
        }
    }

    /// Compares non-null `child_ids`, `n_children` and `strahler` with the tree,
    /// and reports leaves left null in a populated column.
    fn check_derived(&mut self, ids: &[u64], tree: &Tree) -> Result<(), TableError> {
        let cols: Vec<String> = ["child_ids", "n_children", "strahler"]
            .iter()
            .filter(|c| self.has_usable(c))
            .map(|c| c.to_string())
            .collect();
        if cols.is_empty() {
            return Ok(());
        }
        let populated =
            |name: &str, m: &HashMap<String, usize>| m.get(name).copied().unwrap_or(0) > 0;
        let pop_children = populated("child_ids", &self.col.derived_non_null);
        let pop_n = populated("n_children", &self.col.derived_non_null);
        let plan_idx: Vec<Option<usize>> = ["child_ids", "n_children", "strahler"]
            .iter()
            .map(|c| self.plans.iter().position(|p| p.name == *c && !p.unusable))
            .collect();
        let mut offset = 0usize;
        let mut got: Vec<u64> = Vec::new();
        let mut want: Vec<u64> = Vec::new();
        let mut stats = [(0u64, 0usize); 5];
        for batch in self.src.batches_projected(&cols, self.opts.batch_size)? {
            let batch = batch?;
            let rows = batch.num_rows();
            if offset + rows > tree.len() {
                return Err(TableError::data(
                    self.src.path(),
                    "the table changed while it was being read",
                ));
            }
            if let Some(Some(a)) = plan_idx[0].map(|i| self.prepared(&batch, i)) {
                if let Some(l) = a.as_list_opt::<i32>() {
                    if let Some(vals) = l.values().as_primitive_opt::<UInt64Type>() {
                        let offs = l.value_offsets();
                        for r in 0..rows {
                            let row = offset + r;
                            let kids = tree.children_of(row);
                            if l.is_null(r) {
                                if kids.is_empty() && pop_children {
                                    stats[3].0 += 1;
                                    if stats[3].0 == 1 {
                                        stats[3].1 = row;
                                    }
                                }
                                continue;
                            }
                            let (s, e) = (offs[r] as usize, offs[r + 1] as usize);
                            let same = if e - s != kids.len() {
                                false
                            } else {
                                got.clear();
                                got.extend_from_slice(&vals.values()[s..e]);
                                want.clear();
                                want.extend(kids.iter().map(|&k| ids[k as usize]));
                                got.sort_unstable();
                                want.sort_unstable();
                                got == want
                            };
                            if !same {
                                stats[0].0 += 1;
                                if stats[0].0 <= self.opts.max_per_rule as u64 {
                                    want.clear();
                                    want.extend(kids.iter().map(|&k| ids[k as usize]));
                                    want.sort_unstable();
                                    let g: Vec<u64> = vals.values()[s..e].to_vec();
                                    let w = want.clone();
                                    self.rep.lazy(RuleId::DerivedChildIds, || {
                                        (
                                            row_loc(row as u64, "sample_id", Some(ids[row])),
                                            format!("child_ids {g:?}, computed {w:?}"),
                                        )
                                    });
                                } else {
                                    self.rep.lazy(RuleId::DerivedChildIds, || {
                                        (String::new(), String::new())
                                    });
                                }
                            }
                        }
                    }
                }
            }
            if let Some(Some(a)) = plan_idx[1].map(|i| self.prepared(&batch, i)) {
                if let Some(a) = a.as_primitive_opt::<UInt32Type>() {
                    for r in 0..rows {
                        let row = offset + r;
                        let k = tree.children_of(row).len() as u32;
                        if a.is_null(r) {
                            if k == 0 && pop_n {
                                stats[4].0 += 1;
                                if stats[4].0 == 1 {
                                    stats[4].1 = row;
                                }
                            }
                            continue;
                        }
                        let v = a.values()[r];
                        if v != k {
                            self.rep.lazy(RuleId::DerivedNChildren, || {
                                (
                                    row_loc(row as u64, "sample_id", Some(ids[row])),
                                    format!("n_children {v}, computed {k}"),
                                )
                            });
                        }
                    }
                }
            }
            if let Some(Some(a)) = plan_idx[2].map(|i| self.prepared(&batch, i)) {
                if let Some(a) = a.as_primitive_opt::<UInt32Type>() {
                    for r in 0..rows {
                        let row = offset + r;
                        if a.is_null(r) {
                            continue;
                        }
                        let (v, s) = (a.values()[r], tree.strahler[row]);
                        if v != s {
                            self.rep.lazy(RuleId::DerivedStrahler, || {
                                (
                                    row_loc(row as u64, "sample_id", Some(ids[row])),
                                    format!("strahler {v}, computed {s}"),
                                )
                            });
                        }
                    }
                }
            }
            offset += rows;
        }
        for (i, name) in [(3, "child_ids"), (4, "n_children")] {
            let (count, first) = stats[i];
            if count > 0 {
                self.rep.report(
                    RuleId::DerivedLeafNull,
                    format!("row {first}"),
                    format!(
                        "{count} leaf row(s) have a null {name}; known leaves SHOULD have {}",
                        if name == "child_ids" { "[]" } else { "0" }
                    ),
                );
            }
        }
        Ok(())
    }
}
