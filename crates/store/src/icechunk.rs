//! Icechunk repositories as stores: versioned, transactional Zarr v3 hierarchies on a local
//! disk or object storage, through the reference implementation (the `icechunk` crate).
//!
//! A [`Repo`] is opened (or created) at a location; a [`Version`] (a branch head, a tag or a
//! snapshot id) gives a read-only [`IcechunkStore`], and a branch gives a writable one whose
//! changes nobody sees until [`IcechunkStore::commit`]. A commit whose branch moved since the
//! session started is rebased when the two change sets touch different chunks and metadata;
//! otherwise it fails with a [`StoreError`] naming the conflicting arrays and chunks, and the
//! branch keeps the other writer's commit.
//!
//! ```
//! use neurochunk_store::icechunk::{Repo, Version};
//! use neurochunk_store::{Bytes, RemoteOptions, Store, StoreLocation};
//!
//! let dir = tempfile::tempdir()?;
//! let location = StoreLocation::Local(dir.path().join("repo"));
//! let repo = Repo::create(&location, &RemoteOptions::default())?;
//!
//! let session = repo.writer("main")?;
//! session.set("zarr.json", Bytes::from_static(br#"{"zarr_format":3,"node_type":"group"}"#))?;
//! let first = session.commit("an empty root group")?;
//!
//! // What was committed is read at the branch head and at the snapshot.
//! let head = repo.reader(&Version::default())?;
//! assert!(head.get("zarr.json")?.is_some());
//! let log = repo.log(&Version::Snapshot(first.clone()))?;
//! assert_eq!(log[0].message, "an empty root group");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use futures::TryStreamExt;
use icechunk::conflicts::detector::ConflictDetector;
use icechunk::conflicts::Conflict;
use icechunk::format::{ByteRange as IcByteRange, SnapshotId};
use icechunk::repository::VersionInfo;
use icechunk::session::SessionErrorKind;
use icechunk::store::{ListDirItem, StoreErrorKind};
use icechunk::{Repository, Storage};
use tokio::runtime::Runtime;
use tokio::sync::RwLock;

use crate::remote::{Scheme, StoreLocation};
use crate::{
    ByteRange, Bytes, DirListing, ReadRequest, ReadResponse, RemoteOptions, Store, StoreError,
    StoreResult, VirtualRef,
};

/// The branch a repository starts with, and the default version to read.
pub const DEFAULT_BRANCH: &str = "main";

/// Requests a store of a repository keeps in flight (reads of a batch, chunk uploads).
const CONCURRENT_REQUESTS: usize = 16;

/// How many times a commit on a moved branch is rebased before it gives up.
const REBASE_ATTEMPTS: u16 = 10;

pub use crate::RepoVersion as Version;

impl Default for Version {
    fn default() -> Self {
        Version::Branch(DEFAULT_BRANCH.to_string())
    }
}

/// One snapshot of a repository's history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotSummary {
    /// The snapshot's id.
    pub id: String,
    /// The id of the snapshot it was committed on (`None` for the repository's first).
    pub parent: Option<String>,
    /// When it was committed, RFC 3339 in UTC.
    pub time: String,
    /// The commit message.
    pub message: String,
}

/// A branch or a tag and the snapshot it points to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedRef {
    /// The branch's or tag's name.
    pub name: String,
    /// The snapshot's id.
    pub snapshot: String,
}

/// An open Icechunk repository.
pub struct Repo {
    repo: Repository,
    runtime: Arc<Runtime>,
    display: String,
}

impl fmt::Debug for Repo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Repo")
            .field("location", &self.display)
            .finish()
    }
}

impl Repo {
    /// Open the repository at `location`; an error names the location when there is none.
    pub fn open(location: &StoreLocation, options: &RemoteOptions) -> StoreResult<Repo> {
        let runtime = new_runtime(&location.display())?;
        let display = location.display();
        let storage = storage_for(&runtime, location, options)?;
        let repo = runtime
            .block_on(Repository::open(storage).execute())
            .map_err(|e| repo_error(&display, e))?;
        // Virtual chunks are fetched only from the containers this reader allows.
        let allowed = virtual_chunks::authorizations(repo.config(), location, options);
        let repo = if allowed.is_empty() {
            repo
        } else {
            runtime
                .block_on(repo.reopen(None, Some(allowed)))
                .map_err(|e| repo_error(&display, e))?
        };
        Ok(Repo {
            repo,
            runtime,
            display,
        })
    }

