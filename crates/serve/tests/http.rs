//! The server as an HTTP client sees it: raw requests over TCP, byte ranges, CORS, gzip-stored
//! chunks, the client directory, and paths that try to leave the served tree.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;

use neurochunk_serve::{discover_layers, LayerKind, Server, SourceFormat, CLIENT_PREFIX};

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn send(address: SocketAddr, method: &str, path: &str, extra: &[(&str, &str)]) -> Reply {
    let mut stream = TcpStream::connect(address).unwrap();
    let mut request =
        format!("{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
    for (name, value) in extra {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let body = raw[split + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    Reply {
        status,
        headers,
        body,
    }
}

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let bytes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    std::fs::create_dir_all(root.join("data/layer/8_8_8")).unwrap();
    std::fs::write(root.join("data/layer/8_8_8/0-64_0-64_0-64"), &bytes).unwrap();
    std::fs::write(
        root.join("data/layer/8_8_8/64-128_0-64_0-64.gz"),
        b"\x1f\x8bcompressed",
    )
    .unwrap();
    std::fs::write(
        root.join("data/layer/info"),
        br#"{"type": "segmentation", "data_type": "uint64", "num_channels": 1,
             "scales": [{"key": "8_8_8"}], "skeletons": "skeletons"}"#,
    )
    .unwrap();
    std::fs::create_dir_all(root.join("data/layer/skeletons")).unwrap();
    for id in ["17", "5", "0", "info"] {
        std::fs::write(root.join("data/layer/skeletons").join(id), b"").unwrap();
    }
    std::fs::write(root.join("outside.txt"), b"secret").unwrap();
    std::fs::create_dir_all(root.join("client")).unwrap();
    std::fs::write(root.join("client/index.html"), b"<html>viewer</html>").unwrap();
    std::fs::write(root.join("client/main.wasm"), b"\0asm").unwrap();
    dir
}

fn start(root: &Path, client: Option<&Path>) -> neurochunk_serve::ServerHandle {
    Server::bind(root, "127.0.0.1:0".parse().unwrap(), client)
        .unwrap()
        .spawn()
}

#[test]
fn whole_files_ranges_and_cors() {
    let dir = tree();
    let server = start(&dir.path().join("data"), None);
    let at = server.address();
    let expected: Vec<u8> = (0..=255u8).cycle().take(1000).collect();

    let whole = send(at, "GET", "/layer/8_8_8/0-64_0-64_0-64", &[]);
    assert_eq!(whole.status, 200);
    assert_eq!(whole.body, expected);
    assert_eq!(whole.header("Access-Control-Allow-Origin"), Some("*"));
    assert_eq!(whole.header("Accept-Ranges"), Some("bytes"));

    let part = send(
        at,
        "GET",
        "/layer/8_8_8/0-64_0-64_0-64",
        &[("Range", "bytes=10-19")],
    );
    assert_eq!(part.status, 206);
    assert_eq!(part.body, expected[10..20]);
    assert_eq!(part.header("Content-Range"), Some("bytes 10-19/1000"));
    assert!(part
        .header("Access-Control-Expose-Headers")
        .is_some_and(|v| v.contains("Content-Range")));

    let suffix = send(
        at,
        "GET",
        "/layer/8_8_8/0-64_0-64_0-64",
        &[("Range", "bytes=-24")],
    );
    assert_eq!(suffix.status, 206);
    assert_eq!(suffix.body, expected[976..]);

    let past = send(
        at,
        "GET",
        "/layer/8_8_8/0-64_0-64_0-64",
        &[("Range", "bytes=1000-")],
    );
    assert_eq!(past.status, 416);
    assert_eq!(past.header("Content-Range"), Some("bytes */1000"));

    let head = send(at, "HEAD", "/layer/8_8_8/0-64_0-64_0-64", &[]);
    assert_eq!(head.status, 200);
    assert_eq!(head.header("Content-Length"), Some("1000"));
    assert!(head.body.is_empty());

    let preflight = send(
        at,
        "OPTIONS",
        "/layer/info",
        &[
            ("Origin", "http://elsewhere"),
            ("Access-Control-Request-Headers", "range"),
        ],
    );
    assert_eq!(preflight.status, 204);
    assert!(preflight
        .header("Access-Control-Allow-Headers")
        .is_some_and(|v| v.contains("Range")));

    assert_eq!(send(at, "PUT", "/layer/info", &[]).status, 405);
    assert_eq!(send(at, "DELETE", "/layer/info", &[]).status, 405);
    server.stop();
}

#[test]
fn gzip_stored_chunks_are_sent_as_content_encoding() {
    let dir = tree();
    let server = start(&dir.path().join("data"), None);
    let reply = send(
        server.address(),
        "GET",
        "/layer/8_8_8/64-128_0-64_0-64",
        &[],
    );
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("Content-Encoding"), Some("gzip"));
    assert_eq!(reply.body, b"\x1f\x8bcompressed");
    assert_eq!(
        send(
            server.address(),
            "GET",
            "/layer/8_8_8/128-192_0-64_0-64",
            &[]
        )
        .status,
        404
    );
}

