//! Neuroglancer precomputed meshes: the mesh directory of a segmentation layer (named by the
//! layer `info`'s `mesh` member), in both of Neuroglancer's layouts.
//!
//! * **Legacy** (single resolution; `info` `{"@type": "neuroglancer_legacy_mesh"}` or no
//!   `info`): per segment a manifest `ID:0` (JSON `{"fragments": [NAME, ...]}`, names relative
//!   to the mesh directory) and its fragments, each `uint32le n`, `float32le [n, 3]` vertex
//!   positions, then `uint32le [m, 3]` triangle indices to the end of the file. Read and
//!   written; manifests and fragments missing under their names are read from `NAME.gz`, and
//!   gzip data are recognised by their magic bytes wherever they are found.
//! * **Multi-resolution** (`"@type": "neuroglancer_multilod_draco"`): per segment the binary
//!   manifest `ID.index` (or, sharded, the shard chunk of the id) and the fragment data `ID`
//!   (sharded: the bytes just before the manifest in the shard). Manifests are read and
//!   listed. The fragments are Draco-encoded: with the `draco` feature they are decoded
//!   (`draco-oxide`; the integer positions of each fragment's octree node placed as
//!   Neuroglancer places them, then the `info`'s `transform`), without it reading them is an
//!   error naming the file and segment (see `docs/precomputed.md`).
//!
//! Every count read from a file is checked against the file's size before anything is
//! allocated from it; damaged files are errors naming the file and the segment.

use std::collections::BTreeSet;
use std::fmt;

use neurochunk_store::{join_key, Bytes, Store, StoreError};
use serde_json::{json, Map, Value};

use super::sharding::{self, ShardEncoding, ShardingSpec};

/// The `@type` of a legacy mesh directory's `info`.
pub const LEGACY_TYPE: &str = "neuroglancer_legacy_mesh";
/// The `@type` of a multi-resolution mesh directory's `info`.
pub const MULTIRES_TYPE: &str = "neuroglancer_multilod_draco";

/// Most bytes a gzip-compressed manifest, fragment or shard may decompress to.
const MAX_DECODED_BYTES: u64 = 1 << 32;

/// What went wrong reading or writing a mesh.
#[derive(Debug)]
pub enum MeshError {
    /// The store failed.
    Store(StoreError),
    /// A file that must exist does not.
    NotFound {
        /// The file (store key).
        file: String,
        /// The segment it belongs to, if any.
        segment: Option<u64>,
    },
    /// A file is damaged or not what the format says.
    Corrupt {
        /// The file (store key).
        file: String,
        /// The segment it belongs to, if any.
        segment: Option<u64>,
        /// What is wrong.
        message: String,
    },
    /// Something this build cannot do (Draco-encoded fragments).
    Unsupported {
        /// The file (store key).
        file: String,
        /// The segment it belongs to, if any.
        segment: Option<u64>,
        /// What is not supported.
        message: String,
    },
    /// Invalid arguments (a mesh to write that is not a mesh).
    Invalid(String),
}

fn segment_note(segment: &Option<u64>) -> String {
    segment.map_or(String::new(), |s| format!(", segment {s}"))
}

impl fmt::Display for MeshError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MeshError::Store(e) => write!(f, "{e}"),
            MeshError::NotFound { file, segment } => {
                write!(f, "mesh file '{file}'{}: not found", segment_note(segment))
            }
            MeshError::Corrupt {
                file,
                segment,
                message,
            } => write!(f, "mesh file '{file}'{}: {message}", segment_note(segment)),
            MeshError::Unsupported {
                file,
                segment,
                message,
            } => write!(f, "mesh file '{file}'{}: {message}", segment_note(segment)),
            MeshError::Invalid(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for MeshError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MeshError::Store(e) => Some(e),
            _ => None,
        }
    }
}

impl From<StoreError> for MeshError {
    fn from(e: StoreError) -> Self {
        MeshError::Store(e)
    }
}

/// Result of the mesh functions.
pub type MeshResult<T> = Result<T, MeshError>;

fn corrupt(file: &str, segment: Option<u64>, message: impl Into<String>) -> MeshError {
    MeshError::Corrupt {
        file: file.to_string(),
        segment,
        message: message.into(),
    }
}

/// One fragment of a segment's mesh: vertex positions and triangles (indices into
/// `vertices`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MeshFragment {
    /// The fragment's name (legacy: its file name relative to the mesh directory).
    pub name: String,
    /// Vertex positions `[x, y, z]` (nanometres in a legacy mesh).
    pub vertices: Vec<[f32; 3]>,
    /// Triangles, three vertex indices each.
    pub triangles: Vec<[u32; 3]>,
}

/// A segment's mesh: its fragments in manifest order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SegmentMesh {
    /// The segment id.
    pub segment: u64,
    /// The fragments.
    pub fragments: Vec<MeshFragment>,
}

impl SegmentMesh {
    /// All fragments as one mesh: vertices concatenated, triangle indices shifted to match.
    pub fn concatenated(&self) -> (Vec<[f32; 3]>, Vec<[u32; 3]>) {
        let mut vertices = Vec::new();
        let mut triangles = Vec::new();
        for fragment in &self.fragments {
            let base = vertices.len() as u32;
            vertices.extend_from_slice(&fragment.vertices);
            triangles.extend(
                fragment
                    .triangles
                    .iter()
                    .map(|t| [t[0] + base, t[1] + base, t[2] + base]),
            );
        }
        (vertices, triangles)
    }
}

