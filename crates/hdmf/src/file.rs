//! Reading an NWB file in either convention: typed objects, attributes, links (internal and
//! external, followed through chains with cycle detection), object and region references,
//! dataset contents, and cached specifications.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use neurochunk_array::{Array, ArrayMetadata, AxisSelection, Selection};
use neurochunk_codec::Json2Codec;
use neurochunk_store::{PrefixStore, Store};
use rayon::prelude::*;
use serde_json::{Map, Value};

use crate::convention::{
    is_reserved_attribute, Convention, LEGACY_DTYPE, LEGACY_LINKS, SPECLOC, V3_LINKS,
};
use crate::error::{HdmfError, HdmfResult};
use crate::index::{child, split_parent, store_key, NodeDoc, NodeIndex, NodeKind};
use crate::interpret::{holds_references, interpret, is_scalar, lindi_object_array};
use crate::reference::{attribute_reference, Reference, Region};
use crate::values::{Dataset, DatasetValue};

/// How a file is opened.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// Use consolidated metadata when present (one read for the whole tree).
    pub use_consolidated: bool,
    /// How the `source` of external links and references is turned into another file.
    /// `None`: the default of how the file is opened — [`StoreResolver`] (inside the same
    /// store) for [`NwbFile::open_store`], [`crate::FsResolver`] (inside the file's directory)
    /// for [`NwbFile::open`]. Files reached through links are opened with the same options.
    pub resolver: Option<Arc<dyn ExternalResolver>>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            use_consolidated: true,
            resolver: None,
        }
    }
}

/// Where an NWB file lives: a store, the prefix of the file's root inside it, and the name
/// errors give it.
#[derive(Clone, Debug)]
pub struct FileLocation {
    /// The store holding the file (and, possibly, other files).
    pub store: Arc<dyn Store>,
    /// The key prefix of the file's root in `store`, without leading or trailing `/` (`""`:
    /// the file is the whole store).
    pub prefix: String,
    /// The name errors and messages give the file: a path, a URL or a store prefix. Files
    /// reached through links are cached by it, so it should tell files apart.
    pub name: String,
    /// For a file stored as one value of another store (an HDF5 file shown as a Zarr tree,
    /// see [`FileOpener`]): that store and the file's key in it. External links and
    /// references of the file are resolved there, beside the file.
    pub container: Option<Container>,
}

/// The store and key of a file stored as one value (see [`FileLocation::container`]).
#[derive(Clone, Debug)]
pub struct Container {
    /// The store holding the file (a directory on disk, a bucket).
    pub store: Arc<dyn Store>,
    /// The file's key in it.
    pub key: String,
}

/// Opens files stored as one value of a store (HDF5 files, through `neurochunk-hdf5`), so
/// that a file can be opened, and an external link followed, wherever such a file is.
pub trait FileOpener: Send + Sync + std::fmt::Debug {
    /// The file at `key` of `store`, named `name`, as a [`FileLocation`] (with its
    /// [`FileLocation::container`] set); `None` when the value is not a file this opener
    /// reads.
    fn open_file(
        &self,
        store: Arc<dyn Store>,
        key: &str,
        name: &str,
    ) -> HdmfResult<Option<FileLocation>>;
}

impl FileLocation {
    /// The file under `prefix` in `store`, named by its prefix (`"store root"` for `""`).
    pub fn new(store: Arc<dyn Store>, prefix: &str) -> Self {
        let prefix = prefix.trim_matches('/').to_string();
        let name = if prefix.is_empty() {
            "store root".to_string()
        } else {
            prefix.clone()
        };
        FileLocation {
            store,
            prefix,
            name,
            container: None,
        }
    }

    /// The file under `prefix` in `store`, named `name` (e.g. the store's URL and the prefix).
    pub fn named(store: Arc<dyn Store>, prefix: &str, name: impl Into<String>) -> Self {
        FileLocation {
            name: name.into(),
            ..FileLocation::new(store, prefix)
        }
    }
}

/// Turns the `source` of an external link or reference into the file it names.
///
/// [`StoreResolver`] (files in the same store) and [`crate::FsResolver`] (files on disk) are
/// the two built in; a caller can give its own in [`ReadOptions::resolver`], e.g. to map
/// sources onto object-store URLs.
pub trait ExternalResolver: Send + Sync + std::fmt::Debug {
    /// The file that `source` (as stored, never `""` or `"."`) leads to from the file at
    /// `from`, or `None` when it names `from` itself. `referrer` is the path of the link or
    /// reference, for errors: a source that does not exist, or that leads where the resolver
    /// does not go, is an error naming `from`, `referrer` and `source`.
    fn resolve(
        &self,
        from: &FileLocation,
        source: &str,
        referrer: &str,
    ) -> HdmfResult<Option<FileLocation>>;
}

