//! Which existing destinations a writer may replace.
//!
//! A writer of a whole tree (an array, a hierarchy, an NWB file, a Hive table) replaces its
//! destination: the old tree is swapped out and removed. That is what a user wants when the
//! destination is an earlier tree of the same kind, and data loss when it is anything else (a
//! directory of unrelated files, a link to one). So before replacing, a writer asks this module
//! whether the destination holds anything that is not part of such a tree:
//!
//! - [`check_dir`] walks a local directory (without following symbolic links) and
//!   [`check_prefix`] lists a prefix of any store (a local store's directory is walked like
//!   [`check_dir`]); both classify every value by name with a [`TreeKind`];
//! - [`check_file`] and [`check_value`] look at the first and last bytes of a single file
//!   that a file writer (a table file, a reference file) would replace.
//!
//! Each refuses with [`ReplaceError::Refused`], naming the destination and what would be lost,
//! unless the caller asked for [`Overwrite::Anything`]. A missing destination, an empty
//! directory and a tree of the writer's kind are replaced. Classification is by name only
//! (no value is read): a [`TreeKind`] names the files that make a directory one of its nodes
//! (*anchors*, such as `zarr.json`) and the paths it owns below them (chunk keys).
//!
//! Hidden names that neurochunk itself leaves behind (temporary files of killed writers,
//! staging directories, the marker of a resumable conversion: hidden names containing
//! `.neurochunk-`) belong to every kind.
//!
//! ```
//! use neurochunk_store::replace::{check_prefix, Overwrite, ReplaceError, TreeKind};
//! use neurochunk_store::{Bytes, MemoryStore, Store};
//!
//! /// Directories holding `meta.json` and numbered values below them.
//! #[derive(Debug)]
//! struct Numbered;
//! impl TreeKind for Numbered {
//!     fn name(&self) -> &'static str { "a numbered tree" }
//!     fn is_anchor(&self, file_name: &str) -> bool { file_name == "meta.json" }
//!     fn owns(&self, rest: &[&str], anchored: bool) -> bool {
//!         anchored
//!             && (rest == ["meta.json"]
//!                 || rest.iter().all(|part| part.bytes().all(|b| b.is_ascii_digit())))
//!     }
//! }
//!
//! let store = MemoryStore::new();
//! store.set("out/meta.json", Bytes::from_static(b"{}"))?;
//! store.set("out/0/1", Bytes::from_static(b"x"))?;
//! check_prefix(&store, "out", "out", &Numbered, Overwrite::Own)?;
//!
//! store.set("out/notes.txt", Bytes::from_static(b"my notes"))?;
//! let err = check_prefix(&store, "out", "out", &Numbered, Overwrite::Own).unwrap_err();
//! assert!(matches!(&err, ReplaceError::Refused { lost, .. } if lost == &["notes.txt"]));
//! assert!(err.to_string().contains("notes.txt"));
//! // Asked for explicitly, anything is replaced.
//! check_prefix(&store, "out", "out", &Numbered, Overwrite::Anything)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use crate::{ByteRange, Store, StoreError};

/// How a writer treats what is already at its destination.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Overwrite {
    /// Never replace: a destination that exists and is not an empty directory is refused.
    Never,
    /// Replace a destination that holds nothing but a tree of the writer's kind (an earlier
    /// version of its output); refuse anything else. The default.
    #[default]
    Own,
    /// Replace whatever is at the destination (the command line's `--overwrite`).
    Anything,
}

/// A kind of tree a writer may replace, recognised by the names of its values.
///
/// The walk visits the destination's directories from the top. A directory holding a file
/// for which [`is_anchor`](TreeKind::is_anchor) is true is a node of the kind; every value is
/// then judged by [`owns`](TreeKind::owns) with its path below the nearest such directory
/// (`anchored`), or below the destination when no directory above it is one.
pub trait TreeKind: Send + Sync + Debug {
    /// What such a tree is, for messages: `"a Zarr or N5 node"`.
    fn name(&self) -> &'static str;
    /// Whether a file of this name makes the directory holding it a node of the kind.
    fn is_anchor(&self, file_name: &str) -> bool;
    /// Whether the value at `rest` (path components below the nearest node directory when
    /// `anchored`, below the destination otherwise) belongs to a tree of the kind.
    fn owns(&self, rest: &[&str], anchored: bool) -> bool;
}

