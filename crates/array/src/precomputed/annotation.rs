//! Neuroglancer precomputed annotation collections (`neuroglancer_annotations_v1`): points,
//! lines, axis-aligned boxes, ellipsoids and polylines with typed properties and relationships
//! to segment ids, read from and written to their three indexes: by annotation id, by related
//! object id (one per relationship) and spatial (a multi-level grid).
//!
//! The binary encodings follow Neuroglancer's `annotations.md`: an annotation is its geometry as
//! float32le, then its properties grouped by size (4-byte types, then 2-byte, then 1-byte, each
//! group in `info` order), zero padding to a multiple of 4, and in the id index only, for each
//! relationship a uint32le count and that many uint64le ids. Lists (the related-object and
//! spatial indexes) are a uint64le count, the annotations' encodings, then their uint64le ids.
//! Unsharded indexes are one file per id (or per grid cell `i_j_k`), sharded ones
//! `neuroglancer_uint64_sharded_v1` keyed by the id (or the cell's compressed Morton code),
//! read and written through [`Uint64Index`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use neurochunk_store::{join_key, Store, StoreError};
use serde_json::{json, Map, Value};

use super::sharding::{self, ShardingSpec};
use super::uint64_index::{IndexError, Uint64Index};

/// Most bytes one index file (or shard entry) may decompress to (1 GiB).
const MAX_INDEX_BYTES: u64 = 1 << 30;
/// Most dimensions of an annotation coordinate space.
const MAX_RANK: usize = 32;
/// Most spatial index levels written (cells 2^19 times finer than the first per axis).
const MAX_LEVELS: usize = 20;
/// An annotation whose box would touch more finer cells than this stays in its cell.
const MAX_CHILD_CELLS: u64 = 8;

/// Errors of annotation collections.
#[derive(Debug, thiserror::Error)]
pub enum AnnotationError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The collection's `info` is missing or malformed.
    #[error("annotation collection '{path}': {message}")]
    Info {
        /// The collection's path.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A stored index file is damaged.
    #[error("'{file}': {message}")]
    Corrupt {
        /// The file read.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// Annotations cannot be written as given.
    #[error("{0}")]
    Invalid(String),
}

impl From<IndexError> for AnnotationError {
    fn from(e: IndexError) -> Self {
        match e {
            IndexError::Store(e) => AnnotationError::Store(e),
            IndexError::Corrupt { file, message } => AnnotationError::Corrupt { file, message },
        }
    }
}

/// The result of annotation operations.
pub type AnnotationResult<T> = Result<T, AnnotationError>;

/// The geometry of every annotation of a collection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnnotationType {
    /// One position.
    Point,
    /// Two end points.
    Line,
    /// Two corners.
    AxisAlignedBoundingBox,
    /// A centre and radii.
    Ellipsoid,
    /// A number of points, then the points.
    Polyline,
}

impl AnnotationType {
    /// The name in an `info` (lower case; upper case is read too).
    pub fn name(self) -> &'static str {
        match self {
            AnnotationType::Point => "point",
            AnnotationType::Line => "line",
            AnnotationType::AxisAlignedBoundingBox => "axis_aligned_bounding_box",
            AnnotationType::Ellipsoid => "ellipsoid",
            AnnotationType::Polyline => "polyline",
        }
    }

    /// The type of an `info`'s `annotation_type`, in either case.
    pub fn parse(name: &str) -> Option<AnnotationType> {
        [
            AnnotationType::Point,
            AnnotationType::Line,
            AnnotationType::AxisAlignedBoundingBox,
            AnnotationType::Ellipsoid,
            AnnotationType::Polyline,
        ]
        .into_iter()
        .find(|t| t.name().eq_ignore_ascii_case(name))
    }

    /// The number of float32 values of the geometry (polylines: per point).
    fn values(self, rank: usize) -> usize {
        match self {
            AnnotationType::Point | AnnotationType::Polyline => rank,
            _ => 2 * rank,
        }
    }
}

/// The type of a property.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropertyType {
    /// uint8.
    Uint8,
    /// int8.
    Int8,
    /// uint16.
    Uint16,
    /// int16.
    Int16,
    /// uint32.
    Uint32,
    /// int32.
    Int32,
    /// float32.
    Float32,
    /// Three uint8 (red, green, blue).
    Rgb,
    /// Four uint8 (red, green, blue, alpha).
    Rgba,
}

impl PropertyType {
    /// The name in an `info`.
    pub fn name(self) -> &'static str {
        match self {
            PropertyType::Uint8 => "uint8",
            PropertyType::Int8 => "int8",
            PropertyType::Uint16 => "uint16",
            PropertyType::Int16 => "int16",
            PropertyType::Uint32 => "uint32",
            PropertyType::Int32 => "int32",
            PropertyType::Float32 => "float32",
            PropertyType::Rgb => "rgb",
            PropertyType::Rgba => "rgba",
        }
    }

    /// The type named `name`.
    pub fn parse(name: &str) -> Option<PropertyType> {
        [
            PropertyType::Uint8,
            PropertyType::Int8,
            PropertyType::Uint16,
            PropertyType::Int16,
            PropertyType::Uint32,
            PropertyType::Int32,
            PropertyType::Float32,
            PropertyType::Rgb,
            PropertyType::Rgba,
        ]
        .into_iter()
        .find(|t| t.name() == name)
    }

    /// Bytes of one value.
    pub fn size(self) -> usize {
        match self {
            PropertyType::Uint8 | PropertyType::Int8 => 1,
            PropertyType::Uint16 | PropertyType::Int16 => 2,
            PropertyType::Rgb => 3,
            PropertyType::Uint32 | PropertyType::Int32 | PropertyType::Float32 => 4,
            PropertyType::Rgba => 4,
        }
    }

    /// The group the encoding places it in: 4-byte numbers first, then 2-byte, then bytes.
    fn group(self) -> u8 {
        match self {
            PropertyType::Uint32 | PropertyType::Int32 | PropertyType::Float32 => 0,
            PropertyType::Uint16 | PropertyType::Int16 => 1,
            _ => 2,
        }
    }
}