/// The resolver of files opened from a store: a `source` is a path relative to the file's root
/// (or, as hdmf-zarr 0.10 wrote it, to the directory holding the file) inside the same store.
/// `.` and `..` segments are normalised; a source that would leave the store's root, or that
/// is absolute, is refused ([`HdmfError::ExternalOutsideStore`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct StoreResolver;

impl ExternalResolver for StoreResolver {
    fn resolve(
        &self,
        from: &FileLocation,
        source: &str,
        referrer: &str,
    ) -> HdmfResult<Option<FileLocation>> {
        resolve_in_store(from, source, referrer, &|_| true, None)
    }
}

/// The resolver of files opened by URL: like [`StoreResolver`] (sources relative to the file's
/// root, or to its parent as hdmf-zarr 0.10 wrote them, inside the same store), but confined
/// to the key prefixes `roots` of the store, as [`crate::FsResolver`] confines files on disk
/// to directory trees. A file may lead only into one of `roots` (`""`: the whole store); a
/// source leading elsewhere in the store is refused with [`HdmfError::ExternalRefused`]
/// naming the allowed prefixes, one leading out of the store with
/// [`HdmfError::ExternalOutsideStore`].
#[derive(Clone, Debug)]
pub struct ScopedStoreResolver {
    /// Key prefixes (without leading or trailing `/`) external files may be under.
    pub roots: Vec<String>,
    /// How the roots are named in errors (e.g. their URLs), in the order of `roots`.
    pub root_names: Vec<String>,
    /// Opens external files stored as one value (HDF5 files); `None`: only Zarr trees.
    pub files: Option<Arc<dyn FileOpener>>,
}

impl ScopedStoreResolver {
    /// Files may lead only below the prefix that holds `file_prefix` (its parent "directory"),
    /// as [`crate::FsResolver::default`] allows the directory holding a file on disk.
    /// `name_of(prefix)` names a prefix in errors.
    pub fn parent_of(file_prefix: &str, name_of: impl Fn(&str) -> String) -> Self {
        let parent = file_prefix
            .trim_matches('/')
            .rsplit_once('/')
            .map_or("", |(p, _)| p)
            .to_string();
        ScopedStoreResolver {
            root_names: vec![name_of(&parent)],
            roots: vec![parent],
            files: None,
        }
    }

    fn allows(&self, prefix: &str) -> bool {
        self.roots.iter().any(|root| {
            let root = root.trim_matches('/');
            root.is_empty() || prefix == root || prefix.starts_with(&format!("{root}/"))
        })
    }
}