    /// Create a new, empty repository at `location` (with its `main` branch); the location
    /// must hold nothing yet.
    pub fn create(location: &StoreLocation, options: &RemoteOptions) -> StoreResult<Repo> {
        let runtime = new_runtime(&location.display())?;
        let display = location.display();
        if let StoreLocation::Local(path) = location {
            std::fs::create_dir_all(path)
                .map_err(|e| StoreError::backend(&display, "", Box::new(e)))?;
        }
        let storage = storage_for(&runtime, location, options)?;
        let repo = runtime
            .block_on(Repository::create(storage).execute())
            .map_err(|e| repo_error(&display, e))?;
        probe_cache()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        Ok(Repo {
            repo,
            runtime,
            display,
        })
    }

    /// True when a repository is at `location` (it is not opened).
    pub fn exists(location: &StoreLocation, options: &RemoteOptions) -> StoreResult<bool> {
        if let StoreLocation::Local(path) = location {
            // No runtime and no storage for the common case of a plain directory.
            if !looks_like_repository(path) {
                return Ok(false);
            }
        }
        let runtime = new_runtime(&location.display())?;
        let storage = storage_for(&runtime, location, options)?;
        runtime
            .block_on(Repository::exists(storage, None))
            .map_err(|e| repo_error(&location.display(), e))
    }

