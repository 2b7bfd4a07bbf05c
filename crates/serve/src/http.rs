//! The HTTP side: read-only file serving below one root, with byte ranges, CORS and an optional
//! Neuroglancer client under [`CLIENT_PREFIX`].

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use percent_encoding::percent_decode_str;
use tiny_http::{Header, Method, Request, Response, StatusCode};

use crate::ServeError;

/// The URL path under which Neuroglancer's client is served when a client directory is given.
pub const CLIENT_PREFIX: &str = "/_neuroglancer/";

/// How many requests are answered at once (a viewer fetches many chunks in parallel).
const WORKERS: usize = 8;

/// A bound, not yet running, read-only HTTP server over one directory.
pub struct Server {
    http: Arc<tiny_http::Server>,
    root: PathBuf,
    client: Option<PathBuf>,
    address: SocketAddr,
    log: bool,
}

/// A server running on background threads; [`ServerHandle::stop`] (or dropping it) ends it.
pub struct ServerHandle {
    http: Arc<tiny_http::Server>,
    stopping: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
    address: SocketAddr,
}

impl Server {
    /// Binds `address` (port 0 picks a free one) to serve the files below `root`, and
    /// Neuroglancer's client from `client` (a directory holding its `index.html`) when given.
    pub fn bind(
        root: impl AsRef<Path>,
        address: SocketAddr,
        client: Option<&Path>,
    ) -> Result<Server, ServeError> {
        let root = canonical_dir(root.as_ref())?;
        let client = match client {
            Some(dir) => {
                let dir = canonical_dir(dir)?;
                if !dir.join("index.html").is_file() {
                    return Err(ServeError::Root {
                        path: dir.display().to_string(),
                        message: "no index.html: not a Neuroglancer client directory".into(),
                    });
                }
                Some(dir)
            }
            None => None,
        };
        let http = tiny_http::Server::http(address).map_err(|e| ServeError::Bind {
            address: address.to_string(),
            message: e.to_string(),
        })?;
        let address = http.server_addr().to_ip().ok_or_else(|| ServeError::Bind {
            address: address.to_string(),
            message: "the listener has no IP address".into(),
        })?;
        Ok(Server {
            http: Arc::new(http),
            root,
            client,
            address,
            log: false,
        })
    }

    /// Prints one line per request on stderr (method, path, status, bytes).
    pub fn with_log(mut self, log: bool) -> Server {
        self.log = log;
        self
    }

    /// The directory served (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The address actually bound.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://HOST:PORT` of the served root, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The URL of the served Neuroglancer client, when one is served.
    pub fn client_url(&self) -> Option<String> {
        self.client
            .as_ref()
            .map(|_| format!("{}{CLIENT_PREFIX}", self.base_url()))
    }

    /// Serves on background threads until the handle is stopped or dropped.
    pub fn spawn(self) -> ServerHandle {
        let stopping = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Files {
            root: self.root,
            client: self.client,
            log: self.log,
        });
        let workers = (0..WORKERS)
            .map(|_| {
                let http = Arc::clone(&self.http);
                let files = Arc::clone(&shared);
                let stopping = Arc::clone(&stopping);
                std::thread::spawn(move || {
                    while let Ok(request) = http.recv() {
                        files.answer(request);
                        if stopping.load(Ordering::Acquire) {
                            break;
                        }
                    }
                })
            })
            .collect();
        ServerHandle {
            http: self.http,
            stopping,
            workers,
            address: self.address,
        }
    }

    /// Serves on this thread's behalf until the process ends.
    pub fn run(self) -> Result<(), ServeError> {
        let mut handle = self.spawn();
        for worker in handle.workers.drain(..) {
            let _ = worker.join();
        }
        Ok(())
    }
}

impl ServerHandle {
    /// The address served.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Stops accepting requests and waits for the requests in flight.
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        self.stopping.store(true, Ordering::Release);
        for _ in 0..self.workers.len() {
            self.http.unblock();
        }
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shut_down();
    }
}