/// Why a destination was not replaced, or could not be looked at.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplaceError {
    /// The destination holds something the writer would destroy; nothing was written.
    #[error("refusing to replace '{destination}': {reason}")]
    Refused {
        /// The destination, as a person names it (a path, a URL).
        destination: String,
        /// What is there and what would be lost, in words.
        reason: String,
        /// Up to [`LISTED`] of the values that would be lost, relative to the destination.
        lost: Vec<String>,
    },
    /// The destination (or a directory in it) could not be read.
    #[error("cannot look at '{path}' before replacing it: {source}")]
    Io {
        /// The path concerned.
        path: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Listing the destination in its store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The words every refusal's message starts with (after any prefix a caller adds).
pub const REFUSAL: &str = "refusing to replace '";

/// How many of the values that would be lost a refusal names.
pub const LISTED: usize = 5;

/// The walk stops counting values that would be lost past this many.
const COUNT_LIMIT: usize = 10_000;

/// Whether `name` is a hidden name neurochunk leaves behind (temporary files, staging
/// directories, conversion markers), which belong to a tree of every kind.
pub fn is_own_hidden(name: &str) -> bool {
    name.starts_with('.') && name.contains(".neurochunk-") || crate::staging::is_staging_name(name)
}

/// Check that the local directory `dest` may be replaced by a tree of `kind`: it is missing,
/// empty, or holds nothing but such a tree (with [`Overwrite::Own`]); anything, with
/// [`Overwrite::Anything`]. A file (or another non-directory, a dangling symbolic link) at
/// `dest` is refused unless [`Overwrite::Anything`]. Symbolic links inside the tree are not
/// followed: a link is judged by its own name, as the replace removes the link, not its target.
pub fn check_dir(
    dest: &Path,
    kind: &dyn TreeKind,
    overwrite: Overwrite,
) -> Result<(), ReplaceError> {
    let shown = || dest.display().to_string();
    let meta = match fs::symlink_metadata(dest) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(ReplaceError::Io {
                path: shown(),
                source,
            })
        }
        Ok(meta) => meta,
    };
    if overwrite == Overwrite::Anything {
        return Ok(());
    }
    if !meta.is_dir() {
        let what = if !meta.file_type().is_symlink() {
            "a file"
        } else if fs::metadata(dest).is_err() {
            "a symbolic link that leads nowhere"
        } else {
            // Callers resolve a destination's links first (`staging::resolve_target`).
            "a symbolic link"
        };
        return Err(refused(
            shown(),
            format!("it is {what}, not {}", kind.name()),
            vec![],
        ));
    }
    let tree = DiskTree(dest);
    judge(&tree, &shown(), kind, overwrite)
}

/// Check that `prefix` of `store` (`""`: the whole store) may be replaced by a tree of `kind`,
/// as [`check_dir`] checks a directory; `name` names the destination in errors. Where the
/// store's values are local files ([`Store::local_path`]) their directory is walked, so that
/// hidden files, links and names that are not valid keys count too; otherwise the prefix is
/// listed ([`Store::list_prefix`]).
pub fn check_prefix(
    store: &dyn Store,
    prefix: &str,
    name: &str,
    kind: &dyn TreeKind,
    overwrite: Overwrite,
) -> Result<(), ReplaceError> {
    let prefix = prefix.trim_end_matches('/');
    if let Some(path) = store.local_path(prefix) {
        return check_dir(&path, kind, overwrite).map_err(|e| match e {
            ReplaceError::Refused { reason, lost, .. } => refused(name.to_string(), reason, lost),
            other => other,
        });
    }
    if overwrite == Overwrite::Anything {
        return Ok(());
    }
    let listed = if prefix.is_empty() {
        String::new()
    } else {
        format!("{prefix}/")
    };
    let keys = store.list_prefix(&listed)?;
    let tree = KeyTree::new(keys.iter().map(|k| &k[listed.len()..]));
    judge(&tree, name, kind, overwrite)
}

