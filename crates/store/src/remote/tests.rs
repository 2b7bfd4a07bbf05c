//! The remote adapter: URL parsing, the conformance kit over `object_store`'s in-memory and
//! local file system backends, multipart uploads, and servers that ignore ranges, truncate
//! bodies or refuse access (a real HTTP server on a local socket).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;

use super::location::Scheme;
use super::*;
use crate::conformance;

fn options() -> RemoteOptions {
    RemoteOptions {
        max_retries: 0,
        ..RemoteOptions::default()
    }
}

fn memory_store() -> RemoteStore {
    RemoteStore::new(Arc::new(InMemory::new()), "memory://", &options()).unwrap()
}

#[test]
fn remote_store_over_memory_conforms() {
    conformance::check_store(&memory_store());
}

#[test]
fn remote_store_over_local_file_system_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let fs = LocalFileSystem::new_with_prefix(dir.path()).unwrap();
    let store = RemoteStore::new(Arc::new(fs), "file://", &options()).unwrap();
    conformance::check_store(&store);
}

#[test]
fn prefix_view_of_a_remote_store_conforms() {
    let inner: Arc<dyn Store> = Arc::new(memory_store());
    inner.set("outside", Bytes::from_static(b"x")).unwrap();
    conformance::check_store(&crate::PrefixStore::new(inner.clone(), "sub/tree").unwrap());
    assert_eq!(inner.list_prefix("").unwrap(), ["outside"]);
}

#[test]
fn read_only_remote_store_refuses_writes_naming_the_url() {
    let store = memory_store().read_only();
    conformance::check_read_only(&store);
    let e = store.set("a/b", Bytes::from_static(b"x")).unwrap_err();
    assert!(e.to_string().contains("memory:///a/b"), "{e}");
}

#[test]
fn file_urls_open_through_object_store() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}/data.zarr", dir.path().display());
    let (store, key) = open_url(&url, &options()).unwrap();
    assert!(format!("{store:?}").contains("RemoteStore"));
    assert_eq!(
        key,
        format!("{}/data.zarr", dir.path().display()).trim_start_matches('/')
    );
    let view = crate::PrefixStore::new(store, &key).unwrap();
    conformance::check_store(&view);
}

#[test]
fn large_values_are_uploaded_in_parts() {
    for (name, store) in [
        ("memory", memory_store()),
        ("local", {
            let dir = tempfile::tempdir().unwrap().keep();
            let fs = LocalFileSystem::new_with_prefix(&dir).unwrap();
            RemoteStore::new(Arc::new(fs), "file://", &options()).unwrap()
        }),
    ] {
        let store = store.with_part_size(5 << 20);
        let value: Vec<u8> = (0..(12 << 20) + 123).map(|i| (i % 241) as u8).collect();
        let mut writer = store.writer("big/value").unwrap();
        for piece in value.chunks(100_000) {
            writer.write_all(piece).unwrap();
        }
        assert_eq!(
            store.get("big/value").unwrap(),
            None,
            "{name}: visible early"
        );
        writer.commit().unwrap();
        assert_eq!(
            store.get("big/value").unwrap().as_deref(),
            Some(&value[..]),
            "{name}"
        );

        // Abandoned after parts went up: nothing appears, the old value stays.
        let mut writer = store.writer("big/value").unwrap();
        writer.write_all(&value[..11 << 20]).unwrap();
        drop(writer);
        let mut writer = store.writer("big/other").unwrap();
        writer.write_all(&value).unwrap();
        drop(writer);
        assert_eq!(store.get("big/other").unwrap(), None, "{name}");
        assert_eq!(store.size("big/value").unwrap(), Some(value.len() as u64));
        assert_eq!(store.list_prefix("big/").unwrap(), ["big/value"], "{name}");
    }
}

#[test]
fn many_reads_coalesce_and_answer_in_order() {
    let store = memory_store();
    let value: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
    store.set("v", Bytes::from(value.clone())).unwrap();
    let from = |offset, length| ByteRange::FromStart {
        offset,
        length: Some(length),
    };
    let requests: Vec<ReadRequest> = (0..500u64)
        .map(|i| ReadRequest::ranges("v", vec![from(i * 150, 100), from(i * 7, 3)]))
        .collect();
    for (i, answer) in store.get_many(&requests).into_iter().enumerate() {
        assert_eq!(
            answer.unwrap(),
            ReadResponse::Ranges(vec![
                Bytes::copy_from_slice(&value[i * 150..i * 150 + 100]),
                Bytes::copy_from_slice(&value[i * 7..i * 7 + 3]),
            ])
        );
    }
    assert_eq!(
        merge_ranges(&[0..10, 12..20, 100..110, 105..120], 5),
        vec![0..20, 100..120]
    );
}