/// A property of every annotation.
#[derive(Clone, Debug, PartialEq)]
pub struct PropertySpec {
    /// Its id (`[a-z][a-zA-Z0-9_]*`).
    pub id: String,
    /// Its type.
    pub kind: PropertyType,
    /// Anything else its `info` entry says (`description`, `enum_values`, `enum_labels`), kept.
    pub extra: Map<String, Value>,
}

impl PropertySpec {
    /// A property `id` of type `kind`.
    pub fn new(id: &str, kind: PropertyType) -> PropertySpec {
        PropertySpec {
            id: id.to_string(),
            kind,
            extra: Map::new(),
        }
    }
}

/// A value of a property.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PropertyValue {
    /// Any integer type.
    Int(i64),
    /// float32.
    Float(f32),
    /// rgb.
    Rgb([u8; 3]),
    /// rgba.
    Rgba([u8; 4]),
}

/// Where an index lives: a directory key relative to the collection, sharded or not.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexSpec {
    /// The directory, relative to the collection (may hold `..` as the format allows).
    pub key: String,
    /// The sharding, when the index is sharded.
    pub sharding: Option<ShardingSpec>,
}

/// A relationship of annotations to segment ids, with its index.
#[derive(Clone, Debug, PartialEq)]
pub struct RelationshipSpec {
    /// Its id (shown by the viewer).
    pub id: String,
    /// Its related-object index.
    pub index: IndexSpec,
}

/// One level of the spatial index.
#[derive(Clone, Debug, PartialEq)]
pub struct SpatialLevel {
    /// Its index.
    pub index: IndexSpec,
    /// Cells per dimension.
    pub grid_shape: Vec<u64>,
    /// The size of a cell per dimension, in the coordinate space's units.
    pub chunk_size: Vec<f64>,
    /// Most annotations per cell.
    pub limit: u64,
}

/// A dimension of the coordinate space: its name, scale and unit (`"nm"`, `"m"`, `""`).
#[derive(Clone, Debug, PartialEq)]
pub struct Dimension {
    /// The name (`x`).
    pub name: String,
    /// The scale, in `unit`s per coordinate step.
    pub scale: f64,
    /// The unit.
    pub unit: String,
}

/// A collection's `info`.
#[derive(Clone, Debug, PartialEq)]
pub struct AnnotationInfo {
    /// The coordinate space.
    pub dimensions: Vec<Dimension>,
    /// Lower bound of all geometry (the spatial grid's origin).
    pub lower_bound: Vec<f64>,
    /// Exclusive upper bound of all geometry.
    pub upper_bound: Vec<f64>,
    /// The geometry type.
    pub annotation_type: AnnotationType,
    /// The properties, in `info` order.
    pub properties: Vec<PropertySpec>,
    /// The relationships.
    pub relationships: Vec<RelationshipSpec>,
    /// The annotation id index.
    pub by_id: IndexSpec,
    /// The spatial index, coarse to fine.
    pub spatial: Vec<SpatialLevel>,
    /// Members not interpreted here (kept when written).
    pub other: Map<String, Value>,
}

/// One annotation.
#[derive(Clone, Debug, PartialEq)]
pub struct Annotation {
    /// Its id.
    pub id: u64,
    /// Its geometry: `rank` values for a point, `2 * rank` for the other fixed types, `rank`
    /// per point for a polyline.
    pub geometry: Vec<f32>,
    /// Its property values, in `info` order.
    pub properties: Vec<PropertyValue>,
    /// Its related segment ids, one list per relationship (empty lists when read from an
    /// index that does not carry them: the spatial and related-object indexes).
    pub relationships: Vec<Vec<u64>>,
}

impl AnnotationInfo {
    /// The number of dimensions.
    pub fn rank(&self) -> usize {
        self.dimensions.len()
    }