    /// The repository's location as a person reads it.
    pub fn display(&self) -> &str {
        &self.display
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    fn version_info(&self, version: &Version) -> StoreResult<VersionInfo> {
        Ok(match version {
            Version::Branch(name) => VersionInfo::BranchTipRef(name.clone()),
            Version::Tag(name) => VersionInfo::TagRef(name.clone()),
            Version::Snapshot(id) => VersionInfo::SnapshotId(parse_snapshot_id(&self.display, id)?),
        })
    }

    /// The id of the snapshot a version names.
    pub fn resolve(&self, version: &Version) -> StoreResult<String> {
        let info = self.version_info(version)?;
        let id = self
            .block_on(self.repo.resolve_version(&info))
            .map_err(|e| self.version_error(version, e))?;
        Ok(id.to_string())
    }

    fn version_error(&self, version: &Version, e: impl fmt::Display) -> StoreError {
        StoreError::backend(&self.display, version.to_string(), e.to_string())
    }

    /// The history of a version, newest first, down to the repository's first snapshot.
    pub fn log(&self, version: &Version) -> StoreResult<Vec<SnapshotSummary>> {
        let info = self.version_info(version)?;
        self.block_on(async {
            let stream = self.repo.ancestry(&info).await?;
            stream
                .map_ok(|s| SnapshotSummary {
                    id: s.id.to_string(),
                    parent: s.parent_id.as_ref().map(|p| p.to_string()),
                    time: s.flushed_at.to_rfc3339(),
                    message: s.message,
                })
                .try_collect::<Vec<_>>()
                .await
        })
        .map_err(|e| self.version_error(version, e))
    }

    /// The branches, by name, with their heads.
    pub fn branches(&self) -> StoreResult<Vec<NamedRef>> {
        self.block_on(async {
            let mut out = Vec::new();
            for name in self.repo.list_branches().await? {
                let id = self.repo.lookup_branch(&name).await?;
                out.push(NamedRef {
                    name,
                    snapshot: id.to_string(),
                });
            }
            Ok::<_, icechunk::repository::RepositoryError>(out)
        })
        .map_err(|e| repo_error(&self.display, e))
    }

    /// The tags, by name, with their snapshots.
    pub fn tags(&self) -> StoreResult<Vec<NamedRef>> {
        self.block_on(async {
            let mut out = Vec::new();
            for name in self.repo.list_tags().await? {
                let id = self.repo.lookup_tag(&name).await?;
                out.push(NamedRef {
                    name,
                    snapshot: id.to_string(),
                });
            }
            Ok::<_, icechunk::repository::RepositoryError>(out)
        })
        .map_err(|e| repo_error(&self.display, e))
    }

    /// Create a branch at the snapshot `from` names; returns that snapshot's id.
    pub fn create_branch(&self, name: &str, from: &Version) -> StoreResult<String> {
        let id = self.resolve(from)?;
        let snapshot = parse_snapshot_id(&self.display, &id)?;
        self.block_on(self.repo.create_branch(name, &snapshot))
            .map_err(|e| self.version_error(&Version::Branch(name.into()), e))?;
        Ok(id)
    }

    /// Create a tag (which never moves) at the snapshot `from` names; returns its id.
    pub fn create_tag(&self, name: &str, from: &Version) -> StoreResult<String> {
        let id = self.resolve(from)?;
        let snapshot = parse_snapshot_id(&self.display, &id)?;
        self.block_on(self.repo.create_tag(name, &snapshot))
            .map_err(|e| self.version_error(&Version::Tag(name.into()), e))?;
        Ok(id)
    }

    /// A read-only store of the hierarchy at `version`.
    pub fn reader(&self, version: &Version) -> StoreResult<IcechunkStore> {
        let info = self.version_info(version)?;
        let session = self
            .block_on(self.repo.readonly_session(&info))
            .map_err(|e| self.version_error(version, e))?;
        Ok(self.store_of(session, format!("{} ({version})", self.display), None))
    }

    /// A writable store on `branch`'s head: its writes form one change set, visible to
    /// nobody until [`IcechunkStore::commit`].
    pub fn writer(&self, branch: &str) -> StoreResult<IcechunkStore> {
        let session = self
            .block_on(self.repo.writable_session(branch))
            .map_err(|e| self.version_error(&Version::Branch(branch.into()), e))?;
        Ok(self.store_of(
            session,
            format!("{} (branch '{branch}')", self.display),
            Some(branch.to_string()),
        ))
    }

    fn store_of(
        &self,
        session: icechunk::session::Session,
        label: String,
        branch: Option<String>,
    ) -> IcechunkStore {
        IcechunkStore::over(
            session,
            Arc::clone(&self.runtime),
            self.display.clone(),
            label,
            branch,
        )
    }
}

/// A store over one session of a repository: read-only at a version, or writable on a
/// branch and committed with [`IcechunkStore::commit`].
pub struct IcechunkStore {
    store: icechunk::Store,
    runtime: Arc<Runtime>,
    /// The repository, as a person names it.
    repository: String,
    label: String,
    branch: Option<String>,
    /// Whether a refused write says how to open a session (a store opened from a path).
    write_hint: bool,
}

impl fmt::Debug for IcechunkStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

impl IcechunkStore {
    /// A store over `session` of the repository named `repository`.
    fn over(
        session: icechunk::session::Session,
        runtime: Arc<Runtime>,
        repository: String,
        label: String,
        branch: Option<String>,
    ) -> IcechunkStore {
        let session = Arc::new(RwLock::new(session));
        let store = runtime.block_on(icechunk::Store::from_session(session));
        IcechunkStore {
            store,
            runtime,
            repository,
            label,
            branch,
            write_hint: false,
        }
    }

    /// The branch a writable store commits to (`None` when read-only).
    pub fn branch(&self) -> Option<&str> {
        self.branch.as_deref()
    }

    /// True when the session holds writes not committed yet.
    pub fn has_changes(&self) -> bool {
        self.runtime
            .block_on(async { self.store.session().read().await.has_uncommitted_changes() })
    }

    /// Commit the session's changes as one new snapshot of its branch, with `message`;
    /// returns the snapshot's id. When another writer committed to the branch meanwhile,
    /// the commit is rebased onto theirs if the two touched different chunks and metadata,
    /// and otherwise fails naming what both changed (the branch keeps their commit).
    pub fn commit(&self, message: &str) -> StoreResult<String> {
        let Some(branch) = &self.branch else {
            return Err(StoreError::ReadOnly {
                key: self.label.clone(),
            });
        };
        let detector = ConflictDetector;
        let result = self.runtime.block_on(async {
            let session = self.store.session();
            let mut session = session.write().await;
            session
                .commit(message)
                .rebase(&detector, REBASE_ATTEMPTS)
                .execute()
                .await
        });
        match result {
            Ok(id) => Ok(id.to_string()),
            Err(e) => Err(match &e.kind {
                SessionErrorKind::RebaseFailed { conflicts, .. } => StoreError::backend(
                    &self.label,
                    "",
                    format!(
                        "commit conflicts with a newer commit on branch '{branch}': {}; \
                         nothing was committed",
                        describe_conflicts(conflicts)
                    ),
                ),
                _ => StoreError::backend(&self.label, "", format!("commit failed: {e}")),
            }),
        }
    }

