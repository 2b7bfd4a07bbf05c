//! Where the commands read and write: local paths or URLs ([`Location`], opened through
//! [`neurochunk_store::open_url`]), the global remote options (`--endpoint`, `--bucket-region`,
//! `--anon`, `--max-requests`), and the options every writing command shares.

use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use clap::Args;
use neurochunk_store::remote::Scheme;
use neurochunk_store::replace::{check_prefix, Overwrite, TreeKind};
use neurochunk_store::{
    Durability, FsStore, PrefixStore, RemoteOptions, RepoVersion, Store, StoreError, StoreLocation,
};

use crate::Failure;

/// The URL forms every PATH argument accepts, for the commands' help.
pub(crate) const URL_FORMS: &str = "PATH arguments are local paths or URLs: s3://BUCKET/PREFIX, \
gs://BUCKET/PREFIX, az://CONTAINER/PREFIX (also abfs[s]://CONTAINER@ACCOUNT.dfs.core.windows.net/PREFIX), \
http(s)://HOST/PATH (read-only) and file:///PATH. Credentials come from each cloud's standard \
environment variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, \
AWS_REGION, AWS_ENDPOINT_URL, AWS_ALLOW_HTTP; GOOGLE_APPLICATION_CREDENTIALS; \
AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY, ...).";

/// Options of every command that reaches object storage (global: accepted before or after
/// the subcommand).
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct RemoteArgs {
    /// Object storage endpoint, e.g. http://127.0.0.1:9000 for a local S3 server (S3: path-style
    /// addressing; an http:// endpoint allows plain HTTP).
    #[arg(long, global = true, value_name = "URL", env = "NEUROCHUNK_ENDPOINT")]
    endpoint: Option<String>,
    /// Region of the bucket (S3; default: AWS_REGION, AWS_DEFAULT_REGION, else us-east-1).
    /// Not `--region`, which `get` uses for the part of an array to read.
    #[arg(
        long,
        global = true,
        value_name = "REGION",
        env = "NEUROCHUNK_BUCKET_REGION"
    )]
    bucket_region: Option<String>,
    /// Send requests unsigned (public buckets), whatever credentials the environment holds.
    #[arg(long, global = true, env = "NEUROCHUNK_ANON")]
    anon: bool,
    /// Requests in flight at most per store (default 64).
    #[arg(long, global = true, value_name = "N", env = "NEUROCHUNK_MAX_REQUESTS",
          value_parser = clap::value_parser!(u32).range(1..))]
    max_requests: Option<u32>,
    /// Icechunk repositories: read the head of this branch (default: main).
    #[arg(long, global = true, value_name = "NAME", conflicts_with_all = ["tag", "snapshot"])]
    branch: Option<String>,
    /// Icechunk repositories: read the snapshot this tag names.
    #[arg(long, global = true, value_name = "NAME", conflicts_with = "snapshot")]
    tag: Option<String>,
    /// Icechunk repositories: read this snapshot (its id, as `neurochunk log` lists it).
    #[arg(long, global = true, value_name = "ID")]
    snapshot: Option<String>,
    /// Icechunk repositories: the message of the commit a writing command ends with
    /// (default: the command line).
    #[arg(long, global = true, value_name = "TEXT")]
    pub message: Option<String>,
    /// Icechunk repositories: also read virtual chunks from files in this directory tree or
    /// under this URL prefix (repeatable; by default only beside the repository: its
    /// parent directory, or the URL prefix holding it).
    #[arg(long, global = true, value_name = "DIR|URL")]
    allow_virtual: Vec<String>,
    /// Icechunk repositories: read virtual chunks wherever the repository's containers point.
    #[arg(long, global = true)]
    allow_any_virtual: bool,
    /// No progress bars (they are drawn only when standard error is a terminal anyway).
    #[arg(long, global = true)]
    pub no_progress: bool,
    /// No progress bars and no notes on standard error; errors are still printed.
    #[arg(long, short, global = true)]
    pub quiet: bool,
}

static REMOTE_OPTIONS: OnceLock<RemoteOptions> = OnceLock::new();

impl RemoteArgs {
    /// The repository version `--branch`, `--tag` or `--snapshot` names.
    fn version(&self) -> Option<RepoVersion> {
        let clean = |v: &Option<String>| v.clone().filter(|v| !v.trim().is_empty());
        clean(&self.branch)
            .map(RepoVersion::Branch)
            .or_else(|| clean(&self.tag).map(RepoVersion::Tag))
            .or_else(|| clean(&self.snapshot).map(RepoVersion::Snapshot))
    }