// --- URLs and options ---------------------------------------------------------------------

fn parsed(text: &str) -> (Scheme, String, String) {
    match StoreLocation::parse(text).unwrap() {
        StoreLocation::Url {
            scheme, base, key, ..
        } => (scheme, base, key),
        StoreLocation::Local(p) => panic!("{text}: parsed as the path {}", p.display()),
    }
}

#[test]
fn urls_split_into_store_and_key() {
    let cases = [
        (
            "s3://bucket/a/b.zarr",
            Scheme::S3,
            "s3://bucket",
            "a/b.zarr",
        ),
        ("s3://bucket", Scheme::S3, "s3://bucket", ""),
        ("s3://bucket/", Scheme::S3, "s3://bucket", ""),
        ("s3a://bucket/x/", Scheme::S3, "s3a://bucket", "x"),
        ("gs://bucket/x/y", Scheme::Gcs, "gs://bucket", "x/y"),
        ("az://container/x", Scheme::Azure, "az://container", "x"),
        (
            "azure://container/x",
            Scheme::Azure,
            "azure://container",
            "x",
        ),
        (
            "abfs://container@account.dfs.core.windows.net/x/y",
            Scheme::Azure,
            "abfs://container@account.dfs.core.windows.net",
            "x/y",
        ),
        (
            "https://account.blob.core.windows.net/container/x",
            Scheme::Azure,
            "https://account.blob.core.windows.net/container",
            "x",
        ),
        (
            "https://s3.us-west-2.amazonaws.com/bucket/k/v",
            Scheme::S3,
            "https://s3.us-west-2.amazonaws.com/bucket",
            "k/v",
        ),
        (
            "http://127.0.0.1:8000/data/v.zarr",
            Scheme::Http,
            "http://127.0.0.1:8000",
            "data/v.zarr",
        ),
        (
            "https://example.org/x",
            Scheme::Http,
            "https://example.org",
            "x",
        ),
        ("file:///tmp/x.zarr", Scheme::File, "file://", "tmp/x.zarr"),
        (
            "s3://bucket/with%20space",
            Scheme::S3,
            "s3://bucket",
            "with space",
        ),
    ];
    for (url, scheme, base, key) in cases {
        assert_eq!(
            parsed(url),
            (scheme, base.to_string(), key.to_string()),
            "{url}"
        );
        let location = StoreLocation::parse(url).unwrap();
        let shown = location.display();
        assert!(
            shown.starts_with(base) && shown.ends_with(key),
            "{url} shown as {shown}"
        );
    }
}

#[test]
fn paths_stay_local_and_bad_urls_are_refused() {
    for path in [
        "data/x.zarr",
        "/abs/x",
        "./x",
        "C:\\x",
        "x:y",
        "s3:/one-slash",
    ] {
        assert!(StoreLocation::parse(path).unwrap().is_local(), "{path}");
    }
    for url in [
        "ftp://host/x",
        "s3://bucket/a?versionId=1",
        "memory:///x",
        "http://",
    ] {
        match StoreLocation::parse(url) {
            Err(e @ StoreError::InvalidUrl { .. }) => {
                assert!(e.to_string().contains(url), "{e}")
            }
            other => panic!("{url}: {other:?}"),
        }
    }
    assert!(is_url("s3://b") && is_url("https://h/x") && !is_url("a/b") && !is_url("://x"));
}

