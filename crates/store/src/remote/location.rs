//! Telling URLs from paths, and opening the store a URL names: [`StoreLocation`],
//! [`open_url`], [`RemoteOptions`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::http::HttpBuilder;
use object_store::local::LocalFileSystem;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, ObjectStoreScheme, RetryConfig};
use url::Url;

use super::partial::PartialAnswersConnector;
use super::{profile, RemoteStore};
use crate::{FsStore, Store, StoreError, StoreResult};

/// How remote stores are reached: endpoint, region, signing, concurrency and retries.
///
/// Credentials are not here: each cloud's standard environment variables and mechanisms
/// supply them (for S3 `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
/// `AWS_PROFILE` with the shared credentials file, web identity and instance metadata; for
/// GCS `GOOGLE_SERVICE_ACCOUNT` / `GOOGLE_APPLICATION_CREDENTIALS`; for Azure
/// `AZURE_STORAGE_ACCOUNT_NAME`, `AZURE_STORAGE_ACCOUNT_KEY`, …). The fields here override the
/// corresponding variables.
///
/// ```
/// use neurochunk_store::RemoteOptions;
///
/// let options = RemoteOptions {
///     endpoint: Some("http://127.0.0.1:9000".into()),
///     anonymous: true,
///     ..RemoteOptions::default()
/// };
/// assert_eq!(options.max_requests, 64);
/// assert!(options.allows_http());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteOptions {
    /// The service's endpoint (`http://127.0.0.1:9000` for a local S3 server). `None`: the
    /// cloud's own, or `AWS_ENDPOINT_URL` / `AWS_ENDPOINT` for S3. An `http://` endpoint
    /// allows plain HTTP.
    pub endpoint: Option<String>,
    /// The region (S3). `None`: `AWS_REGION` / `AWS_DEFAULT_REGION`, the profile's, else
    /// `us-east-1`.
    pub region: Option<String>,
    /// Send requests unsigned (public buckets), whatever credentials the environment holds.
    pub anonymous: bool,
    /// S3 addressing: `Some(true)` path-style (`endpoint/bucket/key`), `Some(false)`
    /// virtual-hosted (`bucket.endpoint/key`). `None`: path-style.
    pub path_style: Option<bool>,
    /// Requests in flight at most, per store (independent of the number of cores).
    pub max_requests: usize,
    /// Retries of a failed request (5xx, 429, timeouts, broken connections), with
    /// exponential backoff and jitter.
    pub max_retries: usize,
    /// No retry starts later than this after the first attempt.
    pub retry_timeout: Duration,
    /// Time allowed for one request, response body included.
    pub request_timeout: Duration,
    /// Time allowed to connect.
    pub connect_timeout: Duration,
    /// Values streamed through [`Store::writer`] larger than this are uploaded in parts of
    /// this size (multipart upload); smaller ones with one request.
    pub part_size: usize,
    /// Byte ranges of one value closer than this are fetched with one request.
    pub coalesce_gap: u64,
    /// The version of an Icechunk repository to read (`None`: the head of `main`).
    pub version: Option<crate::RepoVersion>,
    /// Where an Icechunk repository's virtual chunks may be read from, besides the
    /// directory (or URL prefix) holding the repository: directories, or URL prefixes
    /// (`s3://bucket/prefix/`, `https://host/path/`).
    pub allowed_virtual: Vec<String>,
    /// Read virtual chunks from wherever the repository's containers point.
    pub allow_any_virtual: bool,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            endpoint: None,
            region: None,
            anonymous: false,
            path_style: None,
            max_requests: 64,
            max_retries: 10,
            retry_timeout: Duration::from_secs(180),
            request_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(10),
            part_size: 16 << 20,
            coalesce_gap: 1 << 20,
            version: None,
            allowed_virtual: Vec::new(),
            allow_any_virtual: false,
        }
    }
}