/// Check that the local file `dest` may be replaced by a file the writer makes: missing, or
/// (with [`Overwrite::Own`]) a file that `is_own` recognises from its first and last bytes
/// (up to [`PEEK`] of each; both the whole file when it is shorter). `what` names such files
/// for messages (`"a Parquet or Arrow IPC file"`). A directory at `dest` is refused unless it
/// is empty or [`Overwrite::Anything`].
pub fn check_file(
    dest: &Path,
    what: &str,
    is_own: impl FnOnce(&[u8], &[u8]) -> bool,
    overwrite: Overwrite,
) -> Result<(), ReplaceError> {
    let shown = || dest.display().to_string();
    let io_err = |source| ReplaceError::Io {
        path: shown(),
        source,
    };
    let meta = match fs::symlink_metadata(dest) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(io_err(source)),
        Ok(meta) => meta,
    };
    if overwrite == Overwrite::Anything {
        return Ok(());
    }
    if meta.is_dir() {
        let empty = fs::read_dir(dest).map_err(io_err)?.next().is_none();
        if empty {
            return Ok(());
        }
        return Err(refused(
            shown(),
            format!("it is a directory, not {what}"),
            vec![],
        ));
    }
    if overwrite == Overwrite::Never {
        return Err(refused(shown(), "it already exists".into(), vec![]));
    }
    // A link to a file is replaced, not followed: judge what it leads to all the same, since
    // a reader of the link would see the new file.
    let mut file = fs::File::open(dest).map_err(io_err)?;
    let (head, tail) = peek(&mut file).map_err(io_err)?;
    if head.is_empty() || is_own(&head, &tail) {
        return Ok(());
    }
    Err(refused(shown(), format!("it is not {what}"), vec![]))
}

/// [`check_file`] for the value at `key` of `store` (read with two ranged reads).
pub fn check_value(
    store: &dyn Store,
    key: &str,
    name: &str,
    what: &str,
    is_own: impl FnOnce(&[u8], &[u8]) -> bool,
    overwrite: Overwrite,
) -> Result<(), ReplaceError> {
    if let Some(path) = store.local_path(key) {
        return check_file(&path, what, is_own, overwrite).map_err(|e| match e {
            ReplaceError::Refused { reason, lost, .. } => refused(name.to_string(), reason, lost),
            other => other,
        });
    }
    if overwrite == Overwrite::Anything {
        return Ok(());
    }
    let Some(size) = store.size(key)? else {
        // Nothing there, unless the key is a prefix of other values (a Hive directory).
        let under = store.list_prefix(&format!("{}/", key.trim_end_matches('/')))?;
        if under.is_empty() {
            return Ok(());
        }
        return Err(refused(
            name.to_string(),
            format!(
                "it is a prefix holding {} value{}, not {what}",
                under.len(),
                if under.len() == 1 { "" } else { "s" }
            ),
            vec![],
        ));
    };
    if overwrite == Overwrite::Never {
        return Err(refused(
            name.to_string(),
            "it already exists".into(),
            vec![],
        ));
    }
    if size == 0 {
        return Ok(());
    }
    let peek_len = PEEK.min(size as usize) as u64;
    let parts = store
        .get_ranges(
            key,
            &[
                ByteRange::FromStart {
                    offset: 0,
                    length: Some(peek_len),
                },
                ByteRange::Suffix { length: peek_len },
            ],
        )?
        .unwrap_or_default();
    let (head, tail) = match parts.as_slice() {
        [head, tail] => (head.as_ref(), tail.as_ref()),
        _ => (&[][..], &[][..]),
    };
    if is_own(head, tail) {
        return Ok(());
    }
    Err(refused(
        name.to_string(),
        format!("it is not {what}"),
        vec![],
    ))
}

/// How many bytes of each end of a file [`check_file`] hands to its recogniser.
pub const PEEK: usize = 4096;