    /// Parse an `info` document of the collection at `path` (named in errors).
    pub fn parse(doc: &Value, path: &str) -> AnnotationResult<AnnotationInfo> {
        let err = |message: String| AnnotationError::Info {
            path: crate::display_path(path),
            message,
        };
        let map = doc
            .as_object()
            .ok_or_else(|| err("the info is not a JSON object".into()))?;
        match map.get("@type").and_then(Value::as_str) {
            Some("neuroglancer_annotations_v1") => {}
            other => {
                return Err(err(format!(
                    "'@type' is {}, not \"neuroglancer_annotations_v1\"",
                    other.map_or("missing".into(), |t| format!("\"{t}\""))
                )))
            }
        }
        let dims = map
            .get("dimensions")
            .and_then(Value::as_object)
            .ok_or_else(|| err("'dimensions' must be an object".into()))?;
        let mut dimensions = Vec::new();
        for (name, value) in dims {
            let pair = value.as_array().filter(|a| a.len() == 2);
            let scale = pair.and_then(|a| a[0].as_f64()).filter(|s| *s > 0.0);
            let unit = pair.and_then(|a| a[1].as_str());
            match (scale, unit) {
                (Some(scale), Some(unit)) => dimensions.push(Dimension {
                    name: name.clone(),
                    scale,
                    unit: unit.to_string(),
                }),
                _ => {
                    return Err(err(format!(
                        "dimension '{name}' must be [positive scale, unit], found {value}"
                    )))
                }
            }
        }
        let rank = dimensions.len();
        if rank == 0 || rank > MAX_RANK {
            return Err(err(format!(
                "{rank} dimensions (1 to {MAX_RANK} are supported)"
            )));
        }
        let vector = |member: &str| -> AnnotationResult<Vec<f64>> {
            let values: Option<Vec<f64>> = map
                .get(member)
                .and_then(Value::as_array)
                .map(|a| a.iter().map(Value::as_f64).collect())
                .and_then(|v: Option<Vec<f64>>| v);
            match values {
                Some(v) if v.len() == rank && v.iter().all(|x| x.is_finite()) => Ok(v),
                _ => Err(err(format!("'{member}' must be {rank} finite numbers"))),
            }
        };
        let lower_bound = vector("lower_bound")?;
        let upper_bound = vector("upper_bound")?;
        let annotation_type = map
            .get("annotation_type")
            .and_then(Value::as_str)
            .and_then(AnnotationType::parse)
            .ok_or_else(|| {
                err(format!(
                    "'annotation_type' must be point, line, axis_aligned_bounding_box, \
                     ellipsoid or polyline, found {}",
                    map.get("annotation_type").unwrap_or(&Value::Null)
                ))
            })?;
        let mut properties = Vec::new();
        for entry in map
            .get("properties")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let object = entry
                .as_object()
                .ok_or_else(|| err(format!("a property must be an object, found {entry}")))?;
            let id = object
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| valid_property_id(id))
                .ok_or_else(|| {
                    err(format!(
                        "property {entry}: 'id' must match [a-z][a-zA-Z0-9_]*"
                    ))
                })?;
            let kind = object
                .get("type")
                .and_then(Value::as_str)
                .and_then(PropertyType::parse)
                .ok_or_else(|| err(format!("property '{id}': unknown 'type'")))?;
            let mut extra = object.clone();
            extra.remove("id");
            extra.remove("type");
            properties.push(PropertySpec {
                id: id.to_string(),
                kind,
                extra,
            });
        }
        let index = |value: Option<&Value>, what: &str| -> AnnotationResult<IndexSpec> {
            let object = value
                .and_then(Value::as_object)
                .ok_or_else(|| err(format!("{what} must be an object with a 'key'")))?;
            let key = object
                .get("key")
                .and_then(Value::as_str)
                .filter(|k| !k.is_empty())
                .ok_or_else(|| err(format!("{what} has no 'key'")))?;
            let sharding = match object.get("sharding") {
                None | Some(Value::Null) => None,
                Some(spec) => {
                    Some(ShardingSpec::from_json(spec).map_err(|e| err(format!("{what}: {e}")))?)
                }
            };
            Ok(IndexSpec {
                key: key.to_string(),
                sharding,
            })
        };
        let mut relationships = Vec::new();
        for entry in map
            .get("relationships")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let id = entry
                .get("id")
                .and_then(Value::as_str)
                .ok_or_else(|| err(format!("relationship {entry} has no 'id'")))?;
            relationships.push(RelationshipSpec {
                id: id.to_string(),
                index: index(Some(entry), &format!("relationship '{id}'"))?,
            });
        }
        let by_id = index(map.get("by_id"), "'by_id'")?;
        let mut spatial = Vec::new();
        for (level, entry) in map
            .get("spatial")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let what = format!("spatial level {level}");
            let grid_shape: Option<Vec<u64>> = entry
                .get("grid_shape")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().map(Value::as_u64).collect());
            let chunk_size: Option<Vec<f64>> = entry
                .get("chunk_size")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().map(Value::as_f64).collect());
            let (Some(grid_shape), Some(chunk_size)) = (grid_shape, chunk_size) else {
                return Err(err(format!(
                    "{what}: 'grid_shape' and 'chunk_size' are needed"
                )));
            };
            if grid_shape.len() != rank
                || chunk_size.len() != rank
                || grid_shape.contains(&0)
                || !chunk_size.iter().all(|c| c.is_finite() && *c > 0.0)
            {
                return Err(err(format!(
                    "{what}: 'grid_shape' and 'chunk_size' must be {rank} positive numbers"
                )));
            }
            if grid_shape
                .iter()
                .try_fold(1u64, |n, &g| n.checked_mul(g))
                .is_none_or(|cells| cells > 1 << 40)
            {
                return Err(err(format!("{what}: the grid has too many cells")));
            }
            spatial.push(SpatialLevel {
                index: index(Some(entry), &what)?,
                grid_shape,
                chunk_size,
                limit: entry.get("limit").and_then(Value::as_u64).unwrap_or(0),
            });
        }
        let mut other = map.clone();
        for member in [
            "@type",
            "dimensions",
            "lower_bound",
            "upper_bound",
            "annotation_type",
            "properties",
            "relationships",
            "by_id",
            "spatial",
        ] {
            other.remove(member);
        }
        Ok(AnnotationInfo {
            dimensions,
            lower_bound,
            upper_bound,
            annotation_type,
            properties,
            relationships,
            by_id,
            spatial,
            other,
        })
    }

    /// The `info` document.
    pub fn to_json(&self) -> Value {
        let index = |spec: &IndexSpec, into: &mut Map<String, Value>| {
            into.insert("key".into(), json!(spec.key));
            if let Some(sharding) = &spec.sharding {
                into.insert("sharding".into(), sharding.to_json());
            }
        };
        let mut map = Map::new();
        map.insert("@type".into(), json!("neuroglancer_annotations_v1"));
        let dims: Map<String, Value> = self
            .dimensions
            .iter()
            .map(|d| (d.name.clone(), json!([d.scale, d.unit])))
            .collect();
        map.insert("dimensions".into(), Value::Object(dims));
        map.insert("lower_bound".into(), json!(self.lower_bound));
        map.insert("upper_bound".into(), json!(self.upper_bound));
        map.insert("annotation_type".into(), json!(self.annotation_type.name()));
        let properties: Vec<Value> = self
            .properties
            .iter()
            .map(|p| {
                let mut entry = Map::new();
                entry.insert("id".into(), json!(p.id));
                entry.insert("type".into(), json!(p.kind.name()));
                entry.extend(p.extra.clone());
                Value::Object(entry)
            })
            .collect();
        map.insert("properties".into(), Value::Array(properties));
        let relationships: Vec<Value> = self
            .relationships
            .iter()
            .map(|r| {
                let mut entry = Map::new();
                entry.insert("id".into(), json!(r.id));
                index(&r.index, &mut entry);
                Value::Object(entry)
            })
            .collect();
        map.insert("relationships".into(), Value::Array(relationships));
        let mut by_id = Map::new();
        index(&self.by_id, &mut by_id);
        map.insert("by_id".into(), Value::Object(by_id));
        let spatial: Vec<Value> = self
            .spatial
            .iter()
            .map(|level| {
                let mut entry = Map::new();
                index(&level.index, &mut entry);
                entry.insert("grid_shape".into(), json!(level.grid_shape));
                entry.insert("chunk_size".into(), json!(level.chunk_size));
                entry.insert("limit".into(), json!(level.limit));
                Value::Object(entry)
            })
            .collect();
        map.insert("spatial".into(), Value::Array(spatial));
        map.extend(self.other.clone());
        Value::Object(map)
    }

    /// The properties in encoding order (by size group, `info` order within a group), as
    /// indexes into [`AnnotationInfo::properties`].
    fn encoding_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.properties.len()).collect();
        order.sort_by_key(|&i| self.properties[i].kind.group());
        order
    }

    /// Encode `a`'s geometry, properties and padding (no relationships).
    fn encode_body(&self, a: &Annotation, out: &mut Vec<u8>) -> AnnotationResult<()> {
        let rank = self.rank();
        let invalid =
            |message: String| AnnotationError::Invalid(format!("annotation {}: {message}", a.id));
        let per = self.annotation_type.values(rank);
        let start = out.len();
        if self.annotation_type == AnnotationType::Polyline {
            if a.geometry.len() % rank != 0 || a.geometry.len() < 2 * rank {
                return Err(invalid(format!(
                    "a polyline needs two or more points of {rank} values, found {} values",
                    a.geometry.len()
                )));
            }
            let points = u32::try_from(a.geometry.len() / rank)
                .map_err(|_| invalid("too many points".into()))?;
            out.extend_from_slice(&points.to_le_bytes());
        } else if a.geometry.len() != per {
            return Err(invalid(format!(
                "a {} needs {per} values, found {}",
                self.annotation_type.name(),
                a.geometry.len()
            )));
        }
        for v in &a.geometry {
            out.extend_from_slice(&v.to_le_bytes());
        }
        if a.properties.len() != self.properties.len() {
            return Err(invalid(format!(
                "{} property values for {} properties",
                a.properties.len(),
                self.properties.len()
            )));
        }
        for i in self.encoding_order() {
            let spec = &self.properties[i];
            let value = a.properties[i];
            let bad = || {
                invalid(format!(
                    "property '{}': {value:?} is not a {}",
                    spec.id,
                    spec.kind.name()
                ))
            };
            match (spec.kind, value) {
                (PropertyType::Float32, PropertyValue::Float(v)) => {
                    out.extend_from_slice(&v.to_le_bytes())
                }
                (PropertyType::Float32, PropertyValue::Int(v)) => {
                    out.extend_from_slice(&(v as f32).to_le_bytes())
                }
                (PropertyType::Rgb, PropertyValue::Rgb(c)) => out.extend_from_slice(&c),
                (PropertyType::Rgba, PropertyValue::Rgba(c)) => out.extend_from_slice(&c),
                (kind, PropertyValue::Int(v)) => {
                    let fits = match kind {
                        PropertyType::Uint8 => {
                            u8::try_from(v).map(|x| out.extend_from_slice(&[x])).is_ok()
                        }
                        PropertyType::Int8 => i8::try_from(v)
                            .map(|x| out.extend_from_slice(&x.to_le_bytes()))
                            .is_ok(),
                        PropertyType::Uint16 => u16::try_from(v)
                            .map(|x| out.extend_from_slice(&x.to_le_bytes()))
                            .is_ok(),
                        PropertyType::Int16 => i16::try_from(v)
                            .map(|x| out.extend_from_slice(&x.to_le_bytes()))
                            .is_ok(),
                        PropertyType::Uint32 => u32::try_from(v)
                            .map(|x| out.extend_from_slice(&x.to_le_bytes()))
                            .is_ok(),
                        PropertyType::Int32 => i32::try_from(v)
                            .map(|x| out.extend_from_slice(&x.to_le_bytes()))
                            .is_ok(),
                        _ => false,
                    };
                    if !fits {
                        return Err(bad());
                    }
                }
                _ => return Err(bad()),
            }
        }
        while (out.len() - start) % 4 != 0 {
            out.push(0);
        }
        Ok(())
    }

    /// Decode one annotation's geometry, properties and padding from `bytes[*at..]`.
    fn decode_body(&self, bytes: &[u8], at: &mut usize, id: u64) -> Result<Annotation, String> {
        let rank = self.rank();
        let start = *at;
        let mut take = |n: usize| -> Result<&[u8], String> {
            let end = at
                .checked_add(n)
                .filter(|&e| e <= bytes.len())
                .ok_or_else(|| {
                    format!(
                        "annotation {id}: {n} more bytes needed at byte {}, the file has {}",
                        *at,
                        bytes.len()
                    )
                })?;
            let part = &bytes[*at..end];
            *at = end;
            Ok(part)
        };
        let values = if self.annotation_type == AnnotationType::Polyline {
            let count =
                u32::from_le_bytes(take(4)?.try_into().map_err(|_| "short".to_string())?) as usize;
            count
                .checked_mul(rank)
                .ok_or_else(|| format!("annotation {id}: {count} points overflow"))?
        } else {
            self.annotation_type.values(rank)
        };
        let raw = take(
            values
                .checked_mul(4)
                .ok_or_else(|| format!("annotation {id}: geometry too large"))?,
        )?;
        let geometry: Vec<f32> = raw
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let mut properties = vec![PropertyValue::Int(0); self.properties.len()];
        for i in self.encoding_order() {
            let kind = self.properties[i].kind;
            let b = take(kind.size())?;
            properties[i] = match kind {
                PropertyType::Uint8 => PropertyValue::Int(i64::from(b[0])),
                PropertyType::Int8 => PropertyValue::Int(i64::from(b[0] as i8)),
                PropertyType::Uint16 => {
                    PropertyValue::Int(i64::from(u16::from_le_bytes([b[0], b[1]])))
                }
                PropertyType::Int16 => {
                    PropertyValue::Int(i64::from(i16::from_le_bytes([b[0], b[1]])))
                }
                PropertyType::Uint32 => {
                    PropertyValue::Int(i64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                }
                PropertyType::Int32 => {
                    PropertyValue::Int(i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                }
                PropertyType::Float32 => {
                    PropertyValue::Float(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                }
                PropertyType::Rgb => PropertyValue::Rgb([b[0], b[1], b[2]]),
                PropertyType::Rgba => PropertyValue::Rgba([b[0], b[1], b[2], b[3]]),
            };
        }
        let used = *at - start;
        let padding = (4 - used % 4) % 4;
        if *at + padding > bytes.len() {
            return Err(format!(
                "annotation {id}: its padding runs past the end of the file"
            ));
        }
        *at += padding;
        Ok(Annotation {
            id,
            geometry,
            properties,
            relationships: vec![Vec::new(); self.relationships.len()],
        })
    }

    /// The single annotation encoding (the id index): body, then the related ids.
    pub fn encode_one(&self, a: &Annotation) -> AnnotationResult<Vec<u8>> {
        let mut out = Vec::new();
        self.encode_body(a, &mut out)?;
        if a.relationships.len() != self.relationships.len() {
            return Err(AnnotationError::Invalid(format!(
                "annotation {}: {} relationship lists for {} relationships",
                a.id,
                a.relationships.len(),
                self.relationships.len()
            )));
        }
        for ids in &a.relationships {
            let count = u32::try_from(ids.len()).map_err(|_| {
                AnnotationError::Invalid(format!("annotation {}: too many related ids", a.id))
            })?;
            out.extend_from_slice(&count.to_le_bytes());
            for id in ids {
                out.extend_from_slice(&id.to_le_bytes());
            }
        }
        Ok(out)
    }

    /// Decode the single annotation encoding of annotation `id`.
    pub fn decode_one(&self, bytes: &[u8], id: u64) -> Result<Annotation, String> {
        let mut at = 0;
        let mut a = self.decode_body(bytes, &mut at, id)?;
        for list in a.relationships.iter_mut() {
            let count = bytes
                .get(at..at + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
                .ok_or_else(|| format!("annotation {id}: the related ids are cut short"))?;
            at += 4;
            let end = count
                .checked_mul(8)
                .and_then(|n| n.checked_add(at))
                .filter(|&e| e <= bytes.len())
                .ok_or_else(|| {
                    format!("annotation {id}: {count} related ids do not fit in the file")
                })?;
            *list = bytes[at..end]
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect();
            at = end;
        }
        if at != bytes.len() {
            return Err(format!(
                "annotation {id}: {} bytes left over after the annotation",
                bytes.len() - at
            ));
        }
        Ok(a)
    }

    /// The multiple annotation encoding (spatial and related-object indexes).
    pub fn encode_list(&self, list: &[&Annotation]) -> AnnotationResult<Vec<u8>> {
        let mut out = Vec::new();
        out.extend_from_slice(&(list.len() as u64).to_le_bytes());
        for a in list {
            self.encode_body(a, &mut out)?;
        }
        for a in list {
            out.extend_from_slice(&a.id.to_le_bytes());
        }
        Ok(out)
    }

    /// Decode the multiple annotation encoding.
    pub fn decode_list(&self, bytes: &[u8]) -> Result<Vec<Annotation>, String> {
        let count = bytes
            .get(..8)
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            .ok_or_else(|| "shorter than its 8-byte count".to_string())?;
        // Every annotation takes at least 4 bytes and its 8-byte id.
        if count.saturating_mul(12) > bytes.len() as u64 {
            return Err(format!(
                "{count} annotations cannot fit in {} bytes",
                bytes.len()
            ));
        }
        let count = count as usize;
        let ids_start = bytes.len() - count * 8;
        let body = &bytes[..ids_start];
        let mut at = 8;
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            let raw = &bytes[ids_start + i * 8..ids_start + i * 8 + 8];
            let id = u64::from_le_bytes([
                raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7],
            ]);
            out.push(self.decode_body(body, &mut at, id)?);
        }
        if at != ids_start {
            return Err(format!(
                "{} bytes between the annotations and their ids",
                ids_start.saturating_sub(at)
            ));
        }
        Ok(out)
    }

    /// The bounding box of an annotation's geometry.
    fn bounds(&self, a: &Annotation) -> (Vec<f64>, Vec<f64>) {
        let rank = self.rank();
        let g: Vec<f64> = a.geometry.iter().map(|&v| f64::from(v)).collect();
        match self.annotation_type {
            AnnotationType::Point => (g.clone(), g),
            AnnotationType::Line | AnnotationType::AxisAlignedBoundingBox => {
                let (p, q) = g.split_at(rank);
                (
                    p.iter().zip(q).map(|(a, b)| a.min(*b)).collect(),
                    p.iter().zip(q).map(|(a, b)| a.max(*b)).collect(),
                )
            }
            AnnotationType::Ellipsoid => {
                let (c, r) = g.split_at(rank);
                (
                    c.iter().zip(r).map(|(c, r)| c - r.abs()).collect(),
                    c.iter().zip(r).map(|(c, r)| c + r.abs()).collect(),
                )
            }
            AnnotationType::Polyline => {
                let mut lo = vec![f64::INFINITY; rank];
                let mut hi = vec![f64::NEG_INFINITY; rank];
                for point in g.chunks_exact(rank) {
                    for d in 0..rank {
                        lo[d] = lo[d].min(point[d]);
                        hi[d] = hi[d].max(point[d]);
                    }
                }
                (lo, hi)
            }
        }
    }
}

fn valid_property_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An annotation collection in a store.
pub struct AnnotationCollection {
    store: Arc<dyn Store>,
    path: String,
    info: AnnotationInfo,
}

impl std::fmt::Debug for AnnotationCollection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnnotationCollection")
            .field("path", &self.path)
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl AnnotationCollection {
    /// Open the collection whose `info` is at `path/info`.
    pub fn open(store: Arc<dyn Store>, path: &str) -> AnnotationResult<AnnotationCollection> {
        let key = join_key(path, "info");
        let bytes = store.get(&key)?.ok_or_else(|| AnnotationError::Info {
            path: crate::display_path(path),
            message: "no info document".into(),
        })?;
        let doc: Value = serde_json::from_slice(&bytes).map_err(|e| AnnotationError::Info {
            path: crate::display_path(path),
            message: format!("the info is not JSON: {e}"),
        })?;
        let info = AnnotationInfo::parse(&doc, path)?;
        Ok(AnnotationCollection {
            store,
            path: path.trim_matches('/').to_string(),
            info,
        })
    }

    /// The collection's description.
    pub fn info(&self) -> &AnnotationInfo {
        &self.info
    }

    /// The index at `spec`, its key resolved against the collection (`..` may not leave the
    /// store).
    fn index(&self, spec: &IndexSpec) -> AnnotationResult<Uint64Index> {
        let dir = resolve_key(&self.path, &spec.key).ok_or_else(|| AnnotationError::Info {
            path: crate::display_path(&self.path),
            message: format!("index key '{}' leads outside the store", spec.key),
        })?;
        Ok(Uint64Index::new(
            self.store.clone(),
            &dir,
            spec.sharding.clone(),
            MAX_INDEX_BYTES,
        ))
    }

    /// The annotation `id` with its related ids, from the id index; `None` when absent.
    pub fn get(&self, id: u64) -> AnnotationResult<Option<Annotation>> {
        let index = self.index(&self.info.by_id)?;
        match index.get(id)? {
            None => Ok(None),
            Some((file, bytes)) => self
                .info
                .decode_one(&bytes, id)
                .map(Some)
                .map_err(|message| AnnotationError::Corrupt { file, message }),
        }
    }

    /// The annotations related to `segment` by relationship number `relationship`.
    pub fn related(&self, relationship: usize, segment: u64) -> AnnotationResult<Vec<Annotation>> {
        let spec = self.info.relationships.get(relationship).ok_or_else(|| {
            AnnotationError::Invalid(format!(
                "relationship {relationship}: the collection has {}",
                self.info.relationships.len()
            ))
        })?;
        match self.index(&spec.index)?.get(segment)? {
            None => Ok(Vec::new()),
            Some((file, bytes)) => self
                .info
                .decode_list(&bytes)
                .map_err(|message| AnnotationError::Corrupt { file, message }),
        }
    }

    /// Every annotation of the collection with its related ids: the ids found in every cell of
    /// every spatial level (each annotation once), then each one's entry of the id index (the
    /// only index carrying relationships). Without a spatial index, the id index is listed.
    pub fn read_all(&self) -> AnnotationResult<Vec<Annotation>> {
        let mut found: BTreeMap<u64, Annotation> = BTreeMap::new();
        for level in &self.info.spatial {
            let index = self.index(&level.index)?;
            let cells: u64 = level.grid_shape.iter().product();
            let lists = match &level.index.sharding {
                Some(_) => index.get_all()?,
                None => {
                    // Small grids are probed cell by cell (no listing needed, as over plain
                    // HTTP); larger ones are listed, so a huge `grid_shape` costs nothing.
                    let names = if cells <= PROBED_CELLS {
                        let mut names = Vec::new();
                        for_each_cell(&level.grid_shape, |cell| {
                            names.push(cell_name(cell));
                            Ok::<(), AnnotationError>(())
                        })?;
                        names
                    } else {
                        index
                            .names()?
                            .into_iter()
                            .filter(|n| is_cell_name(n, &level.grid_shape))
                            .collect()
                    };
                    let mut lists = Vec::new();
                    for name in names {
                        if let Some((file, bytes)) = index.get_named(&name)? {
                            lists.push((0, file, bytes));
                        }
                    }
                    debug_assert!(lists.len() as u64 <= cells);
                    lists
                }
            };
            for (_, file, bytes) in lists {
                for a in
                    self.info
                        .decode_list(&bytes)
                        .map_err(|message| AnnotationError::Corrupt {
                            file: file.clone(),
                            message,
                        })?
                {
                    found.entry(a.id).or_insert(a);
                }
            }
        }
        if self.info.spatial.is_empty() {
            for id in self.index(&self.info.by_id)?.ids()? {
                found.insert(
                    id,
                    Annotation {
                        id,
                        geometry: vec![],
                        properties: vec![],
                        relationships: vec![],
                    },
                );
            }
        }
        if self.info.relationships.is_empty() && !self.info.spatial.is_empty() {
            return Ok(found.into_values().collect());
        }
        let mut out = Vec::with_capacity(found.len());
        for id in found.into_keys() {
            if let Some(a) = self.get(id)? {
                out.push(a);
            }
        }
        Ok(out)
    }

    /// Write `annotations` as a new collection at `path` with `info` (its bounds, spatial
    /// levels and index keys are computed here: `by_id`, `rel_<id>` per relationship,
    /// `spatial<level>`; `sharding` shards every index when given). The spatial index follows
    /// the format's recipe: a single cell at level 0, cells halved along the longest axes at
    /// each finer level, at most `limit` annotations per cell, chosen by a hash of their ids.
    pub fn create(
        store: Arc<dyn Store>,
        path: &str,
        mut info: AnnotationInfo,
        annotations: &[Annotation],
        limit: u64,
        sharding: Option<ShardingSpec>,
    ) -> AnnotationResult<AnnotationCollection> {
        let rank = info.rank();
        let mut ids = BTreeSet::new();
        let mut lower = vec![f64::INFINITY; rank];
        let mut upper = vec![f64::NEG_INFINITY; rank];
        let mut boxes = Vec::with_capacity(annotations.len());
        for a in annotations {
            if !ids.insert(a.id) {
                return Err(AnnotationError::Invalid(format!(
                    "annotation id {} appears twice",
                    a.id
                )));
            }
            if a.geometry.iter().any(|v| !v.is_finite()) {
                return Err(AnnotationError::Invalid(format!(
                    "annotation {}: a coordinate is not finite",
                    a.id
                )));
            }
            let valid_length = match info.annotation_type {
                AnnotationType::Polyline => {
                    a.geometry.len() % rank == 0 && a.geometry.len() >= 2 * rank
                }
                t => a.geometry.len() == t.values(rank),
            };
            if !valid_length {
                return Err(AnnotationError::Invalid(format!(
                    "annotation {}: {} coordinates do not make a {} in {rank} dimensions",
                    a.id,
                    a.geometry.len(),
                    info.annotation_type.name()
                )));
            }
            let (lo, hi) = info.bounds(a);
            for d in 0..rank {
                lower[d] = lower[d].min(lo[d]);
                upper[d] = upper[d].max(hi[d]);
            }
            boxes.push((lo, hi));
        }
        if annotations.is_empty() {
            lower = vec![0.0; rank];
            upper = vec![1.0; rank];
        }
        // The upper bound is exclusive: a point on it must still fall in the last cell.
        let upper: Vec<f64> = lower
            .iter()
            .zip(&upper)
            .map(|(l, u)| {
                if u > l {
                    u + (u - l) * 1e-6 + f64::EPSILON
                } else {
                    l + 1.0
                }
            })
            .collect();
        info.lower_bound = lower.clone();
        info.upper_bound = upper.clone();
        info.by_id = IndexSpec {
            key: "by_id".into(),
            sharding: sharding.clone(),
        };
        for r in info.relationships.iter_mut() {
            r.index = IndexSpec {
                key: format!("rel_{}", r.id),
                sharding: sharding.clone(),
            };
        }
        let levels = spatial_levels(&lower, &upper, &boxes, limit.max(1));
        info.spatial = levels
            .iter()
            .enumerate()
            .map(|(k, (grid_shape, chunk_size, _))| SpatialLevel {
                index: IndexSpec {
                    key: format!("spatial{k}"),
                    sharding: sharding.clone(),
                },
                grid_shape: grid_shape.clone(),
                chunk_size: chunk_size.clone(),
                limit: limit.max(1),
            })
            .collect();
        let collection = AnnotationCollection {
            store: store.clone(),
            path: path.trim_matches('/').to_string(),
            info,
        };
        let info = &collection.info;
        // The id index.
        let mut by_id = Vec::with_capacity(annotations.len());
        for a in annotations {
            by_id.push((a.id, info.encode_one(a)?));
        }
        collection.index(&info.by_id)?.put_all(by_id)?;
        // The related-object indexes.
        for (r, spec) in info.relationships.iter().enumerate() {
            let mut by_segment: BTreeMap<u64, Vec<&Annotation>> = BTreeMap::new();
            for a in annotations {
                let mut seen = BTreeSet::new();
                for &segment in &a.relationships[r] {
                    if seen.insert(segment) {
                        by_segment.entry(segment).or_default().push(a);
                    }
                }
            }
            let mut entries = Vec::with_capacity(by_segment.len());
            for (segment, list) in by_segment {
                entries.push((segment, info.encode_list(&list)?));
            }
            collection.index(&spec.index)?.put_all(entries)?;
        }
        // The spatial levels.
        for (k, (grid_shape, _, cells)) in levels.iter().enumerate() {
            let index = collection.index(&info.spatial[k].index)?;
            let mut entries = Vec::with_capacity(cells.len());
            for (cell, members) in cells {
                let list: Vec<&Annotation> = members.iter().map(|&i| &annotations[i]).collect();
                let bytes = info.encode_list(&list)?;
                match &sharding {
                    Some(_) => {
                        entries.push((sharding::compressed_morton_code(cell, grid_shape), bytes))
                    }
                    None => index.put_named(
                        &cell
                            .iter()
                            .map(u64::to_string)
                            .collect::<Vec<_>>()
                            .join("_"),
                        bytes,
                    )?,
                }
            }
            if sharding.is_some() {
                index.put_all(entries)?;
            }
        }
        store.set(
            &join_key(&collection.path, "info"),
            serde_json::to_vec_pretty(&info.to_json())
                .map_err(|e| AnnotationError::Invalid(e.to_string()))?
                .into(),
        )?;
        Ok(collection)
    }
}

/// `base/key` with `.` and `..` segments resolved; `None` when `..` climbs above the store.
fn resolve_key(base: &str, key: &str) -> Option<String> {
    let mut parts: Vec<&str> = base.split('/').filter(|s| !s.is_empty()).collect();
    for segment in key.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

/// Calls `f` for every cell of a grid, in C order.
/// Unsharded spatial levels of at most this many cells are read by asking for each cell's
/// file; larger ones by listing the level's directory.
const PROBED_CELLS: u64 = 4096;

/// The file name of a spatial index cell (`1_0_2`).
fn cell_name(cell: &[u64]) -> String {
    cell.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join("_")
}

/// True when `name` is the file name of a cell of `grid` (canonical decimal numbers).
fn is_cell_name(name: &str, grid: &[u64]) -> bool {
    let parts: Vec<&str> = name.split('_').collect();
    parts.len() == grid.len()
        && parts
            .iter()
            .zip(grid)
            .all(|(p, &g)| p.parse::<u64>().is_ok_and(|v| v < g && v.to_string() == *p))
}

fn for_each_cell<E>(grid: &[u64], mut f: impl FnMut(&[u64]) -> Result<(), E>) -> Result<(), E> {
    let mut cell = vec![0u64; grid.len()];
    loop {
        f(&cell)?;
        let mut d = grid.len();
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            cell[d] += 1;
            if cell[d] < grid[d] {
                break;
            }
            cell[d] = 0;
        }
    }
}

/// A spatial level: its grid shape, its cell size and its cells' annotations.
type Level = (Vec<u64>, Vec<f64>, BTreeMap<Vec<u64>, Vec<usize>>);

/// The spatial index levels for annotations with bounding `boxes`, by the format's recipe.
fn spatial_levels(
    lower: &[f64],
    upper: &[f64],
    boxes: &[(Vec<f64>, Vec<f64>)],
    limit: u64,
) -> Vec<Level> {
    let rank = lower.len();
    let mut grid = vec![1u64; rank];
    let mut size: Vec<f64> = lower.iter().zip(upper).map(|(l, u)| u - l).collect();
    // The annotations still to place, per cell of the current level.
    let mut remaining: BTreeMap<Vec<u64>, Vec<usize>> = BTreeMap::new();
    remaining.insert(vec![0; rank], (0..boxes.len()).collect());
    let mut levels = Vec::new();
    for level in 0..MAX_LEVELS {
        if remaining.values().all(Vec::is_empty) {
            break;
        }
        let last_level = level + 1 == MAX_LEVELS;
        let most = remaining.values().map(Vec::len).max().unwrap_or(0) as u64;
        // The next level: the cell size halved along the axes where that keeps cells most
        // isotropic (those within a factor 2 of the longest).
        let longest = size.iter().cloned().fold(0.0f64, f64::max);
        let factor: Vec<u64> = size
            .iter()
            .map(|&s| {
                if s * 2.0 > longest * 1.0001 || s >= longest {
                    2
                } else {
                    1
                }
            })
            .collect();
        let child_size: Vec<f64> = size
            .iter()
            .zip(&factor)
            .map(|(s, f)| s / *f as f64)
            .collect();
        let mut cells: BTreeMap<Vec<u64>, Vec<usize>> = BTreeMap::new();
        let mut next: BTreeMap<Vec<u64>, Vec<usize>> = BTreeMap::new();
        for (cell, members) in remaining {
            for i in members {
                // Chosen with probability limit / most, by a hash of the annotation's index;
                // at the last level, or when its box would spread over many finer cells,
                // it stays here.
                let (lo, hi) = &boxes[i];
                let ranges: Vec<(u64, u64)> = (0..rank)
                    .map(|d| {
                        let first = cell[d] * factor[d];
                        let last = first + factor[d] - 1;
                        let at = |v: f64| {
                            (((v - lower[d]) / child_size[d]).floor().max(0.0) as u64)
                                .clamp(first, last)
                        };
                        (at(lo[d]), at(hi[d]))
                    })
                    .collect();
                let span: Vec<u64> = ranges.iter().map(|(a, b)| b - a + 1).collect();
                let spread = span.iter().product::<u64>() > MAX_CHILD_CELLS;
                let keep = last_level || spread || most <= limit || (mix(i as u64) % most) < limit;
                if keep {
                    cells.entry(cell.clone()).or_default().push(i);
                    continue;
                }
                let _ = for_each_cell(&span, |offset| {
                    let child: Vec<u64> =
                        ranges.iter().zip(offset).map(|((a, _), o)| a + o).collect();
                    next.entry(child).or_default().push(i);
                    Ok::<(), ()>(())
                });
            }
        }
        levels.push((grid.clone(), size.clone(), cells));
        grid = grid.iter().zip(&factor).map(|(g, f)| g * f).collect();
        size = child_size;
        remaining = next;
    }
    levels
}

/// A 64-bit mix of an integer (splitmix64's finaliser): the pseudo-random choice of which
/// annotations a coarse cell shows.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}