/// Decode a legacy fragment file (already gunzipped). `file` and `segment` name it in errors.
pub fn decode_legacy_fragment(
    bytes: &[u8],
    file: &str,
    segment: Option<u64>,
) -> MeshResult<MeshFragment> {
    if bytes.len() < 4 {
        return Err(corrupt(
            file,
            segment,
            format!(
                "a mesh fragment of {} bytes is shorter than its 4-byte vertex count",
                bytes.len()
            ),
        ));
    }
    let n = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as u64;
    let rest = (bytes.len() - 4) as u64;
    if n.saturating_mul(12) > rest {
        return Err(corrupt(
            file,
            segment,
            format!(
                "the fragment declares {n} vertices ({} bytes) but holds {rest} bytes after the count",
                n.saturating_mul(12)
            ),
        ));
    }
    let n = n as usize;
    let index_bytes = &bytes[4 + n * 12..];
    if index_bytes.len() % 12 != 0 {
        return Err(corrupt(
            file,
            segment,
            format!(
                "the {} bytes of triangle indices after {n} vertices are not whole triangles \
                 (12 bytes each)",
                index_bytes.len()
            ),
        ));
    }
    let f32_at =
        |at: usize| f32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let vertices = (0..n)
        .map(|i| {
            let at = 4 + i * 12;
            [f32_at(at), f32_at(at + 4), f32_at(at + 8)]
        })
        .collect();
    let mut triangles = Vec::with_capacity(index_bytes.len() / 12);
    for (t, tri) in index_bytes.chunks_exact(12).enumerate() {
        let idx = |k: usize| {
            u32::from_le_bytes([tri[k * 4], tri[k * 4 + 1], tri[k * 4 + 2], tri[k * 4 + 3]])
        };
        let triangle = [idx(0), idx(1), idx(2)];
        if let Some(bad) = triangle.iter().find(|&&v| v as usize >= n) {
            return Err(corrupt(
                file,
                segment,
                format!("triangle {t} refers to vertex {bad}, the fragment has {n} vertices"),
            ));
        }
        triangles.push(triangle);
    }
    Ok(MeshFragment {
        name: String::new(),
        vertices,
        triangles,
    })
}

/// Encode a legacy fragment file. Errors if a triangle refers to a missing vertex or there are
/// more than `u32::MAX` vertices.
pub fn encode_legacy_fragment(
    vertices: &[[f32; 3]],
    triangles: &[[u32; 3]],
) -> MeshResult<Vec<u8>> {
    let n = u32::try_from(vertices.len()).map_err(|_| {
        MeshError::Invalid(format!(
            "{} vertices are too many for a fragment",
            vertices.len()
        ))
    })?;
    if let Some((t, _)) = triangles
        .iter()
        .enumerate()
        .find(|(_, tri)| tri.iter().any(|&v| v >= n))
    {
        return Err(MeshError::Invalid(format!(
            "triangle {t} refers to a vertex the fragment does not have ({n} vertices)"
        )));
    }
    let mut out = Vec::with_capacity(4 + vertices.len() * 12 + triangles.len() * 12);
    out.extend_from_slice(&n.to_le_bytes());
    for v in vertices {
        for c in v {
            out.extend_from_slice(&c.to_le_bytes());
        }
    }
    for t in triangles {
        for i in t {
            out.extend_from_slice(&i.to_le_bytes());
        }
    }
    Ok(out)
}

/// The layout of a mesh directory.
#[derive(Clone, Debug, PartialEq)]
pub enum MeshKind {
    /// Legacy single-resolution meshes.
    Legacy,
    /// Multi-resolution Draco meshes.
    Multires(MultiresInfo),
}

/// The `info` of a multi-resolution mesh directory.
#[derive(Clone, Debug, PartialEq)]
pub struct MultiresInfo {
    /// Bits per quantized vertex coordinate (10 or 16).
    pub vertex_quantization_bits: u32,
    /// The 3 x 4 row-major affine transform from stored to model coordinates.
    pub transform: [f64; 12],
    /// Multiplier of the lod scales.
    pub lod_scale_multiplier: f64,
    /// Sharding of manifests and fragment data, if sharded.
    pub sharding: Option<ShardingSpec>,
}

/// Parse a mesh directory's `info` (None: the directory has none, a legacy mesh).
pub fn parse_mesh_info(info: Option<&Value>, file: &str) -> MeshResult<MeshKind> {
    let Some(info) = info else {
        return Ok(MeshKind::Legacy);
    };
    let map = info
        .as_object()
        .ok_or_else(|| corrupt(file, None, "the mesh info is not a JSON object"))?;
    match map.get("@type").and_then(Value::as_str) {
        None | Some(LEGACY_TYPE) => Ok(MeshKind::Legacy),
        Some(MULTIRES_TYPE) => {
            let bits = map
                .get("vertex_quantization_bits")
                .and_then(Value::as_u64)
                .ok_or_else(|| corrupt(file, None, "'vertex_quantization_bits' is missing"))?;
            if bits != 10 && bits != 16 {
                return Err(corrupt(
                    file,
                    None,
                    format!("'vertex_quantization_bits' is {bits}, 10 or 16 expected"),
                ));
            }
            let mut transform = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0];
            if let Some(t) = map.get("transform") {
                let values: Option<Vec<f64>> = t
                    .as_array()
                    .map(|a| a.iter().map(Value::as_f64).collect::<Option<Vec<_>>>())
                    .unwrap_or(None);
                match values {
                    Some(v) if v.len() == 12 => transform.copy_from_slice(&v),
                    _ => return Err(corrupt(file, None, "'transform' must be 12 numbers")),
                }
            }
            let lod_scale_multiplier = match map.get("lod_scale_multiplier") {
                None => 1.0,
                Some(v) => v.as_f64().ok_or_else(|| {
                    corrupt(file, None, "'lod_scale_multiplier' must be a number")
                })?,
            };
            let sharding = match map.get("sharding") {
                None | Some(Value::Null) => None,
                Some(s) => Some(ShardingSpec::from_json(s).map_err(|e| corrupt(file, None, e))?),
            };
            Ok(MeshKind::Multires(MultiresInfo {
                vertex_quantization_bits: bits as u32,
                transform,
                lod_scale_multiplier,
                sharding,
            }))
        }
        Some(other) => Err(MeshError::Unsupported {
            file: file.to_string(),
            segment: None,
            message: format!(
                "mesh '@type' \"{other}\" is not known (\"{LEGACY_TYPE}\" or \"{MULTIRES_TYPE}\")"
            ),
        }),
    }
}

/// One level of detail of a multi-resolution manifest.
#[derive(Clone, Debug, PartialEq)]
pub struct Lod {
    /// The lod's scale (before the info's `lod_scale_multiplier`).
    pub scale: f32,
    /// Offset added to the lod's vertex positions, in stored coordinates.
    pub vertex_offset: [f32; 3],
    /// Fragments: grid position and byte size of their Draco data.
    pub fragments: Vec<LodFragment>,
}

/// One fragment of a lod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LodFragment {
    /// Grid position of the fragment's chunk.
    pub position: [u32; 3],
    /// Byte offset of its data in the segment's data (from the first fragment of lod 0).
    pub offset: u64,
    /// Bytes of its data.
    pub size: u64,
}

