//! Staging directories: a writer that replaces a directory tree builds the new tree in a
//! hidden sibling ([`StagedDir::beside`]) and publishes it with [`StagedDir::publish`]
//! ([`replace_dir`], an atomic exchange where the platform offers it), so that the destination
//! names a complete tree, the old one or the new one, at every moment, even when the writer is
//! killed.
//!
//! - **Names.** A staging directory of `dir/name` is `dir/.name.neurochunk-staging-<pid>-<n>`:
//!   hidden (readers of a hierarchy skip names starting with `.`) and recognisable.
//! - **Stale directories.** A killed writer leaves its staging directory behind. The next
//!   writer of the same destination removes the ones whose writer is gone
//!   ([`remove_stale`]): a live writer holds an exclusive `flock` on its staging directory
//!   for as long as it runs, so a directory whose lock is free and whose process id is not
//!   alive is stale. (After a publish the replaced tree briefly lives at the staging name,
//!   unlocked, while its live writer removes it; the process id keeps it from other
//!   cleaners. A directory whose process id was reused by another process stays until that
//!   process ends.) The hidden names of earlier
//!   versions and of the fallback publish (`.name.partial-<pid>-<n>`,
//!   `.name.replaced-<pid>-<n>`) are removed under the same rule.
//! - **Concurrent writers.** Each writer stages on its own; the publish step (the existence
//!   check and the exchange or rename) runs under an exclusive `flock` on the destination's
//!   parent directory, so publishes of one destination are serialised: the second writer waits
//!   for the first, then replaces its tree. The destination always holds one writer's
//!   complete tree, that of the last to publish.
//! - **Symbolic links.** Staging follows [`FsStore`](crate::FsStore)'s policy for writes
//!   ([`resolve_target`]): a destination reached through symbolic links is staged and
//!   published where the links lead (beside the real destination, never through a link), and
//!   a destination below a store's root whose path leads out of the root through a link is
//!   refused with [`StoreError::SymlinkOutsideRoot`] before anything is created.
//! - **What is replaced.** [`StagedDir::replacing`] stages a tree of one [`TreeKind`] and
//!   replaces the destination only when [`check_dir`] allows it ([`Overwrite`]: by default
//!   only an earlier tree of that kind, never a directory holding anything else); the check
//!   runs before the staging directory is created and again under the publish lock, just
//!   before the exchange, so files put into the destination meanwhile are not lost either.
//! - **Durability.** With [`Durability::Fsync`] ([`StagedDir::with_durability`]) the publish
//!   syncs the destination's directory after the new tree is in place; the tree's own files
//!   and directories are synced by the store that wrote them.
//! - **Temporary files.** A killed writer of a single value leaves its temporary file
//!   (`.neurochunk-tmp-<pid>-<n>`, hidden and skipped by listings);
//!   [`remove_stale_temp_files`] removes those of processes that are gone.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::fs_publish::{replace_dir, PublishError, PublishMethod};
use crate::fsync::sync_dir;
use crate::replace::{check_dir, Overwrite, ReplaceError, TreeKind};
use crate::{Durability, StoreError};

/// The marker in the names of staging directories.
pub const STAGING_MARKER: &str = ".neurochunk-staging-";

/// Distinguishes the staging directories of one process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A hidden directory beside a destination where its new tree is built; removed when dropped
/// unpublished.
#[derive(Debug)]
pub struct StagedDir {
    path: PathBuf,
    target: PathBuf,
    /// The open directory holding the writer's lock (released when the process ends).
    _lock: Option<File>,
    published: bool,
    durability: Durability,
    /// What the destination may hold to be replaced (checked again when publishing).
    replacing: Option<(&'static dyn TreeKind, Overwrite)>,
}

impl StagedDir {
    /// Create a fresh, locked staging directory beside `target` (whose parent must exist),
    /// after removing the stale staging directories of `target` left by killed writers.
    pub fn beside(target: &Path) -> io::Result<StagedDir> {
        let name = file_name(target)?;
        remove_stale(target);
        let pid = std::process::id();
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = target.with_file_name(format!(".{name}{STAGING_MARKER}{pid}-{n}"));
            match fs::create_dir(&path) {
                Ok(()) => {
                    let lock = lock_dir(&path, true)?;
                    return Ok(StagedDir {
                        path,
                        target: target.to_path_buf(),
                        _lock: lock,
                        published: false,
                        durability: Durability::Buffered,
                        replacing: None,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("cannot create '{}': {e}", path.display()),
                    ))
                }
            }
        }
    }