fn canonical_dir(path: &Path) -> Result<PathBuf, ServeError> {
    let canonical = path.canonicalize().map_err(|e| ServeError::Root {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    if !canonical.is_dir() {
        return Err(ServeError::Root {
            path: path.display().to_string(),
            message: "not a directory".into(),
        });
    }
    Ok(canonical)
}

/// The request handler's view: where files come from.
struct Files {
    root: PathBuf,
    client: Option<PathBuf>,
    log: bool,
}

/// A file found for a request: where it is and whether it is the gzip-compressed `KEY.gz`
/// standing for `KEY`.
struct Found {
    path: PathBuf,
    gzip: bool,
}

/// Why a request gets no file.
#[derive(Debug, PartialEq)]
enum Refusal {
    NotFound,
    Forbidden,
}

impl Files {
    fn answer(&self, request: Request) {
        let method = request.method().clone();
        let url = request.url().to_string();
        let (status, bytes) = match method {
            Method::Options => (respond(request, empty(204)), 0),
            Method::Get | Method::Head => self.answer_read(request),
            _ => {
                let response = empty(405).with_header(header("Allow", "GET, HEAD, OPTIONS"));
                (respond(request, response), 0)
            }
        };
        if self.log {
            eprintln!("{method} {url} {status} {bytes}");
        }
    }

    fn answer_read(&self, request: Request) -> (u16, u64) {
        let found = match self.find(request.url()) {
            Ok(found) => found,
            Err(Refusal::NotFound) => return (respond(request, text(404, "not found")), 0),
            Err(Refusal::Forbidden) => return (respond(request, text(403, "forbidden")), 0),
        };
        let mut file = match File::open(&found.path) {
            Ok(file) => file,
            Err(_) => return (respond(request, text(404, "not found")), 0),
        };
        let size = match file.metadata() {
            Ok(meta) => meta.len(),
            Err(_) => return (respond(request, text(500, "cannot read the file")), 0),
        };
        let content_type = header("Content-Type", content_type(&found.path, found.gzip));
        if found.gzip {
            // The stored bytes are the compressed body: ranges of it would mean nothing to a
            // client that asked for the uncompressed file.
            let response = Response::new(
                StatusCode(200),
                vec![content_type, header("Content-Encoding", "gzip")],
                Box::new(file) as Box<dyn Read + Send>,
                usize::try_from(size).ok(),
                None,
            );
            return (respond(request, with_cors(response)), size);
        }
        let range = request
            .headers()
            .iter()
            .find(|h| h.field.equiv("Range"))
            .map(|h| parse_range(h.value.as_str(), size));
        let (status, start, length) = match range {
            None | Some(RangeAnswer::Whole) => (200, 0, size),
            Some(RangeAnswer::Part { start, end }) => (206, start, end - start),
            Some(RangeAnswer::Unsatisfiable) => {
                let response = text(416, "range not satisfiable")
                    .with_header(header("Content-Range", &format!("bytes */{size}")));
                return (respond(request, response), 0);
            }
        };
        if start > 0 && file.seek(SeekFrom::Start(start)).is_err() {
            return (respond(request, text(500, "cannot read the file")), 0);
        }
        let mut headers = vec![content_type, header("Accept-Ranges", "bytes")];
        if status == 206 {
            let last = start + length - 1;
            headers.push(header(
                "Content-Range",
                &format!("bytes {start}-{last}/{size}"),
            ));
        }
        let response = Response::new(
            StatusCode(status),
            headers,
            Box::new(file.take(length)) as Box<dyn Read + Send>,
            usize::try_from(length).ok(),
            None,
        );
        (respond(request, with_cors(response)), length)
    }

    /// The file a URL names, confined to the served tree (or the client's).
    fn find(&self, url: &str) -> Result<Found, Refusal> {
        let path = url.split(['?', '#']).next().unwrap_or("");
        if let (Some(client), Some(rest)) = (&self.client, path.strip_prefix(CLIENT_PREFIX)) {
            let file = confined(client, rest)?;
            let file = if file.is_dir() {
                file.join("index.html")
            } else {
                file
            };
            return match file.is_file() {
                true => Ok(Found {
                    path: file,
                    gzip: false,
                }),
                false => Err(Refusal::NotFound),
            };
        }
        if client_index_request(path) && self.client.is_some() {
            return Err(Refusal::NotFound);
        }
        match confined(&self.root, path) {
            Ok(file) if file.is_file() => Ok(Found {
                path: file,
                gzip: false,
            }),
            Ok(_) => Err(Refusal::NotFound),
            Err(Refusal::NotFound) if !path.ends_with('/') => {
                let gz = confined(&self.root, &format!("{path}.gz"))?;
                match gz.is_file() {
                    true => Ok(Found {
                        path: gz,
                        gzip: true,
                    }),
                    false => Err(Refusal::NotFound),
                }
            }
            Err(refusal) => Err(refusal),
        }
    }
}

fn client_index_request(path: &str) -> bool {
    path.trim_end_matches('/') == CLIENT_PREFIX.trim_end_matches('/')
}

/// Resolves a URL path below `base`: every segment percent-decoded, `.`/`..` and separators
/// inside a segment refused, and the result (symbolic links followed) inside `base`.
fn confined(base: &Path, url_path: &str) -> Result<PathBuf, Refusal> {
    let mut path = base.to_path_buf();
    for segment in url_path.split('/').filter(|s| !s.is_empty()) {
        let decoded = percent_decode_str(segment)
            .decode_utf8()
            .map_err(|_| Refusal::NotFound)?;
        if decoded.contains(['/', '\\', '\0']) {
            return Err(Refusal::Forbidden);
        }
        let mut components = Path::new(decoded.as_ref()).components();
        match (components.next(), components.next()) {
            (Some(Component::Normal(name)), None) => path.push(name),
            _ => return Err(Refusal::Forbidden),
        }
    }
    let canonical = path.canonicalize().map_err(|_| Refusal::NotFound)?;
    if canonical.starts_with(base) {
        Ok(canonical)
    } else {
        Err(Refusal::Forbidden)
    }
}

/// What a `Range` header asks of a file of `size` bytes.
#[derive(Debug, PartialEq)]
enum RangeAnswer {
    /// No usable single range (several ranges, another unit, bad syntax): the whole file.
    Whole,
    /// Bytes `start..end` (end exclusive).
    Part { start: u64, end: u64 },
    /// A well-formed range that lies past the end of the file.
    Unsatisfiable,
}

fn parse_range(value: &str, size: u64) -> RangeAnswer {
    let Some(spec) = value.trim().strip_prefix("bytes=") else {
        return RangeAnswer::Whole;
    };
    if spec.contains(',') {
        return RangeAnswer::Whole;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return RangeAnswer::Whole;
    };
    let (first, last) = (first.trim(), last.trim());
    if first.is_empty() {
        // A suffix: the last N bytes.
        return match last.parse::<u64>() {
            Ok(0) => RangeAnswer::Unsatisfiable,
            Ok(_) if size == 0 => RangeAnswer::Unsatisfiable,
            Ok(n) => RangeAnswer::Part {
                start: size.saturating_sub(n),
                end: size,
            },
            Err(_) => RangeAnswer::Whole,
        };
    }
    let Ok(start) = first.parse::<u64>() else {
        return RangeAnswer::Whole;
    };
    let end = if last.is_empty() {
        size
    } else {
        match last.parse::<u64>() {
            Ok(last) if last >= start => last.saturating_add(1).min(size),
            _ => return RangeAnswer::Whole,
        }
    };
    if start >= size {
        RangeAnswer::Unsatisfiable
    } else {
        RangeAnswer::Part { start, end }
    }
}

fn content_type(path: &Path, gzip: bool) -> &'static str {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let name = if gzip {
        name.strip_suffix(".gz").unwrap_or(name)
    } else {
        name
    };
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript",
        Some("wasm") => "application/wasm",
        Some("json" | "map") => "application/json",
        Some("css") => "text/css",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        _ => "application/octet-stream",
    }
}

