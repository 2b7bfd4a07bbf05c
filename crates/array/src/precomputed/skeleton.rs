//! Neuroglancer precomputed *skeletons* (`"@type": "neuroglancer_skeletons"`): the layer's
//! `info` document ([`SkeletonInfo`]), one skeleton's binary encoding ([`Skeleton`]) and a
//! layer in a store ([`SkeletonLayer`]: list, read and write segments, unsharded or
//! `neuroglancer_uint64_sharded_v1`).
//!
//! A skeleton is `uint32le num_vertices`, `uint32le num_edges`, the vertex positions
//! (`float32le [num_vertices, 3]`), the edges (`uint32le [num_edges, 2]`, vertex indexes), then
//! each vertex attribute of the `info` in order (`[num_vertices, num_components]` of its data
//! type, little-endian). A file that stops right after the edges has no attributes (what
//! cloud-volume writes for a skeleton without them). Unsharded, segment `ID` is the file `ID`
//! (or `ID.gz`, cloud-volume's gzip-compressed files; a plain file that starts like gzip data
//! is gunzipped too); sharded, the segment id is the chunk id of the shard layout.
//!
//! Damaged input is an error naming the file and the segment: counts whose data would lie
//! past the end of the file, bytes left over, edges naming vertices that do not exist, gzip
//! that does not decode. Nothing is allocated from a count before it is checked against the
//! bytes that hold it.

use rayon::prelude::*;
use std::sync::Arc;

use neurochunk_store::{join_key, Bytes, Store, StoreError};
use serde_json::{json, Map, Value};

use super::sharding::ShardingSpec;
use super::uint64_index::{IndexError, Uint64Index};

/// The `@type` of a skeleton layer's `info`.
pub const SKELETON_TYPE: &str = "neuroglancer_skeletons";

/// Most bytes one skeleton may decompress to (4 GiB).
const MAX_SKELETON_BYTES: u64 = 1 << 32;

/// Errors of skeleton layers.
#[derive(Debug, thiserror::Error)]
pub enum SkeletonError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The layer's `info` is missing or malformed.
    #[error("skeleton layer '{path}': {message}")]
    Info {
        /// The layer's path.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A stored skeleton (or shard) is damaged.
    #[error("'{file}', segment {segment}: {message}")]
    Corrupt {
        /// The file read.
        file: String,
        /// The segment id.
        segment: u64,
        /// What is wrong.
        message: String,
    },
    /// A shard file is damaged.
    #[error("shard '{file}': {message}")]
    Shard {
        /// The shard file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// A skeleton cannot be written as given.
    #[error("segment {segment}: {message}")]
    Invalid {
        /// The segment id.
        segment: u64,
        /// What is wrong.
        message: String,
    },
}

/// The result of skeleton operations.
pub type SkeletonResult<T> = Result<T, SkeletonError>;

/// The data type of a vertex attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttributeType {
    /// `float32`
    Float32,
    /// `uint8`
    Uint8,
    /// `int8`
    Int8,
    /// `uint16`
    Uint16,
    /// `int16`
    Int16,
    /// `uint32`
    Uint32,
    /// `int32`
    Int32,
}

impl AttributeType {
    /// Every type, in the order of the specification.
    pub const ALL: [AttributeType; 7] = [
        AttributeType::Float32,
        AttributeType::Uint8,
        AttributeType::Int8,
        AttributeType::Uint16,
        AttributeType::Int16,
        AttributeType::Uint32,
        AttributeType::Int32,
    ];