impl ExternalResolver for ScopedStoreResolver {
    fn resolve(
        &self,
        from: &FileLocation,
        source: &str,
        referrer: &str,
    ) -> HdmfResult<Option<FileLocation>> {
        let target = resolve_in_store(
            from,
            source,
            referrer,
            &|p| self.allows(p),
            self.files.as_deref(),
        )?;
        if let Some(target) = &target {
            if !self.allows(stored_at(target).1) {
                return Err(HdmfError::ExternalRefused {
                    file: from.name.clone(),
                    path: referrer.to_string(),
                    source_path: source.to_string(),
                    allowed: self
                        .root_names
                        .iter()
                        .map(|r| format!("'{r}'"))
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        Ok(target)
    }
}

/// The file `source` names from `from` inside `from`'s store: relative to the file's root
/// first, then to its parent; the first candidate that exists (`preferred` candidates before
/// the others), `None` for the file itself.
/// Where a file is stored: its container's store and key, or its store and prefix.
fn stored_at(file: &FileLocation) -> (&Arc<dyn Store>, &str) {
    match &file.container {
        Some(c) => (&c.store, c.key.as_str()),
        None => (&file.store, file.prefix.as_str()),
    }
}

fn resolve_in_store(
    from: &FileLocation,
    source: &str,
    referrer: &str,
    preferred: &dyn Fn(&str) -> bool,
    files: Option<&dyn FileOpener>,
) -> HdmfResult<Option<FileLocation>> {
    let (store, prefix) = stored_at(from);
    let outside = || HdmfError::ExternalOutsideStore {
        file: from.name.clone(),
        path: referrer.to_string(),
        source_path: source.to_string(),
    };
    if source.starts_with('/') || source.contains('\\') {
        return Err(outside());
    }
    // Relative to the file's root first; then to its parent (hdmf-zarr 0.10).
    let Some(first) = join_relative(prefix, source) else {
        return Err(outside());
    };
    let parent = prefix.rsplit_once('/').map_or("", |(p, _)| p);
    let mut candidates = vec![first];
    candidates.extend(join_relative(parent, source));
    // Candidates the caller allows first, so that an allowed file is not hidden by one
    // elsewhere that happens to exist.
    candidates.sort_by_key(|c| !preferred(c));
    for candidate in candidates {
        if candidate == prefix {
            return Ok(None);
        }
        // Named like the referring file: its name with its prefix replaced.
        let name = match from.name.strip_suffix(prefix) {
            Some(base) if !prefix.is_empty() && !candidate.is_empty() => {
                format!("{base}{candidate}")
            }
            _ => FileLocation::new(store.clone(), &candidate).name,
        };
        let listing = store
            .list_dir(&candidate)
            .map_err(|e| HdmfError::store(&from.name, e))?;
        if !listing.keys.is_empty() || !listing.prefixes.is_empty() {
            return Ok(Some(FileLocation::named(store.clone(), &candidate, name)));
        }
        if let Some(files) = files {
            let is_value = !candidate.is_empty()
                && store
                    .size(&candidate)
                    .map_err(|e| HdmfError::store(&from.name, e))?
                    .is_some();
            if is_value {
                return match files.open_file(store.clone(), &candidate, &name)? {
                    Some(file) => Ok(Some(file)),
                    None => Err(HdmfError::malformed(
                        &from.name,
                        referrer,
                        format!("external file '{source}' is not an NWB file"),
                    )),
                };
            }
        }
    }
    Err(HdmfError::malformed(
        &from.name,
        referrer,
        format!("external file '{source}' does not exist"),
    ))
}

/// `base` joined with the relative path `rel`, `.` and `..` resolved; `None` when a `..`
/// would climb above the root.
fn join_relative(base: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = base.split('/').filter(|s| !s.is_empty()).collect();
    for segment in rel.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// An open NWB (or plain HDMF) file stored as Zarr.
#[derive(Debug)]
pub struct NwbFile {
    location: FileLocation,
    /// The store seen from the file's root.
    store: Arc<dyn Store>,
    convention: Convention,
    index: NodeIndex,
    options: ReadOptions,
    externals: Mutex<HashMap<String, Arc<NwbFile>>>,
    /// `.specloc`, once looked up (it may need the root's attributes from the store).
    specloc: OnceLock<Option<String>>,
}

/// A group or dataset carrying a data type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypedObject {
    /// Absolute path (`/` for the root).
    pub path: String,
    /// Group or dataset.
    pub kind: NodeKind,
    /// `neurodata_type` (NWB) or `data_type` (plain HDMF).
    pub neurodata_type: String,
    /// The `namespace` attribute (the specification defining the type).
    pub namespace: Option<String>,
    /// The `object_id` attribute (a UUID).
    pub object_id: Option<String>,
}

/// A soft link stored on a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// `<parent>/<name>`: where the link appears.
    pub path: String,
    /// The group holding the link.
    pub parent: String,
    /// The link's name on `parent`.
    pub name: String,
    /// Absolute path of the target inside `source`.
    pub target: String,
    /// The file holding the target, relative to this file's root (`"."`: this file).
    pub source: String,
}

/// A reference stored in an attribute.
#[derive(Clone, Debug, PartialEq)]
pub struct AttributeRef {
    /// The node holding the attribute.
    pub path: String,
    /// The attribute's name.
    pub attribute: String,
    /// The reference it holds.
    pub reference: Reference,
}

/// A reference stored in a dataset element (or a compound field of one).
#[derive(Clone, Debug, PartialEq)]
pub struct DatasetRef {
    /// The dataset.
    pub path: String,
    /// Flat (C-order) element index.
    pub index: usize,
    /// The compound field holding the reference (`None` for a plain reference dataset).
    pub field: Option<String>,
    /// The reference.
    pub reference: Reference,
}

/// An attribute value: plain JSON or a reference.
#[derive(Clone, Debug, PartialEq)]
pub enum AttributeValue {
    /// Any JSON value that is not a reference.
    Value(Value),
    /// An object or region reference (decoded from either convention's wrapper).
    Reference(Reference),
}

/// Where a path or reference leads: the file (`None` for the one asked) and the node.
#[derive(Clone, Debug)]
pub struct Target {
    /// The file holding the node, when it is another file than the one asked.
    pub file: Option<Arc<NwbFile>>,
    /// The node's absolute path in that file.
    pub path: String,
    /// Group or dataset.
    pub kind: NodeKind,
}

/// A namespace cached in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedNamespace {
    /// The namespace's name (e.g. `core`).
    pub name: String,
    /// Its version (e.g. `2.8.0`).
    pub version: String,
    /// The cached documents (`namespace` and one per schema source), sorted.
    pub sources: Vec<String>,
}

/// How many link hops a resolution may take before it is called a cycle.
const MAX_LINK_HOPS: usize = 64;

impl NwbFile {
    /// Open the file whose root is `prefix` in `store` (`""`: the whole store), named by its
    /// prefix in errors. External links resolve inside the same store ([`StoreResolver`])
    /// unless `options` give another resolver.
    pub fn open_store(
        store: Arc<dyn Store>,
        prefix: &str,
        options: ReadOptions,
    ) -> HdmfResult<Self> {
        Self::open_location(FileLocation::new(store, prefix), options)
    }

    /// Open the file at `location`.
    pub fn open_location(location: FileLocation, mut options: ReadOptions) -> HdmfResult<Self> {
        let store: Arc<dyn Store> = if location.prefix.is_empty() {
            location.store.clone()
        } else {
            Arc::new(
                PrefixStore::new(location.store.clone(), &location.prefix)
                    .map_err(|e| HdmfError::store(&location.name, e))?,
            )
        };
        let (convention, index) =
            NodeIndex::build(&location.name, store.as_ref(), options.use_consolidated)?;
        options
            .resolver
            .get_or_insert_with(|| Arc::new(StoreResolver));
        Ok(NwbFile {
            location,
            store,
            convention,
            index,
            options,
            externals: Mutex::new(HashMap::new()),
            specloc: OnceLock::new(),
        })
    }

    /// How the file is stored, for people: its convention, or for a file stored as one value
    /// of a store (an HDF5 file read in place, [`FileLocation::container`]) that.
    pub fn storage_description(&self) -> String {
        match &self.location.container {
            Some(_) => "HDF5 file read in place".into(),
            None => self.convention.to_string(),
        }
    }

    /// Whether the file is stored as one value of a store (an HDF5 file read in place through
    /// a [`FileOpener`]) rather than as a tree of Zarr nodes.
    pub fn is_single_file(&self) -> bool {
        self.location.container.is_some()
    }

    /// The file's display name (a path, a URL or a store prefix), as errors give it.
    pub fn name(&self) -> &str {
        &self.location.name
    }

    /// Where the file lives.
    pub fn location(&self) -> &FileLocation {
        &self.location
    }

    /// The convention the file follows.
    pub fn convention(&self) -> Convention {
        self.convention
    }

    /// Whether the node table came from consolidated metadata.
    pub fn used_consolidated_metadata(&self) -> bool {
        self.index.consolidated
    }

    /// The store seen from the file's root (keys relative to it).
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The root's `nwb_version` attribute.
    pub fn nwb_version(&self) -> Option<&str> {
        self.root_attributes()
            .get("nwb_version")
            .and_then(Value::as_str)
    }

    /// All attributes of the root, reserved ones included.
    pub fn root_attributes(&self) -> &Map<String, Value> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        self.index
            .nodes
            .get("/")
            .map(|n| &n.attributes)
            .unwrap_or_else(|| EMPTY.get_or_init(Map::new))
    }

    /// The path of the cached specifications (`.specloc`), if any.
    ///
    /// hdmf-zarr caches the specifications (and writes `.specloc` to the root) after it
    /// consolidated the metadata, so consolidated metadata may lack both: then the root's
    /// attributes are read from the store itself.
    /// The lookup is made once per opened file.
    pub fn specloc(&self) -> Option<String> {
        self.specloc
            .get_or_init(|| {
                let from = |attributes: &Map<String, Value>| match attributes.get(SPECLOC)? {
                    Value::String(s) => Some(crate::reference::absolute(s)),
                    other => attribute_reference(other)?.ok().map(|r| r.path),
                };
                if let Some(path) = from(self.root_attributes()) {
                    return Some(path);
                }
                if !self.index.consolidated {
                    return None;
                }
                let root =
                    NodeIndex::read_node(self.name(), self.store.as_ref(), self.convention, "/")
                        .ok()
                        .flatten()?;
                from(&root.attributes)
            })
            .clone()
    }

    /// Every node path with its kind, sorted.
    pub fn nodes(&self) -> impl Iterator<Item = (&str, NodeKind)> {
        self.index.nodes.iter().map(|(p, n)| (p.as_str(), n.kind))
    }

    pub(crate) fn node(&self, path: &str) -> HdmfResult<Option<Cow<'_, NodeDoc>>> {
        let path = crate::reference::absolute(path);
        if let Some(n) = self.index.nodes.get(&path) {
            return Ok(Some(Cow::Borrowed(n)));
        }
        // Consolidated metadata can be stale or incomplete (older writers left out the cached
        // specifications): look at the store itself before giving up.
        if self.index.consolidated {
            return Ok(NodeIndex::read_node(
                self.name(),
                self.store.as_ref(),
                self.convention,
                &path,
            )?
            .map(Cow::Owned));
        }
        Ok(None)
    }