    fn error(&self, key: &str, e: impl fmt::Display) -> StoreError {
        let message = e.to_string();
        let message = virtual_chunks::unauthorized(&message).unwrap_or(message);
        StoreError::backend(&self.label, key, message)
    }

    fn read_only_error(&self, key: &str) -> StoreError {
        let why = if self.write_hint {
            "read-only: a repository is written through a session on a branch, committed at \
             its end (`icechunk::Session`; Python: `nc.icechunk.session`)"
        } else {
            "read-only: a tag or a snapshot never changes; write to a branch"
        };
        StoreError::backend(&self.label, key, why)
    }

    /// Make groups of the missing ancestors of `node` (`a/b/c`: `/`, `a`, `a/b`), so that
    /// every node written is reachable from the root, as zarr-python and icechunk list a
    /// hierarchy (a file written at `run.nwb` of a new repository gets a root group).
    fn create_missing_parents(&self, node: &str) -> StoreResult<()> {
        let mut parents = vec![""];
        parents.extend(node.match_indices('/').map(|(i, _)| &node[..i]));
        for parent in parents {
            let key = if parent.is_empty() {
                "zarr.json".to_string()
            } else {
                format!("{parent}/zarr.json")
            };
            if self.size(&key)?.is_none() {
                let group =
                    Bytes::from_static(br#"{"zarr_format":3,"node_type":"group","attributes":{}}"#);
                self.runtime
                    .block_on(self.store.set(&key, group))
                    .map_err(|e| self.error(&key, e))?;
            }
        }
        Ok(())
    }

    /// The same read-only store, whose refused writes say how to open a session.
    fn unwritable_hint(mut self) -> Self {
        self.write_hint = true;
        self
    }

    /// The repository, as a person names it.
    pub fn repository(&self) -> &str {
        &self.repository
    }
}

/// Whether icechunk's answer means "no such value": a missing key, or a key that cannot name a
/// value in a Zarr hierarchy at all (a group or array path such as `a`, which icechunk refuses
/// as a key format); by the store contract a prefix read as a key reads as missing.
fn is_missing(kind: &StoreErrorKind) -> bool {
    matches!(
        kind,
        StoreErrorKind::NotFound(_) | StoreErrorKind::InvalidKey { .. }
    )
}

fn ic_range(range: &ByteRange) -> IcByteRange {
    match *range {
        ByteRange::FromStart {
            offset,
            length: Some(length),
        } => IcByteRange::bounded(offset, offset.saturating_add(length)),
        ByteRange::FromStart {
            offset,
            length: None,
        } => IcByteRange::from_offset(offset),
        ByteRange::Suffix { length } => IcByteRange::Last(length),
    }
}

impl Store for IcechunkStore {
    fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        crate::validate_key(key)?;
        match self
            .runtime
            .block_on(self.store.get(key, &IcByteRange::ALL))
        {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if is_missing(&e.kind) => Ok(None),
            Err(e) => Err(self.error(key, e)),
        }
    }

    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> StoreResult<Option<Vec<Bytes>>> {
        crate::validate_key(key)?;
        let size = match self.size(key)? {
            Some(size) => size,
            None => return Ok(None),
        };
        for range in ranges {
            range.resolve_for(key, size)?;
        }
        let requests: Vec<(String, IcByteRange)> = ranges
            .iter()
            .map(|r| (key.to_string(), ic_range(r)))
            .collect();
        let parts = self
            .runtime
            .block_on(self.store.get_partial_values(requests))
            .map_err(|e| self.error(key, e))?;
        let mut out = Vec::with_capacity(parts.len());
        for part in parts {
            match part {
                Ok(bytes) => out.push(bytes),
                Err(e) if is_missing(&e.kind) => return Ok(None),
                Err(e) => return Err(self.error(key, e)),
            }
        }
        Ok(Some(out))
    }