    /// Like [`StagedDir::beside`], for a tree of `kind` that replaces `target` only as
    /// `overwrite` allows ([`check_dir`]): checked first, before anything is created, and
    /// again by [`StagedDir::publish`] under the publish lock. A destination holding anything
    /// that is not of `kind` is refused with [`ReplaceError::Refused`] (unless
    /// [`Overwrite::Anything`]), naming what would be lost.
    pub fn replacing(
        target: &Path,
        kind: &'static dyn TreeKind,
        overwrite: Overwrite,
    ) -> Result<StagedDir, ReplaceError> {
        check_dir(target, kind, overwrite)?;
        let staged = StagedDir::beside(target).map_err(|source| ReplaceError::Io {
            path: target.display().to_string(),
            source,
        })?;
        Ok(staged.guarded(kind, overwrite))
    }

    /// This staging directory, published only when the destination then holds nothing but
    /// a tree of `kind` (or as `overwrite` allows): see [`StagedDir::replacing`]. For a
    /// directory taken over with [`StagedDir::adopt_stale`].
    pub fn guarded(mut self, kind: &'static dyn TreeKind, overwrite: Overwrite) -> Self {
        self.replacing = Some((kind, overwrite));
        self
    }

    /// Take over the staging directory of `target` that a killed writer left behind (the
    /// most recently modified one, when several are), to finish its tree: the directory is
    /// renamed to a staging name of this process and locked, so no other writer removes it.
    /// `None` when there is none; the other stale staging directories are removed either way.
    /// On non-Unix platforms, where a live writer cannot be told from a dead one, nothing is
    /// taken over.
    pub fn adopt_stale(target: &Path) -> io::Result<Option<StagedDir>> {
        let name = file_name(target)?;
        let mut candidates = Vec::new();
        if cfg!(unix) {
            if let Ok(entries) = fs::read_dir(parent_dir(target)) {
                for entry in entries.flatten() {
                    let entry_name = entry.file_name().to_string_lossy().into_owned();
                    let Some(pid) = staging_pid(&entry_name, &name) else {
                        continue;
                    };
                    let own_kind = entry_name
                        .strip_prefix(&format!(".{name}"))
                        .is_some_and(|rest| rest.starts_with(STAGING_MARKER));
                    let Ok(meta) = fs::symlink_metadata(entry.path()) else {
                        continue;
                    };
                    if own_kind && meta.is_dir() && !process_alive(pid) {
                        let modified = meta.modified().ok();
                        candidates.push((modified, entry.path()));
                    }
                }
            }
        }
        candidates.sort();
        let mut adopted = None;
        while let Some((_, old)) = candidates.pop() {
            // Another writer taking it over holds its lock.
            let Ok(lock) = lock_dir(&old, true) else {
                continue;
            };
            let pid = std::process::id();
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = target.with_file_name(format!(".{name}{STAGING_MARKER}{pid}-{n}"));
            if fs::rename(&old, &path).is_err() {
                continue; // gone meanwhile
            }
            adopted = Some(StagedDir {
                path,
                target: target.to_path_buf(),
                _lock: lock,
                published: false,
                durability: Durability::Buffered,
                replacing: None,
            });
            break;
        }
        remove_stale(target);
        Ok(adopted)
    }

    /// The same staging directory, published as durably as `durability` says: with
    /// [`Durability::Fsync`], [`StagedDir::publish`] syncs the directory holding the
    /// destination once the new tree is in place, so the publish survives an OS crash or a
    /// power loss when it returns (the tree's files and directories must have been synced by
    /// whoever wrote them, e.g. an [`FsStore`](crate::FsStore) with the same durability).
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// How durable the publish is.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// The staging directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The destination it will be published at.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Put the staged tree in place at the destination with [`replace_dir`], holding the
    /// destination's publish lock (see the module documentation). On failure the staging
    /// directory is removed.
    pub fn publish(mut self) -> Result<PublishMethod, PublishError> {
        let parent = parent_dir(&self.target);
        let _guard = lock_dir(&parent, false).map_err(|source| PublishError {
            action: "cannot lock the directory holding",
            path: self.target.clone(),
            source,
        })?;
        if let Some((kind, overwrite)) = self.replacing {
            // Files may have been put into the destination while the tree was built.
            check_dir(&self.target, kind, overwrite).map_err(|e| match e {
                ReplaceError::Refused { reason, .. } => PublishError {
                    action: "refusing to replace",
                    path: self.target.clone(),
                    source: io::Error::other(reason),
                },
                ReplaceError::Io { source, .. } => PublishError {
                    action: "cannot look at the destination before replacing",
                    path: self.target.clone(),
                    source,
                },
                ReplaceError::Store(e) => PublishError {
                    action: "cannot look at the destination before replacing",
                    path: self.target.clone(),
                    source: io::Error::other(e.to_string()),
                },
            })?;
        }
        let result = replace_dir(&self.path, &self.target);
        if result.is_ok() {
            self.published = true;
            if self.durability == Durability::Fsync {
                sync_dir(&parent).map_err(|source| PublishError {
                    action: "published, but cannot sync the directory holding",
                    path: self.target.clone(),
                    source,
                })?;
            }
        }
        result
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        if !self.published {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

fn file_name(target: &Path) -> io::Result<String> {
    target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("'{}' has no file name", target.display()),
            )
        })
}

