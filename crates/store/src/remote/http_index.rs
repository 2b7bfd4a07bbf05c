//! Listings of plain HTTP servers from their HTML directory indexes.
//!
//! `object_store`'s HTTP store lists with WebDAV `PROPFIND`, which plain web servers refuse.
//! Many of them (nginx and Apache with autoindex, `rclone serve http`, Python's
//! `http.server`) answer a GET of a directory URL (with its trailing `/`) with an HTML page
//! linking each entry: `name` for a file, `name/` for a directory. [`HttpIndex`] reads such a
//! page into a directory listing. Links that do not name a direct child (parents, sort
//! orders and downloads with a query, other sites) are ignored.

use object_store::client::{HttpClient, HttpConnector, HttpRequestBody, ReqwestConnector};
use object_store::ClientOptions;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use url::Url;

/// Requests of HTML directory indexes of one HTTP server.
#[derive(Debug)]
pub(crate) struct HttpIndex {
    client: HttpClient,
    /// The server's root URL (`http://host:port/`).
    root: Url,
    /// Retries of a request that failed with 5xx, 429 or a broken connection.
    retries: usize,
    /// True once the server answered with an index: a 404 then means a missing directory,
    /// not a server without indexes (which must not pass for an empty listing).
    served_index: AtomicBool,
}

/// The first wait before a retry; doubled at each retry, with jitter, at most 15 s.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// What a directory's index says.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Index {
    /// Files directly in the directory.
    pub keys: Vec<String>,
    /// Directories directly in the directory.
    pub prefixes: Vec<String>,
}

impl HttpIndex {
    /// Index requests to the server at `base` (`http(s)://host[:port]`), each retried up to
    /// `retries` times.
    pub(crate) fn new(base: &str, options: &ClientOptions, retries: usize) -> Result<Self, String> {
        let root = Url::parse(base).map_err(|e| format!("{base}: {e}"))?;
        let client = ReqwestConnector::default()
            .connect(options)
            .map_err(|e| e.to_string())?;
        Ok(HttpIndex {
            client,
            root,
            retries,
            served_index: AtomicBool::new(false),
        })
    }

    /// The index of the directory `dir` (`""`: the root): `None` when the server has no such
    /// directory (404 from a server that gave an index before), an error when it answers
    /// anything but an HTML page.
    pub(crate) async fn list(&self, dir: &str) -> Result<Option<Index>, String> {
        let mut url = self.root.clone();
        {
            let mut segments = url
                .path_segments_mut()
                .map_err(|()| format!("{}: not a base URL", self.root))?;
            segments.pop_if_empty();
            segments.extend(dir.split('/').filter(|s| !s.is_empty()));
            segments.push("");
        }
        let mut backoff = FIRST_BACKOFF;
        let mut attempt = 0;
        let response = loop {
            let request = http::Request::builder()
                .method(http::Method::GET)
                .uri(url.as_str())
                .header(http::header::ACCEPT, "text/html")
                .body(HttpRequestBody::empty())
                .map_err(|e| e.to_string())?;
            let answer = self.client.execute(request).await;
            let transient = match &answer {
                Ok(r) => r.status().is_server_error() || r.status().as_u16() == 429,
                Err(_) => true,
            };
            if !transient || attempt >= self.retries {
                break answer.map_err(|e| format!("GET {url}: {e}"))?;
            }
            attempt += 1;
            let jitter = 0.5 + fastrand::f64();
            tokio::time::sleep(backoff.mul_f64(jitter)).await;
            backoff = (backoff * 2).min(Duration::from_secs(15));
        };
        let status = response.status();
        if status == http::StatusCode::NOT_FOUND && self.served_index.load(Ordering::Relaxed) {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(format!("GET {url}: {status}"));
        }
        let html_page = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.trim_start().to_ascii_lowercase().starts_with("text/html"));
        if !html_page {
            return Err(format!("GET {url}: not an HTML directory index"));
        }
        let body = response
            .into_body()
            .bytes()
            .await
            .map_err(|e| format!("GET {url}: {e}"))?;
        self.served_index.store(true, Ordering::Relaxed);
        Ok(Some(parse_index(
            &String::from_utf8_lossy(&body),
            url.path(),
        )))
    }
}

/// The entries an HTML directory index links to. `dir_path` is the URL path of the directory
/// (with its trailing `/`, percent-encoded as sent), so that absolute links to children are
/// recognised too.
pub(crate) fn parse_index(html: &str, dir_path: &str) -> Index {
    let mut index = Index::default();
    for href in hrefs(html) {
        let href = unescape_html(&href);
        if href.contains(['?', '#']) || href.contains("://") || href.starts_with("//") {
            continue;
        }
        let relative = match href.strip_prefix('/') {
            Some(_) => match href.strip_prefix(dir_path) {
                Some(rest) => rest.to_string(),
                None => continue,
            },
            None => href.trim_start_matches("./").to_string(),
        };
        let (name, is_dir) = match relative.strip_suffix('/') {
            Some(name) => (name, true),
            None => (relative.as_str(), false),
        };
        let Some(name) = percent_decode(name) else {
            continue;
        };
        if name.is_empty() || name == "." || name == ".." || name.contains('/') {
            continue;
        }
        if is_dir {
            index.prefixes.push(name);
        } else {
            index.keys.push(name);
        }
    }
    for list in [&mut index.keys, &mut index.prefixes] {
        list.sort();
        list.dedup();
    }
    index
}