impl RemoteOptions {
    /// The defaults, with what the environment sets: `NEUROCHUNK_ENDPOINT`,
    /// `NEUROCHUNK_BUCKET_REGION`, `NEUROCHUNK_ANON` (`1`/`true`/`yes`) and
    /// `NEUROCHUNK_MAX_REQUESTS`. A malformed value is an error naming the variable.
    pub fn from_env() -> Result<Self, String> {
        let mut options = RemoteOptions::default();
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        options.endpoint = var("NEUROCHUNK_ENDPOINT");
        options.region = var("NEUROCHUNK_BUCKET_REGION");
        if let Some(anon) = var("NEUROCHUNK_ANON") {
            options.anonymous = parse_flag(&anon)
                .ok_or_else(|| format!("NEUROCHUNK_ANON={anon:?}: expected true or false"))?;
        }
        if let Some(max) = var("NEUROCHUNK_MAX_REQUESTS") {
            options.max_requests = max
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| {
                    format!("NEUROCHUNK_MAX_REQUESTS={max:?}: expected a positive integer")
                })?;
        }
        Ok(options)
    }

    /// True when plain HTTP is allowed: the endpoint is `http://`, or `AWS_ALLOW_HTTP` is set
    /// to true.
    pub fn allows_http(&self) -> bool {
        let endpoint_http = |e: &str| e.trim().to_ascii_lowercase().starts_with("http://");
        self.endpoint.as_deref().is_some_and(endpoint_http)
            || ["AWS_ENDPOINT_URL", "AWS_ENDPOINT", "AWS_ENDPOINT_URL_S3"]
                .iter()
                .any(|v| std::env::var(v).is_ok_and(|e| endpoint_http(&e)))
            || std::env::var("AWS_ALLOW_HTTP").is_ok_and(|v| parse_flag(&v) == Some(true))
    }

    fn client_options(&self, allow_http: bool) -> ClientOptions {
        ClientOptions::new()
            .with_allow_http(allow_http)
            .with_timeout(self.request_timeout)
            .with_connect_timeout(self.connect_timeout)
            .with_pool_max_idle_per_host(self.max_requests.max(1))
    }

    fn retry_config(&self) -> RetryConfig {
        RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_secs(15),
                base: 2.0,
            },
            max_retries: self.max_retries,
            retry_timeout: self.retry_timeout,
        }
    }
}

/// `true`/`false` as environment variables spell them.
fn parse_flag(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" | "" => Some(false),
        _ => None,
    }
}

/// The kind of service a URL names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// `s3://bucket/key` (also `s3a://`, and `https://` URLs of Amazon S3 and Cloudflare R2).
    S3,
    /// `gs://bucket/key`.
    Gcs,
    /// `az://container/key`, `abfs[s]://container@account.dfs.core.windows.net/key`,
    /// `azure://`, `adl://`, and `https://` URLs of Azure blob storage.
    Azure,
    /// `http://host/path`, `https://host/path`: read-only.
    Http,
    /// `file:///absolute/path`, through `object_store`'s local file system.
    File,
}

/// Where a command-line argument or API caller points: a local path or a URL.
///
/// ```
/// use neurochunk_store::StoreLocation;
/// use neurochunk_store::remote::Scheme;
///
/// let remote = StoreLocation::parse("s3://bucket/data/volume.zarr").unwrap();
/// match &remote {
///     StoreLocation::Url { scheme, base, key, .. } => {
///         assert_eq!(*scheme, Scheme::S3);
///         assert_eq!(base, "s3://bucket");
///         assert_eq!(key, "data/volume.zarr");
///     }
///     StoreLocation::Local(_) => unreachable!(),
/// }
/// assert!(StoreLocation::parse("data/volume.zarr").unwrap().is_local());
/// assert!(StoreLocation::parse("ftp://host/x").is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreLocation {
    /// A path on the local file system.
    Local(PathBuf),
    /// A URL: the service, the store's own URL and the key (prefix) inside it.
    Url {
        /// The service.
        scheme: Scheme,
        /// The URL as given.
        url: Url,
        /// The URL of the store's root (`s3://bucket`, `https://host`), without a trailing `/`.
        base: String,
        /// The key (or key prefix) the URL names inside the store, without leading or
        /// trailing `/` (`""` for the root).
        key: String,
    },
}

/// True when `text` looks like a URL (`scheme://…`) rather than a path.
pub fn is_url(text: &str) -> bool {
    match text.split_once("://") {
        Some((scheme, _)) => {
            scheme.len() > 1
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }
        None => false,
    }
}

