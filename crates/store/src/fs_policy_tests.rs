//! [`FsStore`]'s symbolic link policy (writes never leave the root) and its durable mode.

use std::os::unix::fs::symlink;
use std::path::Path;

use super::*;

/// Every file below `dir`, as paths relative to it (symbolic links skipped, not followed).
fn files_below(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let file_type = entry.file_type().unwrap();
            if file_type.is_dir() {
                walk(&path, base, out);
            } else if file_type.is_file() {
                out.push(path.strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn assert_refused(result: StoreResult<()>, key: &str, link: &Path) {
    match result {
        Err(err @ StoreError::SymlinkOutsideRoot { .. }) => {
            let text = err.to_string();
            assert!(text.contains(&format!("'{key}'")), "{text}");
            assert!(text.contains(&link.display().to_string()), "{text}");
        }
        other => panic!("expected SymlinkOutsideRoot for '{key}', got {other:?}"),
    }
}

#[test]
fn writes_through_a_symlink_leading_outside_the_root_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("keep"), b"outside").unwrap();
    std::fs::create_dir(outside.path().join("deep")).unwrap();
    std::fs::write(outside.path().join("deep/keep"), b"outside").unwrap();
    let link = root.path().join("sub");
    symlink(outside.path(), &link).unwrap();
    let store = FsStore::new(root.path());

    // set, a streamed writer, a new directory below the link.
    assert_refused(
        store.set("sub/value", Bytes::from_static(b"x")),
        "sub/value",
        &link,
    );
    assert_refused(store.writer("sub/value").map(|_| ()), "sub/value", &link);
    assert_refused(
        store.set("sub/new/dir/value", Bytes::from_static(b"x")),
        "sub/new/dir/value",
        &link,
    );
    // Removals below the link.
    assert_refused(store.delete("sub/keep"), "sub/keep", &link);
    assert_refused(store.delete("sub/deep/keep"), "sub/deep/keep", &link);
    assert_refused(store.delete_prefix("sub/deep/"), "sub/deep", &link);
    assert_eq!(files_below(outside.path()), ["deep/keep", "keep"]);

    // Reads through the link still work.
    assert_eq!(
        store.get("sub/keep").unwrap().as_deref(),
        Some(&b"outside"[..])
    );
    assert_eq!(
        store.list_prefix("sub/").unwrap(),
        ["sub/deep/keep", "sub/keep"]
    );

    // A link deeper down, and a dangling one, are refused the same way.
    std::fs::create_dir(root.path().join("a")).unwrap();
    let deep_link = root.path().join("a/b");
    symlink(outside.path().join("deep"), &deep_link).unwrap();
    assert_refused(
        store.set("a/b/c", Bytes::from_static(b"x")),
        "a/b/c",
        &deep_link,
    );
    let dangling = root.path().join("gone");
    symlink(outside.path().join("not-there"), &dangling).unwrap();
    assert_refused(
        store.set("gone/c", Bytes::from_static(b"x")),
        "gone/c",
        &dangling,
    );
    assert!(!outside.path().join("not-there").exists());

    // Removing the link itself (as a prefix, or everything) leaves its target alone.
    store.delete_prefix("sub/").unwrap();
    assert!(std::fs::symlink_metadata(&link).is_err());
    store.delete_prefix("").unwrap();
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    assert_eq!(files_below(outside.path()), ["deep/keep", "keep"]);
}

#[test]
fn a_key_that_is_a_symlink_is_replaced_or_removed_not_followed() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("value");
    std::fs::write(&target, b"outside").unwrap();
    symlink(&target, root.path().join("v")).unwrap();
    symlink(&target, root.path().join("w")).unwrap();
    let store = FsStore::new(root.path());
    assert_eq!(store.get("v").unwrap().as_deref(), Some(&b"outside"[..]));
    // Writing replaces the link with a file; removing removes the link.
    store.set("v", Bytes::from_static(b"inside")).unwrap();
    store.delete("w").unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), b"outside");
    assert!(std::fs::symlink_metadata(root.path().join("v"))
        .unwrap()
        .is_file());
    assert!(std::fs::symlink_metadata(root.path().join("w")).is_err());
}

#[test]
fn symlinks_resolving_inside_the_root_may_be_written_through() {
    let root = tempfile::tempdir().unwrap();
    let store = FsStore::new(root.path());
    store.set("real/a", Bytes::from_static(b"a")).unwrap();
    // Relative and absolute links to a directory inside the root.
    symlink("real", root.path().join("alias")).unwrap();
    symlink(root.path().join("real"), root.path().join("absolute")).unwrap();

    store.set("alias/b", Bytes::from_static(b"b")).unwrap();
    store
        .set("absolute/new/c", Bytes::from_static(b"c"))
        .unwrap();
    assert_eq!(files_below(&root.path().join("real")), ["a", "b", "new/c"]);
    assert_eq!(
        store.get("alias/new/c").unwrap().as_deref(),
        Some(&b"c"[..])
    );
    store.delete("alias/a").unwrap();
    assert_eq!(store.get("real/a").unwrap(), None);

    // Removing the link as a prefix removes the link, not the directory it names.
    store.delete_prefix("alias/").unwrap();
    assert!(std::fs::symlink_metadata(root.path().join("alias")).is_err());
    assert_eq!(files_below(&root.path().join("real")), ["b", "new/c"]);
}

#[test]
fn a_root_that_is_itself_a_symlink_is_written_normally() {
    let parent = tempfile::tempdir().unwrap();
    let real = parent.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let root = parent.path().join("link");
    symlink(&real, &root).unwrap();
    let store = FsStore::new(&root);
    store.set("x/y", Bytes::from_static(b"1")).unwrap();
    // A link inside pointing back into the root through the root's link is inside.
    symlink(root.join("x"), real.join("via-root")).unwrap();
    store.set("via-root/z", Bytes::from_static(b"2")).unwrap();
    assert_eq!(files_below(&real), ["x/y", "x/z"]);
}

#[test]
fn durable_stores_conform_and_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path().join("new/root")).with_durability(Durability::Fsync);
    assert_eq!(store.durability(), Durability::Fsync);
    assert_eq!(FsStore::new(dir.path()).durability(), Durability::Buffered);
    conformance::check_store(&store);
    store.set("a/b/c", Bytes::from_static(b"abc")).unwrap();
    assert_eq!(store.get("a/b/c").unwrap().as_deref(), Some(&b"abc"[..]));
    store.delete("a/b/c").unwrap();
    store.delete_prefix("a/").unwrap();
    assert!(store.list_prefix("").unwrap().is_empty());
}