    /// The JSON name.
    pub fn name(self) -> &'static str {
        match self {
            AttributeType::Float32 => "float32",
            AttributeType::Uint8 => "uint8",
            AttributeType::Int8 => "int8",
            AttributeType::Uint16 => "uint16",
            AttributeType::Int16 => "int16",
            AttributeType::Uint32 => "uint32",
            AttributeType::Int32 => "int32",
        }
    }

    /// The type of a JSON name.
    pub fn parse(name: &str) -> Option<AttributeType> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Bytes of one value.
    pub fn size(self) -> usize {
        match self {
            AttributeType::Uint8 | AttributeType::Int8 => 1,
            AttributeType::Uint16 | AttributeType::Int16 => 2,
            _ => 4,
        }
    }

    fn decode(self, b: &[u8]) -> f64 {
        match self {
            AttributeType::Float32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
            AttributeType::Uint8 => b[0] as f64,
            AttributeType::Int8 => b[0] as i8 as f64,
            AttributeType::Uint16 => u16::from_le_bytes([b[0], b[1]]) as f64,
            AttributeType::Int16 => i16::from_le_bytes([b[0], b[1]]) as f64,
            AttributeType::Uint32 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
            AttributeType::Int32 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
        }
    }

    /// Append `v` (an integer in range for integer types) to `out`.
    fn encode(self, v: f64, out: &mut Vec<u8>) -> Result<(), String> {
        let int = |lo: f64, hi: f64| -> Result<i64, String> {
            if v.fract() == 0.0 && v >= lo && v <= hi {
                Ok(v as i64)
            } else {
                Err(format!("{v} is not a {} value", self.name()))
            }
        };
        match self {
            AttributeType::Float32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
            AttributeType::Uint8 => out.push(int(0.0, u8::MAX as f64)? as u8),
            AttributeType::Int8 => out.push(int(i8::MIN as f64, i8::MAX as f64)? as i8 as u8),
            AttributeType::Uint16 => {
                out.extend_from_slice(&(int(0.0, u16::MAX as f64)? as u16).to_le_bytes())
            }
            AttributeType::Int16 => out
                .extend_from_slice(&(int(i16::MIN as f64, i16::MAX as f64)? as i16).to_le_bytes()),
            AttributeType::Uint32 => {
                out.extend_from_slice(&(int(0.0, u32::MAX as f64)? as u32).to_le_bytes())
            }
            AttributeType::Int32 => out
                .extend_from_slice(&(int(i32::MIN as f64, i32::MAX as f64)? as i32).to_le_bytes()),
        }
        Ok(())
    }
}

/// One entry of `vertex_attributes`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VertexAttribute {
    /// The attribute's name (`radius`, `vertex_types`, …).
    pub id: String,
    /// Its data type.
    pub data_type: AttributeType,
    /// Values per vertex (at least 1).
    pub num_components: u32,
}

impl VertexAttribute {
    /// A one-component attribute.
    pub fn new(id: &str, data_type: AttributeType) -> VertexAttribute {
        VertexAttribute {
            id: id.to_string(),
            data_type,
            num_components: 1,
        }
    }

    /// Bytes per vertex.
    pub fn bytes_per_vertex(&self) -> u64 {
        self.data_type.size() as u64 * self.num_components as u64
    }

    fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "data_type": self.data_type.name(),
            "num_components": self.num_components,
        })
    }
}

/// The identity `transform`.
pub const IDENTITY_TRANSFORM: [f64; 12] = [1., 0., 0., 0., 0., 1., 0., 0., 0., 0., 1., 0.];

/// A skeleton layer's `info` document.
#[derive(Clone, Debug, PartialEq)]
pub struct SkeletonInfo {
    /// Row-major 3×4 matrix from stored vertex positions to nanometres (identity when the
    /// `info` has none).
    pub transform: [f64; 12],
    /// The vertex attributes, in the order they follow the edges.
    pub vertex_attributes: Vec<VertexAttribute>,
    /// The shard layout, `None` for one file per segment.
    pub sharding: Option<ShardingSpec>,
    /// `segment_properties`: the directory of the segment properties, when given.
    pub segment_properties: Option<String>,
    /// Other members, kept as they are (`spatial_index`, `mip`, …).
    pub extra: Map<String, Value>,
}

impl Default for SkeletonInfo {
    fn default() -> Self {
        SkeletonInfo {
            transform: IDENTITY_TRANSFORM,
            vertex_attributes: Vec::new(),
            sharding: None,
            segment_properties: None,
            extra: Map::new(),
        }
    }
}

