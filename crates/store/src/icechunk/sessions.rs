//! The sessions of this process: which store a path or URL inside a repository opens as.
//!
//! A location inside a repository (see [`StoreLocation::open`]) opens at the version
//! [`RemoteOptions::version`] names. Three cases:
//!
//! - A [`Session`] is open on that branch of that repository (Python's
//!   `nc.icechunk.session`, or a program's own): the location is a view of the session, so
//!   every writer in the process writes into the one change set, and readers see it.
//! - Automatic sessions are on ([`set_automatic`], the command-line tool): the first opening
//!   of a branch begins a session every later opening shares, reads included, and
//!   [`commit_automatic`] commits the ones that changed anything when the command succeeds.
//!   A command that fails, or is killed, commits nothing: the branch stays where it was.
//! - Otherwise: a read-only store at the version, read fresh at each opening; writing to it
//!   is refused with a message saying how to open a session.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use super::{IcechunkStore, Repo, Version};
use crate::remote::StoreLocation;
use crate::{RemoteOptions, Store, StoreError, StoreResult};

/// A session committed by [`commit_automatic`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Committed {
    /// The repository, as a person names it.
    pub repository: String,
    /// The branch the commit moved.
    pub branch: String,
    /// The new snapshot's id.
    pub snapshot: String,
}

#[derive(Default)]
struct Registry {
    automatic: bool,
    /// Repositories opened by automatic sessions, by identity.
    repos: HashMap<String, Arc<Repo>>,
    /// Open stores: (repository identity, version) and the store. Explicit sessions are
    /// marked so that [`commit_automatic`] leaves them to their owner.
    stores: Vec<Entry>,
}

struct Entry {
    identity: String,
    version: Version,
    store: Arc<IcechunkStore>,
    explicit: bool,
}

fn registry() -> MutexGuard<'static, Registry> {
    static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(Mutex::default);
    // A panic while the registry was held leaves nothing half-done in it (each change is
    // one push or one retain), so a poisoned lock is still usable.
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// What identifies a repository within this process: its absolute path, or its URL.
fn identity(location: &StoreLocation) -> String {
    match location {
        StoreLocation::Local(path) => std::path::absolute(path)
            .unwrap_or_else(|_| path.clone())
            .display()
            .to_string(),
        url => url.display(),
    }
}

/// Turn automatic sessions on or off for this process (see the module's documentation).
/// The command-line tool turns them on; libraries and Python leave them off.
pub fn set_automatic(on: bool) {
    registry().automatic = on;
}

/// The store a location inside the repository at `root` opens as, at the version `options`
/// names (the head of `main` by default).
pub(crate) fn open_in(
    root: &StoreLocation,
    options: &RemoteOptions,
) -> StoreResult<Arc<dyn Store>> {
    let version = options.version.clone().unwrap_or_default();
    let id = identity(root);
    let mut registry = registry();
    if let Some(entry) = registry
        .stores
        .iter()
        .find(|e| e.identity == id && e.version == version)
    {
        return Ok(entry.store.clone());
    }
    if !registry.automatic {
        drop(registry);
        let repo = Repo::open(root, options)?;
        let reader = repo.reader(&version)?;
        return Ok(Arc::new(match version {
            // A branch is written in a session; a tag or a snapshot never.
            Version::Branch(_) => reader.unwritable_hint(),
            _ => reader,
        }));
    }
    let repo = match registry.repos.get(&id) {
        Some(repo) => Arc::clone(repo),
        None => {
            let repo = Arc::new(Repo::open(root, options)?);
            registry.repos.insert(id.clone(), Arc::clone(&repo));
            repo
        }
    };
    let store = Arc::new(match &version {
        Version::Branch(branch) => repo.writer(branch)?,
        _ => repo.reader(&version)?,
    });
    registry.stores.push(Entry {
        identity: id,
        version,
        store: store.clone(),
        explicit: false,
    });
    Ok(store)
}

/// Commit every automatic session that changed anything, with `message`, and close them all
/// (the next opening begins anew). Sessions are committed in the order they began; the first
/// failure stops there and is returned (sessions committed before it stay committed).
pub fn commit_automatic(message: &str) -> StoreResult<Vec<Committed>> {
    let entries: Vec<Entry> = {
        let mut registry = registry();
        registry.repos.clear();
        let (automatic, explicit) = std::mem::take(&mut registry.stores)
            .into_iter()
            .partition(|e| !e.explicit);
        registry.stores = explicit;
        automatic
    };
    let mut committed = Vec::new();
    for entry in entries {
        let Version::Branch(branch) = &entry.version else {
            continue;
        };
        if !entry.store.has_changes() {
            continue;
        }
        let snapshot = entry.store.commit(message)?;
        committed.push(Committed {
            repository: entry.store.repository.clone(),
            branch: branch.clone(),
            snapshot,
        });
    }
    Ok(committed)
}