    fn size(&self, key: &str) -> StoreResult<Option<u64>> {
        crate::validate_key(key)?;
        match self.runtime.block_on(self.store.getsize(key)) {
            // Icechunk reports a chunk that was never written as 0 bytes.
            Ok(0) => match self.runtime.block_on(self.store.exists(key)) {
                Ok(true) => Ok(Some(0)),
                Ok(false) => Ok(None),
                Err(e) if is_missing(&e.kind) => Ok(None),
                Err(e) => Err(self.error(key, e)),
            },
            Ok(size) => Ok(Some(size)),
            Err(e) if is_missing(&e.kind) => Ok(None),
            Err(e) => Err(self.error(key, e)),
        }
    }

    fn set(&self, key: &str, value: Bytes) -> StoreResult<()> {
        crate::validate_key(key)?;
        if self.branch.is_none() {
            return Err(self.read_only_error(key));
        }
        if let Some(node) = key.strip_suffix("/zarr.json") {
            self.create_missing_parents(node)?;
        }
        self.runtime
            .block_on(self.store.set(key, value))
            .map_err(|e| self.error(key, e))
    }

    fn delete(&self, key: &str) -> StoreResult<()> {
        crate::validate_key(key)?;
        if self.branch.is_none() {
            return Err(self.read_only_error(key));
        }
        match self.runtime.block_on(self.store.delete(key)) {
            Ok(()) => Ok(()),
            Err(e) if is_missing(&e.kind) => Ok(()),
            Err(e) => Err(self.error(key, e)),
        }
    }

    fn list_prefix(&self, prefix: &str) -> StoreResult<Vec<String>> {
        crate::validate_prefix(prefix)?;
        // Icechunk lists by node path: a prefix that is no node (nothing there, or a chunk
        // directory inside an array) is listed from the deepest node above it.
        let mut node = prefix.trim_end_matches('/');
        let mut keys = loop {
            let listed = self.runtime.block_on(async {
                let stream = self.store.list_prefix(node).await?;
                stream.try_collect::<Vec<_>>().await
            });
            match listed {
                Ok(keys) => break keys,
                Err(e) if matches!(e.kind, StoreErrorKind::BadKeyPrefix { .. }) => {
                    if node.is_empty() {
                        break Vec::new();
                    }
                    node = node.rsplit_once('/').map_or("", |(parent, _)| parent);
                }
                Err(e) => return Err(self.error(prefix, e)),
            }
        };
        keys.retain(|k| k.starts_with(prefix));
        keys.sort();
        keys.dedup();
        Ok(keys)
    }

    fn list_dir(&self, prefix: &str) -> StoreResult<DirListing> {
        crate::validate_prefix(prefix)?;
        let items = match self.runtime.block_on(async {
            let stream = self.store.list_dir_items(prefix).await?;
            stream.try_collect::<Vec<_>>().await
        }) {
            Ok(items) => items,
            // Not a node: its listing is made from the keys below it.
            Err(e) if matches!(e.kind, StoreErrorKind::BadKeyPrefix { .. }) => {
                return Ok(DirListing::from_keys(prefix, self.list_prefix(prefix)?));
            }
            Err(e) => return Err(self.error(prefix, e)),
        };
        let mut listing = DirListing::default();
        for item in items {
            match item {
                ListDirItem::Key(k) => listing.keys.push(k),
                ListDirItem::Prefix(p) => listing.prefixes.push(p),
            }
        }
        listing.keys.sort();
        listing.keys.dedup();
        listing.prefixes.sort();
        listing.prefixes.dedup();
        Ok(listing)
    }

    fn concurrent_reads(&self) -> usize {
        CONCURRENT_REQUESTS
    }

    fn get_many(&self, requests: &[ReadRequest]) -> Vec<StoreResult<ReadResponse>> {
        crate::map_concurrent(requests, CONCURRENT_REQUESTS, |r| r.answer_from(self))
    }

