//! A read-only store over a LINDI reference file (`.lindi.json`): the kerchunk-style JSON
//! document `{"refs": {key: value}, "templates"?: {...}}` whose values are the key's bytes
//! (a string, `base64:`-prefixed when binary), a JSON document (an object), or a byte range
//! `[url, offset, length]` of another file.
//!
//! Byte ranges of local files are read with positioned reads. A reference file is input like
//! any other: a range may only name a file inside the directory holding the reference file
//! (after symbolic links are resolved), or inside a directory the caller allows; anything else
//! is refused with an error naming the key.
//!
//! With the `remote` feature, ranges of remote files (`https://`, `s3://`, ... URLs) are read
//! with ranged GETs through a [`RemoteStore`](crate::RemoteStore): a batch of chunk reads
//! ([`Store::get_many`]) becomes one ranged read per remote file, whose neighbouring ranges the
//! remote store coalesces into one request. A reference file may itself be remote
//! ([`LindiStore::open_url`]): its relative ranges then name files beside it at the same URL,
//! and ranges naming local files are refused.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine;
use bytes::Bytes;
use serde_json::Value;

use crate::{
    validate_key, validate_prefix, ByteRange, DirListing, ReadRequest, ReadResponse, Store,
    StoreError, StoreResult,
};

/// Where the bytes of one key are.
#[derive(Clone, Debug)]
enum Entry {
    /// Held in the reference file.
    Inline(Bytes),
    /// `length` bytes at `offset` of file number `file` (an index into `LindiStore::sources`).
    Range {
        file: usize,
        offset: u64,
        length: u64,
    },
    /// A range of a file that may not be read (a URL, or outside the allowed directories).
    Refused(String),
}

/// A file byte ranges are read from.
#[derive(Debug)]
enum Source {
    /// A local file (canonical path).
    Local(PathBuf),
    /// A remote file: its store, the key inside it and its URL (for errors).
    #[cfg(feature = "remote")]
    Remote {
        store: Arc<dyn Store>,
        key: String,
        url: String,
    },
}

/// What relative byte ranges are relative to: the reference file's directory, or its URL's.
#[derive(Clone, Debug)]
enum Base {
    Dir(PathBuf),
    #[cfg(feature = "remote")]
    Url(String, crate::RemoteOptions),
}

/// A read-only store over a LINDI reference file.
#[derive(Debug)]
pub struct LindiStore {
    name: String,
    entries: BTreeMap<String, Entry>,
    sources: Vec<Source>,
    open: Mutex<HashMap<usize, Arc<std::fs::File>>>,
}

/// The settings remote byte ranges are read with.
#[cfg(feature = "remote")]
type RemoteSettings = crate::RemoteOptions;
#[cfg(not(feature = "remote"))]
type RemoteSettings = ();

/// A local reference file's name, text and directory (canonical).
fn read_local(path: &Path) -> StoreResult<(String, Vec<u8>, PathBuf)> {
    let name = path.display().to_string();
    let text = std::fs::read(path).map_err(|e| bad(&name, "", e.to_string()))?;
    let base = path
        .canonicalize()
        .map_err(|e| bad(&name, "", e.to_string()))?
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    Ok((name, text, base))
}

fn bad(name: &str, key: &str, message: impl Into<String>) -> StoreError {
    StoreError::backend(name, key, message.into())
}

impl LindiStore {
    /// Open the reference file at `path`; byte ranges may name files inside its directory or
    /// inside `allowed_roots` (and, with the `remote` feature, remote URLs, opened with the
    /// default [`RemoteOptions`](crate::RemoteOptions) and the environment's settings).
    pub fn open(path: &Path, allowed_roots: &[PathBuf]) -> StoreResult<Self> {
        let (name, text, base) = read_local(path)?;
        Self::from_slice(&name, &text, &base, allowed_roots)
    }