fn peek(file: &mut fs::File) -> io::Result<(Vec<u8>, Vec<u8>)> {
    let size = file.metadata()?.len();
    let n = PEEK.min(size as usize);
    let mut head = vec![0; n];
    file.read_exact(&mut head)?;
    let mut tail = vec![0; n];
    file.seek(SeekFrom::Start(size - n as u64))?;
    file.read_exact(&mut tail)?;
    Ok((head, tail))
}

fn refused(destination: String, reason: String, lost: Vec<String>) -> ReplaceError {
    ReplaceError::Refused {
        destination,
        reason,
        lost,
    }
}

/// A tree of directories to walk: a local directory or a listing of keys.
trait Tree {
    /// The files (values, symbolic links, anything but a directory) and the sub-directories
    /// of the directory at `dir` (`""`: the top), each sorted.
    fn list(&self, dir: &str) -> Result<(Vec<String>, Vec<String>), ReplaceError>;
}

struct DiskTree<'a>(&'a Path);

impl Tree for DiskTree<'_> {
    fn list(&self, dir: &str) -> Result<(Vec<String>, Vec<String>), ReplaceError> {
        let path = if dir.is_empty() {
            self.0.to_path_buf()
        } else {
            self.0.join(dir)
        };
        let io_err = |source| ReplaceError::Io {
            path: path.display().to_string(),
            source,
        };
        let (mut files, mut dirs) = (Vec::new(), Vec::new());
        for entry in fs::read_dir(&path).map_err(io_err)? {
            let entry = entry.map_err(io_err)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            // The entry's own type: a symbolic link is a file here, never followed.
            if entry.file_type().map_err(io_err)?.is_dir() {
                dirs.push(name);
            } else {
                files.push(name);
            }
        }
        files.sort();
        dirs.sort();
        Ok((files, dirs))
    }
}

/// Keys of a store listing arranged as directories.
#[derive(Default)]
struct KeyTree {
    dirs: BTreeMap<String, (Vec<String>, Vec<String>)>,
}

impl KeyTree {
    fn new<'k>(keys: impl Iterator<Item = &'k str>) -> Self {
        let mut tree = KeyTree::default();
        tree.dirs.entry(String::new()).or_default();
        for key in keys {
            let (dir, file) = key.rsplit_once('/').unwrap_or(("", key));
            tree.dirs
                .entry(dir.to_string())
                .or_default()
                .0
                .push(file.to_string());
            // Register every ancestor directory with its parent.
            let mut child = dir;
            while !child.is_empty() {
                let (parent, name) = child.rsplit_once('/').unwrap_or(("", child));
                let entry = tree.dirs.entry(parent.to_string()).or_default();
                if entry.1.iter().any(|d| d == name) {
                    break;
                }
                entry.1.push(name.to_string());
                child = parent;
            }
        }
        for (files, dirs) in tree.dirs.values_mut() {
            files.sort();
            dirs.sort();
        }
        tree
    }
}

impl Tree for KeyTree {
    fn list(&self, dir: &str) -> Result<(Vec<String>, Vec<String>), ReplaceError> {
        Ok(self.dirs.get(dir).cloned().unwrap_or_default())
    }
}