    /// Make these the options every URL of this run is opened with.
    pub(crate) fn install(&self) {
        let mut options = RemoteOptions {
            endpoint: self.endpoint.clone().filter(|e| !e.trim().is_empty()),
            region: self.bucket_region.clone().filter(|r| !r.trim().is_empty()),
            anonymous: self.anon,
            ..RemoteOptions::default()
        };
        if let Some(max) = self.max_requests {
            options.max_requests = max as usize;
        }
        options.version = self.version();
        options.allowed_virtual = self.allow_virtual.clone();
        options.allow_any_virtual = self.allow_any_virtual;
        let _ = REMOTE_OPTIONS.set(options);
    }
}

/// The remote options every URL of this run is opened with.
pub(crate) fn remote_options() -> &'static RemoteOptions {
    REMOTE_OPTIONS.get_or_init(RemoteOptions::default)
}

/// A PATH argument: a local path or a URL.
#[derive(Clone, Debug)]
pub(crate) struct Location(StoreLocation);

impl FromStr for Location {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        StoreLocation::parse(text)
            .map(Location)
            .map_err(|e| e.to_string())
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.display())
    }
}

impl Location {
    /// The local path, or `None` for a URL and for a path through a LINDI reference file
    /// (`x.lindi.json/group/array`: a read-only store, opened like a URL's).
    pub(crate) fn local(&self) -> Option<&Path> {
        self.0.local_path()
    }

    /// The library's location.
    pub(crate) fn store_location(&self) -> &StoreLocation {
        &self.0
    }

    /// The location of `relative` (`a/b`) below this one.
    pub(crate) fn child(&self, relative: &str) -> Result<Location, Failure> {
        self.0
            .child(relative)
            .map(Location)
            .map_err(|e| self.fail(e))
    }

    /// The location as a person reads it (for messages).
    pub(crate) fn display(&self) -> String {
        self.0.display()
    }

    /// The location of `key` of the location's store (a key [`Location::open_parts`]
    /// returned), as a person reads it: the store's URL and the key, or the path for a
    /// local location (whose store is rooted there).
    pub(crate) fn display_key(&self, key: &str) -> String {
        match &self.0 {
            StoreLocation::Local(path) => path.join(key).display().to_string(),
            StoreLocation::Url { base, .. } => format!("{base}/{key}"),
        }
    }