impl SkeletonInfo {
    /// Parse an `info` document; errors name `path`.
    pub fn parse(doc: &Value, path: &str) -> SkeletonResult<SkeletonInfo> {
        let err = |message: String| SkeletonError::Info {
            path: crate::display_path(path),
            message,
        };
        let map = doc
            .as_object()
            .ok_or_else(|| err("info is not a JSON object".into()))?;
        match map.get("@type").and_then(Value::as_str) {
            Some(SKELETON_TYPE) => {}
            other => {
                return Err(err(format!(
                    "info has '@type' {}, \"{SKELETON_TYPE}\" expected",
                    other.map_or("missing".to_string(), |t| format!("\"{t}\""))
                )))
            }
        }
        let transform = match map.get("transform") {
            None | Some(Value::Null) => IDENTITY_TRANSFORM,
            Some(Value::Array(values)) if values.len() == 12 => {
                let mut t = [0.0; 12];
                for (slot, v) in t.iter_mut().zip(values) {
                    *slot = v
                        .as_f64()
                        .filter(|f| f.is_finite())
                        .ok_or_else(|| err(format!("'transform' holds {v}, not a number")))?;
                }
                t
            }
            Some(other) => {
                return Err(err(format!(
                    "'transform' must be a list of 12 numbers, found {other}"
                )))
            }
        };
        let mut vertex_attributes = Vec::new();
        match map.get("vertex_attributes") {
            None | Some(Value::Null) => {}
            Some(Value::Array(list)) => {
                for (i, a) in list.iter().enumerate() {
                    let id = a
                        .get("id")
                        .and_then(Value::as_str)
                        .ok_or_else(|| err(format!("vertex attribute {i} needs 'id', a string")))?;
                    let type_name = a.get("data_type").and_then(Value::as_str).unwrap_or("");
                    let data_type = AttributeType::parse(type_name).ok_or_else(|| {
                        err(format!(
                            "vertex attribute '{id}' has data_type '{type_name}', not one of {}",
                            AttributeType::ALL.map(AttributeType::name).join(", ")
                        ))
                    })?;
                    let num_components = a
                        .get("num_components")
                        .and_then(Value::as_u64)
                        .filter(|&n| (1..=1 << 16).contains(&n))
                        .ok_or_else(|| {
                            err(format!(
                                "vertex attribute '{id}' needs 'num_components', an integer from 1 \
                                 to 65536"
                            ))
                        })? as u32;
                    if vertex_attributes
                        .iter()
                        .any(|v: &VertexAttribute| v.id == id)
                    {
                        return Err(err(format!("vertex attribute '{id}' is listed twice")));
                    }
                    vertex_attributes.push(VertexAttribute {
                        id: id.to_string(),
                        data_type,
                        num_components,
                    });
                }
            }
            Some(other) => {
                return Err(err(format!(
                    "'vertex_attributes' must be a list, found {other}"
                )))
            }
        }
        let sharding = match map.get("sharding") {
            None | Some(Value::Null) => None,
            Some(v) => Some(ShardingSpec::from_json(v).map_err(err)?),
        };
        let segment_properties = match map.get("segment_properties") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                return Err(err(format!(
                    "'segment_properties' must be a string, found {other}"
                )))
            }
        };
        let known = [
            "@type",
            "transform",
            "vertex_attributes",
            "sharding",
            "segment_properties",
        ];
        let extra = map
            .iter()
            .filter(|(k, _)| !known.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(SkeletonInfo {
            transform,
            vertex_attributes,
            sharding,
            segment_properties,
            extra,
        })
    }

    /// The `info` document.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("@type".into(), json!(SKELETON_TYPE));
        map.insert("transform".into(), json!(self.transform.to_vec()));
        map.insert(
            "vertex_attributes".into(),
            Value::Array(
                self.vertex_attributes
                    .iter()
                    .map(VertexAttribute::to_json)
                    .collect(),
            ),
        );
        if let Some(s) = &self.sharding {
            map.insert("sharding".into(), s.to_json());
        }
        if let Some(s) = &self.segment_properties {
            map.insert("segment_properties".into(), json!(s));
        }
        for (k, v) in &self.extra {
            if !(k == "sharding" || v.is_null() && k == "spatial_index") {
                map.insert(k.clone(), v.clone());
            }
        }
        Value::Object(map)
    }

    /// A stored vertex position in nanometres (the `transform` applied).
    pub fn to_nm(&self, v: [f32; 3]) -> [f64; 3] {
        let t = &self.transform;
        let (x, y, z) = (v[0] as f64, v[1] as f64, v[2] as f64);
        [
            t[0] * x + t[1] * y + t[2] * z + t[3],
            t[4] * x + t[5] * y + t[6] * z + t[7],
            t[8] * x + t[9] * y + t[10] * z + t[11],
        ]
    }
}