    /// The kind of the node at `path` (links not followed), if it exists.
    pub fn node_kind(&self, path: &str) -> HdmfResult<Option<NodeKind>> {
        Ok(self.node(path)?.map(|n| n.kind))
    }

    /// Every group or dataset with a data type, sorted by path.
    pub fn typed_objects(&self) -> Vec<TypedObject> {
        self.index
            .nodes
            .iter()
            .filter_map(|(path, node)| typed(path, node))
            .collect()
    }

    /// The typed objects whose type is `neurodata_type`.
    pub fn find_by_type(&self, neurodata_type: &str) -> Vec<TypedObject> {
        self.typed_objects()
            .into_iter()
            .filter(|o| o.neurodata_type == neurodata_type)
            .collect()
    }

    /// The typed object with this object id.
    pub fn find_by_object_id(&self, object_id: &str) -> Option<TypedObject> {
        self.typed_objects()
            .into_iter()
            .find(|o| o.object_id.as_deref() == Some(object_id))
    }

    /// The attributes of the node at `path` (links followed), reserved ones hidden and
    /// references decoded.
    pub fn attributes(&self, path: &str) -> HdmfResult<Vec<(String, AttributeValue)>> {
        let target = self.resolve(path)?;
        let file = self.file_of(&target);
        let node = file
            .node(&target.path)?
            .ok_or_else(|| HdmfError::not_found(file.name(), &target.path))?;
        node.attributes
            .iter()
            .filter(|(k, _)| !is_reserved_attribute(k))
            .map(|(k, v)| {
                let value = match attribute_reference(v) {
                    None => AttributeValue::Value(v.clone()),
                    Some(Ok(r)) => AttributeValue::Reference(r),
                    Some(Err(message)) => {
                        return Err(HdmfError::malformed(
                            file.name(),
                            &target.path,
                            format!("attribute '{k}': {message}"),
                        ))
                    }
                };
                Ok((k.clone(), value))
            })
            .collect()
    }