/// A segment's multi-resolution manifest (`ID.index`).
#[derive(Clone, Debug, PartialEq)]
pub struct MultiresManifest {
    /// Size of a lod-0 chunk in stored coordinates.
    pub chunk_shape: [f32; 3],
    /// Origin of the chunk grid.
    pub grid_origin: [f32; 3],
    /// The levels of detail, finest first.
    pub lods: Vec<Lod>,
}

impl MultiresManifest {
    /// The manifest as a JSON object a person or a program reads: `chunk_shape`,
    /// `grid_origin` and `lods`, each lod with its `scale`, `vertex_offset` and `fragments`
    /// (`position`, `offset`, `size`).
    pub fn to_json(&self) -> Value {
        json!({
            "chunk_shape": self.chunk_shape,
            "grid_origin": self.grid_origin,
            "lods": self.lods.iter().map(|l| json!({
                "scale": l.scale,
                "vertex_offset": l.vertex_offset,
                "fragments": l.fragments.iter().map(|f| json!({
                    "position": f.position, "offset": f.offset, "size": f.size,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }

    /// Bytes of all fragments' data.
    pub fn data_bytes(&self) -> u64 {
        self.lods
            .iter()
            .flat_map(|l| l.fragments.iter())
            .map(|f| f.size)
            .sum()
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    file: &'a str,
    segment: Option<u64>,
}

impl Reader<'_> {
    fn take(&mut self, n: usize, what: &str) -> MeshResult<&[u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(corrupt(
                self.file,
                self.segment,
                format!(
                    "the manifest ends at byte {} while reading {what} ({n} bytes at byte {})",
                    self.bytes.len(),
                    self.at
                ),
            ));
        };
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn words(&mut self, count: usize, what: &str) -> MeshResult<Vec<[u8; 4]>> {
        let n = count.checked_mul(4).ok_or_else(|| {
            corrupt(
                self.file,
                self.segment,
                format!("{what}: count {count} overflows"),
            )
        })?;
        Ok(self
            .take(n, what)?
            .chunks_exact(4)
            .map(|w| [w[0], w[1], w[2], w[3]])
            .collect())
    }

    fn f32s(&mut self, count: usize, what: &str) -> MeshResult<Vec<f32>> {
        Ok(self
            .words(count, what)?
            .into_iter()
            .map(f32::from_le_bytes)
            .collect())
    }

    fn u32s(&mut self, count: usize, what: &str) -> MeshResult<Vec<u32>> {
        Ok(self
            .words(count, what)?
            .into_iter()
            .map(u32::from_le_bytes)
            .collect())
    }
}

/// Parse a multi-resolution manifest. `data_size` (when known) bounds the fragment data.
pub fn parse_multires_manifest(
    bytes: &[u8],
    file: &str,
    segment: Option<u64>,
    data_size: Option<u64>,
) -> MeshResult<MultiresManifest> {
    let mut r = Reader {
        bytes,
        at: 0,
        file,
        segment,
    };
    let c = r.f32s(3, "chunk_shape")?;
    let g = r.f32s(3, "grid_origin")?;
    let num_lods = r.u32s(1, "num_lods")?[0] as usize;
    // Each lod needs at least 4 + 12 + 4 bytes of header: bound the count by the file.
    let left = bytes.len() - r.at;
    if num_lods.saturating_mul(20) > left {
        return Err(corrupt(
            file,
            segment,
            format!("the manifest declares {num_lods} lods but has only {left} bytes left"),
        ));
    }
    let scales = r.f32s(num_lods, "lod_scales")?;
    let offsets = r.f32s(num_lods * 3, "vertex_offsets")?;
    let counts = r.u32s(num_lods, "num_fragments_per_lod")?;
    let mut lods = Vec::with_capacity(num_lods);
    let mut offset = 0u64;
    for (lod, &count) in counts.iter().enumerate() {
        let n = count as usize;
        let left = bytes.len() - r.at;
        if n.saturating_mul(16) > left {
            return Err(corrupt(
                file,
                segment,
                format!(
                    "lod {lod} declares {n} fragments but the manifest has only {left} bytes left"
                ),
            ));
        }
        let positions = r.u32s(n * 3, "fragment_positions")?;
        let sizes = r.u32s(n, "fragment_offsets")?;
        let fragments = (0..n)
            .map(|i| {
                let f = LodFragment {
                    position: [positions[i], positions[n + i], positions[2 * n + i]],
                    offset,
                    size: sizes[i] as u64,
                };
                offset += f.size;
                f
            })
            .collect();
        lods.push(Lod {
            scale: scales[lod],
            vertex_offset: [offsets[lod * 3], offsets[lod * 3 + 1], offsets[lod * 3 + 2]],
            fragments,
        });
    }
    if r.at != bytes.len() {
        return Err(corrupt(
            file,
            segment,
            format!(
                "{} bytes follow the manifest's last lod",
                bytes.len() - r.at
            ),
        ));
    }
    if let Some(size) = data_size {
        if offset > size {
            return Err(corrupt(
                file,
                segment,
                format!("the fragments need {offset} bytes of data, the data holds {size}"),
            ));
        }
    }
    Ok(MultiresManifest {
        chunk_shape: [c[0], c[1], c[2]],
        grid_origin: [g[0], g[1], g[2]],
        lods,
    })
}

/// Encode a multi-resolution manifest (fragment sizes from `lods`, offsets implied).
pub fn encode_multires_manifest(manifest: &MultiresManifest) -> Vec<u8> {
    let mut out = Vec::new();
    let f = |out: &mut Vec<u8>, v: f32| out.extend_from_slice(&v.to_le_bytes());
    let u = |out: &mut Vec<u8>, v: u32| out.extend_from_slice(&v.to_le_bytes());
    for v in manifest.chunk_shape.iter().chain(&manifest.grid_origin) {
        f(&mut out, *v);
    }
    u(&mut out, manifest.lods.len() as u32);
    for lod in &manifest.lods {
        f(&mut out, lod.scale);
    }
    for lod in &manifest.lods {
        for v in lod.vertex_offset {
            f(&mut out, v);
        }
    }
    for lod in &manifest.lods {
        u(&mut out, lod.fragments.len() as u32);
    }
    for lod in &manifest.lods {
        for axis in 0..3 {
            for frag in &lod.fragments {
                u(&mut out, frag.position[axis]);
            }
        }
        for frag in &lod.fragments {
            u(&mut out, frag.size as u32);
        }
    }
    out
}

fn is_gzip(bytes: &[u8]) -> bool {
    bytes.len() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b
}

/// A mesh directory on a store.
pub struct MeshDir<'a> {
    store: &'a dyn Store,
    dir: String,
    info: Option<Value>,
    kind: MeshKind,
}

impl<'a> MeshDir<'a> {
    /// Open the mesh directory `dir` (its `info` is optional: none means legacy). When `dir`
    /// is a segmentation layer whose `info` names a mesh directory, that directory is opened.
    pub fn open(store: &'a dyn Store, dir: &str) -> MeshResult<MeshDir<'a>> {
        let dir = dir.trim_matches('/').to_string();
        let info_key = join_key(&dir, super::INFO);
        let info = match store.get(&info_key)? {
            None => None,
            Some(bytes) => Some(
                serde_json::from_slice::<Value>(&bytes)
                    .map_err(|e| corrupt(&info_key, None, format!("not valid JSON: {e}")))?,
            ),
        };
        if let Some(Value::Object(map)) = &info {
            if map.contains_key("scales") {
                // A volume layer: follow its `mesh` member.
                let Some(mesh) = map.get("mesh").and_then(Value::as_str) else {
                    return Err(MeshError::NotFound {
                        file: format!("{info_key} (member 'mesh')"),
                        segment: None,
                    });
                };
                let sub = mesh.trim_matches('/');
                if sub.is_empty()
                    || sub
                        .split('/')
                        .any(|p| p == ".." || p == "." || p.is_empty())
                {
                    return Err(corrupt(
                        &info_key,
                        None,
                        format!("'mesh' is \"{mesh}\", not a directory inside the layer"),
                    ));
                }
                return MeshDir::open(store, &join_key(&dir, sub));
            }
        }
        let kind = parse_mesh_info(info.as_ref(), &info_key)?;
        Ok(MeshDir {
            store,
            dir,
            info,
            kind,
        })
    }

    /// The directory (store key prefix).
    pub fn dir(&self) -> &str {
        &self.dir
    }

    /// The layout.
    pub fn kind(&self) -> &MeshKind {
        &self.kind
    }

    /// The `info` document, if the directory has one.
    pub fn info(&self) -> Option<&Value> {
        self.info.as_ref()
    }

    fn key(&self, name: &str) -> String {
        join_key(&self.dir, name)
    }

    /// Read `name` (or `name.gz`), gunzipped. None if neither exists.
    fn read_file(&self, name: &str, segment: Option<u64>) -> MeshResult<Option<(String, Vec<u8>)>> {
        let key = self.key(name);
        let (key, bytes) = match self.store.get(&key)? {
            Some(b) => (key, b),
            None => {
                let gz = format!("{key}.gz");
                match self.store.get(&gz)? {
                    Some(b) => (gz, b),
                    None => return Ok(None),
                }
            }
        };
        let bytes = if is_gzip(&bytes) {
            sharding::gunzip(&bytes, MAX_DECODED_BYTES).map_err(|e| corrupt(&key, segment, e))?
        } else {
            bytes.to_vec()
        };
        Ok(Some((key, bytes)))
    }

    /// The segment ids with a mesh, ascending: legacy manifests `ID:0` (`.gz`), unsharded
    /// multi-resolution manifests `ID.index`; sharded multi-resolution directories list the
    /// ids of every shard.
    pub fn segments(&self) -> MeshResult<Vec<u64>> {
        let listing = self.store.list_dir(&self.dir)?;
        let mut ids = BTreeSet::new();
        match &self.kind {
            MeshKind::Legacy => {
                for name in &listing.keys {
                    let name = name.strip_suffix(".gz").unwrap_or(name);
                    if let Some(id) = name.strip_suffix(":0").and_then(parse_id) {
                        ids.insert(id);
                    }
                }
            }
            MeshKind::Multires(info) => match &info.sharding {
                None => {
                    for name in &listing.keys {
                        if let Some(id) = name.strip_suffix(".index").and_then(parse_id) {
                            ids.insert(id);
                        }
                    }
                }
                Some(spec) => {
                    for name in &listing.keys {
                        if spec.parse_shard_file(name).is_none() {
                            continue;
                        }
                        let key = self.key(name);
                        let shard = self.store.get_required(&key)?;
                        for entry in shard_entries(&shard, spec, &key)? {
                            ids.insert(entry.id);
                        }
                    }
                }
            },
        }
        Ok(ids.into_iter().collect())
    }

    /// Read segment `id`'s legacy mesh: its manifest and fragments.
    pub fn read_legacy(&self, id: u64) -> MeshResult<SegmentMesh> {
        if let MeshKind::Multires(_) = self.kind {
            return Err(MeshError::Invalid(format!(
                "'{}' holds multi-resolution meshes, not legacy ones",
                self.dir
            )));
        }
        let name = format!("{id}:0");
        let Some((key, bytes)) = self.read_file(&name, Some(id))? else {
            return Err(MeshError::NotFound {
                file: self.key(&name),
                segment: Some(id),
            });
        };
        let names = parse_legacy_manifest(&bytes, &key, id)?;
        let mut fragments = Vec::with_capacity(names.len());
        for fragment_name in names {
            let Some((fkey, fbytes)) = self.read_file(&fragment_name, Some(id))? else {
                return Err(MeshError::NotFound {
                    file: self.key(&fragment_name),
                    segment: Some(id),
                });
            };
            let mut fragment = decode_legacy_fragment(&fbytes, &fkey, Some(id))?;
            fragment.name = fragment_name;
            fragments.push(fragment);
        }
        Ok(SegmentMesh {
            segment: id,
            fragments,
        })
    }

    /// Segment `id`'s multi-resolution manifest and where its fragment data start: the data
    /// file (key) and the byte offset of the first fragment in it.
    pub fn read_multires_manifest(&self, id: u64) -> MeshResult<(MultiresManifest, String, u64)> {
        let MeshKind::Multires(info) = &self.kind else {
            return Err(MeshError::Invalid(format!(
                "'{}' holds legacy meshes, not multi-resolution ones",
                self.dir
            )));
        };
        match &info.sharding {
            None => {
                let name = format!("{id}.index");
                let Some((key, bytes)) = self.read_file(&name, Some(id))? else {
                    return Err(MeshError::NotFound {
                        file: self.key(&name),
                        segment: Some(id),
                    });
                };
                let data_key = self.key(&id.to_string());
                let data_size = self.store.size(&data_key)?;
                let manifest = parse_multires_manifest(&bytes, &key, Some(id), data_size)?;
                Ok((manifest, data_key, 0))
            }
            Some(spec) => {
                let place = spec.place(id);
                let key = self.key(&spec.shard_file(place.shard));
                let Some(shard) = self.store.get(&key)? else {
                    return Err(MeshError::NotFound {
                        file: key,
                        segment: Some(id),
                    });
                };
                let entry = shard_entries(&shard, spec, &key)?
                    .into_iter()
                    .find(|e| e.id == id)
                    .ok_or_else(|| MeshError::NotFound {
                        file: key.clone(),
                        segment: Some(id),
                    })?;
                let raw = &shard[entry.start as usize..(entry.start + entry.size) as usize];
                let bytes = match spec.data_encoding {
                    ShardEncoding::Raw => raw.to_vec(),
                    ShardEncoding::Gzip => sharding::gunzip(raw, MAX_DECODED_BYTES)
                        .map_err(|e| corrupt(&key, Some(id), e))?,
                };
                let manifest = parse_multires_manifest(&bytes, &key, Some(id), None)?;
                let total = manifest.data_bytes();
                let start = entry.start.checked_sub(total).ok_or_else(|| {
                    corrupt(
                        &key,
                        Some(id),
                        format!(
                            "the manifest at byte {} needs {total} bytes of fragment data before it",
                            entry.start
                        ),
                    )
                })?;
                Ok((manifest, key, start))
            }
        }
    }

    /// The Draco-encoded bytes of fragment `fragment` of lod `lod` of segment `id`.
    pub fn read_multires_fragment_bytes(
        &self,
        id: u64,
        lod: usize,
        fragment: usize,
    ) -> MeshResult<Bytes> {
        let (manifest, data_key, base) = self.read_multires_manifest(id)?;
        let frag = manifest
            .lods
            .get(lod)
            .and_then(|l| l.fragments.get(fragment))
            .ok_or_else(|| {
                MeshError::Invalid(format!(
                    "segment {id} has no fragment {fragment} in lod {lod}"
                ))
            })?;
        self.read_data_range(
            &data_key,
            id,
            base + frag.offset,
            frag.size,
            &format!("fragment {fragment} of lod {lod}"),
        )
    }

    /// `length` bytes from `start` of segment `id`'s data file `data_key`; an error naming
    /// `what` when the file is missing or ends before them.
    fn read_data_range(
        &self,
        data_key: &str,
        id: u64,
        start: u64,
        length: u64,
        what: &str,
    ) -> MeshResult<Bytes> {
        let range = neurochunk_store::ByteRange::FromStart {
            offset: start,
            length: Some(length),
        };
        let mut got =
            self.store
                .get_ranges(data_key, &[range])?
                .ok_or_else(|| MeshError::NotFound {
                    file: data_key.to_string(),
                    segment: Some(id),
                })?;
        let bytes = got.pop().unwrap_or_default();
        if bytes.len() as u64 != length {
            return Err(corrupt(
                data_key,
                Some(id),
                format!(
                    "{what} at bytes {start}..{} lies past the end of the file",
                    start.saturating_add(length)
                ),
            ));
        }
        Ok(bytes)
    }

    /// Decode fragment `fragment` of lod `lod` of segment `id` into model coordinates (an
    /// empty fragment, 0 bytes, has no vertices). Without the `draco` feature this reads the
    /// fragment's bytes and returns an error naming the file.
    pub fn read_multires_fragment(
        &self,
        id: u64,
        lod: usize,
        fragment: usize,
    ) -> MeshResult<MeshFragment> {
        let (manifest, data_key, _) = self.read_multires_manifest(id)?;
        let bytes = self.read_multires_fragment_bytes(id, lod, fragment)?;
        let info = self.multires_info()?;
        let position = manifest.lods[lod].fragments[fragment].position;
        decode_multires_fragment(
            &bytes,
            info,
            &manifest,
            lod,
            position,
            &FragmentName {
                file: &data_key,
                segment: id,
                lod,
                fragment,
            },
        )
    }

    fn multires_info(&self) -> MeshResult<&MultiresInfo> {
        match &self.kind {
            MeshKind::Multires(info) => Ok(info),
            MeshKind::Legacy => Err(MeshError::Invalid(format!(
                "'{}' holds legacy meshes, not multi-resolution ones",
                self.dir
            ))),
        }
    }

    /// Decode every fragment of lod `lod` of segment `id` (one read of the lod's bytes).
    /// Fragments are named `lod L fragment F [x, y, z]`; empty fragments (0 bytes, which
    /// Neuroglancer allows where a child node has a mesh and its parent none) are left out.
    pub fn read_multires_lod(&self, id: u64, lod: usize) -> MeshResult<SegmentMesh> {
        let (manifest, data_key, base) = self.read_multires_manifest(id)?;
        let info = self.multires_info()?;
        let Some(level) = manifest.lods.get(lod) else {
            return Err(MeshError::Invalid(format!(
                "segment {id} has {} lods, no lod {lod}",
                manifest.lods.len()
            )));
        };
        let (Some(first), Some(last)) = (level.fragments.first(), level.fragments.last()) else {
            return Ok(SegmentMesh {
                segment: id,
                fragments: Vec::new(),
            });
        };
        let length = last.offset + last.size - first.offset;
        let bytes = self.read_data_range(
            &data_key,
            id,
            base + first.offset,
            length,
            &format!("lod {lod}"),
        )?;
        let mut fragments = Vec::new();
        for (i, frag) in level.fragments.iter().enumerate() {
            if frag.size == 0 {
                continue;
            }
            let at = (frag.offset - first.offset) as usize;
            let mut decoded = decode_multires_fragment(
                &bytes[at..at + frag.size as usize],
                info,
                &manifest,
                lod,
                frag.position,
                &FragmentName {
                    file: &data_key,
                    segment: id,
                    lod,
                    fragment: i,
                },
            )?;
            decoded.name = format!("lod {lod} fragment {i} {:?}", frag.position);
            fragments.push(decoded);
        }
        Ok(SegmentMesh {
            segment: id,
            fragments,
        })
    }

    /// Read segment `id`'s mesh whatever the layout: legacy meshes are read; of
    /// multi-resolution meshes lod 0, the finest (`read_multires_lod` for others).
    pub fn read_segment(&self, id: u64) -> MeshResult<SegmentMesh> {
        match &self.kind {
            MeshKind::Legacy => self.read_legacy(id),
            MeshKind::Multires(_) => self.read_multires_lod(id, 0),
        }
    }
}

/// Where a multi-resolution fragment is, for errors.
struct FragmentName<'a> {
    file: &'a str,
    segment: u64,
    lod: usize,
    fragment: usize,
}

impl FragmentName<'_> {
    #[cfg(feature = "draco")]
    fn corrupt(&self, message: impl fmt::Display) -> MeshError {
        corrupt(
            self.file,
            Some(self.segment),
            format!("fragment {} of lod {}: {message}", self.fragment, self.lod),
        )
    }
}

/// Most bytes of one Draco fragment this reader decodes.
pub const MAX_DRACO_FRAGMENT_BYTES: usize = 64 << 20;

/// The most faces, points, vertices or symbols a Draco fragment may declare per byte of its
/// data (plus [`DRACO_COUNT_SLACK`]): even a perfectly regular mesh spends more than a bit per
/// eight faces on its connectivity and positions.
#[cfg(feature = "draco")]
const DRACO_COUNTS_PER_BYTE: u64 = 64;
/// Counts a tiny fragment may declare whatever its size.
#[cfg(feature = "draco")]
const DRACO_COUNT_SLACK: u64 = 1024;
/// The most faces, points, vertices or symbols of one Draco fragment (decoding that many
/// takes about a gigabyte).
#[cfg(feature = "draco")]
const MAX_DRACO_COUNT: u64 = 1 << 24;

/// Reads the counts a Draco mesh declares before any data (the header, the metadata it
/// skips, the connectivity counts and, for edgebreaker, the topology splits) and refuses
/// counts the fragment's size cannot hold: the decoder sizes its buffers by them, and a
/// damaged count would otherwise ask for more memory than the machine has. Bytes that are not
/// a Draco 2.2 mesh are left to the decoder to refuse.
#[cfg(feature = "draco")]
fn draco_counts_fit(bytes: &[u8]) -> Result<(), String> {
    struct Cursor<'a>(&'a [u8]);
    impl Cursor<'_> {
        fn u8(&mut self) -> Option<u8> {
            let (&first, rest) = self.0.split_first()?;
            self.0 = rest;
            Some(first)
        }
        fn skip(&mut self, n: u64) -> Option<()> {
            let n = usize::try_from(n).ok().filter(|&n| n <= self.0.len())?;
            self.0 = &self.0[n..];
            Some(())
        }
        fn leb128(&mut self) -> Option<u64> {
            let mut value = 0u64;
            for shift in (0..64).step_by(7) {
                let byte = self.u8()?;
                value |= u64::from(byte & 0x7f) << shift;
                if byte & 0x80 == 0 {
                    return Some(value);
                }
            }
            Some(u64::MAX)
        }
        /// Metadata entries and sub-metadata, as the decoder skips them.
        fn skip_metadata(&mut self, level: usize) -> Option<()> {
            if level > 1000 {
                return None;
            }
            for _ in 0..self.leb128()? {
                let name = self.u8()?;
                self.skip(u64::from(name))?;
                let size = self.leb128()?;
                self.skip(size)?;
            }
            for _ in 0..self.leb128()? {
                let name = self.u8()?;
                self.skip(u64::from(name))?;
                self.skip_metadata(level + 1)?;
            }
            Some(())
        }
    }
    let limit = (bytes.len() as u64)
        .saturating_mul(DRACO_COUNTS_PER_BYTE)
        .saturating_add(DRACO_COUNT_SLACK)
        .min(MAX_DRACO_COUNT);
    let check = |what: &str, n: u64| {
        if n > limit {
            Err(format!(
                "the Draco mesh declares {n} {what}, more than {} bytes of data can hold",
                bytes.len()
            ))
        } else {
            Ok(())
        }
    };
    let mut c = Cursor(bytes);
    let header = (|| {
        let magic = [c.u8()?, c.u8()?, c.u8()?, c.u8()?, c.u8()?];
        let version = (c.u8()?, c.u8()?);
        let (geometry, method) = (c.u8()?, c.u8()?);
        let flags = u16::from_le_bytes([c.u8()?, c.u8()?]);
        Some((
            &magic == b"DRACO" && version == (2, 2) && geometry == 1,
            method,
            flags,
        ))
    })();
    let Some((true, method, flags)) = header else {
        return Ok(());
    };
    if flags & 0x8000 != 0 {
        let skipped = (|| {
            for _ in 0..c.leb128()? {
                c.leb128()?;
                c.skip_metadata(0)?;
            }
            c.skip_metadata(0)
        })();
        if skipped.is_none() {
            return Ok(());
        }
    }
    match method {
        0 => {
            let (Some(faces), Some(points)) = (c.leb128(), c.leb128()) else {
                return Ok(());
            };
            check("faces", faces)?;
            check("points", points)
        }
        1 => {
            let counts = (|| {
                c.u8()?;
                let vertices = c.leb128()?;
                let faces = c.leb128()?;
                c.u8()?;
                Some([vertices, faces, c.leb128()?, c.leb128()?, c.leb128()?])
            })();
            let Some([vertices, faces, symbols, split_symbols, splits]) = counts else {
                return Ok(());
            };
            check("vertices", vertices)?;
            check("faces", faces)?;
            check("connectivity symbols", symbols)?;
            check("split symbols", split_symbols)?;
            // Each topology split takes at least two bytes.
            if splits > (c.0.len() / 2) as u64 {
                return Err(format!(
                    "the Draco mesh declares {splits} topology splits in {} bytes",
                    c.0.len()
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// A Draco fragment's vertices: the integer position of each point (each component in
/// `[0, 2^bits)`), and its triangles.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuantizedFragment {
    /// Integer positions within the fragment's octree node.
    pub positions: Vec<[u32; 3]>,
    /// Triangles, indices into `positions`.
    pub triangles: Vec<[u32; 3]>,
}

/// Decode one Draco-encoded multi-resolution fragment to its integer positions, as
/// Neuroglancer reads them: the position attribute's quantized values (Draco's own
/// dequantization skipped), one per point, and the faces. Errors (never panics) on damaged
/// data, on positions that are not integers in `[0, 2^bits)`, and on faces past the points.
#[cfg(feature = "draco")]
pub fn decode_draco_fragment(bytes: &[u8], bits: u32) -> Result<QuantizedFragment, String> {
    use draco_oxide_core::attribute::{AttributeType, ComponentDataType};
    if bytes.is_empty() {
        return Ok(QuantizedFragment::default());
    }
    if bytes.len() > MAX_DRACO_FRAGMENT_BYTES {
        return Err(format!(
            "{} bytes of Draco data, more than the {MAX_DRACO_FRAGMENT_BYTES} this reader decodes",
            bytes.len()
        ));
    }
    draco_counts_fit(bytes)?;
    let decoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        draco_oxide_decoder::decode_mesh_portable(bytes)
    }))
    .map_err(|_| "the Draco decoder failed on these bytes".to_string())?
    .map_err(|e| format!("not a valid Draco mesh: {e}"))?;
    let mesh = decoded.mesh;
    let position = mesh
        .get_attributes()
        .iter()
        .find(|a| a.get_attribute_type() == AttributeType::Position)
        .ok_or("the Draco mesh has no position attribute")?;
    if position.get_num_components() != 3 {
        return Err(format!(
            "the Draco positions have {} components, not 3",
            position.get_num_components()
        ));
    }
    let data = position.get_data_as_bytes();
    let component = position.get_component_type();
    let width = match component {
        ComponentDataType::U8 | ComponentDataType::I8 => 1,
        ComponentDataType::U16 | ComponentDataType::I16 => 2,
        ComponentDataType::U32 | ComponentDataType::I32 => 4,
        other => {
            return Err(format!(
                "the Draco positions are {other:?}, not quantized integers (Neuroglancer reads \
                 the integer positions of each fragment's octree node)"
            ))
        }
    };
    let signed = matches!(
        component,
        ComponentDataType::I8 | ComponentDataType::I16 | ComponentDataType::I32
    );
    let values = data.len() / (3 * width);
    let limit = 1u64 << bits.min(32);
    let value = |v: usize, c: usize| -> Result<u32, String> {
        let at = (v * 3 + c) * width;
        let raw = &data[at..at + width];
        let x: i64 = match (width, signed) {
            (1, false) => i64::from(raw[0]),
            (1, true) => i64::from(raw[0] as i8),
            (2, false) => i64::from(u16::from_le_bytes([raw[0], raw[1]])),
            (2, true) => i64::from(i16::from_le_bytes([raw[0], raw[1]])),
            (_, false) => i64::from(u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]])),
            (_, true) => i64::from(i32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]])),
        };
        if x < 0 || x as u64 >= limit {
            return Err(format!(
                "vertex position {x} lies outside [0, 2^{bits}) (vertex_quantization_bits)"
            ));
        }
        Ok(x as u32)
    };
    let points = position.len();
    let map = position.point_map_as_slice();
    let mut positions = Vec::with_capacity(points);
    for p in 0..points {
        let v: usize = match map {
            Some(m) => m[p].into(),
            None => p,
        };
        if v >= values {
            return Err(format!(
                "point {p} refers to position value {v} of {values}"
            ));
        }
        positions.push([value(v, 0)?, value(v, 1)?, value(v, 2)?]);
    }
    let mut triangles = Vec::with_capacity(mesh.get_faces().len());
    for face in mesh.get_faces() {
        let t = [
            usize::from(face[0]),
            usize::from(face[1]),
            usize::from(face[2]),
        ];
        if t.iter().any(|&i| i >= points) {
            return Err(format!(
                "a triangle refers to point {} of {points}",
                t.iter().max().copied().unwrap_or(0)
            ));
        }
        triangles.push([t[0] as u32, t[1] as u32, t[2] as u32]);
    }
    Ok(QuantizedFragment {
        positions,
        triangles,
    })
}