impl StoreLocation {
    /// Parse a path or a URL. A text without `scheme://` is a local path; a URL of a scheme
    /// that is not supported, or without a bucket (container, host), is an error.
    pub fn parse(text: &str) -> StoreResult<Self> {
        if !is_url(text) {
            return Ok(StoreLocation::Local(PathBuf::from(text)));
        }
        let bad = |reason: String| StoreError::InvalidUrl {
            url: text.to_string(),
            reason,
        };
        let url = Url::parse(text).map_err(|e| bad(format!("not a valid URL: {e}")))?;
        if url.query().is_some() || url.fragment().is_some() {
            return Err(bad("a store URL has no query or fragment".into()));
        }
        let (os_scheme, path) = ObjectStoreScheme::parse(&url).map_err(|_| {
            bad(format!(
                "unsupported URL (use s3://, gs://, az://, abfs://, http(s):// or file://): {}",
                url.scheme()
            ))
        })?;
        let scheme = match os_scheme {
            ObjectStoreScheme::AmazonS3 => Scheme::S3,
            ObjectStoreScheme::GoogleCloudStorage => Scheme::Gcs,
            ObjectStoreScheme::MicrosoftAzure => Scheme::Azure,
            ObjectStoreScheme::Http => Scheme::Http,
            ObjectStoreScheme::Local => Scheme::File,
            _ => return Err(bad(format!("unsupported URL scheme: {}", url.scheme()))),
        };
        let key = path.as_ref().trim_matches('/').to_string();
        if !key.is_empty() {
            crate::validate_prefix(&key)
                .map_err(|_| bad("the URL's path is not a valid key".into()))?;
        }
        let host = url.host_str().unwrap_or_default();
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        };
        let base = match scheme {
            Scheme::File => "file://".to_string(),
            Scheme::Http => format!("{}://{authority}", url.scheme()),
            _ if url.scheme() == "https" => {
                // The bucket (container) is the first segment of the path, unless the host
                // names it (virtual-hosted S3): then the key is the whole path.
                let whole = url.path().trim_matches('/');
                let bucket = whole.strip_suffix(key.as_str()).unwrap_or("");
                let bucket = bucket.trim_end_matches('/');
                if bucket.is_empty() {
                    format!("https://{authority}")
                } else {
                    format!("https://{authority}/{bucket}")
                }
            }
            _ => {
                let user = match url.username() {
                    "" => String::new(),
                    user => format!("{user}@"),
                };
                format!("{}://{user}{authority}", url.scheme())
            }
        };
        Ok(StoreLocation::Url {
            scheme,
            url,
            base,
            key,
        })
    }

    /// True for a local path.
    pub fn is_local(&self) -> bool {
        matches!(self, StoreLocation::Local(_))
    }

    /// The location as a person reads it: the path, or the URL (store base and key).
    pub fn display(&self) -> String {
        match self {
            StoreLocation::Local(path) => path.display().to_string(),
            StoreLocation::Url { base, key, .. } if key.is_empty() => base.clone(),
            StoreLocation::Url { base, key, .. } => format!("{base}/{key}"),
        }
    }

    /// The store of the location and the key (prefix) inside it: a [`FsStore`] rooted at a
    /// local path (key `""`), or a [`RemoteStore`] of the bucket (container, host) and the
    /// URL's path as the key.
    pub fn open(&self, options: &RemoteOptions) -> StoreResult<(Arc<dyn Store>, String)> {
        match self {
            StoreLocation::Local(path) => {
                // A path through a LINDI reference file is the file's read-only store and the
                // key after it.
                if let Some((file, key)) = crate::lindi::split_reference_path(path) {
                    let lindi = crate::LindiStore::open_with(&file, &[], options)?;
                    return Ok((Arc::new(lindi), key));
                }
                // A path in an Icechunk repository: its version the options name, and the
                // key below the repository's root.
                #[cfg(feature = "icechunk")]
                if let Some((root, key)) = crate::icechunk::split_repository_path(path) {
                    let root = StoreLocation::Local(root);
                    return Ok((crate::icechunk::open_version(&root, options)?, key));
                }
                Ok((Arc::new(FsStore::new(path)), String::new()))
            }
            StoreLocation::Url {
                scheme,
                url,
                base,
                key,
            } => {
                let store = url_store(*scheme, url, base, options)?;
                // A URL through a LINDI reference file: the file's read-only store (its
                // ranges read from the same server) and the key after it.
                if let Some((file_key, inside)) = lindi_split(key) {
                    let file_url = format!("{base}/{file_key}");
                    let lindi = crate::LindiStore::open_url(&file_url, &store, file_key, options)?;
                    return Ok((Arc::new(lindi), inside.to_string()));
                }
                // A URL in an Icechunk repository: its version the options name, and the key
                // below the repository's root.
                #[cfg(feature = "icechunk")]
                if let Some((root, inside)) = url_repository(&store, base, key)? {
                    return Ok((crate::icechunk::open_version(&root, options)?, inside));
                }
                Ok((Arc::new(store), key.clone()))
            }
        }
    }
}

