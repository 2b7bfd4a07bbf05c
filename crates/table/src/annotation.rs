//! Neuroglancer precomputed annotation collections to and from neurarrow tables.
//!
//! Two kinds of table map to collections (see docs/precomputed.md, "Annotations and tables"):
//!
//! - **Point clouds ↔ points.** One annotation per row: its id the `sample_id`, its position
//!   `x`, `y`, `z`. The relationship `segments` holds the row's segment: the fragment's
//!   `frag:{id}:segment_id` metadata when present, else its `fragment_id`. Reading a point
//!   collection, `fragment_id` is the first id of the relationship named `segments` or
//!   `segment` (else of the first relationship; 0 when there is none); that relationship gets
//!   no column of its own when every annotation names exactly one segment.
//! - **Connections ↔ lines (or points).** One annotation per connection: its id the
//!   `connection_id`; a line from the presynaptic position (`attr:pre_x`, `attr:pre_y`,
//!   `attr:pre_z`) to the postsynaptic one (`attr:post_x`, …), or with
//!   [`AnnotationExportOptions::annotation_type`] a point at the postsynaptic position. The
//!   relationships `pre_segment` and `post_segment` hold `src_fragment_id` and
//!   `tgt_fragment_id` (when those columns exist; a null is no related id), `pre_sample` and
//!   `post_sample` the sample ids, so that a table comes back whole. The `type` column is the
//!   enum property `type` (its labels the connection types). Reading, the fragment ids come
//!   from the relationships whose names start with `pre`/`post` (other than the sample ones),
//!   and a collection without sample relationships numbers the samples `2 id` and `2 id + 1`.
//!
//! In both, every other numeric `attr:{id}` column is the property `{id}` (64-bit integers
//! and float64 are refused, naming the column), `attr:{id}:0` … `attr:{id}:2` (or `:3`) of
//! uint8 the `rgb` (`rgba`) property `{id}`, a dictionary (or string) column `attr:{id}` an
//! enum property (its labels the strings), and a list-of-uint64 column `attr:{id}` the
//! relationship `{id}`. Reading writes them back the same way.
//!
//! Coordinates: the table's `unit` (for connections, the metadata key `attr:unit`) gives the
//! dimensions `x`, `y`, `z` of `[metres per unit, "m"]`, unless the metadata key
//! `attr:precomputed:info` holds the collection's earlier `info`, whose dimensions are then
//! kept. Reading, positions are multiplied by their dimension's scale and given in the
//! largest of metre, millimetre, micrometre, nanometre and picometre that is no larger than a
//! coordinate step (`[4e-9, "m"]` gives nanometres); a unitless space gives the unit `""`.
//! The collection's `info` is kept in `attr:precomputed:info`.

use crate::error::{Result, TableError};
use crate::io::{TableSource, TableTarget, WriteOptions, DEFAULT_BATCH_SIZE};
use crate::precomputed::{nanometers_per, INFO_KEY};
use crate::schema::SPEC_VERSION;
use arrow::array::{
    Array, ArrayRef, DictionaryArray, Float32Array, Float64Array, Int16Array, Int32Array,
    Int8Array, ListArray, RecordBatch, StringArray, UInt16Array, UInt32Array, UInt64Array,
    UInt8Array,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema, UInt16Type, UInt64Type};
use neurochunk_array::precomputed::annotation::{
    Annotation, AnnotationCollection, AnnotationInfo, AnnotationType, Dimension, IndexSpec,
    PropertySpec, PropertyType, PropertyValue, RelationshipSpec,
};
use neurochunk_array::precomputed::ShardingSpec;
use neurochunk_store::Store;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

/// The `@type` of an annotation collection's `info`.
pub const ANNOTATION_TYPE: &str = "neuroglancer_annotations_v1";

/// The metadata key of a connections table's coordinate unit (the schema has no `unit`).
pub const CONNECTIONS_UNIT_KEY: &str = "attr:unit";

/// The two kinds of table an annotation collection converts to and from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnnotationTable {
    /// A `pointclouds` table (point annotations).
    Pointclouds,
    /// A `connections` table (line or point annotations).
    Connections,
}

impl AnnotationTable {
    /// The schema name (and file infix).
    pub fn name(self) -> &'static str {
        match self {
            AnnotationTable::Pointclouds => "pointclouds",
            AnnotationTable::Connections => "connections",
        }
    }
}

/// Options for reading a collection into a table.
#[derive(Debug, Clone)]
pub struct AnnotationImportOptions {
    /// Context identifier (required metadata).
    pub context: String,
    /// Optional space identifier.
    pub space: Option<String>,
    /// The kind of table; `None`: from the annotation type (lines → connections).
    pub table: Option<AnnotationTable>,
}

/// Options for writing a collection from a table.
#[derive(Debug, Clone, Default)]
pub struct AnnotationExportOptions {
    /// The shard layout of every index, `None` for one file per id or cell.
    pub sharding: Option<ShardingSpec>,
    /// For connections: `Line` (the default) or `Point`.
    pub annotation_type: Option<AnnotationType>,
    /// Most annotations per spatial index cell (0: 1000).
    pub limit: u64,
}