#[test]
fn options_come_from_the_environment() {
    // Only this test sets these variables.
    std::env::set_var("NEUROCHUNK_ENDPOINT", "http://127.0.0.1:9");
    std::env::set_var("NEUROCHUNK_ANON", "true");
    std::env::set_var("NEUROCHUNK_MAX_REQUESTS", "7");
    std::env::set_var("NEUROCHUNK_BUCKET_REGION", "eu-west-1");
    let options = RemoteOptions::from_env().unwrap();
    assert_eq!(options.endpoint.as_deref(), Some("http://127.0.0.1:9"));
    assert!(options.anonymous && options.allows_http());
    assert_eq!(options.max_requests, 7);
    assert_eq!(options.region.as_deref(), Some("eu-west-1"));
    std::env::set_var("NEUROCHUNK_MAX_REQUESTS", "zero");
    let e = RemoteOptions::from_env().unwrap_err();
    assert!(e.contains("NEUROCHUNK_MAX_REQUESTS"), "{e}");
    for var in [
        "NEUROCHUNK_ENDPOINT",
        "NEUROCHUNK_ANON",
        "NEUROCHUNK_MAX_REQUESTS",
        "NEUROCHUNK_BUCKET_REGION",
    ] {
        std::env::remove_var(var);
    }
}

#[test]
fn s3_urls_build_with_an_endpoint_and_anonymous_access() {
    let options = RemoteOptions {
        endpoint: Some("http://127.0.0.1:9".into()),
        anonymous: true,
        ..options()
    };
    let (store, key) = open_url("s3://bucket/prefix/x.zarr", &options).unwrap();
    assert_eq!(key, "prefix/x.zarr");
    assert!(format!("{store:?}").contains("s3://bucket"));
    // Nothing listens there: the error names the object's URL.
    let e = store.get("prefix/x.zarr/zarr.json").unwrap_err();
    assert!(
        e.to_string()
            .contains("s3://bucket/prefix/x.zarr/zarr.json"),
        "{e}"
    );
}

#[test]
fn aws_profiles_are_read_from_the_shared_files() {
    let text = "[default]\naws_access_key_id = A\n\n[work]\naws_access_key_id=W\n\
                aws_secret_access_key = S # not a comment\n[profile work]\nregion = r\n";
    assert_eq!(
        profile::parse_section(text, "work", false),
        [
            ("aws_access_key_id".to_string(), "W".to_string()),
            (
                "aws_secret_access_key".to_string(),
                "S # not a comment".to_string()
            )
        ]
    );
    assert_eq!(
        profile::parse_section(text, "work", true),
        [("region".to_string(), "r".to_string())]
    );
    assert_eq!(
        profile::parse_section(text, "default", true),
        [("aws_access_key_id".to_string(), "A".to_string())]
    );
}

// --- A real HTTP server on a local socket -------------------------------------------------

/// How the test server misbehaves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Answers ranged GETs with 200 and the whole object (like some S3 servers).
    IgnoreRanges,
    /// Answers a ranged GET (`bytes=A-B` or `bytes=-N`) with 200, the requested bytes and a
    /// `Content-Range` naming them, as `rclone serve s3` does.
    RangesWith200,
    /// Announces the full length and sends half, then closes.
    Truncate,
    /// Answers 403 to everything.
    Forbid,
    /// A plain web server with directory indexes: `PROPFIND` is 405, a GET of a directory
    /// (`…/`) is an HTML page linking its entries (`name`, `name/`), as nginx's autoindex.
    Index,
}

/// The HTML index of the directory `dir` (URL path with its trailing `/`) of `objects`, or
/// `None` when nothing is below it.
fn html_index(dir: &str, objects: &HashMap<String, Vec<u8>>) -> Option<String> {
    let dir = dir.trim_start_matches('/');
    let mut entries: Vec<String> = objects
        .keys()
        .filter_map(|k| k.strip_prefix(dir))
        .map(|rest| match rest.split_once('/') {
            Some((sub, _)) => format!("{sub}/"),
            None => rest.to_string(),
        })
        .collect();
    if entries.is_empty() {
        return None;
    }
    entries.sort();
    entries.dedup();
    let mut html = format!(
        "<html><head><title>Index of /{dir}</title></head><body><pre><a href=\"../\">../</a>\n"
    );
    for e in entries {
        html.push_str(&format!("<a href=\"{e}\">{e}</a>\n"));
    }
    html.push_str("<a href=\"?C=M;O=A\">by date</a></pre></body></html>");
    Some(html)
}

/// One request as the server saw it: method, path, `Range` header.
type Seen = (String, String, Option<String>);