/// One skeleton: vertices, edges and vertex attributes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Skeleton {
    /// Vertex positions as stored (before the `transform`).
    pub vertices: Vec<[f32; 3]>,
    /// Edges: pairs of vertex indexes.
    pub edges: Vec<[u32; 2]>,
    /// Per attribute of the `info`, `num_vertices × num_components` values (vertex-major), as
    /// `f64` (which holds every attribute type exactly). Empty when the skeleton has no
    /// attributes.
    pub attributes: Vec<Vec<f64>>,
}

impl Skeleton {
    /// Decode a skeleton with the attributes `attributes`; the error says what is wrong.
    pub fn decode(bytes: &[u8], attributes: &[VertexAttribute]) -> Result<Skeleton, String> {
        if bytes.len() < 8 {
            return Err(format!(
                "{} bytes, fewer than the 8 of the vertex and edge counts",
                bytes.len()
            ));
        }
        let word = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        let (nv, ne) = (word(0) as u64, word(4) as u64);
        let len = bytes.len() as u64;
        let base = 8 + 12 * nv + 8 * ne;
        if base > len {
            return Err(format!(
                "{nv} vertices and {ne} edges need {base} bytes, the skeleton has {len}"
            ));
        }
        let per_vertex: u64 = attributes
            .iter()
            .map(VertexAttribute::bytes_per_vertex)
            .sum();
        let full = base + per_vertex * nv;
        let with_attributes = if len == base {
            false
        } else if len == full {
            true
        } else if len < full {
            return Err(format!(
                "{nv} vertices and {ne} edges with the vertex attributes of the info need \
                 {full} bytes, the skeleton has {len}"
            ));
        } else {
            return Err(format!(
                "{} bytes left over after {nv} vertices, {ne} edges and the vertex attributes \
                 of the info",
                len - full
            ));
        };
        // Every count is now bounded by the length of `bytes`.
        let (nv, ne) = (nv as usize, ne as usize);
        let mut at = 8usize;
        let mut vertices = Vec::with_capacity(nv);
        for _ in 0..nv {
            let f =
                |i: usize| f32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
            vertices.push([f(at), f(at + 4), f(at + 8)]);
            at += 12;
        }
        let mut edges = Vec::with_capacity(ne);
        for e in 0..ne {
            let (a, b) = (word(at), word(at + 4));
            if a as usize >= nv || b as usize >= nv {
                return Err(format!(
                    "edge {e} joins vertices {a} and {b}, but there are {nv} vertices"
                ));
            }
            edges.push([a, b]);
            at += 8;
        }
        let mut values = Vec::new();
        if with_attributes {
            for a in attributes {
                let size = a.data_type.size();
                let n = nv * a.num_components as usize;
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    v.push(a.data_type.decode(&bytes[at..at + size]));
                    at += size;
                }
                values.push(v);
            }
        }
        Ok(Skeleton {
            vertices,
            edges,
            attributes: values,
        })
    }

    /// Encode the skeleton with the attributes `attributes` (all of them, or none when
    /// [`Skeleton::attributes`] is empty).
    pub fn encode(&self, attributes: &[VertexAttribute]) -> Result<Vec<u8>, String> {
        let nv = self.vertices.len();
        let nv32 = u32::try_from(nv).map_err(|_| format!("{nv} vertices are too many"))?;
        let ne = u32::try_from(self.edges.len())
            .map_err(|_| format!("{} edges are too many", self.edges.len()))?;
        if !self.attributes.is_empty() && self.attributes.len() != attributes.len() {
            return Err(format!(
                "{} vertex attributes given, the info lists {}",
                self.attributes.len(),
                attributes.len()
            ));
        }
        let per_vertex: u64 = attributes
            .iter()
            .map(VertexAttribute::bytes_per_vertex)
            .sum();
        let mut out =
            Vec::with_capacity(8 + 12 * nv + 8 * self.edges.len() + per_vertex as usize * nv);
        out.extend_from_slice(&nv32.to_le_bytes());
        out.extend_from_slice(&ne.to_le_bytes());
        for v in &self.vertices {
            for c in v {
                out.extend_from_slice(&c.to_le_bytes());
            }
        }
        for (e, pair) in self.edges.iter().enumerate() {
            if pair[0] >= nv32 || pair[1] >= nv32 {
                return Err(format!(
                    "edge {e} joins vertices {} and {}, but there are {nv} vertices",
                    pair[0], pair[1]
                ));
            }
            out.extend_from_slice(&pair[0].to_le_bytes());
            out.extend_from_slice(&pair[1].to_le_bytes());
        }
        for (a, values) in attributes.iter().zip(&self.attributes) {
            let want = nv * a.num_components as usize;
            if values.len() != want {
                return Err(format!(
                    "vertex attribute '{}' has {} values, {want} expected ({nv} vertices × {})",
                    a.id,
                    values.len(),
                    a.num_components
                ));
            }
            for &v in values {
                a.data_type
                    .encode(v, &mut out)
                    .map_err(|e| format!("vertex attribute '{}': {e}", a.id))?;
            }
        }
        Ok(out)
    }
}