    /// Icechunk records a chunk only for an array it knows: the batch's metadata documents
    /// go first, parents before children, then its other values, many at a time.
    fn set_many(&self, mut values: Vec<(String, Bytes)>) -> StoreResult<()> {
        if self.branch.is_none() {
            let key = values.first().map_or("", |(k, _)| k.as_str());
            return Err(self.read_only_error(key));
        }
        for (key, _) in &values {
            crate::validate_key(key)?;
        }
        let is_metadata = |key: &str| key == "zarr.json" || key.ends_with("/zarr.json");
        values.sort_by_key(|(key, _)| (!is_metadata(key), key.matches('/').count()));
        let split = values.partition_point(|(key, _)| is_metadata(key));
        let chunks = values.split_off(split);
        for (key, value) in values {
            self.set(&key, value)?;
        }
        let written: Vec<StoreResult<()>> =
            crate::map_concurrent(&chunks, CONCURRENT_REQUESTS, |(key, value)| {
                self.set(key, value.clone())
            });
        written.into_iter().collect()
    }

    /// Virtual chunks: each reference must lie in one of the repository's containers
    /// ([`Repo::add_virtual_container`]).
    fn set_virtual_many(&self, refs: Vec<(String, VirtualRef)>) -> StoreResult<bool> {
        if self.branch.is_none() {
            let key = refs.first().map_or("", |(k, _)| k.as_str());
            return Err(self.read_only_error(key));
        }
        let written: Vec<StoreResult<()>> =
            crate::map_concurrent(&refs, CONCURRENT_REQUESTS, |(key, reference)| {
                crate::validate_key(key)?;
                let reference = virtual_chunks::to_icechunk(reference)
                    .map_err(|message| self.error(key, message))?;
                self.runtime
                    .block_on(self.store.set_virtual_ref(key, reference, true))
                    .map_err(|e| self.error(key, e))
            });
        written.into_iter().collect::<StoreResult<()>>()?;
        Ok(true)
    }

    fn delete_prefix(&self, prefix: &str) -> StoreResult<()> {
        crate::validate_prefix(prefix)?;
        if self.branch.is_none() {
            return Err(self.read_only_error(prefix));
        }
        match self
            .runtime
            .block_on(self.store.delete_dir(prefix.trim_end_matches('/')))
        {
            Ok(()) => Ok(()),
            // Not a node: whatever keys are below it (chunks of an array) go one by one.
            Err(e) if matches!(e.kind, StoreErrorKind::BadKeyPrefix { .. }) => self
                .list_prefix(prefix)?
                .iter()
                .try_for_each(|key| self.delete(key)),
            Err(e) => Err(self.error(prefix, e)),
        }
    }
}

/// A person's description of a rebase's conflicts: the arrays and groups, and the chunks.
fn describe_conflicts(conflicts: &[Conflict]) -> String {
    let mut parts: Vec<String> = conflicts
        .iter()
        .map(|c| match c {
            Conflict::ChunkDoubleUpdate {
                path,
                chunk_coordinates,
                ..
            } => {
                let mut chunks: Vec<String> = chunk_coordinates
                    .iter()
                    .map(|c| {
                        let parts: Vec<String> = c.0.iter().map(u32::to_string).collect();
                        format!("[{}]", parts.join(", "))
                    })
                    .collect();
                chunks.sort();
                let shown = chunks.len().min(8);
                let more = if chunks.len() > shown {
                    format!(" and {} more", chunks.len() - shown)
                } else {
                    String::new()
                };
                format!(
                    "both wrote chunks {}{more} of array {path}",
                    chunks[..shown].join(" ")
                )
            }
            Conflict::ZarrMetadataDoubleUpdate(path) => {
                format!("both changed the metadata of {path}")
            }
            Conflict::NewNodeConflictsWithExistingNode(path) => {
                format!("both created {path}")
            }
            Conflict::NewNodeInInvalidGroup(path) => {
                format!("{path} was created in a group the other deleted")
            }
            Conflict::ZarrMetadataUpdateOfDeletedArray(path)
            | Conflict::ZarrMetadataUpdateOfDeletedGroup(path) => {
                format!("{path} was changed here and deleted there")
            }
            Conflict::ChunksUpdatedInDeletedArray { path, .. } => {
                format!("chunks of {path} were written here and the array deleted there")
            }
            Conflict::ChunksUpdatedInUpdatedArray { path, .. } => {
                format!("chunks of {path} were written here and its metadata changed there")
            }
            Conflict::DeleteOfUpdatedArray { path, .. }
            | Conflict::DeleteOfUpdatedGroup { path, .. } => {
                format!("{path} was deleted here and changed there")
            }
            Conflict::MoveOperationCannotBeRebased => "a move of nodes cannot be rebased".into(),
        })
        .collect();
    parts.sort();
    parts.join("; ")
}

fn new_runtime(display: &str) -> StoreResult<Arc<Runtime>> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("neurochunk-icechunk")
        .enable_all()
        .build()
        .map(Arc::new)
        .map_err(|e| StoreError::backend(display, "", Box::new(e)))
}