struct Server {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

fn serve(mode: Mode, objects: HashMap<String, Vec<u8>>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let (objects, log) = (objects.clone(), log.clone());
            std::thread::spawn(move || answer(stream, mode, &objects, &log));
        }
    });
    Server { base, seen }
}

fn answer(
    stream: TcpStream,
    mode: Mode,
    objects: &HashMap<String, Vec<u8>>,
    log: &Mutex<Vec<Seen>>,
) {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_string();
        let path = parts.next().unwrap_or_default().to_string();
        let mut range = None;
        let mut body_len = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                match name.to_ascii_lowercase().as_str() {
                    "range" => range = Some(value.trim().to_string()),
                    "content-length" => body_len = value.trim().parse().unwrap_or(0),
                    _ => {}
                }
            }
        }
        let mut body = vec![0; body_len];
        let _ = reader.read_exact(&mut body);
        log.lock()
            .unwrap()
            .push((method.clone(), path.clone(), range.clone()));
        let mut extra = String::new();
        let object = objects.get(path.trim_start_matches('/'));
        let index = (mode == Mode::Index && path.ends_with('/'))
            .then(|| html_index(&path, objects))
            .flatten();
        let (status, payload, content_type): (&str, &[u8], &str) = match (mode, object) {
            (Mode::Forbid, _) => ("403 Forbidden", b"<Error>AccessDenied</Error>", "text/xml"),
            (Mode::Index, _) if method == "PROPFIND" => {
                ("405 Method Not Allowed", b"", "text/plain")
            }
            (Mode::Index, _) if index.is_some() => (
                "200 OK",
                index.as_deref().unwrap_or_default().as_bytes(),
                "text/html; charset=utf-8",
            ),
            // Plain web servers refuse WebDAV.
            (_, None) if method == "PROPFIND" => ("405 Method Not Allowed", b"", "text/plain"),
            (_, None) => ("404 Not Found", b"", "text/plain"),
            (Mode::RangesWith200, Some(value)) if range.is_some() => {
                let (first, last) =
                    requested_span(range.as_deref().unwrap_or_default(), value.len());
                extra = format!("Content-Range: bytes {first}-{last}/{}\r\n", value.len());
                ("200 OK", &value[first..=last], "application/octet-stream")
            }
            (_, Some(value)) => ("200 OK", value, "application/octet-stream"),
        };
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: {content_type}\r\n{extra}\r\n",
            payload.len()
        );
        if stream.write_all(head.as_bytes()).is_err() {
            return;
        }
        if method != "HEAD" {
            let sent = match mode {
                Mode::Truncate => &payload[..payload.len() / 2],
                _ => payload,
            };
            if stream.write_all(sent).is_err() {
                return;
            }
            if mode == Mode::Truncate {
                return;
            }
        }
    }
}

/// The first and last byte of a `bytes=A-B` or `bytes=-N` range of a value of `size` bytes.
fn requested_span(range: &str, size: usize) -> (usize, usize) {
    let spec = range.trim().trim_start_matches("bytes=");
    let (first, last) = spec.split_once('-').unwrap();
    if first.is_empty() {
        return (size - last.parse::<usize>().unwrap(), size - 1);
    }
    let last = last.parse::<usize>().map_or(size - 1, |l| l.min(size - 1));
    (first.parse().unwrap(), last)
}

fn http_store(server: &Server) -> (Arc<dyn Store>, String) {
    let opened = open_url(&format!("{}/data", server.base), &options()).unwrap();
    // Opening asks (HEAD) whether a prefix of the URL is an Icechunk repository; the tests
    // count the requests that follow.
    let mut seen = server.seen.lock().unwrap();
    assert!(
        seen.iter()
            .all(|(m, path, _)| m == "HEAD" && path.ends_with("/repo")),
        "{seen:?}"
    );
    seen.clear();
    opened
}