fn parent_dir(target: &Path) -> PathBuf {
    match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Whether `name` (one path component) is a staging or replaced-tree directory name of
/// this module or of [`replace_dir`]'s fallback, of any destination.
pub fn is_staging_name(name: &str) -> bool {
    name.starts_with('.')
        && [STAGING_MARKER, ".partial-", ".replaced-"]
            .iter()
            .any(|m| name.contains(m))
}

/// The process id in a staging name of destination `name`, when `entry` is one.
fn staging_pid(entry: &str, name: &str) -> Option<u32> {
    let rest = entry.strip_prefix('.')?.strip_prefix(name)?;
    let rest = [STAGING_MARKER, ".partial-", ".replaced-"]
        .iter()
        .find_map(|m| rest.strip_prefix(m))?;
    let (pid, n) = rest.split_once('-')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// Remove the stale staging directories of `target` (see the module documentation); returns
/// how many were removed. Failures are ignored: a directory that cannot be removed now is
/// tried again by the next writer.
pub fn remove_stale(target: &Path) -> usize {
    let Ok(name) = file_name(target) else {
        return 0;
    };
    let Ok(entries) = fs::read_dir(parent_dir(target)) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let entry_name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = staging_pid(&entry_name, &name) else {
            continue;
        };
        let path = entry.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        // A live writer's directory is left alone, without even taking its lock to look (a
        // writer that just created its directory must be able to lock it).
        if !meta.is_dir() || process_alive(pid) {
            continue;
        }
        // A process of that id is gone; its lock, if it is held, is another process's (the
        // id reused): leave it.
        let Ok(lock) = lock_dir(&path, true) else {
            continue;
        };
        if fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
        drop(lock);
    }
    removed
}

/// Where a new tree for `target` is staged and published, following the symbolic link policy
/// of [`FsStore`](crate::FsStore) writes. `root` is the root of the store `target` belongs to:
/// `target` itself for a whole store, or an ancestor of it when `target` is a node inside a
/// store.
///
/// - The result is `target` with every symbolic link among its existing components resolved
///   (the parts that do not exist yet appended as they are), so that a tree is staged beside
///   the real destination and published there: writing to a destination that is, or lies
///   below, a link writes where the link leads and keeps the link.
/// - Below `root`, every existing component of `target` (`target` included) that is a symbolic
///   link must resolve inside the (resolved) root, as for a store write; a link leading
///   outside, or one that does not resolve, is refused with
///   [`StoreError::SymlinkOutsideRoot`] (`key`: `target`'s path below the root), and nothing
///   is created. The root itself may be, or lie below, a link.
pub fn resolve_target(root: &Path, target: &Path) -> Result<PathBuf, StoreError> {
    let resolved = resolve_existing(target);
    let Ok(below) = target.strip_prefix(root) else {
        return Ok(resolved);
    };
    if below.as_os_str().is_empty() {
        return Ok(resolved);
    }
    let key = below
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    let real_root = resolve_existing(root);
    let mut path = root.to_path_buf();
    for part in below.components() {
        path.push(part.as_os_str());
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => match fs::canonicalize(&path) {
                Ok(to) if to.starts_with(&real_root) => {}
                other => {
                    let to = other.unwrap_or_else(|_| fs::read_link(&path).unwrap_or_default());
                    return Err(StoreError::SymlinkOutsideRoot {
                        key,
                        action: "write",
                        link: path.display().to_string().into(),
                        target: to.display().to_string().into(),
                    });
                }
            },
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(resolved)
}

/// `path` with its deepest existing ancestor (or itself) canonicalised and the rest appended.
fn resolve_existing(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut current = path;
    loop {
        let probe = if current.as_os_str().is_empty() {
            Path::new(".")
        } else {
            current
        };
        if let Ok(real) = fs::canonicalize(probe) {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        match (current.file_name(), current.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_os_string());
                current = parent;
            }
            // Nothing resolves (`..` at the end, or no current directory): as given.
            _ => return path.to_path_buf(),
        }
    }
}

/// Remove the temporary files of killed single-value writers in `dir`
/// (`.neurochunk-tmp-<pid>-<n>`, left when a process dies between creating a value's file and
/// renaming it into place) whose process is gone; returns how many were removed. Files of
/// live processes stay (a process id reused by another process keeps its files until that
/// process ends). Failures are ignored.
pub fn remove_stale_temp_files(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(crate::filesystem::TEMP_PREFIX)
            .and_then(|rest| rest.split_once('-'))
            .filter(|(_, n)| n.parse::<u64>().is_ok())
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if entry.file_type().is_ok_and(|t| t.is_file())
            && !process_alive(pid)
            && fs::remove_file(entry.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// Open the directory `dir` and take an exclusive `flock` on it: without waiting when
/// `try_only` (a held lock is [`io::ErrorKind::WouldBlock`]), otherwise waiting for it.
/// `None` where there are no such locks.
#[cfg(target_os = "linux")]
fn lock_dir(dir: &Path, try_only: bool) -> io::Result<Option<File>> {
    use std::os::unix::io::AsRawFd;
    let file = File::open(dir)?;
    let op = if try_only {
        libc::LOCK_EX | libc::LOCK_NB
    } else {
        libc::LOCK_EX
    };
    loop {
        // SAFETY: the descriptor is open for the duration of the call.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(Some(file));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Err(io::Error::from(io::ErrorKind::WouldBlock)),
            _ => return Err(e),
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn lock_dir(_dir: &Path, _try_only: bool) -> io::Result<Option<File>> {
    Ok(None)
}

/// Whether a process with this id exists (a process of another user counts).
#[cfg(target_os = "linux")]
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid == 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Without a way to ask, every process counts as alive: nothing is removed.
#[cfg(not(target_os = "linux"))]
fn process_alive(_pid: u32) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_staging_directories_are_taken_over_whole() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.zarr");
        // Nothing to take over.
        assert!(StagedDir::adopt_stale(&target).unwrap().is_none());
        // Two directories of dead writers (pids no process has: beyond the kernel's limit)
        // and one of a live writer.
        let dead_old = dir
            .path()
            .join(format!(".out.zarr{STAGING_MARKER}4194305-0"));
        let dead_new = dir
            .path()
            .join(format!(".out.zarr{STAGING_MARKER}4194306-0"));
        let live = StagedDir::beside(&target).unwrap();
        for (d, content) in [(&dead_old, "old"), (&dead_new, "new")] {
            fs::create_dir(d).unwrap();
            fs::write(d.join("chunk"), content).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let adopted = StagedDir::adopt_stale(&target).unwrap().unwrap();
        // The most recent one, renamed to this process's name, its content kept.
        assert_eq!(
            fs::read_to_string(adopted.path().join("chunk")).unwrap(),
            "new"
        );
        assert!(adopted
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .contains(&format!("{}-", std::process::id())));
        assert!(
            !dead_new.exists() && !dead_old.exists(),
            "the other stale one is removed"
        );
        assert!(live.path().exists(), "a live writer's directory stays");
        // Published like any staged tree.
        adopted.publish().unwrap();
        assert_eq!(fs::read_to_string(target.join("chunk")).unwrap(), "new");
    }

    #[test]
    fn staging_names_carry_the_destination_and_the_pid() {
        assert_eq!(
            staging_pid(".a.zarr.neurochunk-staging-12-3", "a.zarr"),
            Some(12)
        );
        assert_eq!(staging_pid(".a.zarr.partial-12-0", "a.zarr"), Some(12));
        assert_eq!(staging_pid(".a.zarr.replaced-7-1", "a.zarr"), Some(7));
        assert_eq!(
            staging_pid(".b.zarr.neurochunk-staging-12-3", "a.zarr"),
            None
        );
        assert_eq!(
            staging_pid(".a.zarr.neurochunk-staging-x-3", "a.zarr"),
            None
        );
        assert!(is_staging_name(".x.neurochunk-staging-1-2"));
        assert!(!is_staging_name("x.neurochunk-staging-1-2"));
    }

    #[test]
    fn stale_directories_go_and_live_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.zarr");
        // A dead writer's directory (pid beyond any pid_max).
        let dead = dir.path().join(".out.zarr.neurochunk-staging-4294967-0");
        fs::create_dir_all(dead.join("sub")).unwrap();
        fs::write(dead.join("sub/x"), b"x").unwrap();
        let other = dir.path().join(".other.neurochunk-staging-4294967-0");
        fs::create_dir(&other).unwrap();
        let live = StagedDir::beside(&target).unwrap();
        assert!(!dead.exists(), "the dead writer's directory is still there");
        assert!(
            other.exists(),
            "another destination's directory was removed"
        );
        assert!(live.path().is_dir());
        // A second writer leaves the first, live, one alone.
        let second = StagedDir::beside(&target).unwrap();
        assert!(live.path().is_dir());
        fs::write(second.path().join("marker"), b"2").unwrap();
        second.publish().unwrap();
        assert_eq!(fs::read(target.join("marker")).unwrap(), b"2");
        let path = live.path().to_path_buf();
        drop(live);
        assert!(
            !path.exists(),
            "an unpublished directory is removed when dropped"
        );
    }

    #[test]
    fn concurrent_publishes_leave_one_complete_tree() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let target = target.clone();
                std::thread::spawn(move || {
                    let staged = StagedDir::beside(&target).unwrap();
                    fs::create_dir(staged.path().join("sub")).unwrap();
                    fs::write(staged.path().join("a"), i.to_string()).unwrap();
                    fs::write(staged.path().join("sub/b"), i.to_string()).unwrap();
                    staged.publish().unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let a = fs::read_to_string(target.join("a")).unwrap();
        assert_eq!(fs::read_to_string(target.join("sub/b")).unwrap(), a);
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["out"]);
    }

    #[test]
    fn stale_temporary_files_go_and_live_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dir.path().join(".neurochunk-tmp-4294967-3");
        let live = dir
            .path()
            .join(format!(".neurochunk-tmp-{}-3", std::process::id()));
        let other = dir.path().join(".neurochunk-tmp-notapid");
        let data = dir.path().join("table.parquet");
        for f in [&dead, &live, &other, &data] {
            fs::write(f, b"x").unwrap();
        }
        assert_eq!(remove_stale_temp_files(dir.path()), 1);
        assert!(!dead.exists());
        assert!(live.exists() && other.exists() && data.exists());
    }

    #[cfg(unix)]
    #[test]
    fn staging_resolves_links_inside_the_root_and_refuses_links_out_of_it() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path().join("c.zarr");
        fs::create_dir_all(root.join("real/deeper")).unwrap();
        let real_root = fs::canonicalize(&root).unwrap();
        symlink("real", root.join("alias")).unwrap();
        symlink(outside.path(), root.join("out")).unwrap();
        symlink(root.join("real/deeper"), root.join("real/node")).unwrap();
        symlink(outside.path().join("gone"), root.join("dangling")).unwrap();

        // Plain paths, existing or not, resolve to themselves.
        assert_eq!(
            resolve_target(&root, &root.join("real/new")).unwrap(),
            real_root.join("real/new")
        );
        assert_eq!(
            resolve_target(&root, &root.join("x/y/z")).unwrap(),
            real_root.join("x/y/z")
        );
        // A parent reached through a link inside the root: staged where the link leads.
        assert_eq!(
            resolve_target(&root, &root.join("alias/new")).unwrap(),
            real_root.join("real/new")
        );
        // The destination itself a link inside the root: replaced where it leads.
        assert_eq!(
            resolve_target(&root, &root.join("alias/node")).unwrap(),
            real_root.join("real/deeper")
        );
        // Links leading out of the root, or nowhere, are refused, with nothing created.
        for (target, link) in [
            (root.join("out/new"), root.join("out")),
            (root.join("out/a/b"), root.join("out")),
            (root.join("dangling/x"), root.join("dangling")),
            (root.join("out"), root.join("out")),
        ] {
            match resolve_target(&root, &target) {
                Err(e @ StoreError::SymlinkOutsideRoot { .. }) => {
                    assert!(e.to_string().contains(&link.display().to_string()), "{e}");
                }
                other => panic!("{}: {other:?}", target.display()),
            }
        }
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
        // The root itself may be a link, or lie below one.
        let root_link = dir.path().join("root-link");
        symlink(&root, &root_link).unwrap();
        assert_eq!(resolve_target(&root_link, &root_link).unwrap(), real_root);
        assert_eq!(
            resolve_target(&root_link, &root_link.join("alias/new")).unwrap(),
            real_root.join("real/new")
        );
        // A staging directory of a resolved destination is created at the real location.
        let staged =
            StagedDir::beside(&resolve_target(&root, &root.join("alias/new")).unwrap()).unwrap();
        assert!(staged.path().starts_with(real_root.join("real")));
        fs::write(staged.path().join("marker"), b"1").unwrap();
        staged.publish().unwrap();
        assert!(root.join("real/new/marker").is_file());
        assert!(root.join("alias/new/marker").is_file());
    }
}