/// The repository a local path is in, and the key of the path below its root: the
/// deepest directory of the path (itself included) that is a repository.
pub fn split_repository_path(path: &Path) -> Option<(std::path::PathBuf, String)> {
    let mut ancestors: Vec<&Path> = path.ancestors().collect();
    ancestors.reverse();
    let root = ancestors
        .into_iter()
        .filter(|p| !p.as_os_str().is_empty())
        .rfind(|p| looks_like_repository(p))?;
    let key = path.strip_prefix(root).ok()?;
    let key: Vec<String> = key
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Some((root.to_path_buf(), key.join("/")))
}

/// The store of the repository at `root` at the version `options` names (the head of
/// `main` by default): this process's session of that branch when one is open, otherwise a
/// read-only store (see [`sessions`]).
pub fn open_version(root: &StoreLocation, options: &RemoteOptions) -> StoreResult<Arc<dyn Store>> {
    sessions::open_in(root, options)
}

/// The key of the repository a URL's key is in, in the store of its bucket (container,
/// host): the deepest prefix of `key` (itself included, the bucket's root last) that holds
/// an Icechunk 2 `repo` object, or `None`. The prefixes not asked about before are asked
/// about at once (one round trip); answers are kept for the process, per prefix, so URLs
/// that share prefixes share the answers, and [`Repo::create`] forgets them.
pub(crate) fn repository_root_key(store: &dyn Store, key: &str, base: &str) -> Option<String> {
    let mut prefixes: Vec<&str> = vec![""];
    prefixes.extend(key.match_indices('/').map(|(i, _)| &key[..i]));
    if !key.is_empty() {
        prefixes.push(key);
    }
    let cached = |prefix: &str| format!("{base}/{prefix}");
    let known: Vec<Option<bool>> = {
        let probes = probe_cache().lock().unwrap_or_else(|p| p.into_inner());
        prefixes
            .iter()
            .map(|p| probes.get(&cached(p)).copied())
            .collect()
    };
    let unknown: Vec<&str> = prefixes
        .iter()
        .zip(&known)
        .filter(|(_, k)| k.is_none())
        .map(|(p, _)| *p)
        .collect();
    let answers = crate::map_concurrent(&unknown, unknown.len(), |prefix| {
        let marker = if prefix.is_empty() {
            "repo".to_string()
        } else {
            format!("{prefix}/repo")
        };
        store.size(&marker).map(|size| size.is_some())
    });
    // A prefix that cannot be asked about (a file's path taken as a directory, a refused
    // request; transient failures were retried) holds no repository: the location's own
    // reads then report what is wrong with it, once.
    let mut asked = HashMap::new();
    {
        let mut probes = probe_cache().lock().unwrap_or_else(|p| p.into_inner());
        for (prefix, answer) in unknown.iter().zip(answers) {
            let found = answer.unwrap_or(false);
            probes.insert(cached(prefix), found);
            asked.insert(*prefix, found);
        }
    }
    let is_root = |i: usize, prefix: &str| known[i].or_else(|| asked.get(prefix).copied());
    prefixes
        .iter()
        .enumerate()
        .rev()
        .find(|(i, p)| is_root(*i, p) == Some(true))
        .map(|(_, p)| p.to_string())
}