/// What an import or export did.
#[derive(Debug, Clone)]
pub struct AnnotationSummary {
    /// Annotations (rows).
    pub annotations: u64,
    /// The table kind.
    pub table: AnnotationTable,
    /// The annotation type.
    pub annotation_type: AnnotationType,
    /// The properties' ids.
    pub properties: Vec<String>,
    /// The relationships' ids.
    pub relationships: Vec<String>,
    /// Notes (columns left out, sample ids made up, ...).
    pub notes: Vec<String>,
}

/// The table kind a collection of `annotation_type` reads into when the output does not say.
pub fn default_table(annotation_type: AnnotationType) -> AnnotationTable {
    match annotation_type {
        AnnotationType::Line => AnnotationTable::Connections,
        _ => AnnotationTable::Pointclouds,
    }
}

// ---------------------------------------------------------------------------------------------
// Units

/// Metres per unit of an SI length unit as Neuroglancer spells it (`m`, `nm`, `um`, ...).
fn metres_per_si(unit: &str) -> Option<f64> {
    let prefix = unit.strip_suffix('m')?;
    Some(match prefix {
        "" => 1.0,
        "k" => 1e3,
        "c" => 1e-2,
        "m" => 1e-3,
        "u" | "µ" | "μ" => 1e-6,
        "n" => 1e-9,
        "p" => 1e-12,
        "f" => 1e-15,
        _ => return None,
    })
}

/// The table unit for a coordinate step of `step` metres and its size in metres.
fn table_unit_for(step: f64) -> (&'static str, f64) {
    const UNITS: [(&str, f64); 5] = [
        ("meter", 1.0),
        ("millimeter", 1e-3),
        ("micrometer", 1e-6),
        ("nanometer", 1e-9),
        ("picometer", 1e-12),
    ];
    UNITS
        .iter()
        .find(|(_, m)| *m <= step * (1.0 + 1e-9))
        .copied()
        .unwrap_or(UNITS[4])
}

/// Per dimension, the factor from a coordinate to the table's unit, and that unit.
fn table_units(info: &AnnotationInfo, name: &str) -> Result<(Vec<f64>, String)> {
    let metres: Vec<Option<f64>> = info
        .dimensions
        .iter()
        .map(|d| {
            if d.unit.is_empty() {
                None
            } else {
                metres_per_si(&d.unit).map(|m| m * d.scale)
            }
        })
        .collect();
    if info.dimensions.iter().all(|d| d.unit.is_empty()) {
        return Ok((
            info.dimensions.iter().map(|d| d.scale).collect(),
            String::new(),
        ));
    }
    if let Some(d) = info
        .dimensions
        .iter()
        .zip(&metres)
        .find(|(_, m)| m.is_none())
    {
        return Err(TableError::data(
            name,
            format!(
                "dimension '{}' has the unit {:?}: a table's coordinates are lengths (or all unitless)",
                d.0.name, d.0.unit
            ),
        ));
    }
    let step = metres
        .iter()
        .flatten()
        .cloned()
        .fold(f64::INFINITY, f64::min);
    let (unit, size) = table_unit_for(step);
    Ok((
        metres.iter().map(|m| m.unwrap_or(1.0) / size).collect(),
        unit.to_string(),
    ))
}

// ---------------------------------------------------------------------------------------------
// Import: a collection into a table

/// Whether a property is an enum (values and labels of the same length).
fn enum_labels(p: &PropertySpec) -> Option<Vec<(i64, String)>> {
    let values = p.extra.get("enum_values")?.as_array()?;
    let labels = p.extra.get("enum_labels")?.as_array()?;
    if values.len() != labels.len() {
        return None;
    }
    values
        .iter()
        .zip(labels)
        .map(|(v, l)| Some((v.as_f64()? as i64, l.as_str()?.to_string())))
        .collect()
}

/// The columns of property `p` holding `values` (one per annotation).
fn property_columns(p: &PropertySpec, values: &[PropertyValue]) -> Vec<(Field, ArrayRef)> {
    let int = |v: &PropertyValue| match *v {
        PropertyValue::Int(i) => i,
        PropertyValue::Float(f) => f as i64,
        _ => 0,
    };
    let name = format!("attr:{}", p.id);
    if let Some(labels) = enum_labels(p) {
        let by_value: BTreeMap<i64, &str> = labels.iter().map(|(v, l)| (*v, l.as_str())).collect();
        let array: DictionaryArray<UInt16Type> = values
            .iter()
            .map(|v| by_value.get(&int(v)).copied())
            .collect();
        return vec![(
            Field::new(&name, array.data_type().clone(), true),
            Arc::new(array),
        )];
    }
    let col = |array: ArrayRef| vec![(Field::new(&name, array.data_type().clone(), false), array)];
    match p.kind {
        PropertyType::Uint8 => col(Arc::new(UInt8Array::from_iter_values(
            values.iter().map(|v| int(v) as u8),
        ))),
        PropertyType::Int8 => col(Arc::new(Int8Array::from_iter_values(
            values.iter().map(|v| int(v) as i8),
        ))),
        PropertyType::Uint16 => col(Arc::new(UInt16Array::from_iter_values(
            values.iter().map(|v| int(v) as u16),
        ))),
        PropertyType::Int16 => col(Arc::new(Int16Array::from_iter_values(
            values.iter().map(|v| int(v) as i16),
        ))),
        PropertyType::Uint32 => col(Arc::new(UInt32Array::from_iter_values(
            values.iter().map(|v| int(v) as u32),
        ))),
        PropertyType::Int32 => col(Arc::new(Int32Array::from_iter_values(
            values.iter().map(|v| int(v) as i32),
        ))),
        PropertyType::Float32 => col(Arc::new(Float32Array::from_iter_values(values.iter().map(
            |v| match *v {
                PropertyValue::Float(f) => f,
                PropertyValue::Int(i) => i as f32,
                _ => f32::NAN,
            },
        )))),
        PropertyType::Rgb | PropertyType::Rgba => {
            let n = p.kind.size();
            (0..n)
                .map(|c| {
                    let array: ArrayRef = Arc::new(UInt8Array::from_iter_values(
                        values.iter().map(|v| match v {
                            PropertyValue::Rgb(x) => x[c],
                            PropertyValue::Rgba(x) => x[c],
                            _ => 0,
                        }),
                    ));
                    (
                        Field::new(format!("{name}:{c}"), DataType::UInt8, false),
                        array,
                    )
                })
                .collect()
        }
    }
}