/// Close every automatic session without committing (what a failed command does).
pub fn discard_automatic() {
    let mut registry = registry();
    registry.repos.clear();
    registry.stores.retain(|e| e.explicit);
}

/// A writable session on a branch, registered for this process: while it is open, every
/// path or URL inside the repository at that branch opens as this session (every writer of
/// neurochunk writes into it, readers see its changes), and nobody else sees them until
/// [`Session::commit`]. Dropping it without a commit discards the changes.
///
/// ```
/// use neurochunk_store::icechunk::{Repo, Session};
/// use neurochunk_store::{RemoteOptions, Store, StoreLocation};
///
/// let dir = tempfile::tempdir()?;
/// let repo = StoreLocation::Local(dir.path().join("repo"));
/// Repo::create(&repo, &RemoteOptions::default())?;
/// let session = Session::begin(&repo, "main", &RemoteOptions::default())?;
/// // Any location inside the repository now opens as the session.
/// let (store, key) = StoreLocation::Local(dir.path().join("repo/group"))
///     .open(&RemoteOptions::default())?;
/// assert_eq!(key, "group");
/// store.set("group/zarr.json", br#"{"zarr_format":3,"node_type":"group"}"#.to_vec().into())?;
/// let id = session.commit("a group")?;
/// assert_eq!(id.map(|c| c.branch), Some("main".to_string()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Session {
    pub(super) identity: String,
    pub(super) branch: String,
    pub(super) store: Arc<IcechunkStore>,
    open: bool,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("repository", &self.store.repository)
            .field("branch", &self.branch)
            .finish()
    }
}

impl Session {
    /// Begin a session on `branch` of the repository at `location`. Refused when this
    /// process already has one open on that branch.
    pub fn begin(
        location: &StoreLocation,
        branch: &str,
        options: &RemoteOptions,
    ) -> StoreResult<Session> {
        let id = identity(location);
        let version = Version::Branch(branch.to_string());
        let busy = |registry: &Registry| {
            registry
                .stores
                .iter()
                .any(|e| e.identity == id && e.version == version && e.explicit)
        };
        if busy(&registry()) {
            return Err(already_open(location.display(), branch));
        }
        let repo = Repo::open(location, options)?;
        let store = Arc::new(repo.writer(branch)?);
        register_explicit(&id, branch, store.clone())?;
        Ok(Session {
            identity: id,
            branch: branch.to_string(),
            store,
            open: true,
        })
    }

    /// The session's store (what any location inside the repository opens as meanwhile).
    pub fn store(&self) -> Arc<IcechunkStore> {
        Arc::clone(&self.store)
    }

    /// The branch the session commits to.
    pub fn branch(&self) -> &str {
        &self.branch
    }

    /// True when the session holds changes not committed yet.
    pub fn has_changes(&self) -> bool {
        self.store.has_changes()
    }

    /// Commit the session's changes as one snapshot with `message` and close it; `None`
    /// when it changed nothing (no snapshot is made). A conflict with a newer commit that
    /// cannot be rebased is an error naming what both changed; the session is closed either
    /// way.
    pub fn commit(mut self, message: &str) -> StoreResult<Option<Committed>> {
        self.close();
        if !self.store.has_changes() {
            return Ok(None);
        }
        let snapshot = self.store.commit(message)?;
        Ok(Some(Committed {
            repository: self.store.repository.clone(),
            branch: self.branch.clone(),
            snapshot,
        }))
    }

    fn close(&mut self) {
        if std::mem::take(&mut self.open) {
            unregister(&self.identity, &self.store);
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}

/// Make `store` the process's session of `branch` of the repository `identity` (hiding an
/// automatic session of that branch); refused when an explicit one is open there.
pub(super) fn register_explicit(
    identity: &str,
    branch: &str,
    store: Arc<IcechunkStore>,
) -> StoreResult<()> {
    let version = Version::Branch(branch.to_string());
    let mut registry = registry();
    let busy = registry
        .stores
        .iter()
        .any(|e| e.identity == identity && e.version == version && e.explicit);
    if busy {
        return Err(already_open(identity, branch));
    }
    registry
        .stores
        .retain(|e| !(e.identity == identity && e.version == version));
    registry.stores.push(Entry {
        identity: identity.to_string(),
        version,
        store,
        explicit: true,
    });
    Ok(())
}

/// Remove `store`, registered by [`register_explicit`], from the process's sessions.
pub(super) fn unregister(identity: &str, store: &Arc<IcechunkStore>) {
    registry()
        .stores
        .retain(|e| !(e.identity == identity && Arc::ptr_eq(&e.store, store)));
}

fn already_open(location: impl std::fmt::Display, branch: &str) -> StoreError {
    StoreError::backend(
        location.to_string(),
        "",
        format!("a session on branch '{branch}' is already open in this process"),
    )
}