#[test]
fn servers_that_ignore_ranges_are_read_whole_and_sliced() {
    let value: Vec<u8> = (0..10_000u32).map(|i| (i % 253) as u8).collect();
    let objects = HashMap::from([
        ("data/a".to_string(), value.clone()),
        ("data/b".to_string(), b"0123456789".to_vec()),
    ]);
    let server = serve(Mode::IgnoreRanges, objects);
    let (store, key) = http_store(&server);
    assert_eq!(key, "data");
    let from = |offset, length| ByteRange::FromStart {
        offset,
        length: Some(length),
    };

    // The first ranged read finds out, and still answers.
    let parts = store
        .get_ranges("data/a", &[from(10, 5), ByteRange::Suffix { length: 3 }])
        .unwrap()
        .unwrap();
    assert_eq!(parts, [&value[10..15], &value[value.len() - 3..]]);
    assert!(format!("{store:?}").contains("RemoteStore"));

    // From then on: whole objects, once per key and batch, no Range header; whole values
    // read before (data/a) are kept and not fetched again.
    server.seen.lock().unwrap().clear();
    let requests = vec![
        ReadRequest::ranges("data/a", vec![from(0, 4)]),
        ReadRequest::ranges("data/b", vec![from(2, 3)]),
        ReadRequest::ranges("data/a", vec![from(100, 1)]),
        ReadRequest::whole("data/a"),
        ReadRequest::ranges("data/missing", vec![from(0, 1)]),
        ReadRequest::ranges("data/b", vec![from(8, 5)]),
    ];
    let answers = store.get_many(&requests);
    assert_eq!(
        answers[0].as_ref().unwrap(),
        &ReadResponse::Ranges(vec![Bytes::copy_from_slice(&value[..4])])
    );
    assert_eq!(
        answers[1].as_ref().unwrap(),
        &ReadResponse::Ranges(vec![Bytes::from_static(b"234")])
    );
    assert_eq!(
        answers[2].as_ref().unwrap(),
        &ReadResponse::Ranges(vec![Bytes::copy_from_slice(&value[100..101])])
    );
    assert_eq!(
        answers[3].as_ref().unwrap(),
        &ReadResponse::Whole(Bytes::from(value.clone()))
    );
    assert_eq!(answers[4].as_ref().unwrap(), &ReadResponse::Missing);
    assert!(matches!(
        answers[5],
        Err(StoreError::RangeOutOfBounds { size: 10, .. })
    ));
    let seen = server.seen.lock().unwrap().clone();
    let mut gets: Vec<&str> = seen.iter().map(|(_, path, _)| path.as_str()).collect();
    gets.sort();
    assert_eq!(gets, ["/data/b", "/data/missing"], "{seen:?}");
    assert!(
        seen.iter()
            .all(|(m, _, range)| m == "GET" && range.is_none()),
        "{seen:?}"
    );
}

#[test]
fn ranged_answers_with_200_and_content_range_are_partial_answers() {
    // rclone serve s3: 200 + Content-Range + only the requested bytes. The store reads
    // ranges as from any server: ranged GETs, never the whole object.
    let value: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    let objects = HashMap::from([("data/a".to_string(), value.clone())]);
    let server = serve(Mode::RangesWith200, objects);
    let (store, _) = http_store(&server);
    let from = |offset, length| ByteRange::FromStart {
        offset,
        length: Some(length),
    };
    for _ in 0..2 {
        let get = |ranges: &[ByteRange]| store.get_ranges("data/a", ranges).unwrap().unwrap();
        assert_eq!(get(&[from(5000, 100)]), [&value[5000..5100]]);
        let suffix = ByteRange::Suffix { length: 3 };
        assert_eq!(get(&[suffix]), [&value[value.len() - 3..]]);
    }
    // Four ranged GETs: none of them found to be "ignored" and re-read whole.
    let seen = server.seen.lock().unwrap().clone();
    let ranges: Vec<Option<&str>> = seen.iter().map(|(_, _, r)| r.as_deref()).collect();
    assert_eq!(
        ranges,
        [Some("bytes=5000-5099"), Some("bytes=-3")].repeat(2),
        "{seen:?}"
    );
    assert_eq!(store.get("data/a").unwrap().as_deref(), Some(&value[..]));
}