/// The model coordinates of integer position `x` of a fragment at grid `position` of lod
/// `lod`: Neuroglancer's stored model coordinate `grid_origin + vertex_offsets[lod] +
/// chunk_shape * 2^lod * (position + x / (2^bits - 1))`, then the `info`'s `transform`,
/// computed in f64 and rounded once to f32.
pub fn multires_vertex(
    info: &MultiresInfo,
    manifest: &MultiresManifest,
    lod: usize,
    position: [u32; 3],
    x: [u32; 3],
) -> [f32; 3] {
    let max = ((1u64 << info.vertex_quantization_bits.min(32)) - 1) as f64;
    let scale = 2f64.powi(lod.min(1024) as i32);
    let offset = manifest
        .lods
        .get(lod)
        .map(|l| l.vertex_offset)
        .unwrap_or_default();
    let mut stored = [0f64; 3];
    for j in 0..3 {
        stored[j] = f64::from(manifest.grid_origin[j])
            + f64::from(offset[j])
            + f64::from(manifest.chunk_shape[j])
                * scale
                * (f64::from(position[j]) + f64::from(x[j]) / max);
    }
    let t = &info.transform;
    let mut out = [0f32; 3];
    for (i, o) in out.iter_mut().enumerate() {
        let row = &t[i * 4..i * 4 + 4];
        *o = (row[0] * stored[0] + row[1] * stored[1] + row[2] * stored[2] + row[3]) as f32;
    }
    out
}