/// A list-of-uint64 column of related ids.
fn relationship_column(name: &str, lists: impl Iterator<Item = Vec<u64>>) -> (Field, ArrayRef) {
    let array = ListArray::from_iter_primitive::<UInt64Type, _, _>(
        lists.map(|l| Some(l.into_iter().map(Some).collect::<Vec<_>>())),
    );
    (
        Field::new(name, array.data_type().clone(), true),
        Arc::new(array),
    )
}

/// Index of the relationship named like one of `names`, else (with `first`) the first one.
fn find_relationship(info: &AnnotationInfo, pick: impl Fn(&str) -> bool) -> Option<usize> {
    info.relationships.iter().position(|r| pick(&r.id))
}

/// Reads every annotation of `collection` into one table batch (see the module
/// documentation); `name` names the collection in errors.
pub fn annotations_to_batch(
    collection: &AnnotationCollection,
    name: &str,
    opts: &AnnotationImportOptions,
) -> Result<(RecordBatch, AnnotationSummary)> {
    let info = collection.info();
    if info.rank() != 3 {
        return Err(TableError::data(
            name,
            format!(
                "the collection has {} dimensions; a table holds x, y, z",
                info.rank()
            ),
        ));
    }
    let table = opts
        .table
        .unwrap_or_else(|| default_table(info.annotation_type));
    let offset = match (table, info.annotation_type) {
        (AnnotationTable::Pointclouds, AnnotationType::Point) => None,
        (AnnotationTable::Connections, AnnotationType::Line) => Some(3),
        (AnnotationTable::Connections, AnnotationType::Point) => None,
        (t, a) => {
            return Err(TableError::data(
                name,
                format!("{} annotations do not make a {} table", a.name(), t.name()),
            ))
        }
    };
    let (factors, unit) = table_units(info, name)?;
    let annotations = collection
        .read_all()
        .map_err(|e| TableError::data(name, e.to_string()))?;
    let n = annotations.len();
    let coord = |a: &Annotation, k: usize| f64::from(a.geometry[k]) * factors[k % 3];
    let mut fields: Vec<Field> = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    let mut push = |f: Field, c: ArrayRef| {
        fields.push(f);
        columns.push(c);
    };
    let ids: ArrayRef = Arc::new(UInt64Array::from_iter_values(
        annotations.iter().map(|a| a.id),
    ));
    let mut notes = Vec::new();
    // Relationships that become id columns (not list columns).
    let mut consumed = BTreeSet::new();
    let single = |r: usize| annotations.iter().all(|a| a.relationships[r].len() == 1);
    let first_of = |r: usize| -> Vec<Option<u64>> {
        annotations
            .iter()
            .map(|a| a.relationships[r].first().copied())
            .collect()
    };
    let mut metadata: BTreeMap<String, String> = BTreeMap::new();
    metadata.insert("version".into(), SPEC_VERSION.into());
    metadata.insert("context".into(), opts.context.clone());
    if let Some(s) = &opts.space {
        metadata.insert("space".into(), s.clone());
    }
    metadata.insert(INFO_KEY.into(), info.to_json().to_string());
    match table {
        AnnotationTable::Pointclouds => {
            metadata.insert("unit".into(), unit);
            let rel = find_relationship(info, |id| id == "segments" || id == "segment")
                .or((!info.relationships.is_empty()).then_some(0));
            let fragments: Vec<u64> = match rel {
                Some(r) => {
                    if single(r) {
                        consumed.insert(r);
                    }
                    first_of(r).into_iter().map(|v| v.unwrap_or(0)).collect()
                }
                None => vec![0; n],
            };
            push(Field::new("sample_id", DataType::UInt64, false), ids);
            push(
                Field::new("fragment_id", DataType::UInt64, false),
                Arc::new(UInt64Array::from(fragments)),
            );
            for (k, axis) in ["x", "y", "z"].iter().enumerate() {
                push(
                    Field::new(*axis, DataType::Float64, false),
                    Arc::new(Float64Array::from_iter_values(
                        annotations.iter().map(|a| coord(a, k)),
                    )),
                );
            }
        }
        AnnotationTable::Connections => {
            metadata.insert(CONNECTIONS_UNIT_KEY.into(), unit);
            let sample = |side: &str| find_relationship(info, |id| id == format!("{side}_sample"));
            let segment = |side: &str| {
                find_relationship(info, |id| {
                    id.starts_with(side) && id != format!("{side}_sample")
                })
            };
            push(Field::new("connection_id", DataType::UInt64, false), ids);
            for (k, side) in ["pre", "post"].into_iter().enumerate() {
                let samples: Vec<u64> = match sample(side) {
                    Some(r) if single(r) => {
                        consumed.insert(r);
                        first_of(r).into_iter().map(|v| v.unwrap_or(0)).collect()
                    }
                    _ => {
                        if k == 0 {
                            notes.push(
                                "the collection has no pre_sample/post_sample relationships: \
                                 sample ids are 2 id and 2 id + 1"
                                    .into(),
                            );
                        }
                        annotations
                            .iter()
                            .map(|a| a.id.wrapping_mul(2).wrapping_add(k as u64))
                            .collect()
                    }
                };
                let column = if k == 0 {
                    "src_sample_id"
                } else {
                    "tgt_sample_id"
                };
                push(
                    Field::new(column, DataType::UInt64, false),
                    Arc::new(UInt64Array::from(samples)),
                );
            }
            let types: Option<usize> = info
                .properties
                .iter()
                .position(|p| p.id == "type" && enum_labels(p).is_some());
            let type_array: DictionaryArray<UInt16Type> = match types {
                Some(i) => {
                    let labels: BTreeMap<i64, String> = enum_labels(&info.properties[i])
                        .unwrap_or_default()
                        .into_iter()
                        .collect();
                    annotations
                        .iter()
                        .map(|a| {
                            let v = match a.properties[i] {
                                PropertyValue::Int(v) => v,
                                _ => -1,
                            };
                            Some(labels.get(&v).map(String::as_str).unwrap_or("synapse"))
                        })
                        .collect()
                }
                None => annotations.iter().map(|_| Some("synapse")).collect(),
            };
            push(
                Field::new("type", type_array.data_type().clone(), false),
                Arc::new(type_array),
            );
            for (side, column) in [("pre", "src_fragment_id"), ("post", "tgt_fragment_id")] {
                if let Some(r) = segment(side) {
                    if annotations.iter().all(|a| a.relationships[r].len() <= 1) {
                        consumed.insert(r);
                    }
                    push(
                        Field::new(column, DataType::UInt64, true),
                        Arc::new(UInt64Array::from(first_of(r))),
                    );
                }
            }
            let sides: &[&str] = if offset.is_some() {
                &["pre", "post"]
            } else {
                &["post"]
            };
            for (s, side) in sides.iter().enumerate() {
                for (k, axis) in ["x", "y", "z"].iter().enumerate() {
                    push(
                        Field::new(format!("attr:{side}_{axis}"), DataType::Float64, false),
                        Arc::new(Float64Array::from_iter_values(
                            annotations.iter().map(|a| coord(a, s * 3 + k)),
                        )),
                    );
                }
            }
        }
    }
    // Properties (the enum `type` of connections is the `type` column).
    for (i, p) in info.properties.iter().enumerate() {
        if table == AnnotationTable::Connections && p.id == "type" && enum_labels(p).is_some() {
            continue;
        }
        let values: Vec<PropertyValue> = annotations.iter().map(|a| a.properties[i]).collect();
        for (f, c) in property_columns(p, &values) {
            push(f, c);
        }
    }
    for (r, spec) in info.relationships.iter().enumerate() {
        if consumed.contains(&r) {
            continue;
        }
        let (f, c) = relationship_column(
            &format!("attr:{}", spec.id),
            annotations.iter().map(|a| a.relationships[r].clone()),
        );
        push(f, c);
    }
    let schema = Arc::new(Schema::new_with_metadata(
        fields,
        metadata
            .into_iter()
            .collect::<std::collections::HashMap<String, String>>(),
    ));
    let batch = RecordBatch::try_new(schema, columns).map_err(|e| TableError::arrow(name, e))?;
    Ok((
        batch,
        AnnotationSummary {
            annotations: n as u64,
            table,
            annotation_type: info.annotation_type,
            properties: info.properties.iter().map(|p| p.id.clone()).collect(),
            relationships: info.relationships.iter().map(|r| r.id.clone()).collect(),
            notes,
        },
    ))
}