#[test]
fn truncated_bodies_are_errors_naming_the_url() {
    let objects = HashMap::from([("data/a".to_string(), vec![7u8; 4096])]);
    let server = serve(Mode::Truncate, objects);
    let (store, _) = http_store(&server);
    let e = store.get("data/a").unwrap_err();
    let url = format!("{}/data/a", server.base);
    assert!(
        matches!(e, StoreError::Truncated { expected: 4096, .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains(&url), "{e}");
    // Also through ranges and batches.
    let e = store
        .get_ranges("data/a", &[ByteRange::Suffix { length: 4000 }])
        .unwrap_err();
    assert!(e.to_string().contains(&url), "{e}");
}

#[test]
fn refused_access_is_an_error_naming_the_url() {
    let server = serve(Mode::Forbid, HashMap::new());
    let (store, _) = http_store(&server);
    let url = format!("{}/data/a", server.base);
    for e in [
        store.get("data/a").unwrap_err(),
        store.size("data/a").unwrap_err(),
        store
            .get_ranges("data/a", &[ByteRange::Suffix { length: 2 }])
            .unwrap_err(),
    ] {
        assert!(matches!(e, StoreError::AccessDenied { .. }), "{e:?}");
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("access denied to {url}")),
            "{text}"
        );
    }
}

#[test]
fn http_stores_are_read_only() {
    let server = serve(Mode::IgnoreRanges, HashMap::new());
    let (store, _) = http_store(&server);
    let e = store.set("data/x", Bytes::from_static(b"x")).unwrap_err();
    assert!(matches!(e, StoreError::ReadOnly { .. }), "{e}");
    assert!(
        e.to_string().contains(&format!("{}/data/x", server.base)),
        "{e}"
    );
    assert!(store.writer("data/x").is_err());
    assert_eq!(store.get("data/x").unwrap(), None);
    assert!(server
        .seen
        .lock()
        .unwrap()
        .iter()
        .all(|(m, _, _)| m == "GET"));
}

#[test]
fn plain_http_servers_are_listed_through_their_html_indexes() {
    let objects: HashMap<String, Vec<u8>> = [
        "data/h.zarr/zarr.json",
        "data/h.zarr/raw/zarr.json",
        "data/h.zarr/raw/c/0/0",
        "data/h.zarr/raw/c/0/1",
        "data/h.zarr/sub/zarr.json",
        "data/h.zarr/sub/x/.zarray",
        "data/h.zarr2/zarr.json",
    ]
    .iter()
    .map(|k| (k.to_string(), b"{}".to_vec()))
    .collect();
    let server = serve(Mode::Index, objects);
    let (store, _) = http_store(&server);
    let listing = store.list_dir("data/h.zarr").unwrap();
    assert_eq!(listing.keys, ["zarr.json"]);
    assert_eq!(listing.prefixes, ["raw", "sub"]);
    assert_eq!(
        store.list_dir("data/h.zarr/sub/x").unwrap().keys,
        [".zarray"]
    );
    // A directory the server does not have (once it has shown an index) is empty, as on an
    // object store.
    assert_eq!(store.list_dir("data/none").unwrap(), DirListing::default());
    // Recursive listings walk the indexes; text prefixes are matched on text.
    assert_eq!(
        store.list_prefix("data/h.zarr/raw/").unwrap(),
        [
            "data/h.zarr/raw/c/0/0",
            "data/h.zarr/raw/c/0/1",
            "data/h.zarr/raw/zarr.json"
        ]
    );
    assert_eq!(
        store.list_prefix("data/h.zarr").unwrap().len(),
        7,
        "the sibling h.zarr2 matches the text prefix too"
    );
    // PROPFIND was tried once; every later listing went straight to the index.
    let seen = server.seen.lock().unwrap().clone();
    let propfinds = seen.iter().filter(|(m, _, _)| m == "PROPFIND").count();
    assert_eq!(propfinds, 1, "{seen:?}");
    assert!(seen
        .iter()
        .filter(|(m, _, _)| m == "GET")
        .all(|(_, path, _)| path.ends_with('/')));
}

#[test]
fn servers_without_indexes_say_they_cannot_list() {
    // 405 to PROPFIND and 404 to every directory page: not an empty directory.
    let objects = HashMap::from([("data/a/zarr.json".to_string(), b"{}".to_vec())]);
    let server = serve(Mode::IgnoreRanges, objects);
    let (store, _) = http_store(&server);
    let e = store.list_dir("data").unwrap_err().to_string();
    assert!(
        e.contains("cannot list") && e.contains(&format!("{}/data", server.base)),
        "{e}"
    );
    assert!(store.list_prefix("data/").is_err());
}