fn header(field: &str, value: &str) -> Header {
    // Every field and value is ASCII written in this module or formatted from numbers.
    Header::from_bytes(field.as_bytes(), value.as_bytes())
        .expect("header fields and values are ASCII")
}

/// The CORS headers every answer carries: any origin may read, and see the range headers.
fn with_cors<R: Read>(response: Response<R>) -> Response<R> {
    response
        .with_header(header("Access-Control-Allow-Origin", "*"))
        .with_header(header(
            "Access-Control-Expose-Headers",
            "Content-Length, Content-Range, Accept-Ranges, Content-Encoding",
        ))
}

fn empty(status: u16) -> Response<Box<dyn Read + Send>> {
    with_cors(Response::new(
        StatusCode(status),
        vec![
            header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS"),
            header("Access-Control-Allow-Headers", "Range, Content-Type"),
            header("Access-Control-Max-Age", "86400"),
        ],
        Box::new(std::io::empty()) as Box<dyn Read + Send>,
        Some(0),
        None,
    ))
}

fn text(status: u16, message: &str) -> Response<Box<dyn Read + Send>> {
    let body = format!("{message}\n").into_bytes();
    let length = body.len();
    with_cors(Response::new(
        StatusCode(status),
        vec![header("Content-Type", "text/plain; charset=utf-8")],
        Box::new(std::io::Cursor::new(body)) as Box<dyn Read + Send>,
        Some(length),
        None,
    ))
}