    /// The whole file at the location (a local file, or the object at the URL).
    pub(crate) fn read_file(&self) -> Result<Vec<u8>, Failure> {
        if let Some(path) = self.local() {
            return std::fs::read(path).map_err(|e| Failure(format!("{}: {e}", path.display())));
        }
        let (store, key) = self.open_parts()?;
        match store.get(&key) {
            Ok(Some(bytes)) => Ok(bytes.to_vec()),
            Ok(None) => Err(Failure(format!("{}: no such object", self.display()))),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Store `bytes` as the file at the location: a local file written beside its path and
    /// renamed into place, or one object (atomic) at the URL.
    pub(crate) fn write_file(&self, bytes: Vec<u8>) -> Result<(), Failure> {
        if let Some(path) = self.local() {
            let fail = |e: std::io::Error| Failure(format!("{}: {e}", path.display()));
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "out".into());
            let partial = path.with_file_name(format!(".{name}.partial"));
            return std::fs::write(&partial, bytes)
                .and_then(|()| std::fs::rename(&partial, path))
                .map_err(|e| {
                    let _ = std::fs::remove_file(&partial);
                    fail(e)
                });
        }
        let (store, key) = self.open_parts()?;
        store
            .set(&key, neurochunk_store::Bytes::from(bytes))
            .map_err(|e| self.fail(e))
    }

    /// The last segment of the path or key (a file name).
    pub(crate) fn file_name(&self) -> String {
        self.0.file_name()
    }

    /// The store holding the location and the key (prefix) of the location inside it: for a
    /// URL the bucket's store and the URL's path, for a path a filesystem store rooted there
    /// and `""`.
    pub(crate) fn open_parts(&self) -> Result<(Arc<dyn Store>, String), Failure> {
        self.0
            .open(remote_options())
            .map_err(|e| Failure(e.to_string()))
    }

    /// A store seen from the location: the tree (array, group, file) to read. A local path
    /// must exist. A BigDataViewer XML file opens as the N5 container it names, and an N5
    /// container with such a file beside it with the file laid over its root
    /// ([`neurochunk_ome::open_location_read`], as the Python package opens it).
    pub(crate) fn open_read(&self) -> Result<Arc<dyn Store>, Failure> {
        let hdf5 = neurochunk_hdf5::open_hdf5_location(&self.0, remote_options())
            .map_err(|e| Failure(e.to_string()))?;
        if let Some(opened) = hdf5 {
            return opened.rooted().map_err(|e| self.fail(e));
        }
        if let Some(path) = self.local() {
            if !path.exists() {
                return Err(Failure(format!("'{}' does not exist", path.display())));
            }
        }
        let opened = neurochunk_ome::open_location_read(&self.0, remote_options())
            .map_err(|e| Failure(format!("{}: {e}", self.display())))?;
        opened.rooted().map_err(|e| self.fail(e))
    }

    /// For a URL: a store rooted at it to write a new tree of `kind` into, emptied first
    /// (objects are written in place, see docs/remote.md) when `overwrite` allows it (see
    /// [`RemoteNode::replace`]).
    pub(crate) fn open_remote_replace(
        &self,
        kind: &dyn TreeKind,
        overwrite: Overwrite,
    ) -> Result<Arc<dyn Store>, Failure> {
        let (store, key) = self.open_parts()?;
        let target = RemoteNode {
            store: rooted_at(store, &key).map_err(|e| self.fail(e))?,
            node: String::new(),
            bucket_root: key.is_empty() && !self.in_repository()?,
            display: self.display(),
        };
        target.replace(kind, overwrite)?;
        Ok(target.store)
    }

    /// For a URL: where a new array at it belongs (nothing is written yet). Like a local path
    /// (see `arrays::locate_node`), a URL below an existing group is a node of that group's
    /// hierarchy, and a URL below prefixes that hold nothing yet is a node of a new hierarchy
    /// rooted at the shallowest of them, whose parent groups are then created.
    pub(crate) fn locate_remote_node(&self) -> Result<RemoteNode, Failure> {
        if let StoreLocation::Url {
            scheme: Scheme::Http,
            ..
        } = &self.0
        {
            // Refused before any request (plain HTTP servers can neither list nor write).
            return Err(self.fail(StoreError::ReadOnly {
                key: self.display(),
            }));
        }
        let (store, key) = self.open_parts()?;
        // In an Icechunk repository the hierarchy is always the repository's, rooted at its
        // root (a versioned root may be replaced like any node).
        let repository = self.in_repository()?;
        let (root, node) = if repository {
            (String::new(), key)
        } else {
            locate_node_in(store.as_ref(), &key).map_err(|e| self.fail(e))?
        };
        Ok(RemoteNode {
            bucket_root: root.is_empty() && !repository,
            store: rooted_at(store, &root).map_err(|e| self.fail(e))?,
            node,
            display: self.display(),
        })
    }

    /// The store to read and the node the location names in it: `(store rooted at the
    /// location, "")`, except for a Neuroglancer precomputed scale `LAYER/KEY` (a directory
    /// with no metadata of its own, listed as a scale by its parent's `info`), which is an
    /// array of its layer: `(store rooted at the layer, KEY)`.
    pub(crate) fn open_read_node(&self) -> Result<StoreNode, Failure> {
        let store = self.open_read()?;
        Ok(self.precomputed_scale()?.unwrap_or((store, String::new())))
    }

    fn precomputed_scale(&self) -> Result<Option<StoreNode>, Failure> {
        let StoreLocation::Url { .. } = &self.0 else {
            return Ok(self
                .local()
                .and_then(neurochunk_array::precomputed::local_scale_dir)
                .map(|(layer, key)| (Arc::new(FsStore::new(layer)) as Arc<dyn Store>, key)));
        };
        let (store, key) = self.open_parts()?;
        if key.is_empty() {
            return Ok(None);
        }
        let (parent, name) = key.rsplit_once('/').unwrap_or(("", key.as_str()));
        let layer = rooted_at(store, parent).map_err(|e| self.fail(e))?;
        // Not a layer, or not one of its scales: the location is read as it is.
        let scales =
            neurochunk_array::precomputed::layer_scales(layer.as_ref(), "").unwrap_or_default();
        Ok(scales
            .iter()
            .any(|s| s.trim_matches('/') == name)
            .then(|| (layer, name.to_string())))
    }

    /// True when the location is in an Icechunk repository.
    pub(crate) fn in_repository(&self) -> Result<bool, Failure> {
        self.repository_root().map(|root| root.is_some())
    }

    /// The root of the Icechunk repository the location is in, if it is in one.
    pub(crate) fn repository_root(&self) -> Result<Option<StoreLocation>, Failure> {
        self.0
            .repository(remote_options())
            .map_err(|e| self.fail(e))
    }

    fn fail(&self, e: StoreError) -> Failure {
        Failure(format!("{}: {e}", self.display()))
    }
}

/// A store and the path of a node in it.
pub(crate) type StoreNode = (Arc<dyn Store>, String);

/// The names of the documents that make a prefix a node (Zarr v2, v3, N5).
const NODE_DOCUMENTS: [&str; 4] = [".zarray", ".zgroup", "zarr.json", "attributes.json"];

/// Where a new node at `key` of `store` belongs: the key of its hierarchy's root and its path
/// below it, found by listing (one delimiter listing per level, never the bucket's root).
/// As for a local path, when the deepest prefix of `key` (itself included) that holds
/// anything is a node, the hierarchy is the chain of nodes above it. Otherwise, since object
/// stores have no directories to create, a new hierarchy is rooted at the shallowest prefix
/// that holds nothing yet *and is named like a store* (`*.zarr`, `*.n5`, `*.zarr2`,
/// `*.zarr3`), else at `key` itself: `new.n5/a/b/ds` on an empty bucket is dataset `a/b/ds`
/// of a new container `new.n5`, while `projects/2026/a.zarr` is an array at its own prefix
/// (`projects` does not become a group).
pub(crate) fn locate_node_in(store: &dyn Store, key: &str) -> Result<(String, String), StoreError> {
    let segments: Vec<&str> = key.split('/').filter(|s| !s.is_empty()).collect();
    let prefix = |n: usize| segments[..n].join("/");
    let is_node = |listing: &neurochunk_store::DirListing| {
        listing
            .keys
            .iter()
            .any(|k| NODE_DOCUMENTS.contains(&k.as_str()))
    };
    // The deepest prefix that holds anything (the bucket's root always does).
    let mut existing = (0, None);
    for n in (1..=segments.len()).rev() {
        let listing = store.list_dir(&prefix(n))?;
        if !listing.keys.is_empty() || !listing.prefixes.is_empty() {
            existing = (n, Some(listing));
            break;
        }
    }
    let root_len = match existing {
        (n, Some(listing)) if is_node(&listing) => {
            // Climb while the parent is a node of the same hierarchy.
            let mut root = n;
            while root > 1 && is_node(&store.list_dir(&prefix(root - 1))?) {
                root -= 1;
            }
            root
        }
        (n, _) => (n + 1..=segments.len())
            .find(|&k| is_store_name(segments[k - 1]))
            .unwrap_or(segments.len()),
    };
    Ok((prefix(root_len), segments[root_len..].join("/")))
}

/// True for a path segment named like a Zarr or N5 store.
fn is_store_name(segment: &str) -> bool {
    let lower = segment.to_ascii_lowercase();
    [".zarr", ".n5", ".zarr2", ".zarr3"]
        .iter()
        .any(|ext| lower.len() > ext.len() && lower.ends_with(ext))
}

/// `store` seen from `key` (`store` itself for `""`).
fn rooted_at(store: Arc<dyn Store>, key: &str) -> Result<Arc<dyn Store>, StoreError> {
    if key.is_empty() {
        return Ok(store);
    }
    Ok(Arc::new(PrefixStore::new(store, key)?))
}

/// A node to write at a URL: the store rooted at its hierarchy's root and its path there.
pub(crate) struct RemoteNode {
    /// The store rooted at the root of the node's hierarchy.
    pub store: Arc<dyn Store>,
    /// The node's path in `store` (`""`: the node is the root).
    pub node: String,
    /// True when the hierarchy's root is the root of the bucket.
    bucket_root: bool,
    display: String,
}

impl RemoteNode {
    /// Remove what is stored under the node (objects are replaced in place, see
    /// docs/remote.md), for a new tree of `kind`: refused, with nothing removed, when the
    /// prefix holds values that are not of that kind, unless `overwrite` is
    /// [`Overwrite::Anything`] ([`check_prefix`]). The root of a bucket that holds anything
    /// is refused rather than emptied.
    pub(crate) fn replace(&self, kind: &dyn TreeKind, overwrite: Overwrite) -> Result<(), Failure> {
        let fail = |e: StoreError| Failure(format!("{}: {e}", self.display));
        if !self.node.is_empty() {
            check_prefix(
                self.store.as_ref(),
                &self.node,
                &self.display,
                kind,
                overwrite,
            )
            .map_err(|e| Failure(e.to_string()))?;
            return self
                .store
                .delete_prefix(&format!("{}/", self.node))
                .map_err(fail);
        }
        if self.bucket_root {
            let listing = self.store.list_dir("").map_err(fail)?;
            if !listing.keys.is_empty() || !listing.prefixes.is_empty() {
                return Err(Failure(format!(
                    "{}: refusing to replace the whole bucket; name a prefix inside it",
                    self.display
                )));
            }
            return Ok(());
        }
        check_prefix(self.store.as_ref(), "", &self.display, kind, overwrite)
            .map_err(|e| Failure(e.to_string()))?;
        self.store.delete_prefix("").map_err(fail)
    }
}

/// The option of the commands that replace a destination with a new tree or file (`put`,
/// `convert`, `pyramid`, `demo`, `nwb demo`, `nwb convert`, `nwb import`; the `table` commands
/// have it in their output options).
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct ReplaceArgs {
    /// Replace the destination whatever it holds. Without it, an existing destination is
    /// replaced only when it holds nothing but what the command writes (Zarr or N5 nodes, an
    /// NWB file on Zarr, a table: a Parquet or Arrow IPC file, a Hive directory); a directory
    /// holding other files, or a file of another kind, is refused and nothing is written.
    /// With it, those files are deleted.
    #[arg(long)]
    pub overwrite: bool,
}

impl ReplaceArgs {
    /// What the destination may hold to be replaced.
    pub(crate) fn policy(&self) -> Overwrite {
        if self.overwrite {
            Overwrite::Anything
        } else {
            Overwrite::Own
        }
    }
}

/// Options of the commands that write arrays, hierarchies and files (`put`, `convert`,
/// `consolidate`, `demo`, `nwb demo`, `nwb convert`; the `table` commands spell the same option
/// in their output options).
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct WriteArgs {
    /// Make every write durable before the command returns: fsync each value's file before it
    /// is renamed into place and its directory after (slower; see docs/durability.md). Local
    /// paths only.
    #[arg(long)]
    pub fsync: bool,
}

impl WriteArgs {
    /// The durability asked for.
    pub(crate) fn durability(&self) -> Durability {
        if self.fsync {
            Durability::Fsync
        } else {
            Durability::Buffered
        }
    }