#[test]
fn whole_values_kept_for_range_ignoring_servers_follow_writes() {
    let store = memory_store();
    store
        .ignores_ranges
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let first = ByteRange::FromStart {
        offset: 0,
        length: Some(3),
    };
    store.set("k", Bytes::from_static(b"old value")).unwrap();
    assert_eq!(
        store.get_ranges("k", &[first]).unwrap().unwrap(),
        [&b"old"[..]]
    );
    assert_eq!(store.whole_cache().values.len(), 1);
    // Writes, streamed writes and removals drop what was kept.
    store.set("k", Bytes::from_static(b"new value")).unwrap();
    assert_eq!(
        store.get_ranges("k", &[first]).unwrap().unwrap(),
        [&b"new"[..]]
    );
    let mut w = store.writer("k").unwrap();
    w.write_all(b"streamed").unwrap();
    w.commit().unwrap();
    assert_eq!(
        store.get_ranges("k", &[first]).unwrap().unwrap(),
        [&b"str"[..]]
    );
    store.delete("k").unwrap();
    assert_eq!(store.get_ranges("k", &[first]).unwrap(), None);
    store.set("p/a", Bytes::from_static(b"aaaa")).unwrap();
    assert_eq!(store.get("p/a").unwrap().as_deref(), Some(&b"aaaa"[..]));
    store.delete_prefix("p/").unwrap();
    assert_eq!(store.get("p/a").unwrap(), None);
}

#[test]
fn the_whole_value_cache_is_bounded_and_keeps_the_most_recent() {
    let mut cache = WholeCache::default();
    let mb = |n: usize| Bytes::from(vec![0u8; n << 20]);
    cache.put("a", &mb(30));
    cache.put("b", &mb(30));
    assert!(cache.get("a").is_some()); // a is now the most recent
    cache.put("c", &mb(30)); // over 64 MiB: b, the least recent, goes
    assert!(cache.get("b").is_none());
    assert!(cache.get("a").is_some() && cache.get("c").is_some());
    assert_eq!(cache.bytes, 60 << 20);
    cache.put("huge", &mb(65));
    assert!(cache.get("huge").is_none(), "larger than the whole cache");
    cache.put("x/1", &mb(1));
    cache.forget_prefix("x/");
    assert!(cache.get("x/1").is_none());
    assert_eq!(cache.bytes, 60 << 20);
}

#[test]
fn traffic_counts_requests_and_bytes() {
    // The counters are process-wide and other tests run alongside: compare lower bounds.
    let store = memory_store();
    let before = traffic();
    store.set("t/a", Bytes::from(vec![1u8; 1000])).unwrap();
    let mut w = store.writer("t/b").unwrap();
    w.write_all(&[2u8; 500]).unwrap();
    w.commit().unwrap();
    assert_eq!(store.get("t/a").unwrap().unwrap().len(), 1000);
    let parts = store
        .get_ranges(
            "t/b",
            &[ByteRange::FromStart {
                offset: 10,
                length: Some(20),
            }],
        )
        .unwrap()
        .unwrap();
    assert_eq!(parts[0].len(), 20);
    let after = traffic();
    assert!(
        after.requests >= before.requests + 4,
        "{before:?} -> {after:?}"
    );
    assert!(
        after.bytes_written >= before.bytes_written + 1500,
        "{before:?} -> {after:?}"
    );
    assert!(
        after.bytes_read >= before.bytes_read + 1020,
        "{before:?} -> {after:?}"
    );
}

/// An S3 client that found no credentials fails asking the instance metadata service; the
/// error says what to do instead of only that.
#[test]
fn missing_credentials_are_named_as_such() {
    let store = memory_store();
    let failed = object_store::Error::Generic {
        store: "S3",
        source: "Error performing PUT http://169.254.169.254/latest/api/token: 403 Forbidden"
            .into(),
    };
    let message = store.error("a/zarr.json", failed).to_string();
    assert!(message.contains("no credentials were found"), "{message}");
    assert!(
        message.contains("--anon") && message.contains("AWS_ACCESS_KEY_ID"),
        "{message}"
    );
    assert!(message.contains("a/zarr.json"), "{message}");
    // Other failures keep their own message.
    let other = object_store::Error::Generic {
        store: "S3",
        source: "connection reset".into(),
    };
    let message = store.error("k", other).to_string();
    assert!(!message.contains("credentials"), "{message}");
}