/// Sends a response; a client that went away is not an error of the server's.
fn respond(request: Request, response: Response<Box<dyn Read + Send>>) -> u16 {
    let status = response.status_code().0;
    let _ = request.respond(response);
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_as_rfc_9110_reads_them() {
        use RangeAnswer::*;
        assert_eq!(parse_range("bytes=0-9", 100), Part { start: 0, end: 10 });
        assert_eq!(
            parse_range("bytes=90-200", 100),
            Part {
                start: 90,
                end: 100
            }
        );
        assert_eq!(
            parse_range("bytes=95-", 100),
            Part {
                start: 95,
                end: 100
            }
        );
        assert_eq!(
            parse_range("bytes=-10", 100),
            Part {
                start: 90,
                end: 100
            }
        );
        assert_eq!(parse_range("bytes=-500", 100), Part { start: 0, end: 100 });
        assert_eq!(parse_range("bytes=100-", 100), Unsatisfiable);
        assert_eq!(parse_range("bytes=-0", 100), Unsatisfiable);
        assert_eq!(parse_range("bytes=5-2", 100), Whole);
        assert_eq!(parse_range("bytes=0-1,5-6", 100), Whole);
        assert_eq!(parse_range("items=0-1", 100), Whole);
        assert_eq!(parse_range("bytes=x-1", 100), Whole);
    }

    #[test]
    fn paths_stay_below_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("a")).unwrap();
        std::fs::write(root.join("a/b c"), b"x").unwrap();
        assert_eq!(confined(&root, "/a/b%20c").unwrap(), root.join("a/b c"));
        assert_eq!(confined(&root, "/a/../a/b%20c"), Err(Refusal::Forbidden));
        assert_eq!(confined(&root, "/a/%2e%2e/a"), Err(Refusal::Forbidden));
        assert_eq!(
            confined(&root, "/a%2f..%2f..%2fetc"),
            Err(Refusal::Forbidden)
        );
        assert_eq!(confined(&root, "/a/%5c..%5c"), Err(Refusal::Forbidden));
        assert_eq!(confined(&root, "/a/./b%20c"), Err(Refusal::Forbidden));
        assert_eq!(confined(&root, "/missing"), Err(Refusal::NotFound));
    }
}