/// The store of a URL's bucket (container; a plain HTTP server's host, read-only).
fn url_store(
    scheme: Scheme,
    url: &url::Url,
    base: &str,
    options: &RemoteOptions,
) -> StoreResult<RemoteStore> {
    let inner = build_object_store(scheme, url, base, options)?;
    let mut store = RemoteStore::new(inner, base.to_string(), options)?;
    if scheme == Scheme::Http {
        let no_retries = RemoteOptions {
            max_retries: 0,
            ..options.clone()
        };
        let lister = build_object_store(scheme, url, base, &no_retries)?;
        let index = super::http_index::HttpIndex::new(
            base,
            &no_retries.client_options(true),
            options.max_retries,
        )
        .ok();
        store = store.read_only().with_http_lister(lister, index);
    }
    Ok(store)
}

#[cfg(feature = "icechunk")]
impl StoreLocation {
    /// The Icechunk repository this location is in (its root, which may be the location
    /// itself), or `None`: for a path, the deepest directory that has a repository's files;
    /// for a URL, the deepest prefix with a `repo` object.
    pub fn repository(&self, options: &RemoteOptions) -> StoreResult<Option<StoreLocation>> {
        match self {
            StoreLocation::Local(path) => Ok(crate::icechunk::split_repository_path(path)
                .map(|(root, _)| StoreLocation::Local(root))),
            StoreLocation::Url {
                scheme,
                url,
                base,
                key,
            } => {
                let store = url_store(*scheme, url, base, options)?;
                Ok(url_repository(&store, base, key)?.map(|(root, _)| root))
            }
        }
    }
}

/// The repository a URL's `key` is in (in `store`, its bucket's store at `base`): its root's
/// location and the key below that root.
#[cfg(feature = "icechunk")]
fn url_repository(
    store: &RemoteStore,
    base: &str,
    key: &str,
) -> StoreResult<Option<(StoreLocation, String)>> {
    let Some(root) = crate::icechunk::repository_root_key(store, key, base) else {
        return Ok(None);
    };
    let inside = key[root.len()..].trim_start_matches('/').to_string();
    let root = if root.is_empty() {
        base.to_string()
    } else {
        format!("{base}/{root}")
    };
    Ok(Some((StoreLocation::parse(&root)?, inside)))
}

/// What a location is opened for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reading only: a local directory opens read-only, a LINDI reference file is allowed.
    Read,
    /// Reading and writing: a LINDI reference file (always read-only) is refused.
    Write,
}

/// A location opened: the store holding it, the key of the location inside the store, and
/// the name messages give it. See [`StoreLocation::open_for`].
#[derive(Clone, Debug)]
pub struct OpenedLocation {
    /// The store holding the location (a bucket's, a reference file's, a local directory's).
    pub store: Arc<dyn Store>,
    /// The location's key (prefix) inside `store` (`""`: its root).
    pub key: String,
    /// The location as a person names it (the path or URL as given).
    pub display: String,
}

impl OpenedLocation {
    /// The store seen from the location: `store` itself when `key` is empty, otherwise a
    /// [`PrefixStore`](crate::PrefixStore) at `key`.
    pub fn rooted(&self) -> StoreResult<Arc<dyn Store>> {
        if self.key.is_empty() {
            return Ok(self.store.clone());
        }
        Ok(Arc::new(crate::PrefixStore::new(
            self.store.clone(),
            &self.key,
        )?))
    }

    /// The location of `key` of the store, as a person names it: the store's URL (or the
    /// opened path) joined with the key relative to the location.
    pub fn display_key(&self, key: &str) -> String {
        let rel = key
            .strip_prefix(self.key.as_str())
            .map(|r| r.trim_start_matches('/'))
            .unwrap_or(key);
        if rel.is_empty() {
            self.display.clone()
        } else {
            format!("{}/{rel}", self.display.trim_end_matches('/'))
        }
    }
}

