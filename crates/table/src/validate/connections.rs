//! Connection checks: `type` values (`synapse`, `gap_junction` or an extension
//! type whose `{ext}:version` is present), self-connections, and undirected gap
//! junctions stored once per direction. Keeps the endpoints and fragment ids for
//! the dataset checks.

use super::helpers::u64_col;
use super::run::TableRun;
use crate::rules::RuleId;
use crate::schema::{is_reserved_prefix, split_prefix};
use arrow::array::{Array, ArrayRef, AsArray, UInt64Array};
use arrow::datatypes::UInt16Type;
use std::collections::HashMap;
use std::sync::Arc;

impl TableRun<'_> {
    /// Row pass of a connections batch: keeps endpoints and derived fragment
    /// ids, counts self-connections, checks the `type` column.
    pub(super) fn connection_rows(
        &mut self,
        arrays: &HashMap<String, ArrayRef>,
        n: usize,
        offset: u64,
    ) {
        let src = u64_col(arrays, "src_sample_id");
        let tgt = u64_col(arrays, "tgt_sample_id");
        if let (Some(s), Some(t)) = (src, tgt) {
            self.col.conn_src.extend_from_slice(s.values());
            self.col.conn_tgt.extend_from_slice(t.values());
            let mut selfc = 0u64;
            let mut first = None;
            for r in 0..n {
                if s.values()[r] == t.values()[r] {
                    selfc += 1;
                    first.get_or_insert(r);
                }
            }
            let f = offset + first.unwrap_or(0) as u64;
            self.tally(RuleId::SelfConnection, selfc, f, || {
                "src_sample_id equals tgt_sample_id".into()
            });
        }
        for (name, which) in [("src_fragment_id", 0), ("tgt_fragment_id", 1)] {
            if let Some(a) = u64_col(arrays, name) {
                let v = if which == 0 {
                    &mut self.col.conn_src_frag
                } else {
                    &mut self.col.conn_tgt_frag
                };
                v.extend(a.iter());
            }
        }
        if let Some(t) = arrays.get("type").cloned() {
            self.check_types(&t, src, tgt, offset);
        }
    }

    /// Checks the `type` values rows use (dictionary values are checked once per
    /// dictionary), counts rows keyed to a null value as nulls, keeps the
    /// endpoints of gap junctions.
    fn check_types(
        &mut self,
        col: &ArrayRef,
        src: Option<&UInt64Array>,
        tgt: Option<&UInt64Array>,
        offset: u64,
    ) {
        let Some(dict) = col.as_dictionary_opt::<UInt16Type>() else {
            return;
        };
        let Some(values) = dict.values().as_string_opt::<i32>() else {
            return;
        };
        let keys = dict.keys();
        let mut used = vec![false; values.len()];
        let mut gap = vec![false; values.len()];
        for k in keys.iter().flatten() {
            if let Some(u) = used.get_mut(k as usize) {
                *u = true;
            }
        }
        let already = self
            .col
            .checked_dicts
            .iter()
            .any(|d| Arc::ptr_eq(d, dict.values()));
        let mut null_value_rows = 0u64;
        let mut first_null = None;
        for (i, u) in used.iter().enumerate() {
            if !*u {
                continue;
            }
            if values.is_null(i) {
                for (r, k) in keys.iter().enumerate() {
                    if k == Some(i as u16) {
                        null_value_rows += 1;
                        first_null.get_or_insert(r);
                    }
                }
                continue;
            }
            let v = values.value(i);
            if v == "gap_junction" {
                gap[i] = true;
            }
            if already || v == "synapse" || v == "gap_junction" {
                continue;
            }
            let first_row =
                keys.iter().position(|k| k == Some(i as u16)).unwrap_or(0) as u64 + offset;
            match split_prefix(v) {
                Some((p, name)) if !name.is_empty() && !p.is_empty() && !is_reserved_prefix(p) => {
                    let key = format!("{p}:version");
                    if !self.meta.contains_key(&key) {
                        self.rep.report(
                            RuleId::ConnectionType,
                            format!("row {first_row}"),
                            format!("extension type {v:?} requires metadata {key:?}"),
                        );
                    }
                }
                _ => self.rep.report(
                    RuleId::ConnectionType,
                    format!("row {first_row}"),
                    format!("{v:?} is not a connection type (synapse, gap_junction or {{ext}}:{{name}})"),
                ),
            }
        }
        if null_value_rows > 0 {
            let e = self
                .null_counts
                .entry("type".into())
                .or_insert((0, offset + first_null.unwrap_or(0) as u64));
            e.0 += null_value_rows;
        }
        if !already {
            self.col.checked_dicts.push(dict.values().clone());
        }
        if let (Some(s), Some(t)) = (src, tgt) {
            if gap.iter().any(|&g| g) {
                for (r, k) in keys.iter().enumerate() {
                    if let Some(k) = k {
                        if gap.get(k as usize).copied().unwrap_or(false) {
                            self.col.gap.push((
                                s.values()[r],
                                t.values()[r],
                                (offset + r as u64) as u32,
                            ));
                        }
                    }
                }
            }
        }
    }

    /// Reports gap junctions stored in both directions (after the row pass).
    pub(super) fn check_gap_junctions(&mut self) {
        if self.col.gap.is_empty() {
            return;
        }
        let mut g: Vec<(u64, u64, bool, u32)> = self
            .col
            .gap
            .iter()
            .filter(|(s, t, _)| s != t)
            .map(|&(s, t, r)| (s.min(t), s.max(t), s <= t, r))
            .collect();
        g.sort_unstable();
        let mut i = 0;
        while i < g.len() {
            let mut j = i;
            while j < g.len() && g[j].0 == g[i].0 && g[j].1 == g[i].1 {
                j += 1;
            }
            let fwd = g[i..j].iter().find(|e| e.2);
            let back = g[i..j].iter().find(|e| !e.2);
            if let (Some(a), Some(b)) = (fwd, back) {
                let (lo, hi) = (g[i].0, g[i].1);
                let (ra, rb) = (a.3.min(b.3), a.3.max(b.3));
                self.rep.lazy(RuleId::GapJunctionDuplicate, || {
                    (
                        format!("row {rb}"),
                        format!("gap_junction between samples {lo} and {hi} is stored in both directions (also row {ra})"),
                    )
                });
            }
            i = j;
        }
    }
}