/// Reads `collection` into a table at `target` (see the module documentation).
pub fn import_annotations(
    collection: &AnnotationCollection,
    name: &str,
    target: &TableTarget,
    opts: &AnnotationImportOptions,
    write: &WriteOptions,
) -> Result<AnnotationSummary> {
    let (batch, summary) = annotations_to_batch(collection, name, opts)?;
    let mut w = write.clone();
    if w.file_infix.is_none() {
        w.file_infix = Some(summary.table.name().into());
    }
    let mut writer = target.create(batch.schema(), &w)?;
    writer.write(&batch)?;
    writer.finish()?;
    Ok(summary)
}

// ---------------------------------------------------------------------------------------------
// Export: a table into a collection

/// A column of the table read whole.
struct Columns<'a> {
    input: &'a Path,
    batches: Vec<RecordBatch>,
}

impl Columns<'_> {
    fn array(&self, c: &str) -> Result<Vec<ArrayRef>> {
        self.batches
            .iter()
            .map(|b| {
                b.column_by_name(c)
                    .cloned()
                    .ok_or_else(|| TableError::data(self.input, format!("no column {c:?}")))
            })
            .collect()
    }

    /// A numeric column as f64 (nulls refused).
    fn f64s(&self, c: &str) -> Result<Vec<f64>> {
        let mut out = Vec::new();
        for a in self.array(c)? {
            if !a.data_type().is_numeric() {
                return Err(TableError::data(
                    self.input,
                    format!("column {c:?} is {}, not a number", a.data_type()),
                ));
            }
            let casted =
                cast(&a, &DataType::Float64).map_err(|e| TableError::arrow(self.input, e))?;
            let f = casted
                .as_any()
                .downcast_ref::<Float64Array>()
                .ok_or_else(|| {
                    TableError::data(self.input, format!("column {c:?} is not numeric"))
                })?;
            if f.null_count() > 0 {
                return Err(TableError::data(
                    self.input,
                    format!("column {c:?} holds nulls: every annotation needs a value"),
                ));
            }
            out.extend(f.values().iter().copied());
        }
        Ok(out)
    }

    /// A uint64 column (nulls kept).
    fn u64s(&self, c: &str) -> Result<Vec<Option<u64>>> {
        let mut out = Vec::new();
        for b in &self.batches {
            out.extend(crate::derive::u64_column(self.input, b, c)?.iter());
        }
        Ok(out)
    }

    /// A string (or dictionary of strings) column.
    fn strings(&self, c: &str) -> Result<Vec<Option<String>>> {
        let mut out = Vec::new();
        for a in self.array(c)? {
            let casted = cast(&a, &DataType::Utf8).map_err(|e| TableError::arrow(self.input, e))?;
            let s = casted
                .as_any()
                .downcast_ref::<StringArray>()
                .ok_or_else(|| TableError::data(self.input, format!("column {c:?} is not text")))?;
            out.extend(s.iter().map(|v| v.map(str::to_string)));
        }
        Ok(out)
    }

    /// A list-of-uint64 column.
    fn lists(&self, c: &str) -> Result<Vec<Vec<u64>>> {
        let mut out = Vec::new();
        for a in self.array(c)? {
            let l = a.as_any().downcast_ref::<ListArray>().ok_or_else(|| {
                TableError::data(self.input, format!("column {c:?} is not a list of ids"))
            })?;
            for i in 0..l.len() {
                if l.is_null(i) {
                    out.push(Vec::new());
                    continue;
                }
                let v = cast(&l.value(i), &DataType::UInt64)
                    .map_err(|e| TableError::arrow(self.input, e))?;
                let v = v.as_any().downcast_ref::<UInt64Array>().ok_or_else(|| {
                    TableError::data(self.input, format!("column {c:?} is not a list of ids"))
                })?;
                out.push(v.iter().flatten().collect());
            }
        }
        Ok(out)
    }
}