fn decode_multires_fragment(
    bytes: &[u8],
    info: &MultiresInfo,
    manifest: &MultiresManifest,
    lod: usize,
    position: [u32; 3],
    name: &FragmentName<'_>,
) -> MeshResult<MeshFragment> {
    let fragment_name = format!("lod {} fragment {} {position:?}", name.lod, name.fragment);
    if bytes.is_empty() {
        return Ok(MeshFragment {
            name: fragment_name,
            ..MeshFragment::default()
        });
    }
    #[cfg(feature = "draco")]
    {
        let q = decode_draco_fragment(bytes, info.vertex_quantization_bits)
            .map_err(|e| name.corrupt(e))?;
        Ok(MeshFragment {
            name: fragment_name,
            vertices: q
                .positions
                .iter()
                .map(|&x| multires_vertex(info, manifest, lod, position, x))
                .collect(),
            triangles: q.triangles,
        })
    }
    #[cfg(not(feature = "draco"))]
    {
        let _ = (info, manifest, lod, fragment_name);
        Err(MeshError::Unsupported {
            file: name.file.to_string(),
            segment: Some(name.segment),
            message: format!(
                "fragment {} of lod {}: Draco-encoded fragments are not decoded by this build \
                 (the `draco` feature)",
                name.fragment, name.lod
            ),
        })
    }
}