#[test]
fn nothing_outside_the_served_tree() {
    let dir = tree();
    let data = dir.path().join("data");
    std::os::unix::fs::symlink(dir.path().join("outside.txt"), data.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(dir.path(), data.join("up")).unwrap();
    std::fs::write(data.join("inside.txt"), b"ok").unwrap();
    std::os::unix::fs::symlink(data.join("inside.txt"), data.join("ok-link")).unwrap();
    let server = start(&data, None);
    let at = server.address();
    for path in [
        "/../outside.txt",
        "/layer/../../outside.txt",
        "/%2e%2e/outside.txt",
        "/layer/%2E%2E/%2E%2E/outside.txt",
        "/..%2foutside.txt",
        "/..%5coutside.txt",
        "/link.txt",
        "/up/outside.txt",
    ] {
        let reply = send(at, "GET", path, &[]);
        assert!(
            reply.status == 403 || reply.status == 404,
            "{path}: {}",
            reply.status
        );
        assert_ne!(reply.body, b"secret", "{path}");
    }
    // A link that stays inside is followed.
    assert_eq!(send(at, "GET", "/ok-link", &[]).body, b"ok");
    // Directories are not listed.
    assert_eq!(send(at, "GET", "/layer/", &[]).status, 404);
}

#[test]
fn the_client_is_served_under_its_prefix() {
    let dir = tree();
    let client = dir.path().join("client");
    let server = start(&dir.path().join("data"), Some(&client));
    let at = server.address();
    let index = send(at, "GET", CLIENT_PREFIX, &[]);
    assert_eq!(index.status, 200);
    assert_eq!(index.body, b"<html>viewer</html>");
    assert!(index
        .header("Content-Type")
        .unwrap()
        .starts_with("text/html"));
    let wasm = send(at, "GET", &format!("{CLIENT_PREFIX}main.wasm"), &[]);
    assert_eq!(wasm.header("Content-Type"), Some("application/wasm"));
    let escape = send(
        at,
        "GET",
        &format!("{CLIENT_PREFIX}../data/layer/info"),
        &[],
    );
    assert_ne!(escape.status, 200);
    assert!(Server::bind(
        dir.path(),
        "127.0.0.1:0".parse().unwrap(),
        Some(&dir.path().join("data"))
    )
    .is_err());
}

#[test]
fn layers_are_found_with_their_segments() {
    let dir = tree();
    let root = dir.path();
    std::fs::create_dir_all(root.join("data/img.ome.zarr/0")).unwrap();
    std::fs::write(
        root.join("data/img.ome.zarr/zarr.json"),
        br#"{"zarr_format": 3, "node_type": "group", "attributes": {"ome": {"version": "0.5", "multiscales": [{}]}}}"#,
    )
    .unwrap();
    std::fs::write(
        root.join("data/img.ome.zarr/0/zarr.json"),
        br#"{"zarr_format": 3, "node_type": "array"}"#,
    )
    .unwrap();
    std::fs::create_dir_all(root.join("data/img.ome.zarr/labels/cells")).unwrap();
    std::fs::write(
        root.join("data/img.ome.zarr/labels/cells/zarr.json"),
        br#"{"zarr_format": 3, "node_type": "group", "attributes": {"ome": {"multiscales": [{}], "image-label": {}}}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(root.join("data/old.n5/s0")).unwrap();
    std::fs::write(
        root.join("data/old.n5/attributes.json"),
        br#"{"multiScale": true}"#,
    )
    .unwrap();
    std::fs::create_dir_all(root.join("data/v2")).unwrap();
    std::fs::write(root.join("data/v2/.zarray"), b"{}").unwrap();
    std::fs::write(root.join("data/broken-info"), b"").unwrap();
    std::fs::create_dir_all(root.join("data/synapses/by_id")).unwrap();
    std::fs::write(
        root.join("data/synapses/info"),
        br#"{"@type": "neuroglancer_annotations_v1", "annotation_type": "line"}"#,
    )
    .unwrap();

    let layers = discover_layers(&root.join("data")).unwrap();
    let found: Vec<(&str, SourceFormat, LayerKind)> = layers
        .iter()
        .map(|l| (l.path.as_str(), l.format, l.kind))
        .collect();
    assert_eq!(
        found,
        vec![
            ("img.ome.zarr", SourceFormat::Zarr3, LayerKind::Image),
            (
                "img.ome.zarr/labels/cells",
                SourceFormat::Zarr3,
                LayerKind::Segmentation
            ),
            ("layer", SourceFormat::Precomputed, LayerKind::Segmentation),
            ("old.n5", SourceFormat::N5, LayerKind::Image),
            ("synapses", SourceFormat::Precomputed, LayerKind::Annotation),
            ("v2", SourceFormat::Zarr2, LayerKind::Image),
        ]
    );
    assert_eq!(layers[2].segments, vec![5, 17]);
    assert_eq!(layers[2].name, "layer");
}