    /// A store over the directory `root` to write into (created on the first write), with the
    /// durability asked for. Like every `FsStore`, it refuses to write through a symbolic link
    /// leading out of `root`.
    pub(crate) fn store(&self, root: &Path) -> Arc<dyn Store> {
        Arc::new(FsStore::new(root).with_durability(self.durability()))
    }

    /// The store to write the tree at `location` in place (`consolidate`): a local directory
    /// with the durability asked for, or the URL's prefix.
    pub(crate) fn store_at(&self, location: &Location) -> Result<Arc<dyn Store>, Failure> {
        match location.local() {
            Some(path) => {
                location.open_read()?;
                Ok(self.store(path))
            }
            None => location.open_read(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use neurochunk_array::NodeTree;
    use neurochunk_store::{Bytes, MemoryStore};

    fn store_with(keys: &[&str]) -> MemoryStore {
        let store = MemoryStore::new();
        for key in keys {
            store.set(key, Bytes::from_static(b"{}")).unwrap();
        }
        store
    }

    fn locate(store: &MemoryStore, key: &str) -> (String, String) {
        let (root, node) = locate_node_in(store, key).unwrap();
        (root, node)
    }

    fn pair(root: &str, node: &str) -> (String, String) {
        (root.to_string(), node.to_string())
    }

    #[test]
    fn a_new_url_is_the_root_of_a_new_hierarchy() {
        let empty = store_with(&[]);
        assert_eq!(locate(&empty, "new.zarr"), pair("new.zarr", ""));
        assert_eq!(locate(&empty, "new.n5/a/b/ds"), pair("new.n5", "a/b/ds"));
        assert_eq!(locate(&empty, ""), pair("", ""));
        // Below a prefix that holds other things (not a node): the first new prefix is the root.
        let other = store_with(&["data/notes.txt"]);
        assert_eq!(
            locate(&other, "data/x.zarr/a/b"),
            pair("data/x.zarr", "a/b")
        );
        // An existing prefix that is not a node is replaced whole.
        assert_eq!(locate(&other, "data"), pair("data", ""));
        // Plain prefixes above the store do not become groups.
        assert_eq!(locate(&empty, "w/a.zarr"), pair("w/a.zarr", ""));
        assert_eq!(
            locate(&empty, "projects/2026/vol"),
            pair("projects/2026/vol", "")
        );
        assert_eq!(
            locate(&empty, "p/lab.ZARR/raw/s0"),
            pair("p/lab.ZARR", "raw/s0")
        );
        assert_eq!(locate(&other, "data/y/z"), pair("data/y/z", ""));
    }

    #[test]
    fn a_url_below_a_group_is_a_node_of_its_hierarchy() {
        let store = store_with(&[
            "data/h.zarr/zarr.json",
            "data/h.zarr/sub/zarr.json",
            "data/h.zarr/raw/zarr.json",
            "data/h.zarr/raw/c/0/0",
            "data/v2/.zgroup",
            "data/v2/a/.zarray",
            "data/c.n5/attributes.json",
        ]);
        assert_eq!(
            locate(&store, "data/h.zarr/sub/new"),
            pair("data/h.zarr", "sub/new")
        );
        assert_eq!(
            locate(&store, "data/h.zarr/sub/x/y"),
            pair("data/h.zarr", "sub/x/y")
        );
        assert_eq!(
            locate(&store, "data/h.zarr/raw"),
            pair("data/h.zarr", "raw")
        );
        assert_eq!(locate(&store, "data/h.zarr"), pair("data/h.zarr", ""));
        assert_eq!(locate(&store, "data/v2/a"), pair("data/v2", "a"));
        assert_eq!(locate(&store, "data/v2/b/c"), pair("data/v2", "b/c"));
        assert_eq!(locate(&store, "data/c.n5/ds"), pair("data/c.n5", "ds"));
        // A sibling prefix of a node is not inside it.
        assert_eq!(locate(&store, "data/h.zarr2/x"), pair("data/h.zarr2", "x"));
    }

    #[test]
    fn replacing_a_node_keeps_its_siblings() {
        let store: Arc<dyn Store> = Arc::new(store_with(&[
            "h.zarr/zarr.json",
            "h.zarr/raw/zarr.json",
            "h.zarr/raw/c/0",
            "h.zarr/raw2/zarr.json",
            "h.zarr/raw2/notes.txt",
        ]));
        let node_at = |key: &str| {
            let (root, node) = locate_node_in(store.as_ref(), key).unwrap();
            RemoteNode {
                bucket_root: root.is_empty(),
                store: rooted_at(store.clone(), &root).unwrap(),
                node,
                display: format!("mem://{key}"),
            }
        };
        node_at("h.zarr/raw")
            .replace(&NodeTree, Overwrite::Own)
            .unwrap();
        assert_eq!(
            store.list_prefix("").unwrap(),
            [
                "h.zarr/raw2/notes.txt",
                "h.zarr/raw2/zarr.json",
                "h.zarr/zarr.json"
            ]
        );
        // A node holding a file of another kind is refused, with nothing removed, unless
        // anything may be replaced.
        let foreign = node_at("h.zarr/raw2");
        let refused = foreign.replace(&NodeTree, Overwrite::Own).unwrap_err().0;
        assert!(
            refused.contains("mem://h.zarr/raw2") && refused.contains("(notes.txt)"),
            "{refused}"
        );
        assert_eq!(store.list_prefix("h.zarr/raw2/").unwrap().len(), 2);
        foreign.replace(&NodeTree, Overwrite::Anything).unwrap();
        assert_eq!(store.list_prefix("").unwrap(), ["h.zarr/zarr.json"]);
        // The root of a bucket that holds anything is refused, not emptied.
        let whole = RemoteNode {
            bucket_root: true,
            store: store.clone(),
            node: String::new(),
            display: "mem://".into(),
        };
        assert!(whole
            .replace(&NodeTree, Overwrite::Anything)
            .unwrap_err()
            .0
            .contains("whole bucket"));
        assert_eq!(store.list_prefix("").unwrap().len(), 1);
    }
}