    /// One attribute of the node at `path`.
    pub fn attribute(&self, path: &str, name: &str) -> HdmfResult<Option<AttributeValue>> {
        Ok(self
            .attributes(path)?
            .into_iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v))
    }

    /// The links stored on the group at `path` (an error if the link list is malformed).
    pub fn links_of(&self, path: &str) -> HdmfResult<Vec<Link>> {
        match self.node(path)? {
            Some(node) => parse_links(self.name(), &crate::reference::absolute(path), &node),
            None => Ok(Vec::new()),
        }
    }

    /// Every link in the file, sorted by path.
    pub fn links(&self) -> HdmfResult<Vec<Link>> {
        let mut out = Vec::new();
        for (path, node) in &self.index.nodes {
            out.extend(parse_links(self.name(), path, node)?);
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// Every reference stored in an attribute, sorted by (path, attribute).
    pub fn attribute_references(&self) -> HdmfResult<Vec<AttributeRef>> {
        let mut out = Vec::new();
        for (path, node) in &self.index.nodes {
            for (name, value) in &node.attributes {
                if is_reserved_attribute(name) {
                    continue;
                }
                match attribute_reference(value) {
                    None => {}
                    Some(Ok(reference)) => out.push(AttributeRef {
                        path: path.clone(),
                        attribute: name.clone(),
                        reference,
                    }),
                    Some(Err(message)) => {
                        return Err(HdmfError::malformed(
                            self.name(),
                            path,
                            format!("attribute '{name}': {message}"),
                        ))
                    }
                }
            }
        }
        out.sort_by(|a, b| (&a.path, &a.attribute).cmp(&(&b.path, &b.attribute)));
        Ok(out)
    }

    /// The datasets whose markers say they hold references (and, in LINDI reference files,
    /// the unmarked JSON object arrays, which may).
    pub fn reference_datasets(&self) -> Vec<String> {
        self.index
            .nodes
            .iter()
            .filter(|(_, n)| {
                n.kind == NodeKind::Dataset
                    && (holds_references(&n.attributes) || lindi_object_array(n))
            })
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// Every reference stored in a dataset, sorted by (path, index, field). Reads each
    /// reference dataset (in parallel).
    pub fn dataset_references(&self) -> HdmfResult<Vec<DatasetRef>> {
        let paths = self.reference_datasets();
        let per_dataset: Vec<HdmfResult<Vec<DatasetRef>>> = paths
            .par_iter()
            .map(|path| {
                let dataset = self.read_node_dataset(path, None)?;
                Ok(dataset
                    .value
                    .references()
                    .into_iter()
                    .map(|(index, field, r)| DatasetRef {
                        path: path.clone(),
                        index,
                        field: field.map(str::to_string),
                        reference: r.clone(),
                    })
                    .collect())
            })
            .collect();
        let mut out = Vec::new();
        for r in per_dataset {
            out.extend(r?);
        }
        out.sort_by(|a, b| (&a.path, a.index, &a.field).cmp(&(&b.path, b.index, &b.field)));
        Ok(out)
    }

    /// The file a target lives in.
    pub fn file_of<'a>(&'a self, target: &'a Target) -> &'a NwbFile {
        target.file.as_deref().unwrap_or(self)
    }

    /// Follow `path` to the node it names, through links (also links to links and links into
    /// other files) on any of its components.
    pub fn resolve(&self, path: &str) -> HdmfResult<Target> {
        self.resolve_from(None, &crate::reference::absolute(path))
    }

    fn resolve_from(&self, start: Option<Arc<NwbFile>>, path: &str) -> HdmfResult<Target> {
        let mut file_handle = start;
        let mut path = path.to_string();
        let mut visited: HashSet<(String, String)> = HashSet::new();
        let mut chain: Vec<String> = Vec::new();
        let mut last_link: Option<(String, Link)> = None;
        'outer: loop {
            let file = file_handle.as_deref().unwrap_or(self);
            let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
            let mut current = "/".to_string();
            let mut kind = match file.node("/")? {
                Some(n) => n.kind,
                None => return Err(HdmfError::not_found(file.name(), "/")),
            };
            for (i, segment) in segments.iter().enumerate() {
                let next = child(&current, segment);
                if let Some(node) = file.node(&next)? {
                    current = next;
                    kind = node.kind;
                    continue;
                }
                let Some(link) = file
                    .links_of(&current)?
                    .into_iter()
                    .find(|l| l.name == *segment)
                else {
                    // Past a link, say which link is broken.
                    return Err(match last_link {
                        Some((link_file, link)) => HdmfError::invalid(
                            &link_file,
                            &link.path,
                            format!(
                                "link to '{}' in '{}' does not resolve: no object at '{next}'",
                                link.target, link.source
                            ),
                        ),
                        None => HdmfError::not_found(file.name(), &next),
                    });
                };
                chain.push(format!("{}:{}", file.name(), link.path));
                if !visited.insert((file.name().to_string(), link.path.clone()))
                    || visited.len() > MAX_LINK_HOPS
                {
                    return Err(HdmfError::LinkCycle {
                        file: file.name().to_string(),
                        chain,
                    });
                }
                let rest = segments[i + 1..].join("/");
                let mut new_path = link.target.trim_end_matches('/').to_string();
                if !rest.is_empty() {
                    new_path = format!("{new_path}/{rest}");
                }
                let next_handle = file
                    .open_source(&link.source, &link.path)?
                    .or(file_handle.clone());
                last_link = Some((file.name().to_string(), link));
                file_handle = next_handle;
                path = crate::reference::absolute(&new_path);
                continue 'outer;
            }
            return Ok(Target {
                file: file_handle,
                path: current,
                kind,
            });
        }
    }

    /// The file named by a link or reference `source` (`None`: this file).
    fn open_source(&self, source: &str, referrer: &str) -> HdmfResult<Option<Arc<NwbFile>>> {
        if source.is_empty() || source == "." {
            return Ok(None);
        }
        let resolver = self
            .options
            .resolver
            .clone()
            .unwrap_or_else(|| Arc::new(StoreResolver));
        let Some(target) = resolver.resolve(&self.location, source, referrer)? else {
            return Ok(None);
        };
        let mut cache = self.externals.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = cache.get(&target.name) {
            return Ok(Some(f.clone()));
        }
        let key = target.name.clone();
        let opened = Arc::new(NwbFile::open_location(target, self.options.clone())?);
        cache.insert(key, opened.clone());
        Ok(Some(opened))
    }

    /// Where a reference leads.
    pub fn dereference(&self, reference: &Reference) -> HdmfResult<Target> {
        let start = self.open_source(&reference.source, &reference.path)?;
        self.resolve_from(start, &reference.path)
    }

    /// The data a reference selects: the whole target dataset, or its region.
    pub fn read_reference(&self, reference: &Reference) -> HdmfResult<Dataset> {
        let target = self.dereference(reference)?;
        let file = self.file_of(&target);
        match &reference.region {
            None => file.read_node_dataset(&target.path, None),
            Some(region) => file.read_region(&target.path, region),
        }
    }

    fn read_region(&self, path: &str, region: &Region) -> HdmfResult<Dataset> {
        match region {
            Region::Slices(axes) => {
                let selection = Selection(
                    axes.iter()
                        .map(|a| match a {
                            None => AxisSelection::ALL,
                            Some(s) => AxisSelection::Slice {
                                start: Some(s.start as i64),
                                stop: Some(s.stop as i64),
                                step: Some(s.step as i64),
                            },
                        })
                        .collect(),
                );
                self.read_node_dataset(path, Some(&selection))
            }
            Region::Points(points) => {
                let mut parts = Vec::with_capacity(points.len());
                for p in points {
                    let selection =
                        Selection(p.iter().map(|&i| AxisSelection::Index(i as i64)).collect());
                    parts.push(self.read_node_dataset(path, Some(&selection))?);
                }
                concat_points(self.name(), path, parts)
            }
        }
    }

    /// Read the dataset at `path` (links followed), optionally a selection of it.
    pub fn read_dataset(&self, path: &str, selection: Option<&Selection>) -> HdmfResult<Dataset> {
        let target = self.resolve(path)?;
        self.file_of(&target)
            .read_node_dataset(&target.path, selection)
    }

    /// The node of the dataset at `path` (no links followed).
    fn dataset_node(&self, path: &str) -> HdmfResult<Cow<'_, NodeDoc>> {
        let node = self
            .node(path)?
            .ok_or_else(|| HdmfError::not_found(self.name(), path))?;
        if node.array_doc.is_none() {
            return Err(HdmfError::invalid(
                self.name(),
                path,
                "is a group, not a dataset",
            ));
        }
        Ok(node)
    }

    fn array_of(&self, path: &str, node: &NodeDoc) -> HdmfResult<Array> {
        let doc = node
            .array_doc
            .as_ref()
            .ok_or_else(|| HdmfError::invalid(self.name(), path, "is a group, not a dataset"))?;
        let key = store_key(path);
        let mut meta = match self.convention {
            Convention::Legacy => {
                ArrayMetadata::from_v2(doc, Some(&Value::Object(node.attributes.clone())), key)
            }
            Convention::V3 => ArrayMetadata::from_v3(doc, key),
        }
        .map_err(|e| HdmfError::array(self.name(), e))?;
        json2_reference_objects(&mut meta);
        Ok(Array::from_metadata(self.store.clone(), key, meta))
    }

    /// Open the Zarr array behind the dataset at `path` (no links followed).
    pub fn open_array(&self, path: &str) -> HdmfResult<Array> {
        let node = self.dataset_node(path)?;
        self.array_of(path, &node)
    }

    /// Whether the dataset at `path` (no links followed) is a scalar in its convention.
    pub fn is_scalar(&self, path: &str) -> HdmfResult<bool> {
        let node = self.dataset_node(path)?;
        let shape: Vec<u64> = node
            .array_doc
            .as_ref()
            .and_then(|d| d.get("shape"))
            .and_then(Value::as_array)
            .map(|dims| dims.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        Ok(is_scalar(&node.attributes, &shape))
    }

    pub(crate) fn read_node_dataset(
        &self,
        path: &str,
        selection: Option<&Selection>,
    ) -> HdmfResult<Dataset> {
        let node = self.dataset_node(path)?;
        let array = self.array_of(path, &node)?;
        let (mut shape, data) = match selection {
            None => array.read_all(),
            Some(sel) => array.read(sel),
        }
        .map_err(|e| HdmfError::array(self.name(), e))?;
        let scalar = selection.is_none() && is_scalar(&node.attributes, &array.metadata().shape);
        if scalar {
            shape.clear();
        }
        let value = interpret(
            array.metadata(),
            &node.attributes,
            node.array_doc.as_ref(),
            data,
        )
        .map_err(|m| HdmfError::malformed(self.name(), path, m))?;
        Ok(Dataset {
            shape,
            scalar,
            value,
        })
    }

    /// The namespaces cached under `.specloc`, sorted by name.
    pub fn specifications(&self) -> HdmfResult<Vec<CachedNamespace>> {
        let Some(specloc) = self.specloc() else {
            return Ok(Vec::new());
        };
        let list = |key: &str| -> HdmfResult<Vec<String>> {
            let mut names: Vec<String> = self
                .store
                .list_dir(key)
                .map_err(|e| HdmfError::store(self.name(), e))?
                .prefixes
                .into_iter()
                .map(|p| p.trim_matches('/').to_string())
                .filter(|p| !p.starts_with('.'))
                .collect();
            names.sort();
            Ok(names)
        };
        let base = store_key(&specloc).to_string();
        let mut out = Vec::new();
        for name in list(&base)? {
            for version in list(&format!("{base}/{name}"))? {
                let sources = list(&format!("{base}/{name}/{version}"))?;
                out.push(CachedNamespace {
                    name: name.clone(),
                    version,
                    sources,
                });
            }
        }
        Ok(out)
    }

    /// One cached specification document, parsed.
    pub fn specification(&self, namespace: &str, version: &str, source: &str) -> HdmfResult<Value> {
        let specloc = self.specloc().unwrap_or_else(|| "/specifications".into());
        let path = format!(
            "{}/{namespace}/{version}/{source}",
            specloc.trim_end_matches('/')
        );
        let dataset = self.read_node_dataset(&path, None)?;
        let DatasetValue::Text { values, .. } = &dataset.value else {
            return Err(HdmfError::malformed(
                self.name(),
                &path,
                "a cached specification must be text",
            ));
        };
        let text = values.first().ok_or_else(|| {
            HdmfError::malformed(self.name(), &path, "the cached specification is empty")
        })?;
        serde_json::from_str(text).map_err(|e| {
            HdmfError::malformed(
                self.name(),
                &path,
                format!("the cached specification is not JSON: {e}"),
            )
        })
    }
}

fn typed(path: &str, node: &NodeDoc) -> Option<TypedObject> {
    let attrs = &node.attributes;
    let neurodata_type = attrs
        .get("neurodata_type")
        .or_else(|| attrs.get("data_type"))?
        .as_str()?
        .to_string();
    let text = |k: &str| attrs.get(k).and_then(Value::as_str).map(str::to_string);
    Some(TypedObject {
        path: path.to_string(),
        kind: node.kind,
        neurodata_type,
        namespace: text("namespace"),
        object_id: text("object_id"),
    })
}

fn parse_links(file: &str, path: &str, node: &NodeDoc) -> HdmfResult<Vec<Link>> {
    let mut out = Vec::new();
    for key in [LEGACY_LINKS, V3_LINKS] {
        let Some(value) = node.attributes.get(key) else {
            continue;
        };
        let entries = value.as_array().ok_or_else(|| {
            HdmfError::malformed(
                file,
                path,
                format!("'{key}' must be a list of links, found {value}"),
            )
        })?;
        for entry in entries {
            let field = |name: &str| -> HdmfResult<String> {
                entry
                    .get(name)
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| {
                        HdmfError::malformed(
                            file,
                            path,
                            format!("'{key}' entry {entry} has no string '{name}'"),
                        )
                    })
            };
            let name = field("name")?;
            if name.is_empty() || name.contains('/') {
                return Err(HdmfError::malformed(
                    file,
                    path,
                    format!(
                        "'{key}' entry {entry}: a link name must be one non-empty path segment"
                    ),
                ));
            }
            let source = match entry.get("source") {
                None | Some(Value::Null) => ".".to_string(),
                Some(_) => field("source")?,
            };
            out.push(Link {
                path: child(path, &name),
                parent: path.to_string(),
                name,
                target: crate::reference::absolute(&field("path")?),
                source,
            });
        }
    }
    Ok(out)
}