fn parse_id(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Every entry of a whole shard: chunk ids and the absolute byte ranges of their data.
fn shard_entries(
    shard: &[u8],
    spec: &ShardingSpec,
    key: &str,
) -> MeshResult<Vec<sharding::MinishardEntry>> {
    sharding::shard_entries(shard, spec, MAX_DECODED_BYTES).map_err(|e| corrupt(key, None, e))
}

/// Parse a legacy manifest: the fragment names. Names leaving the mesh directory are refused.
pub fn parse_legacy_manifest(bytes: &[u8], file: &str, segment: u64) -> MeshResult<Vec<String>> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        corrupt(
            file,
            Some(segment),
            format!("the manifest is not valid JSON: {e}"),
        )
    })?;
    let fragments = value
        .get("fragments")
        .and_then(Value::as_array)
        .ok_or_else(|| corrupt(file, Some(segment), "the manifest has no 'fragments' list"))?;
    fragments
        .iter()
        .map(|f| {
            let name = f.as_str().ok_or_else(|| {
                corrupt(
                    file,
                    Some(segment),
                    format!("fragment name {f} is not a string"),
                )
            })?;
            if name.is_empty()
                || name.starts_with('/')
                || name
                    .split('/')
                    .any(|p| p == ".." || p == "." || p.is_empty())
            {
                return Err(corrupt(
                    file,
                    Some(segment),
                    format!("fragment name \"{name}\" is not a file inside the mesh directory"),
                ));
            }
            Ok(name.to_string())
        })
        .collect()
}