/// A skeleton layer in a store.
#[derive(Debug, Clone)]
pub struct SkeletonLayer {
    store: Arc<dyn Store>,
    path: String,
    info: SkeletonInfo,
}

impl SkeletonLayer {
    /// Open the skeleton layer at `path`: a directory whose `info` has the `@type`
    /// `neuroglancer_skeletons`, or a volume layer whose `info` names one (`"skeletons":
    /// "DIR"`, relative to the volume).
    pub fn open(store: Arc<dyn Store>, path: &str) -> SkeletonResult<SkeletonLayer> {
        let path = path.trim_matches('/').to_string();
        let doc = read_info(store.as_ref(), &path)?;
        if doc.get("@type").and_then(Value::as_str) != Some(SKELETON_TYPE) {
            if let Some(dir) = doc.get("skeletons").and_then(Value::as_str) {
                let dir = dir.trim_matches('/');
                if dir.contains("://") || dir.split('/').any(|p| p == "..") {
                    return Err(SkeletonError::Info {
                        path: crate::display_path(&path),
                        message: format!(
                            "'skeletons' is \"{dir}\": only directories inside the layer are read"
                        ),
                    });
                }
                let sub = join_key(&path, dir);
                let doc = read_info(store.as_ref(), &sub)?;
                let info = SkeletonInfo::parse(&doc, &sub)?;
                return Ok(SkeletonLayer {
                    store,
                    path: sub,
                    info,
                });
            }
        }
        let info = SkeletonInfo::parse(&doc, &path)?;
        Ok(SkeletonLayer { store, path, info })
    }

    /// Create (or replace the `info` of) a skeleton layer at `path`.
    pub fn create(
        store: Arc<dyn Store>,
        path: &str,
        info: SkeletonInfo,
    ) -> SkeletonResult<SkeletonLayer> {
        let path = path.trim_matches('/').to_string();
        let text = serde_json::to_vec_pretty(&info.to_json()).map_err(|e| SkeletonError::Info {
            path: crate::display_path(&path),
            message: e.to_string(),
        })?;
        store.set(&join_key(&path, "info"), Bytes::from(text))?;
        Ok(SkeletonLayer { store, path, info })
    }

    /// The layer's `info`.
    pub fn info(&self) -> &SkeletonInfo {
        &self.info
    }

    /// The layer's path in its store.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The layer's files as a uint64 index (one file per segment, or shards); plain files
    /// that start like gzip are unzipped, as some writers compress without a `.gz` name.
    fn index(&self) -> Uint64Index {
        Uint64Index::new(
            self.store.clone(),
            &self.path,
            self.info.sharding.clone(),
            MAX_SKELETON_BYTES,
        )
        .sniffing_gzip(true)
    }