/// Legacy reference datasets (`zarr_dtype: "object"` / `"region"` among the array's
/// attributes) hold dictionaries, which numcodecs `json2` hands over as JSON text: switch the
/// array's `json2` codec to objects mode, so that they are written back as objects. Returns
/// whether the array's codec was switched. Any other array is left alone.
pub fn json2_reference_objects(meta: &mut ArrayMetadata) -> bool {
    matches!(
        meta.attributes.get(LEGACY_DTYPE).and_then(Value::as_str),
        Some("object" | "region")
    ) && meta.map_serializer(|codec: Json2Codec| codec.with_objects(true))
}

/// A conversion adapter ([`neurochunk_array::convert::ConvertOptions::source_adapter`]) that
/// keeps legacy reference datasets' dictionaries as objects (see [`json2_reference_objects`])
/// when an NWB file is converted as a plain Zarr hierarchy.
pub fn reference_source_adapter() -> neurochunk_array::convert::SourceAdapter {
    neurochunk_array::convert::SourceAdapter::new(|meta| {
        json2_reference_objects(meta);
    })
}

/// Join single-point reads into one 1-D dataset.
fn concat_points(file: &str, path: &str, parts: Vec<Dataset>) -> HdmfResult<Dataset> {
    let n = parts.len();
    let mut iter = parts.into_iter();
    let Some(first) = iter.next() else {
        return Err(HdmfError::invalid(
            file,
            path,
            "a point region needs at least one point",
        ));
    };
    let mut value = first.value;
    for part in iter {
        match (&mut value, part.value) {
            (DatasetValue::Numeric { bytes, .. }, DatasetValue::Numeric { bytes: b, .. }) => {
                bytes.extend(b)
            }
            (DatasetValue::Text { values, .. }, DatasetValue::Text { values: v, .. }) => {
                values.extend(v)
            }
            (DatasetValue::References(r), DatasetValue::References(o)) => r.extend(o),
            (DatasetValue::Compound { rows, .. }, DatasetValue::Compound { rows: o, .. }) => {
                rows.extend(o)
            }
            _ => {
                return Err(HdmfError::malformed(
                    file,
                    path,
                    "points of one dataset decoded differently",
                ))
            }
        }
    }
    Ok(Dataset {
        shape: vec![n],
        scalar: false,
        value,
    })
}

/// The parent path of a link or node (re-exported for the inspect module).
pub(crate) fn parent_of(path: &str) -> String {
    split_parent(path).0
}