/// Walk `tree` from the top and refuse when any value is not `kind`'s (or, for
/// [`Overwrite::Never`], when there is any value at all).
fn judge(
    tree: &dyn Tree,
    name: &str,
    kind: &dyn TreeKind,
    overwrite: Overwrite,
) -> Result<(), ReplaceError> {
    let mut lost = Vec::new();
    let mut count = 0usize;
    // (directory, the nearest node directory at or above it)
    let mut stack: Vec<(String, Option<String>)> = vec![(String::new(), None)];
    while let Some((dir, above)) = stack.pop() {
        let (files, dirs) = tree.list(&dir)?;
        let anchor = if files.iter().any(|f| kind.is_anchor(f)) {
            Some(dir.clone())
        } else {
            above
        };
        let join = |entry: &str| {
            if dir.is_empty() {
                entry.to_string()
            } else {
                format!("{dir}/{entry}")
            }
        };
        for file in &files {
            if is_own_hidden(file) {
                continue;
            }
            let key = join(file);
            let owned = overwrite != Overwrite::Never && {
                let rest = match &anchor {
                    Some(a) if a.is_empty() => key.as_str(),
                    Some(a) => &key[a.len() + 1..],
                    None => key.as_str(),
                };
                let parts: Vec<&str> = rest.split('/').collect();
                kind.owns(&parts, anchor.is_some())
            };
            if !owned {
                count += 1;
                if lost.len() < LISTED {
                    lost.push(key);
                }
            }
        }
        if count >= COUNT_LIMIT {
            break;
        }
        for sub in dirs.iter().rev() {
            if !is_own_hidden(sub) {
                stack.push((join(sub), anchor.clone()));
            }
        }
    }
    if count == 0 {
        return Ok(());
    }
    let reason = if overwrite == Overwrite::Never {
        "it already exists".to_string()
    } else {
        let files = match count {
            1 => "a file".to_string(),
            n if n >= COUNT_LIMIT => format!("{n} or more files"),
            n => format!("{n} files"),
        };
        let shown = lost.join(", ");
        let more = if count > lost.len() { ", …" } else { "" };
        let which = if count == 1 { "is" } else { "are" };
        format!(
            "it holds {files} that {which} not part of {}, which would be lost ({shown}{more})",
            kind.name()
        )
    };
    Err(refused(name.to_string(), reason, lost))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Directories holding `meta` and digit-named values below them.
    #[derive(Debug)]
    struct Digits;
    impl TreeKind for Digits {
        fn name(&self) -> &'static str {
            "a digit tree"
        }
        fn is_anchor(&self, file_name: &str) -> bool {
            file_name == "meta"
        }
        fn owns(&self, rest: &[&str], anchored: bool) -> bool {
            anchored
                && (rest == ["meta"]
                    || rest
                        .iter()
                        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
        }
    }

    fn write(root: &Path, files: &[&str]) {
        for f in files {
            let path = root.join(f);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, b"x").unwrap();
        }
    }

    #[test]
    fn own_trees_pass_and_foreign_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out");
        // Missing and empty destinations are replaced.
        check_dir(&dest, &Digits, Overwrite::Own).unwrap();
        fs::create_dir(&dest).unwrap();
        check_dir(&dest, &Digits, Overwrite::Own).unwrap();
        check_dir(&dest, &Digits, Overwrite::Never).unwrap();
        // A node with values, a nested node, and what neurochunk leaves behind.
        write(
            &dest,
            &[
                "meta",
                "0/1",
                "sub/meta",
                "sub/2/3",
                ".neurochunk-tmp-1-2",
                ".x.neurochunk-staging-1-2/anything",
            ],
        );
        check_dir(&dest, &Digits, Overwrite::Own).unwrap();
        let err = check_dir(&dest, &Digits, Overwrite::Never).unwrap_err();
        assert!(err.to_string().contains("already exists"), "{err}");
        // A foreign file anywhere is named; its count is given.
        write(&dest, &["notes.txt", "sub/2/photo.tif", "loose/4"]);
        match check_dir(&dest, &Digits, Overwrite::Own).unwrap_err() {
            ReplaceError::Refused { reason, lost, .. } => {
                assert_eq!(lost, ["notes.txt", "loose/4", "sub/2/photo.tif"]);
                assert!(reason.contains("3 files"), "{reason}");
                assert!(reason.contains("a digit tree"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        check_dir(&dest, &Digits, Overwrite::Anything).unwrap();
    }

    #[test]
    fn a_directory_without_an_anchor_is_foreign() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &["1", "2/3"]);
        let err = check_dir(dir.path(), &Digits, Overwrite::Own).unwrap_err();
        assert!(matches!(err, ReplaceError::Refused { ref lost, .. } if lost.len() == 2));
    }

    #[cfg(unix)]
    #[test]
    fn links_are_judged_by_their_names_and_never_followed() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        write(&elsewhere, &["meta", "5"]);
        let dest = dir.path().join("out");
        write(&dest, &["meta"]);
        // A link named like a value is one; its target is not walked.
        symlink(&elsewhere, dest.join("7")).unwrap();
        check_dir(&dest, &Digits, Overwrite::Own).unwrap();
        symlink(&elsewhere, dest.join("data")).unwrap();
        let err = check_dir(&dest, &Digits, Overwrite::Own).unwrap_err();
        assert!(matches!(err, ReplaceError::Refused { ref lost, .. } if lost == &["data"]));
        // A file or a dangling link at the destination is not a tree.
        let file = dir.path().join("file");
        fs::write(&file, b"text").unwrap();
        let err = check_dir(&file, &Digits, Overwrite::Own).unwrap_err();
        assert!(err.to_string().contains("it is a file"), "{err}");
        check_dir(&file, &Digits, Overwrite::Anything).unwrap();
        let dangling = dir.path().join("dangling");
        symlink(dir.path().join("nowhere"), &dangling).unwrap();
        let err = check_dir(&dangling, &Digits, Overwrite::Own).unwrap_err();
        assert!(err.to_string().contains("leads nowhere"), "{err}");
    }

    #[test]
    fn store_prefixes_are_judged_from_their_listing() {
        use crate::{Bytes, MemoryStore};
        let store = MemoryStore::new();
        check_prefix(&store, "a/b", "s3://x/a/b", &Digits, Overwrite::Own).unwrap();
        for key in ["a/b/meta", "a/b/0/0", "a/b/c/meta", "a/b/c/9", "a/other"] {
            store.set(key, Bytes::from_static(b"x")).unwrap();
        }
        check_prefix(&store, "a/b", "s3://x/a/b", &Digits, Overwrite::Own).unwrap();
        store
            .set("a/b/c/d/e.txt", Bytes::from_static(b"x"))
            .unwrap();
        let err = check_prefix(&store, "a/b/", "s3://x/a/b", &Digits, Overwrite::Own).unwrap_err();
        assert_eq!(
            err.to_string(),
            "refusing to replace 's3://x/a/b': it holds a file that is not part of a digit \
             tree, which would be lost (c/d/e.txt)"
        );
        // The whole store as the destination.
        let err = check_prefix(&store, "", "mem", &Digits, Overwrite::Own).unwrap_err();
        assert!(
            matches!(err, ReplaceError::Refused { ref lost, .. } if lost.contains(&"a/other".to_string()))
        );
    }

    #[test]
    fn files_are_recognised_by_their_ends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.bin");
        let magic = |head: &[u8], tail: &[u8]| head.starts_with(b"MAG") && tail.ends_with(b"END");
        check_file(&path, "a magic file", magic, Overwrite::Own).unwrap();
        fs::write(&path, b"MAG and more END").unwrap();
        check_file(&path, "a magic file", magic, Overwrite::Own).unwrap();
        let err = check_file(&path, "a magic file", magic, Overwrite::Never).unwrap_err();
        assert!(err.to_string().contains("already exists"), "{err}");
        fs::write(&path, b"my thesis").unwrap();
        let err = check_file(&path, "a magic file", magic, Overwrite::Own).unwrap_err();
        assert!(err.to_string().ends_with("it is not a magic file"), "{err}");
        check_file(&path, "a magic file", magic, Overwrite::Anything).unwrap();
        // A directory holding anything is not a file to replace.
        let sub = dir.path().join("sub");
        write(&sub, &["x"]);
        let err = check_file(&sub, "a magic file", magic, Overwrite::Own).unwrap_err();
        assert!(err.to_string().contains("it is a directory"), "{err}");

        use crate::{Bytes, MemoryStore};
        let store = MemoryStore::new();
        store.set("t.bin", Bytes::from_static(b"MAG END")).unwrap();
        check_value(
            &store,
            "t.bin",
            "mem/t.bin",
            "a magic file",
            magic,
            Overwrite::Own,
        )
        .unwrap();
        store.set("t.bin", Bytes::from_static(b"notes")).unwrap();
        assert!(check_value(&store, "t.bin", "m", "a magic file", magic, Overwrite::Own).is_err());
        store.set("h/p=1/x", Bytes::from_static(b"notes")).unwrap();
        let err =
            check_value(&store, "h", "m/h", "a magic file", magic, Overwrite::Own).unwrap_err();
        assert!(err.to_string().contains("holding 1 value,"), "{err}");
    }
}