    /// The segment ids of the layer, ascending.
    pub fn segment_ids(&self) -> SkeletonResult<Vec<u64>> {
        self.index().ids().map_err(index_error)
    }

    fn decode(&self, file: String, segment: u64, bytes: &[u8]) -> SkeletonResult<Skeleton> {
        Skeleton::decode(bytes, &self.info.vertex_attributes).map_err(|message| {
            SkeletonError::Corrupt {
                file,
                segment,
                message,
            }
        })
    }

    /// The skeleton of segment `id`, `None` when the layer has none.
    pub fn read(&self, id: u64) -> SkeletonResult<Option<Skeleton>> {
        match self.index().get(id) {
            Ok(Some((file, bytes))) => self.decode(file, id, &bytes).map(Some),
            Ok(None) => Ok(None),
            Err(IndexError::Corrupt { file, message }) => Err(SkeletonError::Corrupt {
                file,
                segment: id,
                message,
            }),
            Err(IndexError::Store(e)) => Err(e.into()),
        }
    }

    /// Every skeleton of the layer, by segment id.
    pub fn read_all(&self) -> SkeletonResult<Vec<(u64, Skeleton)>> {
        self.index()
            .map_all(|id, file, bytes| self.decode(file.to_string(), id, bytes))
    }

    /// [`SkeletonLayer::write`] for skeletons made batch by batch (`make(k)` for `k` in
    /// `0..count`): an unsharded layer stores each batch's files while the next batch is
    /// made and encoded ([`Uint64Index::put_batches`]). The first error, the layer's or
    /// `make`'s, stops the writing and is returned.
    pub fn write_batches<E, F>(&self, count: usize, mut make: F) -> Result<(), E>
    where
        E: From<SkeletonError> + Send,
        F: FnMut(usize) -> Result<Vec<(u64, Skeleton)>, E>,
    {
        let attrs = &self.info.vertex_attributes;
        let encoded = |k: usize| -> Result<Vec<(u64, Vec<u8>)>, BatchFailure<E>> {
            let skeletons = make(k).map_err(BatchFailure::Made)?;
            skeletons
                .par_iter()
                .map(|(id, s)| {
                    s.encode(attrs)
                        .map(|bytes| (*id, bytes))
                        .map_err(|message| SkeletonError::Invalid {
                            segment: *id,
                            message,
                        })
                })
                .collect::<SkeletonResult<Vec<_>>>()
                .map_err(BatchFailure::Layer)
        };
        self.index()
            .put_batches(count, encoded)
            .map_err(|failure| match failure {
                BatchFailure::Layer(e) => E::from(e),
                BatchFailure::Made(e) => e,
            })
    }

    /// Write skeletons: one file per segment (unsharded), or every shard they fall in,
    /// rewritten whole with the segments it already holds kept unless replaced.
    pub fn write(&self, skeletons: &[(u64, Skeleton)]) -> SkeletonResult<()> {
        let attrs = &self.info.vertex_attributes;
        let entries = skeletons
            .par_iter()
            .map(|(id, s)| {
                let bytes = s.encode(attrs).map_err(|message| SkeletonError::Invalid {
                    segment: *id,
                    message,
                })?;
                Ok((*id, bytes))
            })
            .collect::<SkeletonResult<Vec<_>>>()?;
        self.index().put_all(entries).map_err(index_error)
    }
}

/// What stopped [`SkeletonLayer::write_batches`]: the layer, or the caller's `make`.
enum BatchFailure<E> {
    Layer(SkeletonError),
    Made(E),
}

impl<E> From<IndexError> for BatchFailure<E> {
    fn from(e: IndexError) -> Self {
        BatchFailure::Layer(index_error(e))
    }
}

impl From<IndexError> for SkeletonError {
    fn from(e: IndexError) -> Self {
        index_error(e)
    }
}

/// A damaged shard or file found while listing or reading many segments.
fn index_error(e: IndexError) -> SkeletonError {
    match e {
        IndexError::Store(e) => SkeletonError::Store(e),
        IndexError::Corrupt { file, message } => SkeletonError::Shard { file, message },
    }
}

