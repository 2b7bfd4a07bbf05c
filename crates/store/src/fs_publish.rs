//! Publishing a directory tree built aside: [`replace_dir`] moves a staged directory to its
//! final name so that readers of that name always find a complete tree, the old one or the
//! new one.
//!
//! Writers of whole hierarchies (an NWB file, a converted dataset) build them in a hidden
//! sibling directory and publish them at the end. On Linux an existing destination is swapped
//! with the staged directory in one step (`renameat2` with `RENAME_EXCHANGE`), so there is no
//! moment without a file at the destination; the old tree is then removed from the staged
//! name. Where the exchange is not available (another system, or a filesystem that does not
//! support it), the old tree is renamed aside, the new one renamed in and the old one removed:
//! between the two renames the destination is briefly missing.

use std::fs;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

/// How [`replace_dir`] put the staged directory in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PublishMethod {
    /// There was no destination: one rename.
    Renamed,
    /// The staged directory and the destination were exchanged atomically; the old tree was
    /// then removed. Readers of the destination never found it missing.
    Exchanged,
    /// The exchange is not available: the old tree was renamed aside, the new one renamed in
    /// and the old one removed. The destination was missing between the two renames.
    RenamedAside,
}

/// A failed publish, naming the path concerned and what was being done.
#[derive(Debug, thiserror::Error)]
#[error("{action} '{}': {source}", path.display())]
pub struct PublishError {
    /// What was being done (e.g. "cannot move the staged directory into place at").
    pub action: &'static str,
    /// The path concerned.
    pub path: PathBuf,
    /// The operating system's error.
    #[source]
    pub source: io::Error,
}

fn fail<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> PublishError + 'a {
    move |source| PublishError {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// Put the directory `staged` in place at `target`, replacing whatever is already there
/// (a caller decides beforehand whether it may: see [`crate::replace`]),
/// so that `target` names a complete tree at every moment where the platform allows it.
///
/// - `target` missing: `staged` is renamed to `target` ([`PublishMethod::Renamed`]).
/// - `target` present, on Linux: the two are exchanged atomically with
///   `renameat2(RENAME_EXCHANGE)` and the old tree (now at `staged`) is removed
///   ([`PublishMethod::Exchanged`]).
/// - `target` present where the exchange is unsupported (`EINVAL`, `ENOSYS`, `EOPNOTSUPP`, or
///   not Linux): `target` is renamed to a hidden sibling, `staged` renamed to `target`, and the
///   old tree removed ([`PublishMethod::RenamedAside`]). Between the two renames `target` is
///   briefly missing; if the second rename fails, the old tree is moved back.
///
/// Both paths must be on the same filesystem (siblings, typically). A missing `staged` is an
/// error naming it. When the new tree is in place but the old one cannot be removed, the error
/// names the leftover directory.
pub fn replace_dir(staged: &Path, target: &Path) -> Result<PublishMethod, PublishError> {
    let meta = fs::symlink_metadata(staged).map_err(fail(
        "cannot publish: the staged directory is missing",
        staged,
    ))?;
    if !meta.is_dir() {
        return Err(PublishError {
            action: "cannot publish: not a directory",
            path: staged.to_path_buf(),
            source: io::Error::new(
                ErrorKind::InvalidInput,
                "the staged path is not a directory",
            ),
        });
    }
    match fs::symlink_metadata(target) {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            fs::rename(staged, target).map_err(fail(
                "cannot move the staged directory into place at",
                target,
            ))?;
            return Ok(PublishMethod::Renamed);
        }
        Err(e) => return Err(fail("cannot inspect the destination", target)(e)),
        Ok(_) => {}
    }
    match exchange(staged, target) {
        Ok(()) => {
            // The old tree now lives at the staged name.
            remove_replaced(staged).map_err(fail(
                "published, but cannot remove the replaced directory now at",
                staged,
            ))?;
            return Ok(PublishMethod::Exchanged);
        }
        Err(e) if exchange_unsupported(&e) => {}
        Err(e) => {
            return Err(fail(
                "cannot exchange the staged directory with the destination",
                target,
            )(e))
        }
    }
    rename_aside(staged, target)?;
    Ok(PublishMethod::RenamedAside)
}

/// The fallback: old aside, new in, old removed (a brief window without `target`).
fn rename_aside(staged: &Path, target: &Path) -> Result<(), PublishError> {
    let aside = aside_name(target);
    fs::rename(target, &aside).map_err(fail("cannot move the existing directory aside", target))?;
    if let Err(e) = fs::rename(staged, target) {
        // Put the old tree back so the destination is not left missing.
        let _ = fs::rename(&aside, target);
        return Err(fail(
            "cannot move the staged directory into place at",
            target,
        )(e));
    }
    remove_replaced(&aside).map_err(fail(
        "published, but cannot remove the replaced directory now at",
        &aside,
    ))
}

