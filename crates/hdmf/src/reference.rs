//! Object and region references: the reference value itself, its encodings in attributes and
//! datasets under both conventions, and region selections.
//!
//! A reference names a target by `source` (the file holding it, relative to this file's root;
//! `"."` for this file) and `path` (absolute inside that file). Object ids are carried along
//! but never used to resolve. A **region reference** adds a `region` key selecting part of the
//! target dataset; see `docs/nwb.md` for the exact encoding.

use serde_json::{json, Map, Value};

use crate::convention::{Convention, LEGACY_DTYPE, V3_REFERENCE};

/// The source of a reference or link into the same file.
pub const SELF_SOURCE: &str = ".";

/// A reference to a group or dataset, optionally to a region of a dataset.
#[derive(Clone, Debug, PartialEq)]
pub struct Reference {
    /// The file holding the target, relative to this file's root (`"."`: this file).
    pub source: String,
    /// Absolute path of the target inside `source` (`/a/b`).
    pub path: String,
    /// The target's object id, when the writer recorded it.
    pub object_id: Option<String>,
    /// The object id of the file holding the reference, when recorded.
    pub source_object_id: Option<String>,
    /// The selected part of the target dataset (region references only).
    pub region: Option<Region>,
}

/// A selection of part of a dataset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Region {
    /// Per axis, a `[start, stop, step]` slice (stop exclusive) or `None` for the whole axis.
    Slices(Vec<Option<RegionSlice>>),
    /// A list of points, each with one index per axis.
    Points(Vec<Vec<u64>>),
}

/// One axis of a [`Region::Slices`] selection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionSlice {
    /// First index.
    pub start: u64,
    /// End index (exclusive).
    pub stop: u64,
    /// Step (at least 1).
    pub step: u64,
}

impl Reference {
    /// A reference to `path` in this file.
    pub fn to(path: impl Into<String>) -> Self {
        Reference {
            source: SELF_SOURCE.into(),
            path: path.into(),
            object_id: None,
            source_object_id: None,
            region: None,
        }
    }

    /// The same reference restricted to `region`.
    pub fn with_region(mut self, region: Region) -> Self {
        self.region = Some(region);
        self
    }

    /// Whether the target is in this file.
    pub fn is_internal(&self) -> bool {
        self.source == SELF_SOURCE || self.source.is_empty()
    }