/// The values of the `href` attributes of the page, in order.
fn hrefs(html: &str) -> Vec<String> {
    let lower = html.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = lower[from..].find("href") {
        let mut pos = from + at + 4;
        from = pos;
        // The attribute name must stand alone (not `xlink:href`, whose targets are icons).
        let before = lower[..pos - 4].chars().next_back();
        if !before.is_some_and(char::is_whitespace) {
            continue;
        }
        let rest = &html[pos..];
        let trimmed = rest.trim_start();
        let Some(after_eq) = trimmed.strip_prefix('=') else {
            continue;
        };
        let value = after_eq.trim_start();
        pos += rest.len() - value.len();
        let (quote, body) = match value.chars().next() {
            Some(q @ ('"' | '\'')) => (Some(q), &value[1..]),
            _ => (None, value),
        };
        let end = match quote {
            Some(q) => body.find(q),
            None => body.find(|c: char| c.is_whitespace() || c == '>'),
        };
        let Some(end) = end else { break };
        out.push(body[..end].to_string());
        from = pos + end;
    }
    out
}

/// `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;` and numeric character references decoded.
fn unescape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest.find(';').filter(|&e| e <= 10) else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let entity = &rest[1..end];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .or_else(|| entity.strip_prefix("#X"))
                .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// `%XX` escapes decoded; `None` when the result is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h)? * 16 + hex(l)?) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(index: &Index) -> (Vec<&str>, Vec<&str>) {
        (
            index.keys.iter().map(String::as_str).collect(),
            index.prefixes.iter().map(String::as_str).collect(),
        )
    }

    #[test]
    fn rclone_index() {
        let html = r##"<h1><a href="../../">/</a><a href="../">d</a>/<a href="">h.zarr</a>/</h1>
            <a class="zip-root" href="?download=zip" title="Download root as .zip">
            <a href="?sort=namedirfirst&order=asc" class="icon sort order"><svg><use xlink:href="#up-arrow"></use></svg></a>
            <a href="..">
            <span class="name"><a href="sub/">sub/</a></span>
            <a class="zip" href="sub/?download=zip" title="Download folder as .zip">
            <span class="name"><a href="we%20ird&amp;name.txt">we ird&amp;name.txt</a></span>
            <span class="name"><a href="zarr.json">zarr.json</a></span>
            <span class="name"><a href=".zattrs">.zattrs</a></span>"##;
        let index = parse_index(html, "/d/h.zarr/");
        assert_eq!(
            names(&index),
            (vec![".zattrs", "we ird&name.txt", "zarr.json"], vec!["sub"])
        );
    }

    #[test]
    fn nginx_apache_and_python_indexes() {
        let nginx = "<html><head><title>Index of /a/</title></head><body><h1>Index of /a/</h1><hr><pre><a href=\"../\">../</a>\n<a href=\"c/\">c/</a>  24-Nov-2026 10:00  -\n<a href=\".zarray\">.zarray</a> 24-Nov-2026 10:00 312\n</pre><hr></body></html>";
        assert_eq!(
            names(&parse_index(nginx, "/a/")),
            (vec![".zarray"], vec!["c"])
        );
        let apache = r#"<tr><th><a href="?C=N;O=D">Name</a></th></tr>
            <tr><td><a href="/data/">Parent Directory</a></td></tr>
            <tr><td><a href="0/">0/</a></td></tr><tr><td><a href='attributes.json'>attributes.json</a></td></tr>"#;
        assert_eq!(
            names(&parse_index(apache, "/data/x.n5/")),
            (vec!["attributes.json"], vec!["0"])
        );
        let python = r#"<ul><li><a href="%C3%A4.zarr/">ä.zarr/</a></li><li><a href=zarr.json>zarr.json</a></li>
            <li><a href="/srv/dir/abs/">abs/</a></li><li><a href="/elsewhere/x">x</a></li>
            <li><a href="https://example.org/y">y</a></li><li><a href="deep/er/z">z</a></li></ul>"#;
        assert_eq!(
            names(&parse_index(python, "/srv/dir/")),
            (vec!["zarr.json"], vec!["abs", "ä.zarr"])
        );
        assert_eq!(parse_index("<p>no links</p>", "/"), Index::default());
    }

    #[test]
    fn entities_and_escapes() {
        assert_eq!(
            unescape_html("a&amp;b&#38;c&#x26;d&bogus;&"),
            "a&b&c&d&bogus;&"
        );
        assert_eq!(percent_decode("a%20b%zz%4").as_deref(), Some("a b%zz%4"));
        assert_eq!(percent_decode("%ff"), None);
    }
}