    /// A store over the reference file `text` (named `name` in errors), whose relative byte
    /// ranges are relative to the directory `base`; byte ranges may name files inside `base`
    /// or inside `allowed_roots`.
    pub fn from_slice(
        name: &str,
        text: &[u8],
        base: &Path,
        allowed_roots: &[PathBuf],
    ) -> StoreResult<Self> {
        Self::parse(name, text, Base::Dir(base.to_path_buf()), allowed_roots)
    }

    /// [`LindiStore::open`] with the options remote byte ranges are read with.
    #[cfg(feature = "remote")]
    pub fn open_with(
        path: &Path,
        allowed_roots: &[PathBuf],
        options: &crate::RemoteOptions,
    ) -> StoreResult<Self> {
        let (name, text, base) = read_local(path)?;
        Self::parse_with(&name, &text, Base::Dir(base), allowed_roots, options)
    }

    /// The reference file at `url` (its JSON read through `store` at `key`): relative byte
    /// ranges name files beside it at the same URL; ranges naming local files are refused.
    #[cfg(feature = "remote")]
    pub fn open_url(
        url: &str,
        store: &dyn Store,
        key: &str,
        options: &crate::RemoteOptions,
    ) -> StoreResult<Self> {
        let text = store.get(key)?.ok_or_else(|| StoreError::NotFound {
            key: url.to_string(),
        })?;
        let dir = match url.rfind('/') {
            Some(i) => url[..=i].to_string(),
            None => format!("{url}/"),
        };
        Self::parse_with(url, &text, Base::Url(dir, options.clone()), &[], options)
    }

    fn parse(name: &str, text: &[u8], base: Base, allowed_roots: &[PathBuf]) -> StoreResult<Self> {
        #[cfg(feature = "remote")]
        {
            let options = crate::RemoteOptions::from_env().unwrap_or_default();
            Self::parse_with(name, text, base, allowed_roots, &options)
        }
        #[cfg(not(feature = "remote"))]
        Self::parse_with(name, text, base, allowed_roots, &())
    }