/// The property type of a numeric column, or why it has none.
fn property_type_of(dt: &DataType) -> Option<PropertyType> {
    Some(match dt {
        DataType::UInt8 => PropertyType::Uint8,
        DataType::Int8 => PropertyType::Int8,
        DataType::UInt16 => PropertyType::Uint16,
        DataType::Int16 => PropertyType::Int16,
        DataType::UInt32 => PropertyType::Uint32,
        DataType::Int32 => PropertyType::Int32,
        DataType::Float32 | DataType::Float16 => PropertyType::Float32,
        _ => return None,
    })
}

fn is_text(dt: &DataType) -> bool {
    match dt {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, v) => is_text(v),
        _ => false,
    }
}

fn is_id_list(dt: &DataType) -> bool {
    match dt {
        DataType::List(f) | DataType::LargeList(f) => {
            matches!(
                f.data_type(),
                DataType::UInt64 | DataType::Int64 | DataType::UInt32
            )
        }
        _ => false,
    }
}

/// How a property's values are read from the table.
enum Source {
    /// A numeric column.
    Number(String),
    /// Colour components.
    Colour(Vec<String>),
    /// A text column (an enum property).
    Labels(String),
}

/// Values of an enum property: the labels of `info_spec` when it declares them, else the
/// column's strings in sorted order numbered from 0.
fn enum_spec(
    id: &str,
    strings: &[Option<String>],
    declared: Option<&PropertySpec>,
    input: &Path,
    column: &str,
) -> Result<(PropertySpec, BTreeMap<String, i64>)> {
    let used: BTreeSet<&str> = strings.iter().flatten().map(String::as_str).collect();
    if strings.iter().any(Option::is_none) {
        return Err(TableError::data(
            input,
            format!("column {column:?} holds nulls: every annotation needs a value"),
        ));
    }
    if let Some(spec) = declared {
        if let Some(labels) = enum_labels(spec) {
            let map: BTreeMap<String, i64> = labels.into_iter().map(|(v, l)| (l, v)).collect();
            if used.iter().all(|u| map.contains_key(*u)) {
                return Ok((spec.clone(), map));
            }
        }
    }
    let map: BTreeMap<String, i64> = used
        .iter()
        .enumerate()
        .map(|(i, s)| (s.to_string(), i as i64))
        .collect();
    let kind = match map.len() {
        0..=256 => PropertyType::Uint8,
        257..=65536 => PropertyType::Uint16,
        _ => PropertyType::Uint32,
    };
    let mut spec = PropertySpec::new(id, kind);
    spec.extra.insert(
        "enum_values".into(),
        json!(map.values().collect::<Vec<_>>()),
    );
    spec.extra
        .insert("enum_labels".into(), json!(map.keys().collect::<Vec<_>>()));
    Ok((spec, map))
}