impl StoreLocation {
    /// Open the location for `access`: the one place where a path or URL becomes a store.
    ///
    /// - A local path is an [`FsStore`] rooted at it (read-only for [`Access::Read`]; the path
    ///   need not exist), key `""`.
    /// - A path or URL through a LINDI reference file (`run.lindi.json/acquisition/data`) is
    ///   the file's read-only [`LindiStore`](crate::LindiStore) and the key after it; refused
    ///   for [`Access::Write`].
    /// - A path inside an Icechunk repository (feature `icechunk`) is the repository's
    ///   read-only store at the version [`RemoteOptions::version`] names, and the key below
    ///   the repository's root.
    /// - Any other URL is the bucket's (container's, host's) [`RemoteStore`] and the URL's
    ///   path ([`StoreLocation::open`]).
    ///
    /// ```
    /// use neurochunk_store::remote::Access;
    /// use neurochunk_store::{Bytes, RemoteOptions, Store, StoreLocation};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("out.zarr").display().to_string();
    /// let opened = StoreLocation::parse(&path)?.open_for(&RemoteOptions::default(), Access::Write)?;
    /// opened.store.set("zarr.json", Bytes::from_static(b"{}"))?;
    /// let url = format!("file://{path}");
    /// let read = StoreLocation::parse(&url)?.open_for(&RemoteOptions::default(), Access::Read)?;
    /// assert!(read.rooted()?.exists("zarr.json")?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_for(&self, options: &RemoteOptions, access: Access) -> StoreResult<OpenedLocation> {
        let display = self.display();
        let through_lindi = match self {
            StoreLocation::Local(path) => crate::lindi::split_reference_path(path).is_some(),
            StoreLocation::Url { key, .. } => lindi_split(key).is_some(),
        };
        if through_lindi && access == Access::Write {
            return Err(StoreError::ReadOnly { key: display });
        }
        let (store, key) = match self {
            StoreLocation::Local(path)
                if !through_lindi && !crate::icechunk_path(path) && access == Access::Read =>
            {
                (
                    Arc::new(FsStore::read_only(path)) as Arc<dyn Store>,
                    String::new(),
                )
            }
            _ => self.open(options)?,
        };
        Ok(OpenedLocation {
            store,
            key,
            display,
        })
    }

    /// The local path, unless this is a URL or a path through a LINDI reference file or
    /// into an Icechunk repository (whose stores are opened like a URL's).
    pub fn local_path(&self) -> Option<&std::path::Path> {
        match self {
            StoreLocation::Local(path)
                if crate::lindi::split_reference_path(path).is_none()
                    && !crate::icechunk_path(path) =>
            {
                Some(path)
            }
            _ => None,
        }
    }

    /// The location of `relative` (`a/b`) below this one.
    pub fn child(&self, relative: &str) -> StoreResult<StoreLocation> {
        match self {
            StoreLocation::Local(path) => Ok(StoreLocation::Local(path.join(relative))),
            StoreLocation::Url { url, .. } => StoreLocation::parse(&format!(
                "{}/{}",
                url.as_str().trim_end_matches('/'),
                relative.trim_start_matches('/')
            )),
        }
    }

    /// The last segment of the path or key (a file name; `""` for a bucket's root).
    pub fn file_name(&self) -> String {
        match self {
            StoreLocation::Local(path) => path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            StoreLocation::Url { key, .. } => key.rsplit('/').next().unwrap_or("").to_string(),
        }
    }

    /// For two URLs of the same store (bucket, container, host): this location's key in it.
    pub fn key_in_store_of(&self, other: &StoreLocation) -> Option<String> {
        match (self, other) {
            (
                StoreLocation::Url {
                    scheme, base, key, ..
                },
                StoreLocation::Url {
                    scheme: other_scheme,
                    base: other_base,
                    ..
                },
            ) if scheme == other_scheme && base == other_base => Some(key.clone()),
            _ => None,
        }
    }
}

/// For a key through a LINDI reference file (`a/run.lindi.json/b`): the file's key and the
/// key after it.
fn lindi_split(key: &str) -> Option<(&str, &str)> {
    let i = key.find(".lindi.json")? + ".lindi.json".len();
    (key.len() == i || key[i..].starts_with('/'))
        .then(|| (&key[..i], key[i..].trim_start_matches('/')))
}

/// Open the store a path or URL names, and the key (prefix) inside it that the URL points
/// at: `s3://bucket/prefix`, `gs://bucket/prefix`, `az://container/prefix` (and the `abfs`,
/// `azure` and `https://…` forms of Azure and S3), `http(s)://host/path` (read-only) and
/// `file:///path` become a [`RemoteStore`] of the bucket (container, host, file system) and the
/// key `prefix`; a plain path becomes a [`FsStore`] rooted there, with the key `""`.
///
/// ```
/// use neurochunk_store::{open_url, Bytes, RemoteOptions, Store};
///
/// let dir = tempfile::tempdir()?;
/// let url = format!("file://{}/volume.zarr", dir.path().display());
/// let (store, key) = open_url(&url, &RemoteOptions::default())?;
/// store.set(&format!("{key}/zarr.json"), Bytes::from_static(b"{}"))?;
/// assert!(dir.path().join("volume.zarr/zarr.json").is_file());
///
/// let (local, key) = open_url(&dir.path().display().to_string(), &RemoteOptions::default())?;
/// assert_eq!(key, "");
/// assert!(local.exists("volume.zarr/zarr.json")?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn open_url(
    url_or_path: &str,
    options: &RemoteOptions,
) -> StoreResult<(Arc<dyn Store>, String)> {
    StoreLocation::parse(url_or_path)?.open(options)
}