    /// Parse the dictionary form `{"source", "path", "object_id"?, "source_object_id"?, "region"?}`.
    pub fn from_json(value: &Value) -> Result<Self, String> {
        let obj = value
            .as_object()
            .ok_or_else(|| format!("a reference must be a JSON object, found {value}"))?;
        // LINDI reference files wrap dataset elements as attributes are wrapped in v3.
        if let (Some(inner), None) = (obj.get(V3_REFERENCE), obj.get("path")) {
            return Reference::from_json(inner);
        }
        let path = obj
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("reference {value} has no string 'path'"))?;
        let source = match obj.get("source") {
            None | Some(Value::Null) => SELF_SOURCE.to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(format!(
                    "reference 'source' must be a string, found {other}"
                ))
            }
        };
        let optional_text = |key: &str| -> Result<Option<String>, String> {
            match obj.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(format!("reference '{key}' must be a string, found {other}")),
            }
        };
        let region = match obj.get("region") {
            None | Some(Value::Null) => None,
            Some(r) => Some(Region::from_json(r)?),
        };
        Ok(Reference {
            source,
            path: absolute(path),
            object_id: optional_text("object_id")?,
            source_object_id: optional_text("source_object_id")?,
            region,
        })
    }

    /// The dictionary form. `full` includes the object ids (as hdmf-zarr ≥ 0.4 writes them).
    pub fn to_json(&self, full: bool) -> Value {
        let mut obj = Map::new();
        if full {
            obj.insert("object_id".into(), opt_json(&self.object_id));
        }
        obj.insert("path".into(), Value::String(self.path.clone()));
        if let Some(region) = &self.region {
            obj.insert("region".into(), region.to_json());
        }
        obj.insert("source".into(), Value::String(self.source.clone()));
        if full {
            obj.insert("source_object_id".into(), opt_json(&self.source_object_id));
        }
        obj.into()
    }

    /// The attribute value that stores this reference under `convention`.
    pub fn to_attribute(&self, convention: Convention) -> Value {
        match convention {
            Convention::Legacy => {
                let kind = if self.region.is_some() {
                    "region"
                } else {
                    "object"
                };
                json!({"value": self.to_json(true), LEGACY_DTYPE: kind})
            }
            Convention::V3 => {
                let mut inner = Map::new();
                inner.insert("source".into(), Value::String(self.source.clone()));
                inner.insert("path".into(), Value::String(self.path.clone()));
                if let Some(region) = &self.region {
                    inner.insert("region".into(), region.to_json());
                }
                json!({ V3_REFERENCE: inner })
            }
        }
    }

    /// One element of a v3 reference dataset: the plain path for an internal object
    /// reference, otherwise the JSON text of the dictionary.
    pub fn to_v3_element(&self) -> String {
        if self.is_internal() && self.region.is_none() {
            self.path.clone()
        } else {
            let mut inner = Map::new();
            inner.insert("source".into(), Value::String(self.source.clone()));
            inner.insert("path".into(), Value::String(self.path.clone()));
            if let Some(region) = &self.region {
                inner.insert("region".into(), region.to_json());
            }
            Value::Object(inner).to_string()
        }
    }

    /// Parse one element of a reference dataset as our codecs present it: JSON text of a
    /// dictionary (legacy json2/pickle, v3 dictionaries) or a plain path (v3). Empty and
    /// fill elements (`""`, `0`, `null`) are no reference.
    pub fn from_element(text: &str) -> Result<Option<Self>, String> {
        let trimmed = text.trim();
        if trimmed.is_empty() || trimmed == "0" || trimmed == "null" {
            return Ok(None);
        }
        if trimmed.starts_with('{') {
            let value: Value = serde_json::from_str(trimmed)
                .map_err(|e| format!("reference element is not valid JSON ({e}): {trimmed}"))?;
            return Reference::from_json(&value).map(Some);
        }
        if trimmed.starts_with('/') {
            return Ok(Some(Reference::to(trimmed)));
        }
        Err(format!(
            "reference element {trimmed:?} is neither an absolute path nor a reference object"
        ))
    }
}

/// If `value` is a reference-valued attribute (either convention), the reference; `Err` if it
/// has the wrapper's shape but not a valid reference inside.
pub fn attribute_reference(value: &Value) -> Option<Result<Reference, String>> {
    let obj = value.as_object()?;
    if let Some(inner) = obj.get(V3_REFERENCE) {
        return Some(Reference::from_json(inner));
    }
    let kind = obj.get(LEGACY_DTYPE)?.as_str()?;
    if !matches!(kind, "object" | "region") || !obj.contains_key("value") {
        return None;
    }
    let parsed = obj.get("value").map(Reference::from_json)?;
    Some(parsed.and_then(|r| {
        if kind == "region" && r.region.is_none() {
            Err("a 'region' reference has no 'region' selection".to_string())
        } else {
            Ok(r)
        }
    }))
}

fn opt_json(v: &Option<String>) -> Value {
    v.as_ref().map_or(Value::Null, |s| Value::String(s.clone()))
}

/// `path` with a leading `/`.
pub(crate) fn absolute(path: &str) -> String {
    let trimmed = path.trim_matches('/');
    format!("/{trimmed}")
}

