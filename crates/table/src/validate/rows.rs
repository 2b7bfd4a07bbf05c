//! Row-level checks, streamed batch by batch: nulls in non-nullable fields,
//! radius, coordinates, tangents, colinearity, `child_ids` items and `attr` map
//! keys (aggregated per rule); then, after the pass, `sample_id` and other ids
//! unique within the table and `frag:` keys naming existing fragments. Keeps the
//! columns the skeleton, connection and dataset checks need.

use super::helpers::{row_loc, u64_col};
use super::run::TableRun;
use crate::error::TableError;
use crate::rules::RuleId;
use crate::tree::IdIndex;
use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::Float64Type;
use std::collections::HashMap;

impl TableRun<'_> {
    /// Streams the usable known columns: counts nulls, checks row values and
    /// keeps the columns the table-wide checks need.
    pub(super) fn row_pass(&mut self) -> Result<(), TableError> {
        let cols: Vec<String> = self
            .plans
            .iter()
            .filter(|p| !p.unusable)
            .map(|p| p.name.clone())
            .collect();
        let iter = self.src.batches_projected(&cols, self.opts.batch_size)?;
        if let Some(n) = self.src.known_rows() {
            // Exact capacities: no doubling slack in the kept columns.
            let n = usize::try_from(n).unwrap_or(0);
            let t = self.schema.traits;
            if t.samples {
                self.col.sample_ids.reserve_exact(n);
                self.col.frag_rows.reserve_exact(n);
            }
            if t.tree {
                self.col.parents.reserve_exact(n);
                self.col.parent_valid.reserve_exact(n);
            }
        }
        let mut offset = 0u64;
        for batch in iter {
            let batch = batch?;
            self.process_batch(&batch, offset);
            offset = crate::io::add_rows(offset, batch.num_rows() as u64, self.src.path())?;
        }
        self.col.rows = offset;
        // Aggregated reports.
        let nulls = std::mem::take(&mut self.null_counts);
        for (name, (n, first)) in nulls {
            self.rep.report(
                RuleId::FieldNull,
                format!("field {name:?}"),
                format!("{n} null value(s) in a non-nullable field (first at row {first})"),
            );
        }
        let counters = std::mem::take(&mut self.counters);
        for (id, (n, first, what)) in counters {
            self.rep.report(
                id,
                format!("row {first}"),
                format!("{what} ({n} row(s) in total, first at row {first})"),
            );
        }
        Ok(())
    }

    /// One batch of the row pass.
    fn process_batch(&mut self, batch: &RecordBatch, offset: u64) {
        let n = batch.num_rows();
        let traits = self.schema.traits;
        let mut arrays: HashMap<String, ArrayRef> = HashMap::new();
        for i in 0..self.plans.len() {
            if let Some(a) = self.prepared(batch, i) {
                let plan = &self.plans[i];
                if !plan.spec.nullable && a.null_count() > 0 {
                    let first = (0..a.len()).find(|&r| a.is_null(r)).unwrap_or(0) as u64;
                    let e = self
                        .null_counts
                        .entry(plan.name.clone())
                        .or_insert((0, offset + first));
                    e.0 += a.null_count() as u64;
                }
                arrays.insert(plan.name.clone(), a);
            }
        }
        let u64col = |name: &str| u64_col(&arrays, name);
        let f64col = |name: &str| -> Option<&arrow::array::Float64Array> {
            arrays
                .get(name)
                .and_then(|a| a.as_primitive_opt::<Float64Type>())
        };
        if traits.samples {
            if let Some(a) = u64col("sample_id") {
                self.col.sample_ids.extend_from_slice(a.values());
            }
            if let Some(a) = u64col("fragment_id") {
                let fr = &mut self.col.fragments;
                self.col
                    .frag_rows
                    .extend(a.values().iter().map(|&v| fr.intern(v)));
            }
        }
        if traits.tree {
            if let Some(a) = u64col("parent_id") {
                self.col.parents.extend_from_slice(a.values());
                match a.nulls() {
                    Some(nb) => self.col.parent_valid.extend(nb.iter()),
                    None => self.col.parent_valid.extend(std::iter::repeat_n(true, n)),
                }
            }
            if let Some(a) = f64col("radius") {
                let mut bad = 0u64;
                let mut first = None;
                for (r, v) in a.values().iter().enumerate() {
                    if a.is_valid(r) && !(v.is_finite() && *v >= 0.0) {
                        bad += 1;
                        first.get_or_insert(r);
                    }
                }
                let f = offset + first.unwrap_or(0) as u64;
                self.tally(RuleId::RadiusValue, bad, f, || {
                    "radius is negative, NaN or infinite".into()
                });
            }
            if let Some(a) = arrays.get("child_ids").and_then(|a| a.as_list_opt::<i32>()) {
                if a.values().null_count() > 0 {
                    let mut bad = 0u64;
                    let mut first = None;
                    let offs = a.value_offsets();
                    let vals = a.values();
                    for r in 0..a.len() {
                        if a.is_valid(r) {
                            let (s, e) = (offs[r] as usize, offs[r + 1] as usize);
                            if (s..e).any(|i| vals.is_null(i)) {
                                bad += 1;
                                first.get_or_insert(r);
                            }
                        }
                    }
                    let f = offset + first.unwrap_or(0) as u64;
                    self.tally(RuleId::DerivedNullItem, bad, f, || {
                        "child_ids list holds a null item".into()
                    });
                }
            }
            for name in ["child_ids", "n_children", "strahler"] {
                if let Some(a) = arrays.get(name) {
                    *self
                        .col
                        .derived_non_null
                        .entry(name.to_string())
                        .or_insert(0) += a.len() - a.null_count();
                }
            }
        }
        if traits.coordinates {
            for name in ["x", "y", "z"] {
                if let Some(a) = f64col(name) {
                    if a.values().iter().all(|v| v.is_finite()) {
                        continue;
                    }
                    let mut bad = 0u64;
                    let mut first = None;
                    for (r, v) in a.values().iter().enumerate() {
                        if a.is_valid(r) && !v.is_finite() {
                            bad += 1;
                            first.get_or_insert(r);
                        }
                    }
                    let f = offset + first.unwrap_or(0) as u64;
                    self.tally(RuleId::CoordinateFinite, bad, f, || {
                        "coordinate is not finite".into()
                    });
                }
            }
        }
        if traits.tangents {
            if let (Some(x), Some(y), Some(z)) = (
                f64col("tangent_x"),
                f64col("tangent_y"),
                f64col("tangent_z"),
            ) {
                let mut bad = 0u64;
                let mut first = None;
                for r in 0..n {
                    let (a, b, c) = (x.values()[r], y.values()[r], z.values()[r]);
                    let len = (a * a + b * b + c * c).sqrt();
                    if ((len - 1.0).abs() > 1e-6 || len.is_nan())
                        && x.is_valid(r)
                        && y.is_valid(r)
                        && z.is_valid(r)
                    {
                        bad += 1;
                        first.get_or_insert(r);
                    }
                }
                let f = offset + first.unwrap_or(0) as u64;
                self.tally(RuleId::TangentNormalized, bad, f, || {
                    "tangent vector does not have unit length".into()
                });
            }
            if let Some(a) = f64col("colinearity") {
                let mut bad = 0u64;
                let mut first = None;
                for (r, v) in a.values().iter().enumerate() {
                    if a.is_valid(r) && !(0.0..=1.0).contains(v) {
                        bad += 1;
                        first.get_or_insert(r);
                    }
                }
                let f = offset + first.unwrap_or(0) as u64;
                self.tally(RuleId::ColinearityRange, bad, f, || {
                    "colinearity outside [0, 1]".into()
                });
            }
        }
        // Other context-unique ids.
        let unique_names: Vec<String> = self
            .plans
            .iter()
            .filter(|p| p.spec.unique_in_context && p.name != "sample_id")
            .map(|p| p.name.clone())
            .collect();
        for name in unique_names {
            if let Some(a) = u64col(&name) {
                self.col
                    .unique
                    .entry(name.clone())
                    .or_default()
                    .extend_from_slice(a.values());
            }
        }
        if traits.connections {
            self.connection_rows(&arrays, n, offset);
        }
        if let Some(a) = arrays.get("attr").and_then(|a| a.as_map_opt()) {
            let keys = a.keys();
            let keys = keys.as_string_opt::<i32>();
            if let Some(keys) = keys {
                let offs = a.value_offsets();
                let mut bad = 0u64;
                let mut first = None;
                for r in 0..a.len() {
                    if a.is_valid(r) {
                        for i in offs[r] as usize..offs[r + 1] as usize {
                            if keys.is_valid(i) && keys.value(i).starts_with("attr:") {
                                bad += 1;
                                first.get_or_insert(r);
                            }
                        }
                    }
                }
                let f = offset + first.unwrap_or(0) as u64;
                self.tally(RuleId::AttrKeyPrefix, bad, f, || {
                    "attr map key starts with attr:".into()
                });
            }
        }
    }

    /// The table-wide checks after the row pass: unique ids, `frag:` keys naming
    /// existing fragments, the skeleton tree, gap junctions.
    pub(super) fn post(&mut self) -> Result<(), TableError> {
        let traits = self.schema.traits;
        let n = self.col.rows as usize;
        if n >= (u32::MAX - 1) as usize {
            return Err(TableError::data(
                self.src.path(),
                "tables of 4 billion rows or more are not supported",
            ));
        }
        if traits.samples && self.has_usable("sample_id") && self.col.sample_ids.len() == n {
            let ids = std::mem::take(&mut self.col.sample_ids);
            let (index, dups) = IdIndex::build(&ids);
            for d in &dups {
                self.rep.lazy(RuleId::SampleIdUnique, || {
                    (
                        row_loc(d.second as u64, "sample_id", Some(d.id)),
                        format!("sample_id {} also at row {}", d.id, d.first),
                    )
                });
            }
            let frag_ok = self.has_usable("fragment_id") && self.col.frag_rows.len() == n;
            if frag_ok {
                for (key, fid) in std::mem::take(&mut self.frag_keys) {
                    if !self.col.fragments.contains(fid) {
                        self.rep.report(
                            RuleId::FragKeyFragment,
                            format!("metadata {key:?}"),
                            format!("fragment {fid} does not occur in the table"),
                        );
                    }
                }
            }
            if traits.tree && frag_ok && self.has_usable("parent_id") && self.col.parents.len() == n
            {
                self.check_skeleton(&ids, index, dups.is_empty())?;
            }
            self.col.sample_ids = ids;
        }
        let unique = std::mem::take(&mut self.col.unique);
        for (name, ids) in &unique {
            if ids.len() != n {
                continue;
            }
            let (_, dups) = IdIndex::build(ids);
            let rule = if name == "connection_id" {
                RuleId::ConnectionIdUnique
            } else {
                RuleId::IdUnique
            };
            for d in &dups {
                self.rep.lazy(rule, || {
                    (
                        row_loc(d.second as u64, name, Some(d.id)),
                        format!("{name} {} also at row {}", d.id, d.first),
                    )
                });
            }
        }
        self.col.unique = unique;
        self.check_gap_junctions();
        Ok(())
    }
}