fn config_error(base: &str, e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> StoreError {
    StoreError::Remote {
        url: base.to_string(),
        source: e.into(),
    }
}

/// The `object_store` backend of a URL, configured from the environment and `options`.
fn build_object_store(
    scheme: Scheme,
    url: &Url,
    base: &str,
    options: &RemoteOptions,
) -> StoreResult<Arc<dyn ObjectStore>> {
    let allow_http = options.allows_http();
    let client = options.client_options(allow_http);
    let retry = options.retry_config();
    let store: Arc<dyn ObjectStore> = match scheme {
        Scheme::S3 => {
            let mut builder = AmazonS3Builder::new()
                .with_client_options(client)
                .with_http_connector(PartialAnswersConnector)
                .with_retry(retry);
            // The shared credentials file's profile first, so that the environment's
            // variables override it.
            for (key, value) in profile::aws_profile_config() {
                if let Ok(config_key) = key.parse::<AmazonS3ConfigKey>() {
                    builder = builder.with_config(config_key, value);
                }
            }
            for (key, value) in std::env::vars() {
                if key.starts_with("AWS_") {
                    if let Ok(config_key) = key.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
                        builder = builder.with_config(config_key, value);
                    }
                }
            }
            builder = builder
                .with_url(url.as_str())
                .with_allow_http(allow_http)
                .with_virtual_hosted_style_request(options.path_style == Some(false));
            if let Some(endpoint) = &options.endpoint {
                builder = builder.with_endpoint(endpoint.trim_end_matches('/'));
            }
            if let Some(region) = &options.region {
                builder = builder.with_region(region);
            }
            if options.anonymous {
                builder = builder.with_skip_signature(true);
            }
            Arc::new(builder.build().map_err(|e| config_error(base, e))?)
        }
        Scheme::Gcs => {
            let mut builder = GoogleCloudStorageBuilder::new()
                .with_client_options(client)
                .with_http_connector(PartialAnswersConnector)
                .with_retry(retry);
            for (key, value) in std::env::vars() {
                if key.starts_with("GOOGLE_") {
                    if let Ok(config_key) = key.to_ascii_lowercase().parse::<GoogleConfigKey>() {
                        builder = builder.with_config(config_key, value);
                    }
                }
            }
            builder = builder.with_url(url.as_str());
            if let Some(endpoint) = &options.endpoint {
                builder = builder.with_base_url(endpoint.trim_end_matches('/'));
            }
            if options.anonymous {
                builder = builder.with_skip_signature(true);
            }
            Arc::new(builder.build().map_err(|e| config_error(base, e))?)
        }
        Scheme::Azure => {
            let mut builder = MicrosoftAzureBuilder::new()
                .with_client_options(client)
                .with_http_connector(PartialAnswersConnector)
                .with_retry(retry);
            for (key, value) in std::env::vars() {
                if key.starts_with("AZURE_") {
                    if let Ok(config_key) = key.to_ascii_lowercase().parse::<AzureConfigKey>() {
                        builder = builder.with_config(config_key, value);
                    }
                }
            }
            builder = builder.with_url(url.as_str()).with_allow_http(allow_http);
            if let Some(endpoint) = &options.endpoint {
                builder = builder.with_endpoint(endpoint.trim_end_matches('/').to_string());
            }
            if options.anonymous {
                builder = builder.with_skip_signature(true);
            }
            Arc::new(builder.build().map_err(|e| config_error(base, e))?)
        }
        Scheme::Http => {
            let client = options.client_options(url.scheme() == "http" || allow_http);
            Arc::new(
                HttpBuilder::new()
                    .with_url(base)
                    .with_client_options(client)
                    .with_http_connector(PartialAnswersConnector)
                    .with_retry(retry)
                    .build()
                    .map_err(|e| config_error(base, e))?,
            )
        }
        Scheme::File => Arc::new(LocalFileSystem::new()),
    };
    Ok(store)
}
