//! Automatic sessions (what the command-line tool turns on): every opening of a branch in the
//! process shares one session, committed once, or discarded. One test in its own process,
//! since the switch is process-wide.
#![cfg(feature = "icechunk")]

use neurochunk_store::icechunk::{sessions, Repo, Version};
use neurochunk_store::{Bytes, RemoteOptions, Store, StoreLocation};

const GROUP: &[u8] = br#"{"zarr_format":3,"node_type":"group","attributes":{}}"#;

#[test]
fn one_session_per_branch_committed_once_or_discarded() {
    let dir = tempfile::tempdir().unwrap();
    let root = StoreLocation::Local(dir.path().join("repo"));
    let options = RemoteOptions::default();
    let repo = Repo::create(&root, &options).unwrap();
    sessions::set_automatic(true);

    let at = |path: &str| StoreLocation::Local(dir.path().join("repo").join(path));
    let (first, key) = at("g").open(&options).unwrap();
    assert_eq!(key, "g");
    first.set("zarr.json", Bytes::from_static(GROUP)).unwrap();
    first.set("g/zarr.json", Bytes::from_static(GROUP)).unwrap();
    // A second opening is the same session: it reads what the first wrote.
    let (second, _) = at("h").open(&options).unwrap();
    assert!(second.get("g/zarr.json").unwrap().is_some());
    second
        .set("h/zarr.json", Bytes::from_static(GROUP))
        .unwrap();
    // Nobody else sees it before the commit.
    let outside = repo.reader(&Version::default()).unwrap();
    assert!(outside.get("g/zarr.json").unwrap().is_none());

    let committed = sessions::commit_automatic("two groups").unwrap();
    assert_eq!(committed.len(), 1, "{committed:?}");
    let head = repo.reader(&Version::default()).unwrap();
    assert!(head.get("g/zarr.json").unwrap().is_some());
    assert!(head.get("h/zarr.json").unwrap().is_some());
    let log = repo.log(&Version::default()).unwrap();
    assert_eq!(log[0].message, "two groups");
    assert_eq!(log[0].id, committed[0].snapshot);

    // The next opening begins anew; a discarded session leaves the branch where it was.
    let (third, _) = at("").open(&options).unwrap();
    third.set("k/zarr.json", Bytes::from_static(GROUP)).unwrap();
    sessions::discard_automatic();
    assert!(sessions::commit_automatic("nothing").unwrap().is_empty());
    let head = repo.reader(&Version::default()).unwrap();
    assert!(head.get("k/zarr.json").unwrap().is_none());
    assert_eq!(repo.log(&Version::default()).unwrap().len(), 2);
}