impl Region {
    /// Parse `[[start, stop, step] | [start, stop] | {"start","stop","step"} | null, …]` or
    /// `{"points": [[i, j, …], …]}`.
    pub fn from_json(value: &Value) -> Result<Self, String> {
        let bad = || {
            format!("invalid region selection {value}: expected a list with one [start, stop, step] (or null) per axis, or {{\"points\": [[i, j, ...], ...]}}")
        };
        match value {
            Value::Object(obj) => {
                let points = obj
                    .get("points")
                    .and_then(Value::as_array)
                    .ok_or_else(bad)?;
                let points = points
                    .iter()
                    .map(|p| {
                        p.as_array()
                            .ok_or_else(bad)?
                            .iter()
                            .map(|i| i.as_u64().ok_or_else(bad))
                            .collect::<Result<Vec<u64>, String>>()
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if let Some(first) = points.first() {
                    if points.iter().any(|p| p.len() != first.len()) {
                        return Err(format!("region points {value} have differing ranks"));
                    }
                }
                Ok(Region::Points(points))
            }
            Value::Array(axes) => axes
                .iter()
                .map(|axis| parse_axis(axis).ok_or_else(bad))
                .collect::<Result<Vec<_>, _>>()
                .map(Region::Slices),
            _ => Err(bad()),
        }
    }

    /// The stored form: per axis `[start, stop, step]` or `null`; or `{"points": …}`.
    pub fn to_json(&self) -> Value {
        match self {
            Region::Slices(axes) => Value::Array(
                axes.iter()
                    .map(|a| match a {
                        None => Value::Null,
                        Some(s) => json!([s.start, s.stop, s.step]),
                    })
                    .collect(),
            ),
            Region::Points(points) => json!({ "points": points }),
        }
    }
}

fn parse_axis(axis: &Value) -> Option<Option<RegionSlice>> {
    let (start, stop, step) = match axis {
        Value::Null => return Some(None),
        Value::Array(parts) => match parts.as_slice() {
            [a, b] => (a.as_u64()?, b.as_u64()?, 1),
            [a, b, c] => (a.as_u64()?, b.as_u64()?, c.as_u64()?),
            _ => return None,
        },
        Value::Object(obj) => (
            obj.get("start")?.as_u64()?,
            obj.get("stop")?.as_u64()?,
            match obj.get("step") {
                None | Some(Value::Null) => 1,
                Some(s) => s.as_u64()?,
            },
        ),
        _ => return None,
    };
    if step == 0 || stop < start {
        return None;
    }
    Some(Some(RegionSlice { start, stop, step }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_and_v3_attribute_wrappers_parse_to_the_same_reference() {
        let legacy = json!({"value": {"object_id": null, "path": "/units/spike_times", "source": ".", "source_object_id": "x"}, "zarr_dtype": "object"});
        let v3 = json!({"_REFERENCE": {"source": ".", "path": "/units/spike_times"}});
        let a = attribute_reference(&legacy).unwrap().unwrap();
        let b = attribute_reference(&v3).unwrap().unwrap();
        assert_eq!(a.path, "/units/spike_times");
        assert_eq!(a.path, b.path);
        assert_eq!(a.source_object_id.as_deref(), Some("x"));
        assert!(attribute_reference(&json!({"zarr_dtype": "int64"})).is_none());
        assert!(attribute_reference(&json!("plain")).is_none());
        assert!(attribute_reference(&json!({"_REFERENCE": {"source": "."}}))
            .unwrap()
            .is_err());
    }

    #[test]
    fn region_round_trips_and_rejects_bad_slices() {
        let r = Region::from_json(&json!([[0, 10, 2], null, {"start": 3, "stop": 5}])).unwrap();
        assert_eq!(r.to_json(), json!([[0, 10, 2], null, [3, 5, 1]]));
        let p = Region::from_json(&json!({"points": [[1, 2], [3, 4]]})).unwrap();
        assert_eq!(p, Region::Points(vec![vec![1, 2], vec![3, 4]]));
        assert!(Region::from_json(&json!([[5, 1, 1]])).is_err());
        assert!(Region::from_json(&json!([[0, 4, 0]])).is_err());
        assert!(Region::from_json(&json!({"points": [[1], [2, 3]]})).is_err());
        let legacy = json!({"zarr_dtype": "region", "value": {"path": "/d", "source": "."}});
        assert!(attribute_reference(&legacy).unwrap().is_err());
    }

    #[test]
    fn dataset_elements_in_every_encoding() {
        assert_eq!(Reference::from_element("").unwrap(), None);
        assert_eq!(Reference::from_element("0").unwrap(), None);
        let plain = Reference::from_element("/general/devices/probe")
            .unwrap()
            .unwrap();
        assert_eq!(plain.source, ".");
        let dict = Reference::from_element(r#"{"source": "../a.nwb.zarr", "path": "x/y"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(
            (dict.source.as_str(), dict.path.as_str()),
            ("../a.nwb.zarr", "/x/y")
        );
        assert!(Reference::from_element("relative/path").is_err());
        let region = Reference::to("/d").with_region(Region::Slices(vec![Some(RegionSlice {
            start: 1,
            stop: 4,
            step: 1,
        })]));
        let text = region.to_v3_element();
        assert_eq!(Reference::from_element(&text).unwrap().unwrap(), region);
    }
}
