//! Field checks: duplicate, required, extension and unknown fields, Arrow
//! types (with lenient casts), declared nullability, the `attr` map and field
//! metadata. Each known field gets a [`ColumnPlan`] that the row pass follows.

use super::run::TableRun;
use crate::rules::RuleId;
use crate::schema::{
    attr_map_value_type, is_reserved_prefix, is_technical_key, split_prefix, FieldSpec, Presence,
    TypeSpec,
};
use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int64Type};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What to do with a known column during the row pass.
#[derive(Debug, Clone)]
pub(super) struct ColumnPlan {
    pub(super) name: String,
    pub(super) spec: FieldSpec,
    /// Cast to the spec type before the row checks.
    pub(super) cast: bool,
    /// Type unusable: skip row checks on this column.
    pub(super) unusable: bool,
}

/// Casts a column to the spec type (int64 ids to uint64 bit for bit).
fn lenient_cast(col: &ArrayRef, ty: TypeSpec) -> Result<ArrayRef, String> {
    if ty == TypeSpec::UInt64 {
        if let Some(a) = col.as_primitive_opt::<Int64Type>() {
            // Reinterpret the bits: Parquet readers without the unsigned annotation
            // show ids >= 2^63 as negative int64.
            let vals: arrow::buffer::ScalarBuffer<u64> =
                a.values().iter().map(|&v| v as u64).collect();
            return Ok(Arc::new(arrow::array::UInt64Array::new(
                vals,
                a.nulls().cloned(),
            )));
        }
    }
    cast(col, &ty.data_type()).map_err(|e| e.to_string())
}