fn probe_cache() -> &'static std::sync::Mutex<HashMap<String, bool>> {
    static PROBES: std::sync::LazyLock<std::sync::Mutex<HashMap<String, bool>>> =
        std::sync::LazyLock::new(Default::default);
    &PROBES
}

/// True when a local directory has the files of a repository (Icechunk 1 or 2 layouts).
pub fn looks_like_repository(path: &Path) -> bool {
    // Icechunk 2 keeps a `repo` file, Icechunk 1 a `refs` directory; both a `snapshots` one.
    path.join("snapshots").is_dir() && (path.join("repo").is_file() || path.join("refs").is_dir())
}

fn parse_snapshot_id(display: &str, id: &str) -> StoreResult<SnapshotId> {
    SnapshotId::try_from(id).map_err(|_| StoreError::InvalidKey {
        key: format!("{id} (in {display})"),
        reason: "not a snapshot id (20 characters of Crockford base 32)",
    })
}

fn repo_error(display: &str, e: impl fmt::Display) -> StoreError {
    StoreError::backend(display, "", format!("Icechunk repository: {e}"))
}

/// The storage of a repository location: a local directory, or a bucket prefix on S3, GCS
/// or Azure, or a read-only HTTP location, with the endpoint, region and credentials
/// settings neurochunk's remote stores use.
fn storage_for(
    runtime: &Runtime,
    location: &StoreLocation,
    options: &RemoteOptions,
) -> StoreResult<Arc<dyn Storage + Send + Sync>> {
    let display = location.display();
    let failed = |e: icechunk::StorageError| repo_error(&display, e);
    match location {
        StoreLocation::Local(path) => {
            let absolute = std::path::absolute(path)
                .map_err(|e| StoreError::backend(&display, "", Box::new(e)))?;
            runtime
                .block_on(icechunk::new_local_filesystem_storage(&absolute))
                .map_err(failed)
        }
        StoreLocation::Url {
            scheme, base, key, ..
        } => {
            let bucket = base
                .split_once("://")
                .map(|(_, rest)| rest.to_string())
                .unwrap_or_default();
            let prefix = (!key.is_empty()).then(|| key.clone());
            match scheme {
                Scheme::S3 => {
                    let s3 = virtual_chunks::s3_options(options);
                    let credentials = virtual_chunks::s3_credentials(options);
                    let bucket = bucket
                        .rsplit_once('/')
                        .map(|(_, b)| b.to_string())
                        .unwrap_or(bucket);
                    runtime
                        .block_on(icechunk::new_s3_object_store_storage(
                            s3,
                            bucket,
                            prefix,
                            Some(credentials),
                            Vec::new(),
                            Vec::new(),
                        ))
                        .map_err(failed)
                }
                Scheme::Gcs => icechunk::storage::new_gcs_storage(
                    bucket,
                    prefix,
                    None,
                    None,
                    Vec::new(),
                    Vec::new(),
                )
                .map_err(failed),
                Scheme::Azure => {
                    let (account, container) = match bucket.split_once('@') {
                        Some((container, host)) => (
                            host.split('.').next().unwrap_or_default().to_string(),
                            container.to_string(),
                        ),
                        None => (
                            std::env::var("AZURE_STORAGE_ACCOUNT_NAME").unwrap_or_default(),
                            bucket,
                        ),
                    };
                    runtime
                        .block_on(icechunk::storage::new_azure_blob_storage(
                            account,
                            container,
                            prefix,
                            None,
                            Some(HashMap::new()),
                        ))
                        .map_err(failed)
                }
                Scheme::Http => {
                    let url = if key.is_empty() {
                        base.clone()
                    } else {
                        format!("{base}/{key}")
                    };
                    icechunk::storage::new_http_storage(&url, None, None).map_err(failed)
                }
                Scheme::File => {
                    let path = std::path::PathBuf::from(format!("/{key}"));
                    runtime
                        .block_on(icechunk::new_local_filesystem_storage(&path))
                        .map_err(failed)
                }
            }
        }
    }
}

mod forks;
pub mod sessions;
mod virtual_chunks;
pub use forks::{ChunkMerger, Fork, ForkSession, MergeSummary};
pub use sessions::{Committed, Session};

#[cfg(test)]
mod tests;
