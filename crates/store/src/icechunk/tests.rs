//! Repositories written and read through [`Repo`] and [`IcechunkStore`].

use super::*;

const GROUP: &[u8] = br#"{"zarr_format":3,"node_type":"group","attributes":{}}"#;

/// A 4×4 uint8 array in 2×2 chunks, without compression.
fn array_meta() -> Bytes {
    Bytes::from_static(
        br#"{"zarr_format":3,"node_type":"array","shape":[4,4],"data_type":"uint8",
        "chunk_grid":{"name":"regular","configuration":{"chunk_shape":[2,2]}},
        "chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},
        "fill_value":0,"codecs":[{"name":"bytes"}],"attributes":{}}"#,
    )
}

fn new_repo() -> (tempfile::TempDir, StoreLocation, Repo) {
    let dir = tempfile::tempdir().unwrap();
    let location = StoreLocation::Local(dir.path().join("repo"));
    let repo = Repo::create(&location, &RemoteOptions::default()).unwrap();
    (dir, location, repo)
}

fn with_array(repo: &Repo) -> String {
    let s = repo.writer(DEFAULT_BRANCH).unwrap();
    s.set("zarr.json", Bytes::from_static(GROUP)).unwrap();
    s.set("a/zarr.json", array_meta()).unwrap();
    s.set("a/c/0/0", Bytes::from_static(&[1, 1, 1, 1])).unwrap();
    s.commit("an array").unwrap()
}

#[test]
fn versions_read_what_was_committed_then() {
    let (_dir, location, repo) = new_repo();
    let first = with_array(&repo);
    repo.create_tag("v1", &Version::default()).unwrap();

    let s = repo.writer(DEFAULT_BRANCH).unwrap();
    s.set("a/c/0/0", Bytes::from_static(&[2, 2, 2, 2])).unwrap();
    s.set("a/c/1/1", Bytes::from_static(&[3, 3, 3, 3])).unwrap();
    // Not visible before the commit, neither to a new reader nor at the branch head.
    let before = repo.reader(&Version::default()).unwrap();
    assert_eq!(before.get("a/c/0/0").unwrap().unwrap()[..], [1, 1, 1, 1]);
    assert!(s.has_changes());
    let second = s.commit("second chunk").unwrap();
    assert_ne!(first, second);

    // A repository opened again sees every version.
    let repo = Repo::open(&location, &RemoteOptions::default()).unwrap();
    let head = repo.reader(&Version::default()).unwrap();
    assert_eq!(head.get("a/c/0/0").unwrap().unwrap()[..], [2, 2, 2, 2]);
    assert_eq!(head.get("a/c/1/1").unwrap().unwrap()[..], [3, 3, 3, 3]);
    for old in [Version::Tag("v1".into()), Version::Snapshot(first.clone())] {
        let store = repo.reader(&old).unwrap();
        assert_eq!(store.get("a/c/0/0").unwrap().unwrap()[..], [1, 1, 1, 1]);
        assert_eq!(store.get("a/c/1/1").unwrap(), None, "{old}");
    }
    let log = repo.log(&Version::default()).unwrap();
    let messages: Vec<&str> = log.iter().map(|s| s.message.as_str()).collect();
    assert_eq!(messages[..2], ["second chunk", "an array"]);
    assert_eq!(log[0].parent.as_deref(), Some(first.as_str()));
    assert_eq!(log[0].id, second);
    assert_eq!(repo.resolve(&Version::Tag("v1".into())).unwrap(), first);
    let tags = repo.tags().unwrap();
    assert_eq!(
        tags,
        [NamedRef {
            name: "v1".into(),
            snapshot: first
        }]
    );
}

#[test]
fn ranges_sizes_and_listings() {
    let (_dir, _location, repo) = new_repo();
    with_array(&repo);
    let store = repo.reader(&Version::default()).unwrap();
    assert_eq!(store.size("a/c/0/0").unwrap(), Some(4));
    assert_eq!(store.size("a/c/1/0").unwrap(), None);
    let s = repo.writer(DEFAULT_BRANCH).unwrap();
    s.set("a/c/1/0", Bytes::from_static(&[5, 6, 7, 8])).unwrap();
    let parts = s
        .get_ranges(
            "a/c/1/0",
            &[
                ByteRange::FromStart {
                    offset: 1,
                    length: Some(2),
                },
                ByteRange::Suffix { length: 1 },
            ],
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        parts,
        [Bytes::from_static(&[6, 7]), Bytes::from_static(&[8])]
    );
    let past_end = s.get_ranges(
        "a/c/1/0",
        &[ByteRange::FromStart {
            offset: 9,
            length: Some(1),
        }],
    );
    assert!(matches!(past_end, Err(StoreError::RangeOutOfBounds { .. })));
    let root = s.list_dir("").unwrap();
    assert_eq!(root.keys, ["zarr.json"]);
    assert_eq!(root.prefixes, ["a"]);
    let keys = s.list_prefix("a/").unwrap();
    assert_eq!(keys, ["a/c/0/0", "a/c/1/0", "a/zarr.json"]);
}