/// Remove what was replaced: a directory tree, or a file (or a symbolic link, never followed)
/// that a caller chose to replace by a directory.
fn remove_replaced(path: &Path) -> io::Result<()> {
    if fs::symlink_metadata(path)?.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    }
}

/// A hidden sibling of `target` that does not exist yet.
fn aside_name(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "published".into());
    let mut n = 0u32;
    loop {
        let candidate =
            target.with_file_name(format!(".{name}.replaced-{}-{n}", std::process::id()));
        if fs::symlink_metadata(&candidate).is_err() {
            return candidate;
        }
        n += 1;
    }
}

/// Whether an exchange failed because the platform or filesystem does not offer it.
fn exchange_unsupported(e: &io::Error) -> bool {
    #[cfg(target_os = "linux")]
    {
        matches!(
            e.raw_os_error(),
            Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP)
        )
    }
    #[cfg(not(target_os = "linux"))]
    {
        e.kind() == ErrorKind::Unsupported
    }
}

/// Exchange two existing paths atomically.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(ErrorKind::InvalidInput, "path contains a NUL byte"))
    };
    let (a, b) = (c(a)?, c(b)?);
    // SAFETY: both pointers are valid NUL-terminated strings for the duration of the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// No atomic exchange outside Linux: the caller falls back to renaming aside.
#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> io::Result<()> {
    Err(io::Error::new(
        ErrorKind::Unsupported,
        "no atomic directory exchange on this platform",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;

    fn tree(dir: &Path, marker: &str) {
        fs::create_dir_all(dir.join("sub")).unwrap();
        fs::write(dir.join("marker"), marker).unwrap();
        fs::write(dir.join("sub/data"), marker).unwrap();
    }

    #[test]
    fn a_missing_target_is_a_plain_rename() {
        let dir = tempfile::tempdir().unwrap();
        let (staged, target) = (dir.path().join(".new"), dir.path().join("file"));
        tree(&staged, "one");
        assert_eq!(
            replace_dir(&staged, &target).unwrap(),
            PublishMethod::Renamed
        );
        assert_eq!(fs::read_to_string(target.join("sub/data")).unwrap(), "one");
        assert!(!staged.exists());
    }

    #[test]
    fn a_missing_staged_directory_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let (staged, target) = (dir.path().join(".absent"), dir.path().join("file"));
        tree(&target, "old");
        let err = replace_dir(&staged, &target).unwrap_err().to_string();
        assert!(
            err.contains("staged directory is missing") && err.contains(".absent"),
            "{err}"
        );
        assert_eq!(fs::read_to_string(target.join("marker")).unwrap(), "old");
    }

    #[test]
    fn replacing_keeps_a_complete_tree_visible_to_readers() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("file");
        tree(&target, "0");
        let stop = Arc::new(AtomicBool::new(false));
        let reads = Arc::new(AtomicUsize::new(0));
        let reader = {
            let (target, stop, reads) = (target.clone(), stop.clone(), reads.clone());
            std::thread::spawn(move || {
                let mut missing = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    match fs::read_to_string(target.join("marker")) {
                        Ok(_) => {}
                        Err(e) => missing.push(e.to_string()),
                    }
                    reads.fetch_add(1, Ordering::Relaxed);
                }
                missing
            })
        };
        let mut methods = Vec::new();
        for i in 1..=50 {
            let staged = dir.path().join(format!(".file.partial-{i}"));
            tree(&staged, &i.to_string());
            methods.push(replace_dir(&staged, &target).unwrap());
            assert!(!staged.exists(), "the old tree was left at the staged name");
        }
        stop.store(true, Ordering::Relaxed);
        let missing = reader.join().unwrap();
        assert_eq!(fs::read_to_string(target.join("marker")).unwrap(), "50");
        assert!(reads.load(Ordering::Relaxed) > 0);
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, ["file"], "leftovers: {leftovers:?}");
        if methods.iter().all(|m| *m == PublishMethod::Exchanged) {
            assert!(missing.is_empty(), "a reader saw no file: {missing:?}");
        } else {
            // The filesystem of the temporary directory cannot exchange: the documented
            // fallback has a brief window, so only the end result is checked.
            eprintln!(
                "no atomic exchange here ({methods:?}); {} missed reads",
                missing.len()
            );
        }
    }

    #[test]
    fn the_fallback_replaces_too() {
        let dir = tempfile::tempdir().unwrap();
        let (staged, target) = (dir.path().join(".new"), dir.path().join("file"));
        tree(&target, "old");
        tree(&staged, "new");
        rename_aside(&staged, &target).unwrap();
        assert_eq!(fs::read_to_string(target.join("marker")).unwrap(), "new");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["file"]);
    }
}