/// Writes the table `src` (point clouds or connections) as an annotation collection at `path`
/// in `store` (see the module documentation); `name` names the output in errors.
pub fn export_annotations(
    src: &TableSource,
    store: Arc<dyn Store>,
    path: &str,
    opts: &AnnotationExportOptions,
) -> Result<AnnotationSummary> {
    let input = src.path();
    let schema = src.schema();
    let md = schema.metadata();
    let has = |c: &str| schema.field_with_name(c).is_ok();
    let table = if has("connection_id") {
        AnnotationTable::Connections
    } else if ["sample_id", "fragment_id", "x", "y", "z"]
        .iter()
        .all(|c| has(c))
    {
        AnnotationTable::Pointclouds
    } else {
        let missing = ["sample_id", "fragment_id", "x", "y", "z"]
            .into_iter()
            .find(|c| !has(c))
            .unwrap_or("x");
        return Err(TableError::data(
            input,
            format!(
                "neither a connections table (no \"connection_id\" column) nor a point cloud \
                 (no {missing:?} column)"
            ),
        ));
    };
    let annotation_type = match (table, opts.annotation_type) {
        (AnnotationTable::Pointclouds, None | Some(AnnotationType::Point)) => AnnotationType::Point,
        (AnnotationTable::Connections, None | Some(AnnotationType::Line)) => AnnotationType::Line,
        (AnnotationTable::Connections, Some(AnnotationType::Point)) => AnnotationType::Point,
        (t, Some(a)) => {
            return Err(TableError::Usage(format!(
                "a {} table cannot be written as {} annotations",
                t.name(),
                a.name()
            )))
        }
    };
    let unit_key = match table {
        AnnotationTable::Pointclouds => "unit",
        AnnotationTable::Connections => CONNECTIONS_UNIT_KEY,
    };
    let unit = md.get(unit_key).map(String::as_str).unwrap_or("");
    let unit_nm = nanometers_per(unit).ok_or_else(|| {
        TableError::data(
            input,
            format!("unit {unit:?} cannot be converted to metres"),
        )
    })?;
    let declared: Option<AnnotationInfo> = md
        .get(INFO_KEY)
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .and_then(|doc| AnnotationInfo::parse(&doc, path).ok())
        .filter(|info| {
            info.rank() == 3
                && info
                    .dimensions
                    .iter()
                    .all(|d| metres_per_si(&d.unit).is_some() && d.scale > 0.0)
        });
    let dimensions: Vec<Dimension> = match &declared {
        Some(info) => info.dimensions.clone(),
        None => ["x", "y", "z"]
            .iter()
            .map(|n| Dimension {
                name: n.to_string(),
                scale: unit_nm / 1e9,
                unit: "m".into(),
            })
            .collect(),
    };
    // Table value → coordinate.
    let factors: Vec<f64> = dimensions
        .iter()
        .map(|d| unit_nm / 1e9 / (d.scale * metres_per_si(&d.unit).unwrap_or(1.0)))
        .collect();
    // Which columns are what.
    let position_columns: Vec<String> = match (table, annotation_type) {
        (AnnotationTable::Pointclouds, _) => vec!["x".into(), "y".into(), "z".into()],
        (_, AnnotationType::Line) => ["pre", "post"]
            .iter()
            .flat_map(|s| ["x", "y", "z"].map(|a| format!("attr:{s}_{a}")))
            .collect(),
        _ => ["x", "y", "z"].map(|a| format!("attr:post_{a}")).to_vec(),
    };
    for c in &position_columns {
        if !has(c) {
            return Err(TableError::data(
                input,
                format!(
                    "no column {c:?}: {} annotations of a {} table take their positions from {}",
                    annotation_type.name(),
                    table.name(),
                    position_columns.join(", ")
                ),
            ));
        }
    }
    let mut notes = Vec::new();
    let declared_property = |id: &str| {
        declared
            .as_ref()
            .and_then(|i| i.properties.iter().find(|p| p.id == id))
    };
    // Columns to read.
    let mut wanted: Vec<String> = position_columns.clone();
    let id_column = match table {
        AnnotationTable::Pointclouds => "sample_id",
        AnnotationTable::Connections => "connection_id",
    };
    wanted.push(id_column.into());
    let mut relationship_sources: Vec<(String, RelSource)> = Vec::new();
    match table {
        AnnotationTable::Pointclouds => {
            wanted.push("fragment_id".into());
            let rel = declared
                .as_ref()
                .and_then(|i| {
                    i.relationships
                        .iter()
                        .find(|r| r.id == "segments" || r.id == "segment")
                        .or(i.relationships.first())
                })
                .map(|r| r.id.clone())
                .filter(|id| !has(&format!("attr:{id}")))
                .unwrap_or_else(|| "segments".into());
            relationship_sources.push((rel, RelSource::Fragment("fragment_id".into())));
        }
        AnnotationTable::Connections => {
            wanted.extend(["src_sample_id", "tgt_sample_id", "type"].map(String::from));
            for (side, column) in [("pre", "src_fragment_id"), ("post", "tgt_fragment_id")] {
                // The earlier collection's name for the relationship, else `{side}_segment`.
                let rel = declared
                    .as_ref()
                    .and_then(|i| {
                        i.relationships
                            .iter()
                            .find(|r| r.id.starts_with(side) && r.id != format!("{side}_sample"))
                    })
                    .map(|r| r.id.clone())
                    .unwrap_or_else(|| format!("{side}_segment"));
                if has(column) {
                    wanted.push(column.into());
                    relationship_sources.push((rel, RelSource::Ids(column.into())));
                }
            }
            relationship_sources
                .push(("pre_sample".into(), RelSource::Ids("src_sample_id".into())));
            relationship_sources
                .push(("post_sample".into(), RelSource::Ids("tgt_sample_id".into())));
        }
    }
    let mut sources: Vec<(String, Source)> = Vec::new();
    if table == AnnotationTable::Connections {
        sources.push(("type".into(), Source::Labels("type".into())));
    }
    let mut colours: BTreeMap<String, Vec<(usize, String, DataType)>> = BTreeMap::new();
    for f in schema.fields() {
        let Some(rest) = f.name().strip_prefix("attr:") else {
            continue;
        };
        // Positions (for points of connections, the unused presynaptic ones too).
        let position = ["pre", "post"].iter().any(|side| {
            ["x", "y", "z"]
                .iter()
                .any(|a| rest == format!("{side}_{a}"))
        });
        if position_columns.contains(f.name())
            || (table == AnnotationTable::Connections && position)
        {
            continue;
        }
        if let Some((id, c)) = rest.rsplit_once(':') {
            if let Ok(c) = c.parse::<usize>() {
                colours.entry(id.to_string()).or_default().push((
                    c,
                    f.name().clone(),
                    f.data_type().clone(),
                ));
                continue;
            }
        }
        let id = rest.to_string();
        let valid_id = id.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid_id {
            notes.push(format!(
                "column {:?}: {id:?} is no annotation property id ([a-z][a-zA-Z0-9_]*); left out",
                f.name()
            ));
            continue;
        }
        if is_id_list(f.data_type()) {
            wanted.push(f.name().clone());
            relationship_sources.push((id, RelSource::List(f.name().clone())));
        } else if is_text(f.data_type()) {
            wanted.push(f.name().clone());
            sources.push((id, Source::Labels(f.name().clone())));
        } else if property_type_of(f.data_type()).is_some() {
            wanted.push(f.name().clone());
            sources.push((id, Source::Number(f.name().clone())));
        } else {
            return Err(TableError::data(
                input,
                format!(
                    "column {:?} is {}: annotation properties are (u)int8/16/32 or float32, \
                     relationships lists of uint64, enums strings",
                    f.name(),
                    f.data_type()
                ),
            ));
        }
    }
    for (id, mut parts) in colours {
        parts.sort();
        let n = parts.len();
        let ok = (n == 3 || n == 4)
            && parts
                .iter()
                .enumerate()
                .all(|(i, (c, _, t))| *c == i && *t == DataType::UInt8);
        if !ok {
            return Err(TableError::data(
                input,
                format!(
                    "columns \"attr:{id}:…\": colour components are uint8 columns :0 to :2 \
                     (rgb) or :3 (rgba)"
                ),
            ));
        }
        let names: Vec<String> = parts.into_iter().map(|(_, n, _)| n).collect();
        wanted.extend(names.iter().cloned());
        sources.push((id, Source::Colour(names)));
    }
    wanted.sort();
    wanted.dedup();
    let mut batches = Vec::new();
    for b in src.batches_projected(&wanted, DEFAULT_BATCH_SIZE)? {
        batches.push(b?);
    }
    let cols = Columns { input, batches };
    let ids: Vec<u64> = cols
        .u64s(id_column)?
        .into_iter()
        .enumerate()
        .map(|(row, v)| {
            v.ok_or_else(|| TableError::data(input, format!("row {row}: {id_column:?} is null")))
        })
        .collect::<Result<_>>()?;
    let n = ids.len();
    let mut positions: Vec<Vec<f64>> = Vec::new();
    for c in &position_columns {
        positions.push(cols.f64s(c)?);
    }
    // Properties.
    let mut specs: Vec<PropertySpec> = Vec::new();
    let mut values: Vec<Vec<PropertyValue>> = Vec::new();
    for (id, source) in sources {
        match source {
            Source::Number(c) => {
                let dt = schema.field_with_name(&c).map(|f| f.data_type().clone());
                let kind = dt
                    .ok()
                    .as_ref()
                    .and_then(property_type_of)
                    .unwrap_or(PropertyType::Float32);
                let mut spec = declared_property(&id)
                    .filter(|p| p.kind == kind)
                    .cloned()
                    .unwrap_or_else(|| PropertySpec::new(&id, kind));
                spec.id = id.clone();
                let v = cols.f64s(&c)?;
                values.push(
                    v.into_iter()
                        .map(|x| {
                            if kind == PropertyType::Float32 {
                                PropertyValue::Float(x as f32)
                            } else {
                                PropertyValue::Int(x as i64)
                            }
                        })
                        .collect(),
                );
                specs.push(spec);
            }
            Source::Colour(names) => {
                let kind = if names.len() == 3 {
                    PropertyType::Rgb
                } else {
                    PropertyType::Rgba
                };
                let mut parts = Vec::new();
                for c in &names {
                    parts.push(cols.f64s(c)?);
                }
                values.push(
                    (0..n)
                        .map(|i| {
                            let c = |k: usize| parts[k][i] as u8;
                            if names.len() == 3 {
                                PropertyValue::Rgb([c(0), c(1), c(2)])
                            } else {
                                PropertyValue::Rgba([c(0), c(1), c(2), c(3)])
                            }
                        })
                        .collect(),
                );
                specs.push(
                    declared_property(&id)
                        .filter(|p| p.kind == kind)
                        .cloned()
                        .unwrap_or_else(|| PropertySpec::new(&id, kind)),
                );
            }
            Source::Labels(c) => {
                let strings = cols.strings(&c)?;
                let (spec, map) = enum_spec(&id, &strings, declared_property(&id), input, &c)?;
                values.push(
                    strings
                        .iter()
                        .map(|s| PropertyValue::Int(s.as_ref().map(|s| map[s]).unwrap_or(0)))
                        .collect(),
                );
                specs.push(spec);
            }
        }
    }
    // Listed in the order the encoding places them (4-byte numbers, 2-byte, bytes), so that
    // readers taking the `info` order as the layout (Neuroglancer's Python reader) agree.
    let group = |k: PropertyType| match k {
        PropertyType::Uint32 | PropertyType::Int32 | PropertyType::Float32 => 0,
        PropertyType::Uint16 | PropertyType::Int16 => 1,
        _ => 2,
    };
    let mut order: Vec<usize> = (0..specs.len()).collect();
    order.sort_by_key(|&i| group(specs[i].kind));
    let specs: Vec<PropertySpec> = order.iter().map(|&i| specs[i].clone()).collect();
    let values: Vec<Vec<PropertyValue>> = order.iter().map(|&i| values[i].clone()).collect();
    // Relationships.
    let mut relationships: Vec<RelationshipSpec> = Vec::new();
    let mut related: Vec<Vec<Vec<u64>>> = Vec::new();
    let mut seen_rel = BTreeSet::new();
    for (id, source) in relationship_sources {
        if !seen_rel.insert(id.clone()) {
            continue;
        }
        let lists: Vec<Vec<u64>> = match source {
            RelSource::Fragment(c) => cols
                .u64s(&c)?
                .into_iter()
                .map(|v| {
                    v.map(|f| {
                        md.get(&format!("frag:{f}:segment_id"))
                            .and_then(|s| s.parse().ok())
                            .unwrap_or(f)
                    })
                    .into_iter()
                    .collect()
                })
                .collect(),
            RelSource::Ids(c) => cols
                .u64s(&c)?
                .into_iter()
                .map(|v| v.into_iter().collect())
                .collect(),
            RelSource::List(c) => cols.lists(&c)?,
        };
        relationships.push(RelationshipSpec {
            id,
            index: IndexSpec {
                key: String::new(),
                sharding: None,
            },
        });
        related.push(lists);
    }
    let annotations: Vec<Annotation> = (0..n)
        .map(|i| Annotation {
            id: ids[i],
            geometry: positions
                .iter()
                .enumerate()
                .map(|(k, p)| (p[i] * factors[k % 3]) as f32)
                .collect(),
            properties: values.iter().map(|v| v[i]).collect(),
            relationships: related.iter().map(|r| r[i].clone()).collect(),
        })
        .collect();
    let mut other = Map::new();
    if let Some(info) = &declared {
        other = info.other.clone();
    }
    let info = AnnotationInfo {
        dimensions,
        lower_bound: vec![],
        upper_bound: vec![],
        annotation_type,
        properties: specs,
        relationships,
        by_id: IndexSpec {
            key: "by_id".into(),
            sharding: None,
        },
        spatial: vec![],
        other,
    };
    let limit = if opts.limit == 0 { 1000 } else { opts.limit };
    let collection = AnnotationCollection::create(
        store,
        path,
        info,
        &annotations,
        limit,
        opts.sharding.clone(),
    )
    .map_err(|e| TableError::data(input, e.to_string()))?;
    let info = collection.info();
    Ok(AnnotationSummary {
        annotations: n as u64,
        table,
        annotation_type,
        properties: info.properties.iter().map(|p| p.id.clone()).collect(),
        relationships: info.relationships.iter().map(|r| r.id.clone()).collect(),
        notes,
    })
}

/// Where a relationship's ids come from.
enum RelSource {
    /// A fragment column, mapped through `frag:{id}:segment_id`.
    Fragment(String),
    /// A uint64 column (a null is no id).
    Ids(String),
    /// A list-of-uint64 column.
    List(String),
}