/// Options of [`write_legacy_meshes`].
#[derive(Clone, Debug, Default)]
pub struct LegacyWriteOptions {
    /// Store manifests and fragments gzip-compressed as `NAME.gz` (cloud-volume's
    /// `compress="gzip"`).
    pub gzip: bool,
    /// Members of the mesh `info` besides `@type` (e.g. `segment_properties`).
    pub info_members: Map<String, Value>,
}

/// Write legacy meshes into `dir`: per segment its fragments (`ID:0:I`, I from 0, unless the
/// fragment has a name) and manifest `ID:0`, and the directory's `info`.
pub fn write_legacy_meshes(
    store: &dyn Store,
    dir: &str,
    meshes: &[SegmentMesh],
    options: &LegacyWriteOptions,
) -> MeshResult<()> {
    let dir = dir.trim_matches('/');
    let mut values: Vec<(String, Bytes)> = Vec::new();
    let mut put = |name: &str, bytes: Vec<u8>| {
        let key = join_key(dir, name);
        if options.gzip {
            values.push((format!("{key}.gz"), Bytes::from(sharding::gzip(&bytes))));
        } else {
            values.push((key, Bytes::from(bytes)));
        }
    };
    for mesh in meshes {
        let mut names = Vec::with_capacity(mesh.fragments.len());
        for (i, fragment) in mesh.fragments.iter().enumerate() {
            let name = if fragment.name.is_empty() {
                format!("{}:0:{i}", mesh.segment)
            } else {
                fragment.name.clone()
            };
            if name.starts_with('/')
                || name
                    .split('/')
                    .any(|p| p == ".." || p == "." || p.is_empty())
            {
                return Err(MeshError::Invalid(format!(
                    "fragment name \"{name}\" of segment {} is not a file name",
                    mesh.segment
                )));
            }
            let bytes = encode_legacy_fragment(&fragment.vertices, &fragment.triangles)
                .map_err(|e| MeshError::Invalid(format!("segment {}: {e}", mesh.segment)))?;
            put(&name, bytes);
            names.push(name);
        }
        let manifest = serde_json::to_vec(&json!({ "fragments": names }))
            .map_err(|e| MeshError::Invalid(e.to_string()))?;
        put(&format!("{}:0", mesh.segment), manifest);
    }
    let mut info = Map::new();
    info.insert("@type".into(), json!(LEGACY_TYPE));
    for (k, v) in &options.info_members {
        if k != "@type" {
            info.insert(k.clone(), v.clone());
        }
    }
    let info = serde_json::to_vec_pretty(&Value::Object(info))
        .map_err(|e| MeshError::Invalid(e.to_string()))?;
    values.push((join_key(dir, super::INFO), Bytes::from(info)));
    store.set_many(values)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragment_round_trip() {
        let v = vec![[0.0, 1.0, 2.0], [3.5, 4.0, 5.0], [6.0, 7.0, -8.0]];
        let t = vec![[0, 1, 2], [2, 1, 0]];
        let bytes = encode_legacy_fragment(&v, &t).unwrap();
        assert_eq!(bytes.len(), 4 + 36 + 24);
        let f = decode_legacy_fragment(&bytes, "f", Some(1)).unwrap();
        assert_eq!((f.vertices, f.triangles), (v, t));
    }

    #[test]
    fn manifest_round_trip() {
        let m = MultiresManifest {
            chunk_shape: [8.0, 8.0, 8.0],
            grid_origin: [1.0, 2.0, 3.0],
            lods: vec![
                Lod {
                    scale: 1.0,
                    vertex_offset: [0.0, 0.0, 0.0],
                    fragments: vec![
                        LodFragment {
                            position: [0, 1, 2],
                            offset: 0,
                            size: 10,
                        },
                        LodFragment {
                            position: [3, 4, 5],
                            offset: 10,
                            size: 5,
                        },
                    ],
                },
                Lod {
                    scale: 2.0,
                    vertex_offset: [0.5, 0.5, 0.5],
                    fragments: vec![LodFragment {
                        position: [0, 0, 0],
                        offset: 15,
                        size: 7,
                    }],
                },
            ],
        };
        let bytes = encode_multires_manifest(&m);
        assert_eq!(
            parse_multires_manifest(&bytes, "f", Some(1), Some(22)).unwrap(),
            m
        );
        assert!(parse_multires_manifest(&bytes, "f", Some(1), Some(21)).is_err());
        for cut in 0..bytes.len() {
            assert!(parse_multires_manifest(&bytes[..cut], "f", Some(1), None).is_err());
        }
    }
}