    fn parse_with(
        name: &str,
        text: &[u8],
        base: Base,
        allowed_roots: &[PathBuf],
        options: &RemoteSettings,
    ) -> StoreResult<Self> {
        let name = name.to_string();
        let text = marked_non_finite(text);
        let doc: Value = serde_json::from_slice(&text).map_err(|e| {
            bad(
                &name,
                "",
                format!("not a LINDI reference file (invalid JSON: {e})"),
            )
        })?;
        let refs = doc
            .get("refs")
            .and_then(Value::as_object)
            .ok_or_else(|| bad(&name, "", "not a LINDI reference file: no \"refs\" object"))?;
        let templates: Vec<(String, String)> = doc
            .get("templates")
            .and_then(Value::as_object)
            .map(|t| {
                t.iter()
                    .filter_map(|(k, v)| Some((format!("{{{{{k}}}}}"), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let mut roots = match &base {
            Base::Dir(dir) => vec![dir.clone()],
            #[cfg(feature = "remote")]
            Base::Url(..) => Vec::new(),
        };
        roots.extend(
            allowed_roots
                .iter()
                .map(|r| r.canonicalize().unwrap_or_else(|_| r.clone())),
        );
        let mut sources: Vec<Source> = Vec::new();
        let mut file_index: HashMap<String, Result<usize, String>> = HashMap::new();
        let mut entries = BTreeMap::new();
        for (key, value) in refs {
            let key = key.trim_start_matches('/').to_string();
            if validate_key(&key).is_err() {
                return Err(bad(&name, &key, "not a valid store key"));
            }
            let entry = match value {
                Value::String(s) => match s.strip_prefix("base64:") {
                    Some(b64) => Entry::Inline(Bytes::from(
                        base64::engine::general_purpose::STANDARD
                            .decode(b64)
                            .map_err(|e| bad(&name, &key, format!("invalid base64: {e}")))?,
                    )),
                    None => Entry::Inline(Bytes::from(s.clone().into_bytes())),
                },
                Value::Object(_) => Entry::Inline(Bytes::from(
                    bare_non_finite(&value.to_string()).into_bytes(),
                )),
                Value::Array(parts) => {
                    let (Some(url), Some(offset), Some(length), 3) = (
                        parts.first().and_then(Value::as_str),
                        parts.get(1).and_then(Value::as_u64),
                        parts.get(2).and_then(Value::as_u64),
                        parts.len(),
                    ) else {
                        return Err(bad(
                            &name,
                            &key,
                            "a byte range must be [url, offset, length]",
                        ));
                    };
                    if offset.checked_add(length).is_none() {
                        return Err(bad(&name, &key, "byte range overflows"));
                    }
                    let mut url = url.to_string();
                    for (t, v) in &templates {
                        url = url.replace(t, v);
                    }
                    let resolved = file_index
                        .entry(url.clone())
                        .or_insert_with(|| {
                            resolve_source(&url, &base, &roots, options).map(|p| {
                                sources.push(p);
                                sources.len() - 1
                            })
                        })
                        .clone();
                    match resolved {
                        Ok(file) => Entry::Range {
                            file,
                            offset,
                            length,
                        },
                        Err(why) => Entry::Refused(why),
                    }
                }
                other => return Err(bad(&name, &key, format!("unexpected value {other}"))),
            };
            entries.insert(key, entry);
        }
        Ok(LindiStore {
            name,
            entries,
            sources,
            open: Mutex::new(HashMap::new()),
        })
    }

    fn read_entry(&self, key: &str, entry: &Entry) -> StoreResult<Bytes> {
        match entry {
            Entry::Inline(b) => Ok(b.clone()),
            Entry::Refused(why) => Err(bad(&self.name, key, why.clone())),
            Entry::Range {
                file,
                offset,
                length,
            } => match &self.sources[*file] {
                Source::Local(path) => self.read_local(key, *file, path, *offset, *length),
                #[cfg(feature = "remote")]
                Source::Remote {
                    store,
                    key: remote_key,
                    url,
                } => {
                    let range = ByteRange::FromStart {
                        offset: *offset,
                        length: Some(*length),
                    };
                    match store.get_ranges(remote_key, &[range]) {
                        Ok(Some(mut parts)) if parts.len() == 1 => Ok(parts.remove(0)),
                        Ok(_) => Err(bad(&self.name, key, format!("{url}: no such file"))),
                        Err(e) => Err(bad(&self.name, key, format!("{url}: {e}"))),
                    }
                }
            },
        }
    }

    fn read_local(
        &self,
        key: &str,
        file: usize,
        path: &Path,
        offset: u64,
        length: u64,
    ) -> StoreResult<Bytes> {
        let handle = {
            let mut open = self
                .open
                .lock()
                .map_err(|_| bad(&self.name, key, "file table poisoned"))?;
            match open.get(&file) {
                Some(h) => h.clone(),
                None => {
                    let h =
                        Arc::new(std::fs::File::open(path).map_err(|e| {
                            bad(&self.name, key, format!("{}: {e}", path.display()))
                        })?);
                    open.insert(file, h.clone());
                    h
                }
            }
        };
        let size = handle
            .metadata()
            .map_err(|e| bad(&self.name, key, e.to_string()))?
            .len();
        if offset + length > size {
            return Err(bad(
                &self.name,
                key,
                format!(
                    "byte range {offset}+{length} is past the end of {} ({size} bytes)",
                    path.display()
                ),
            ));
        }
        let mut buf = vec![0u8; length as usize];
        read_exact_at(&handle, &mut buf, offset)
            .map_err(|e| bad(&self.name, key, e.to_string()))?;
        Ok(Bytes::from(buf))
    }

    /// A batch of reads whose entries lie in remote files: one ranged read per remote file
    /// (its store coalesces neighbouring ranges), the rest one by one.
    #[cfg(feature = "remote")]
    fn get_many_remote(&self, requests: &[ReadRequest]) -> Vec<StoreResult<ReadResponse>> {
        let mut answers: Vec<Option<StoreResult<ReadResponse>>> =
            (0..requests.len()).map(|_| None).collect();
        // Remote file -> the requests (index, entry range) it serves.
        let mut by_source: BTreeMap<usize, Vec<(usize, u64, u64)>> = BTreeMap::new();
        for (i, request) in requests.iter().enumerate() {
            if let Err(e) = validate_key(&request.key) {
                answers[i] = Some(Err(e));
                continue;
            }
            match self.entries.get(&request.key) {
                Some(Entry::Range {
                    file,
                    offset,
                    length,
                }) if matches!(self.sources[*file], Source::Remote { .. }) => {
                    by_source
                        .entry(*file)
                        .or_default()
                        .push((i, *offset, *length));
                }
                _ => answers[i] = Some(request.answer_from(self)),
            }
        }
        for (file, reads) in by_source {
            let Source::Remote { store, key, url } = &self.sources[file] else {
                continue;
            };
            let ranges: Vec<ByteRange> = reads
                .iter()
                .map(|&(_, offset, length)| ByteRange::FromStart {
                    offset,
                    length: Some(length),
                })
                .collect();
            match store.get_ranges(key, &ranges) {
                Ok(Some(parts)) if parts.len() == reads.len() => {
                    for (&(i, _, _), value) in reads.iter().zip(parts) {
                        answers[i] = Some(slice_response(&requests[i], value));
                    }
                }
                other => {
                    let why = match other {
                        Err(e) => format!("{url}: {e}"),
                        _ => format!("{url}: no such file"),
                    };
                    for &(i, _, _) in &reads {
                        answers[i] = Some(Err(bad(&self.name, &requests[i].key, why.clone())));
                    }
                }
            }
        }
        answers
            .into_iter()
            .map(|a| a.unwrap_or_else(|| Err(bad(&self.name, "", "a read was not answered"))))
            .collect()
    }
}

/// The answer to `request` from the whole value of its key.
#[cfg(feature = "remote")]
fn slice_response(request: &ReadRequest, value: Bytes) -> StoreResult<ReadResponse> {
    match &request.ranges {
        None => Ok(ReadResponse::Whole(value)),
        Some(ranges) => {
            ByteRange::slice_all(&request.key, &value, ranges).map(ReadResponse::Ranges)
        }
    }
}

/// The JSON text of a marked non-finite float (the dtype crate's `NON_FINITE_MARKER`, NUL,
/// before the token), as serde writes it.
const MARKED: [(&str, &str); 3] = [
    ("\"\\u0000NaN\"", "NaN"),
    ("\"\\u0000Infinity\"", "Infinity"),
    ("\"\\u0000-Infinity\"", "-Infinity"),
];

/// `text` with marked non-finite floats written as the bare tokens (`NaN`, `Infinity`,
/// `-Infinity`) that Python's json module, zarr-python and LINDI write and read.
pub fn bare_non_finite(text: &str) -> String {
    if !text.contains("\\u0000") {
        return text.to_string();
    }
    let mut out = text.to_string();
    for (marked, bare) in MARKED {
        out = out.replace(marked, bare);
    }
    out
}

/// `text` with bare `NaN`, `Infinity` and `-Infinity` outside strings turned into marked
/// strings, so that a strict JSON parser accepts what Python's json module writes.
fn marked_non_finite(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        if in_string {
            out.push(b);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        let rest = &text[i..];
        let token = [&b"NaN"[..], b"Infinity", b"-Infinity"]
            .into_iter()
            .find(|t| rest.starts_with(t));
        match (b, token) {
            (b'"', _) => {
                in_string = true;
                out.push(b);
                i += 1;
            }
            (_, Some(t)) => {
                out.extend_from_slice(b"\"\\u0000");
                out.extend_from_slice(t);
                out.push(b'"');
                i += t.len();
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

#[cfg(unix)]
fn read_exact_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
}

#[cfg(windows)]
fn read_exact_at(file: &std::fs::File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        let n = file.seek_read(buf, offset)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf = &mut buf[n..];
        offset += n as u64;
    }
    Ok(())
}

/// The file a range's URL names, if it may be read: a remote URL (with the `remote`
/// feature), a path relative to a remote reference file's URL, or a local file inside `roots`.
fn resolve_source(
    url: &str,
    base: &Base,
    roots: &[PathBuf],
    options: &RemoteSettings,
) -> Result<Source, String> {
    let remote = url.contains("://") && !url.starts_with("file://");
    #[cfg(feature = "remote")]
    {
        let remote_url = if remote {
            Some(url.to_string())
        } else if let Base::Url(dir, _) = base {
            if url.starts_with('/') || url.starts_with("file://") {
                return Err(format!(
                    "the byte range names the local file {url}, which a remote reference file may not"
                ));
            }
            Some(format!("{dir}{url}"))
        } else {
            None
        };
        if let Some(remote_url) = remote_url {
            let options = match base {
                Base::Url(_, o) => o,
                Base::Dir(_) => options,
            };
            let (store, key) =
                crate::open_url(&remote_url, options).map_err(|e| format!("{remote_url}: {e}"))?;
            return Ok(Source::Remote {
                store,
                key,
                url: remote_url,
            });
        }
    }
    #[cfg(not(feature = "remote"))]
    {
        let _ = options;
        if remote {
            return Err(format!(
                "byte ranges of remote files ({url}) need neurochunk built with remote stores"
            ));
        }
    }
    #[cfg(feature = "remote")]
    let Base::Dir(base) = base
    else {
        return Err(format!("{url}: not a file beside the reference file"));
    };
    #[cfg(not(feature = "remote"))]
    let Base::Dir(base) = base;
    let path = url.strip_prefix("file://").unwrap_or(url);
    let path = Path::new(path);
    let full = if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    };
    let real = full
        .canonicalize()
        .map_err(|e| format!("{}: {e}", full.display()))?;
    if !roots.iter().any(|r| real.starts_with(r)) {
        return Err(format!(
            "the byte range names {}, which is outside the reference file's directory{}",
            real.display(),
            if roots.len() > 1 {
                " and the allowed directories"
            } else {
                ""
            }
        ));
    }
    Ok(Source::Local(real))
}

impl Store for LindiStore {
    fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        validate_key(key)?;
        match self.entries.get(key) {
            Some(entry) => self.read_entry(key, entry).map(Some),
            None => Ok(None),
        }
    }

    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> StoreResult<Option<Vec<Bytes>>> {
        let Some(value) = self.get(key)? else {
            return Ok(None);
        };
        ByteRange::slice_all(key, &value, ranges).map(Some)
    }

    fn concurrent_reads(&self) -> usize {
        #[cfg(feature = "remote")]
        for source in &self.sources {
            if let Source::Remote { store, .. } = source {
                return store.concurrent_reads();
            }
        }
        1
    }

    fn get_many(&self, requests: &[ReadRequest]) -> Vec<StoreResult<ReadResponse>> {
        #[cfg(feature = "remote")]
        if self
            .sources
            .iter()
            .any(|s| matches!(s, Source::Remote { .. }))
        {
            return self.get_many_remote(requests);
        }
        requests.iter().map(|r| r.answer_from(self)).collect()
    }

    fn size(&self, key: &str) -> StoreResult<Option<u64>> {
        validate_key(key)?;
        Ok(match self.entries.get(key) {
            Some(Entry::Inline(b)) => Some(b.len() as u64),
            Some(Entry::Range { length, .. }) => Some(*length),
            Some(Entry::Refused(why)) => return Err(bad(&self.name, key, why.clone())),
            None => None,
        })
    }

    fn set(&self, key: &str, _value: Bytes) -> StoreResult<()> {
        Err(StoreError::ReadOnly {
            key: key.to_string(),
        })
    }

    fn delete(&self, key: &str) -> StoreResult<()> {
        Err(StoreError::ReadOnly {
            key: key.to_string(),
        })
    }

    fn list_prefix(&self, prefix: &str) -> StoreResult<Vec<String>> {
        validate_prefix(prefix)?;
        Ok(crate::memory::list_sorted_prefix(&self.entries, prefix))
    }

    fn list_dir(&self, prefix: &str) -> StoreResult<DirListing> {
        validate_prefix(prefix)?;
        Ok(crate::memory::list_sorted_dir(&self.entries, prefix))
    }
}

/// What a writer of reference files may replace ([`crate::replace::check_file`]).
pub const REFERENCE_FILE: &str = "a LINDI reference file";

/// Whether a file starting with `head` looks like a LINDI reference file: a JSON object naming
/// `refs` (or LINDI's `generationMetadata`) near its start.
pub fn is_reference_file(head: &[u8], _tail: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    text.trim_start().starts_with('{')
        && (text.contains("\"refs\"") || text.contains("\"generationMetadata\""))
}

/// If `path` leads through a LINDI reference file (a component ending in `.lindi.json` that
/// is a file), that file and the key inside it.
pub fn split_reference_path(path: &Path) -> Option<(PathBuf, String)> {
    let mut file = PathBuf::new();
    let mut components = path.components();
    for c in components.by_ref() {
        file.push(c);
        if c.as_os_str().to_string_lossy().ends_with(".lindi.json") && file.is_file() {
            let key: Vec<String> = components
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            return Some((file, key.join("/")));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_ranges_templates_and_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data.bin");
        std::fs::write(&data, b"0123456789").unwrap();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret.bin");
        std::fs::write(&secret, b"secret").unwrap();
        let doc = serde_json::json!({
            "version": 1,
            "templates": {"u": data.display().to_string()},
            "refs": {
                ".zgroup": {"zarr_format": 2},
                "a/0": "base64:AAEC",
                "a/1": ["{{u}}", 2, 3],
                "a/2": ["data.bin", 8, 2],
                "b/0": [secret.display().to_string(), 0, 6],
                "c/0": ["ftp://example.invalid/x.h5", 0, 1],
                "d/0": ["data.bin", 8, 5],
            }
        });
        let refs = dir.path().join("x.lindi.json");
        std::fs::write(&refs, doc.to_string()).unwrap();
        let store = LindiStore::open(&refs, &[]).unwrap();
        assert_eq!(
            store.get(".zgroup").unwrap().unwrap(),
            Bytes::from(r#"{"zarr_format":2}"#)
        );
        assert_eq!(
            store.get("a/0").unwrap().unwrap(),
            Bytes::from_static(&[0, 1, 2])
        );
        assert_eq!(
            store.get("a/1").unwrap().unwrap(),
            Bytes::from_static(b"234")
        );
        assert_eq!(
            store.get("a/2").unwrap().unwrap(),
            Bytes::from_static(b"89")
        );
        assert_eq!(store.get("missing").unwrap(), None);
        let e = store.get("b/0").unwrap_err().to_string();
        assert!(e.contains("b/0") && e.contains("outside"), "{e}");
        // A URL no store reads.
        let e = store.get("c/0").unwrap_err().to_string();
        assert!(e.contains("c/0") && e.contains("example.invalid"), "{e}");
        assert!(store
            .get("d/0")
            .unwrap_err()
            .to_string()
            .contains("past the end"));
        assert!(store.set("a/0", Bytes::new()).is_err());
        let listing = store.list_dir("").unwrap();
        assert_eq!(listing.keys, vec![".zgroup"]);
        assert_eq!(listing.prefixes, vec!["a", "b", "c", "d"]);
        // Allowed explicitly, the outside file is read.
        let store = LindiStore::open(&refs, &[outside.path().to_path_buf()]).unwrap();
        assert_eq!(
            store.get("b/0").unwrap().unwrap(),
            Bytes::from_static(b"secret")
        );
        let (file, key) = split_reference_path(&refs.join("a/0")).unwrap();
        assert_eq!((file, key.as_str()), (refs.clone(), "a/0"));
        assert!(split_reference_path(&data).is_none());
    }

    #[cfg(feature = "remote")]
    #[test]
    fn a_remote_reference_file_resolves_ranges_against_its_url() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("data.bin"), b"0123456789").unwrap();
        let doc = serde_json::json!({"refs": {
            "a/0": ["data.bin", 2, 3],
            "a/1": ["data.bin", 5, 2],
            "a/2": "base64:AAEC",
            "b/0": [dir.path().join("data.bin").display().to_string(), 0, 1],
        }});
        std::fs::write(dir.path().join("x.lindi.json"), doc.to_string()).unwrap();
        let url = format!("file://{}/x.lindi.json", dir.path().display());
        let options = crate::RemoteOptions::default();
        // Opened by URL, the reference file is the store (key "": its root).
        let (lindi, key) = crate::open_url(&url, &options).unwrap();
        assert_eq!(key, "");
        assert_eq!(
            lindi.get("a/0").unwrap().unwrap(),
            Bytes::from_static(b"234")
        );
        let answers = lindi.get_many(&[
            ReadRequest::whole("a/1"),
            ReadRequest::ranges(
                "a/0",
                vec![ByteRange::FromStart {
                    offset: 1,
                    length: None,
                }],
            ),
            ReadRequest::whole("a/2"),
            ReadRequest::whole("missing"),
        ]);
        assert_eq!(
            answers[0].as_ref().unwrap(),
            &ReadResponse::Whole(Bytes::from_static(b"56"))
        );
        assert_eq!(
            answers[1].as_ref().unwrap(),
            &ReadResponse::Ranges(vec![Bytes::from_static(b"34")])
        );
        assert_eq!(
            answers[2].as_ref().unwrap(),
            &ReadResponse::Whole(Bytes::from_static(&[0, 1, 2]))
        );
        assert_eq!(answers[3].as_ref().unwrap(), &ReadResponse::Missing);
        // A remote reference file may not name local files.
        let e = lindi.get("b/0").unwrap_err().to_string();
        assert!(e.contains("b/0") && e.contains("may not"), "{e}");
        // A URL through the reference file: the key after it.
        let (store, key) = crate::open_url(&format!("{url}/a/0"), &options).unwrap();
        assert_eq!(
            (store.get(&key).unwrap().unwrap(), key.as_str()),
            (Bytes::from_static(b"234"), "a/0")
        );
    }

    #[test]
    fn bare_non_finite_floats_as_python_writes_them() {
        let text =
            br#"{"refs": {".zattrs": {"a": NaN, "b": [Infinity, -Infinity], "c": "NaN x"}}}"#;
        let dir = tempfile::tempdir().unwrap();
        let store = LindiStore::from_slice("x", text, dir.path(), &[]).unwrap();
        let attrs = String::from_utf8(store.get(".zattrs").unwrap().unwrap().to_vec()).unwrap();
        assert_eq!(attrs, r#"{"a":NaN,"b":[Infinity,-Infinity],"c":"NaN x"}"#);
    }

    #[test]
    fn malformed_reference_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let refs = dir.path().join("x.lindi.json");
        for text in [
            "not json",
            r#"{"version": 1}"#,
            r#"{"refs": {"a": ["x", -1, 2]}}"#,
            r#"{"refs": {"a": ["x", 1]}}"#,
            r#"{"refs": {"a": 5}}"#,
            r#"{"refs": {"../a": "x"}}"#,
            r#"{"refs": {"a": "base64:%%%"}}"#,
        ] {
            std::fs::write(&refs, text).unwrap();
            assert!(LindiStore::open(&refs, &[]).is_err(), "{text}");
        }
    }
}