#[test]
fn a_reader_refuses_writes_and_a_missing_version_is_named() {
    let (_dir, _location, repo) = new_repo();
    with_array(&repo);
    let store = repo.reader(&Version::default()).unwrap();
    let e = store
        .set("a/c/0/0", Bytes::from_static(&[0; 4]))
        .unwrap_err();
    assert!(
        e.to_string().contains("a tag or a snapshot never changes"),
        "{e}"
    );
    assert!(store.commit("nothing").is_err());
    let e = repo
        .reader(&Version::Tag("nope".into()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("tag 'nope'"), "{e}");
    let e = repo
        .reader(&Version::Snapshot("xyz".into()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("xyz") && e.contains("snapshot id"), "{e}");
}

#[test]
fn branches_move_independently() {
    let (_dir, _location, repo) = new_repo();
    let base = with_array(&repo);
    assert_eq!(
        repo.create_branch("dev", &Version::default()).unwrap(),
        base
    );
    let dev = repo.writer("dev").unwrap();
    dev.set("a/c/0/1", Bytes::from_static(&[9; 4])).unwrap();
    dev.commit("on dev").unwrap();
    let main = repo.reader(&Version::default()).unwrap();
    assert_eq!(main.get("a/c/0/1").unwrap(), None);
    let dev = repo.reader(&Version::Branch("dev".into())).unwrap();
    assert_eq!(dev.get("a/c/0/1").unwrap().unwrap()[..], [9; 4]);
    let names: Vec<String> = repo
        .branches()
        .unwrap()
        .into_iter()
        .map(|b| b.name)
        .collect();
    assert_eq!(names, ["dev", "main"]);
}

#[test]
fn concurrent_commits_rebase_or_name_the_conflict() {
    let (_dir, _location, repo) = new_repo();
    with_array(&repo);
    // Disjoint chunks: the second commit is rebased onto the first, both survive.
    let one = repo.writer(DEFAULT_BRANCH).unwrap();
    let two = repo.writer(DEFAULT_BRANCH).unwrap();
    one.set("a/c/0/1", Bytes::from_static(&[4; 4])).unwrap();
    two.set("a/c/1/0", Bytes::from_static(&[5; 4])).unwrap();
    one.commit("one").unwrap();
    two.commit("two").unwrap();
    let head = repo.reader(&Version::default()).unwrap();
    assert_eq!(head.get("a/c/0/1").unwrap().unwrap()[..], [4; 4]);
    assert_eq!(head.get("a/c/1/0").unwrap().unwrap()[..], [5; 4]);

    // The same chunk: the loser is refused, naming the array and the chunk.
    let one = repo.writer(DEFAULT_BRANCH).unwrap();
    let two = repo.writer(DEFAULT_BRANCH).unwrap();
    one.set("a/c/1/1", Bytes::from_static(&[6; 4])).unwrap();
    two.set("a/c/1/1", Bytes::from_static(&[7; 4])).unwrap();
    one.commit("one wins").unwrap();
    let e = two.commit("two loses").unwrap_err().to_string();
    assert!(
        e.contains("/a") && e.contains("[1, 1]") && e.contains("nothing was committed"),
        "{e}"
    );
    let head = repo.reader(&Version::default()).unwrap();
    assert_eq!(head.get("a/c/1/1").unwrap().unwrap()[..], [6; 4]);
    let log = repo.log(&Version::default()).unwrap();
    assert_eq!(log[0].message, "one wins");
}

#[test]
fn repositories_are_recognised() {
    let (dir, location, _repo) = new_repo();
    assert!(Repo::exists(&location, &RemoteOptions::default()).unwrap());
    let plain = StoreLocation::Local(dir.path().to_path_buf());
    assert!(!Repo::exists(&plain, &RemoteOptions::default()).unwrap());
    let e = Repo::open(&plain, &RemoteOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains(&dir.path().display().to_string()), "{e}");
}

#[test]
fn prefixes_that_are_no_node_list_and_delete_like_any_store() {
    let (_dir, _location, repo) = new_repo();
    with_array(&repo);
    let s = repo.writer(DEFAULT_BRANCH).unwrap();
    s.set("a/c/1/0", Bytes::from_static(&[5; 4])).unwrap();
    // Nothing there: empty, and deleting it is no error.
    assert!(s.list_prefix("nothing/here/").unwrap().is_empty());
    assert_eq!(s.list_dir("nothing/").unwrap(), DirListing::default());
    s.delete_prefix("nothing/").unwrap();
    // A chunk directory inside an array.
    assert_eq!(s.list_prefix("a/c/1/").unwrap(), ["a/c/1/0"]);
    let listing = s.list_dir("a/c/").unwrap();
    assert_eq!(listing.prefixes, ["0", "1"]);
    assert!(listing.keys.is_empty());
    s.delete_prefix("a/c/1/").unwrap();
    assert_eq!(s.list_prefix("a/").unwrap(), ["a/c/0/0", "a/zarr.json"]);
}

#[test]
fn a_batch_writes_metadata_before_the_chunks_of_its_arrays() {
    let (_dir, _location, repo) = new_repo();
    let s = repo.writer(DEFAULT_BRANCH).unwrap();
    // Keys in the order a sorted buffer hands them over: chunks before `zarr.json`.
    let mut values = vec![
        ("zarr.json".to_string(), Bytes::from_static(GROUP)),
        ("g/zarr.json".to_string(), Bytes::from_static(GROUP)),
        ("g/a/zarr.json".to_string(), array_meta()),
    ];
    for (i, j) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
        values.push((format!("g/a/c/{i}/{j}"), Bytes::from(vec![i * 2 + j; 4])));
    }
    values.sort();
    s.set_many(values).unwrap();
    s.commit("a batch").unwrap();
    let head = repo.reader(&Version::default()).unwrap();
    assert_eq!(head.get("g/a/c/1/0").unwrap().unwrap()[..], [2, 2, 2, 2]);
    let read = head.get_many(&[
        ReadRequest::whole("g/a/c/0/1"),
        ReadRequest::whole("g/a/c/9/9"),
    ]);
    assert!(matches!(&read[0], Ok(ReadResponse::Whole(b)) if b[..] == [1, 1, 1, 1]));
    assert!(matches!(read[1], Ok(ReadResponse::Missing)));
}

#[test]
fn a_session_is_what_locations_inside_the_repository_open_as() {
    let (dir, location, repo) = new_repo();
    with_array(&repo);
    let options = RemoteOptions::default();
    let inside = StoreLocation::Local(dir.path().join("repo/a"));
    // No session: a fresh read-only store whose refusal says how to write.
    let (store, key) = inside.open(&options).unwrap();
    assert_eq!(key, "a");
    let e = store
        .set("a/c/1/1", Bytes::from_static(&[9; 4]))
        .unwrap_err();
    assert!(e.to_string().contains("session"), "{e}");

    let session = Session::begin(&location, DEFAULT_BRANCH, &options).unwrap();
    assert!(Session::begin(&location, DEFAULT_BRANCH, &options).is_err());
    let (store, _) = inside.open(&options).unwrap();
    store.set("a/c/1/1", Bytes::from_static(&[9; 4])).unwrap();
    // Another opening sees the session's write; a reader of the repository does not.
    let (again, _) = inside.open(&options).unwrap();
    assert_eq!(again.get("a/c/1/1").unwrap().unwrap()[..], [9; 4]);
    assert_eq!(
        repo.reader(&Version::default())
            .unwrap()
            .get("a/c/1/1")
            .unwrap(),
        None
    );
    // A tag is never the session.
    let at_tag = RemoteOptions {
        version: Some(Version::Snapshot(
            repo.resolve(&Version::default()).unwrap(),
        )),
        ..RemoteOptions::default()
    };
    let (old, _) = inside.open(&at_tag).unwrap();
    assert_eq!(old.get("a/c/1/1").unwrap(), None);

    let committed = session.commit("through a path").unwrap().unwrap();
    assert_eq!(committed.branch, DEFAULT_BRANCH);
    let head = repo.reader(&Version::default()).unwrap();
    assert_eq!(head.get("a/c/1/1").unwrap().unwrap()[..], [9; 4]);
    assert_eq!(
        repo.log(&Version::default()).unwrap()[0].message,
        "through a path"
    );
    // Closed: locations are read-only again, and a session that changed nothing commits
    // nothing.
    let (store, _) = inside.open(&options).unwrap();
    assert!(store.set("a/c/0/1", Bytes::from_static(&[1; 4])).is_err());
    let idle = Session::begin(&location, DEFAULT_BRANCH, &options).unwrap();
    assert_eq!(idle.commit("nothing").unwrap(), None);
    // Dropped without a commit: discarded.
    let dropped = Session::begin(&location, DEFAULT_BRANCH, &options).unwrap();
    dropped
        .store()
        .set("a/c/0/1", Bytes::from_static(&[1; 4]))
        .unwrap();
    drop(dropped);
    let head = repo.reader(&Version::default()).unwrap();
    assert_eq!(head.get("a/c/0/1").unwrap(), None);
}