/// The `info` document at `path/info`, parsed as JSON.
fn read_info(store: &dyn Store, path: &str) -> SkeletonResult<Value> {
    let key = join_key(path, "info");
    let err = |message: String| SkeletonError::Info {
        path: crate::display_path(path),
        message,
    };
    let bytes = store
        .get(&key)?
        .ok_or_else(|| err("no 'info' file: not a precomputed skeleton layer".into()))?;
    serde_json::from_slice(&bytes).map_err(|e| err(format!("'info' is not valid JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::precomputed::sharding::{self, ShardEncoding};
    use neurochunk_store::MemoryStore;

    fn radius() -> Vec<VertexAttribute> {
        vec![
            VertexAttribute::new("radius", AttributeType::Float32),
            VertexAttribute::new("vertex_types", AttributeType::Uint8),
        ]
    }

    fn sample() -> Skeleton {
        Skeleton {
            vertices: vec![[0.0, 1.0, 2.0], [3.5, 4.0, 5.0], [6.0, 7.0, -8.25]],
            edges: vec![[0, 1], [1, 2]],
            attributes: vec![vec![1.5, 2.0, 0.25], vec![1.0, 3.0, 255.0]],
        }
    }

    #[test]
    fn byte_layout() {
        let bytes = sample().encode(&radius()).unwrap();
        let mut want = Vec::new();
        want.extend_from_slice(&3u32.to_le_bytes());
        want.extend_from_slice(&2u32.to_le_bytes());
        for f in [0.0f32, 1.0, 2.0, 3.5, 4.0, 5.0, 6.0, 7.0, -8.25] {
            want.extend_from_slice(&f.to_le_bytes());
        }
        for i in [0u32, 1, 1, 2] {
            want.extend_from_slice(&i.to_le_bytes());
        }
        for f in [1.5f32, 2.0, 0.25] {
            want.extend_from_slice(&f.to_le_bytes());
        }
        want.extend_from_slice(&[1, 3, 255]);
        assert_eq!(bytes, want);
        assert_eq!(Skeleton::decode(&bytes, &radius()).unwrap(), sample());
        // Without attributes (cloud-volume writes such files).
        let bare = &bytes[..8 + 36 + 16];
        let s = Skeleton::decode(bare, &radius()).unwrap();
        assert!(s.attributes.is_empty());
        assert_eq!(s.vertices, sample().vertices);
    }

    #[test]
    fn damaged_skeletons_are_errors() {
        let bytes = sample().encode(&radius()).unwrap();
        for (cut, what) in [(4, "fewer than the 8"), (20, "need"), (70, "need")] {
            let e = Skeleton::decode(&bytes[..cut], &radius()).unwrap_err();
            assert!(e.contains(what), "{cut}: {e}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Skeleton::decode(&longer, &radius())
            .unwrap_err()
            .contains("left over"));
        // Counts far past the end are refused before anything is allocated.
        let mut huge = bytes.clone();
        huge[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Skeleton::decode(&huge, &radius())
            .unwrap_err()
            .contains("need"));
        // An edge naming a vertex that does not exist.
        let mut bad = bytes.clone();
        bad[8 + 36 + 4..8 + 36 + 8].copy_from_slice(&7u32.to_le_bytes());
        assert!(Skeleton::decode(&bad, &radius())
            .unwrap_err()
            .contains("edge 0 joins vertices 0 and 7"));
        // Encoding checks too.
        let mut s = sample();
        s.attributes[1][0] = 256.0;
        assert!(s.encode(&radius()).unwrap_err().contains("uint8"));
        let mut s = sample();
        s.edges.push([0, 3]);
        assert!(s.encode(&radius()).is_err());
    }

    #[test]
    fn info_round_trip() {
        let doc = json!({
            "@type": "neuroglancer_skeletons",
            "transform": [2, 0, 0, 1, 0, 2, 0, 2, 0, 0, 4, 3],
            "vertex_attributes": [
                {"id": "radius", "data_type": "float32", "num_components": 1},
                {"id": "normal", "data_type": "int16", "num_components": 3}
            ],
            "sharding": null,
            "spatial_index": null,
            "mip": 0,
        });
        let info = SkeletonInfo::parse(&doc, "s").unwrap();
        assert_eq!(info.vertex_attributes[1].num_components, 3);
        assert_eq!(info.to_nm([1.0, 1.0, 1.0]), [3.0, 4.0, 7.0]);
        let again = SkeletonInfo::parse(&info.to_json(), "s").unwrap();
        assert_eq!(
            again,
            SkeletonInfo {
                extra: [("mip".to_string(), json!(0))].into_iter().collect(),
                ..info.clone()
            }
        );
        for bad in [
            json!({"@type": "neuroglancer_multiscale_volume"}),
            json!({"@type": SKELETON_TYPE, "transform": [1, 2]}),
            json!({"@type": SKELETON_TYPE, "vertex_attributes": [{"id": "a", "data_type": "float64", "num_components": 1}]}),
        ] {
            assert!(SkeletonInfo::parse(&bad, "s").is_err(), "{bad}");
        }
    }

    #[test]
    fn layers_unsharded_and_sharded() {
        for sharding in [
            None,
            Some(ShardingSpec {
                preshift_bits: 0,
                hash: sharding::ShardHash::Murmurhash3X86_128,
                minishard_bits: 2,
                shard_bits: 1,
                minishard_index_encoding: ShardEncoding::Gzip,
                data_encoding: ShardEncoding::Gzip,
            }),
        ] {
            let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
            let info = SkeletonInfo {
                vertex_attributes: radius(),
                sharding,
                ..SkeletonInfo::default()
            };
            let layer = SkeletonLayer::create(store.clone(), "vol/skeletons", info).unwrap();
            let skeletons: Vec<(u64, Skeleton)> = [3u64, 17, 1 << 40]
                .iter()
                .map(|&id| (id, sample()))
                .collect();
            layer.write(&skeletons[..2]).unwrap();
            layer.write(&skeletons[2..]).unwrap();
            let again = SkeletonLayer::open(store.clone(), "vol/skeletons").unwrap();
            assert_eq!(again.segment_ids().unwrap(), [3, 17, 1 << 40]);
            assert_eq!(again.read_all().unwrap(), skeletons);
            assert_eq!(again.read(17).unwrap(), Some(sample()));
            assert_eq!(again.read(18).unwrap(), None);
            // Through a volume's `skeletons` member.
            store
                .set(
                    "vol/info",
                    Bytes::from(r#"{"@type":"neuroglancer_multiscale_volume","skeletons":"skeletons","scales":[]}"#),
                )
                .unwrap();
            let via = SkeletonLayer::open(store.clone(), "vol").unwrap();
            assert_eq!(via.path(), "vol/skeletons");
        }
    }

    #[test]
    fn damaged_files_name_file_and_segment() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let info = SkeletonInfo {
            vertex_attributes: radius(),
            ..SkeletonInfo::default()
        };
        let layer = SkeletonLayer::create(store.clone(), "sk", info).unwrap();
        layer.write(&[(5, sample())]).unwrap();
        let bytes = store.get("sk/5").unwrap().unwrap();
        store.set("sk/5", bytes.slice(..30)).unwrap();
        let e = layer.read(5).unwrap_err().to_string();
        assert!(e.contains("/sk/5") && e.contains("segment 5"), "{e}");
        // gzip that is not.
        store.delete("sk/5").unwrap();
        store
            .set("sk/6.gz", Bytes::from_static(b"not gzip"))
            .unwrap();
        let e = layer.read(6).unwrap_err().to_string();
        assert!(e.contains("/sk/6.gz") && e.contains("gzip"), "{e}");
        // gzip-compressed files read as cloud-volume writes them.
        let gz = sharding::gzip(&sample().encode(&radius()).unwrap());
        store.set("sk/6.gz", Bytes::from(gz)).unwrap();
        assert_eq!(layer.read(6).unwrap(), Some(sample()));
        assert_eq!(layer.segment_ids().unwrap(), [6]);
    }
}