impl TableRun<'_> {
    /// Checks the fields of the Arrow schema and plans the known ones.
    pub(super) fn check_fields(&mut self) {
        let schema = self.src.schema();
        let fields = schema.fields();
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for f in fields.iter() {
            *seen.entry(f.name().as_str()).or_insert(0) += 1;
        }
        for (name, n) in &seen {
            if *n > 1 {
                self.rep.report(
                    RuleId::FieldDuplicate,
                    format!("field {name:?}"),
                    format!("{n} fields share this name"),
                );
            }
        }
        // Known fields of the effective schema.
        let specs = self.schema.fields.clone();
        for spec in &specs {
            match fields.iter().find(|f| f.name() == &spec.name) {
                None => {
                    if spec.presence == Presence::Required {
                        self.rep.report(
                            RuleId::FieldRequired,
                            format!("field {:?}", spec.name),
                            format!(
                                "required field {:?} ({}, from {}) is missing",
                                spec.name,
                                spec.ty.describe(),
                                spec.origin
                            ),
                        );
                    }
                }
                Some(f) => {
                    let plan = self.plan_field(spec, f.data_type(), f.is_nullable());
                    self.plans.push(plan);
                }
            }
        }
        // Extension, attribute and unknown fields.
        let ext_specs: Vec<(String, FieldSpec)> = self
            .opts
            .registry
            .extensions_for(&self.schema)
            .flat_map(|e| e.fields.iter().map(move |f| (e.prefix.clone(), f.clone())))
            .collect();
        for f in fields.iter() {
            let name = f.name().as_str();
            for (k, _) in f.metadata() {
                if !k.starts_with("attr:") && !is_technical_key(k) {
                    self.rep.report(
                        RuleId::FieldMetadata,
                        format!("field {name:?}"),
                        format!("field metadata key {k:?}: writers SHOULD NOT add field metadata"),
                    );
                }
            }
            if self.schema.field(name).is_some() {
                self.naming("field", name);
                continue;
            }
            match split_prefix(name) {
                None => {
                    self.rep.report(
                        RuleId::FieldUnknown,
                        format!("field {name:?}"),
                        format!(
                            "field is not defined by {:?}; use an attr: or extension prefix",
                            self.schema.name
                        ),
                    );
                    self.naming("field", name);
                }
                Some(("attr", rest)) => {
                    if rest.is_empty() {
                        self.rep.report(
                            RuleId::AttrEmptyName,
                            format!("field {name:?}"),
                            "attribute field with nothing after attr:",
                        );
                    }
                }
                Some((p, _)) if !is_reserved_prefix(p) => {
                    self.used_prefixes
                        .entry(p.to_string())
                        .or_insert(format!("field {name:?}"));
                    if let Some((_, spec)) = ext_specs.iter().find(|(_, s)| s.name == name) {
                        let plan = self.plan_field(spec, f.data_type(), f.is_nullable());
                        self.plans.push(plan);
                    }
                    self.naming("field", name);
                }
                Some(_) => {}
            }
        }
        // Required fields of extensions in use.
        for (prefix, spec) in &ext_specs {
            let used = self.used_prefixes.contains_key(prefix);
            if used
                && spec.presence == Presence::Required
                && !fields.iter().any(|f| f.name() == &spec.name)
            {
                self.rep.report(
                    RuleId::FieldRequired,
                    format!("field {:?}", spec.name),
                    format!(
                        "extension {prefix} is used, so its required field {:?} ({}) must exist",
                        spec.name,
                        spec.ty.describe()
                    ),
                );
            }
        }
        // Every used extension prefix needs `{prefix}:version`.
        let used: Vec<(String, String)> = self
            .used_prefixes
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (p, first) in used {
            let key = format!("{p}:version");
            if !self.meta.contains_key(&key) {
                self.rep.report(
                    RuleId::ExtensionVersion,
                    format!("metadata {key:?}"),
                    format!("extension prefix {p:?} is used ({first}) but {key:?} is missing"),
                );
            }
        }
    }

    /// Checks a known field's type and nullability; the plan says whether to
    /// cast the column or skip it in the row pass.
    fn plan_field(&mut self, spec: &FieldSpec, dt: &DataType, nullable: bool) -> ColumnPlan {
        let loc = format!("field {:?}", spec.name);
        let mut plan = ColumnPlan {
            name: spec.name.clone(),
            spec: spec.clone(),
            cast: false,
            unusable: false,
        };
        if spec.ty == TypeSpec::AttrMap {
            if attr_map_value_type(dt).is_none() {
                self.rep.report(
                    RuleId::AttrField,
                    loc.clone(),
                    format!("attr must be map<utf8, utf8|binary>, found {dt}"),
                );
                plan.unusable = true;
            }
            if !nullable {
                self.rep
                    .report(RuleId::AttrField, loc, "attr must be nullable");
            }
            return plan;
        }
        if !spec.ty.matches(dt) {
            if spec.ty.lenient_castable(dt) {
                self.rep.report(
                    RuleId::FieldTypeCast,
                    loc.clone(),
                    format!(
                        "type is {dt}, spec says {} (cast applied)",
                        spec.ty.describe()
                    ),
                );
                plan.cast = true;
            } else {
                self.rep.report(
                    RuleId::FieldType,
                    loc.clone(),
                    format!("type is {dt}, spec says {}", spec.ty.describe()),
                );
                plan.unusable = true;
            }
        }
        // A4: lenient mode only checks the data (no nulls where the spec says
        // non-nullable); the declared flag is compared in strict mode.
        if nullable != spec.nullable && self.opts.strict {
            self.rep.report(
                RuleId::FieldNullability,
                loc,
                format!(
                    "declared {}, spec says {}",
                    if nullable { "nullable" } else { "non-nullable" },
                    if spec.nullable {
                        "nullable"
                    } else {
                        "non-nullable"
                    }
                ),
            );
        }
        plan
    }

    /// Plan `plan_idx`'s column of `batch`, cast when planned; `None` when the
    /// column is unusable (a failed cast is reported and makes it so).
    pub(super) fn prepared(&mut self, batch: &RecordBatch, plan_idx: usize) -> Option<ArrayRef> {
        let plan = &self.plans[plan_idx];
        if plan.unusable {
            return None;
        }
        let col = batch.column_by_name(&plan.name)?.clone();
        if !plan.cast {
            return Some(col);
        }
        let ty = plan.spec.ty;
        match lenient_cast(&col, ty) {
            Ok(c) => Some(c),
            Err(e) => {
                let name = plan.name.clone();
                self.plans[plan_idx].unusable = true;
                self.rep.report(
                    RuleId::FieldType,
                    format!("field {name:?}"),
                    format!("cannot cast to {}: {e}", ty.describe()),
                );
                None
            }
        }
    }
}
