//! Where the commands read and write: local paths or URLs ([`Location`], opened through
//! [`neurochunk_store::open_url`]), the global remote options (`--endpoint`, `--bucket-region`,
//! `--anon`, `--max-requests`), and the options every writing command shares.

use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use clap::Args;
use neurochunk_store::{Durability, FsStore, PrefixStore, RemoteOptions, Store, StoreLocation};

use crate::Failure;

/// The URL forms every PATH argument accepts, for the commands' help.
pub(crate) const URL_FORMS: &str = "PATH arguments are local paths or URLs: s3://BUCKET/PREFIX, \
gs://BUCKET/PREFIX, az://CONTAINER/PREFIX (also abfs[s]://CONTAINER@ACCOUNT.dfs.core.windows.net/PREFIX), \
http(s)://HOST/PATH (read-only) and file:///PATH. Credentials come from each cloud's standard \
environment variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, \
AWS_REGION, AWS_ENDPOINT_URL, AWS_ALLOW_HTTP; GOOGLE_APPLICATION_CREDENTIALS; \
AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY, ...).";

/// Options of every command that reaches object storage (global: accepted before or after
/// the subcommand).
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct RemoteArgs {
    /// Object storage endpoint, e.g. http://127.0.0.1:9000 for a local S3 server (S3: path-style
    /// addressing; an http:// endpoint allows plain HTTP).
    #[arg(long, global = true, value_name = "URL", env = "NEUROCHUNK_ENDPOINT")]
    endpoint: Option<String>,
    /// Region of the bucket (S3; default: AWS_REGION, AWS_DEFAULT_REGION, else us-east-1).
    /// Not `--region`, which `get` uses for the part of an array to read.
    #[arg(
        long,
        global = true,
        value_name = "REGION",
        env = "NEUROCHUNK_BUCKET_REGION"
    )]
    bucket_region: Option<String>,
    /// Send requests unsigned (public buckets), whatever credentials the environment holds.
    #[arg(long, global = true, env = "NEUROCHUNK_ANON")]
    anon: bool,
    /// Requests in flight at most per store (default 64).
    #[arg(long, global = true, value_name = "N", env = "NEUROCHUNK_MAX_REQUESTS",
          value_parser = clap::value_parser!(u32).range(1..))]
    max_requests: Option<u32>,
}

static REMOTE_OPTIONS: OnceLock<RemoteOptions> = OnceLock::new();

impl RemoteArgs {
    /// Make these the options every URL of this run is opened with.
    pub(crate) fn install(&self) {
        let mut options = RemoteOptions {
            endpoint: self.endpoint.clone().filter(|e| !e.trim().is_empty()),
            region: self.bucket_region.clone().filter(|r| !r.trim().is_empty()),
            anonymous: self.anon,
            ..RemoteOptions::default()
        };
        if let Some(max) = self.max_requests {
            options.max_requests = max as usize;
        }
        let _ = REMOTE_OPTIONS.set(options);
    }
}

fn remote_options() -> &'static RemoteOptions {
    REMOTE_OPTIONS.get_or_init(RemoteOptions::default)
}

/// A PATH argument: a local path or a URL.
#[derive(Clone, Debug)]
pub(crate) struct Location(StoreLocation);

impl FromStr for Location {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        StoreLocation::parse(text)
            .map(Location)
            .map_err(|e| e.to_string())
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.display())
    }
}

impl Location {
    /// The local path, or `None` for a URL and for a path through a LINDI reference file
    /// (`x.lindi.json/group/array`: a read-only store, opened like a URL's).
    pub(crate) fn local(&self) -> Option<&Path> {
        match &self.0 {
            StoreLocation::Local(path)
                if neurochunk_store::lindi::split_reference_path(path).is_none() =>
            {
                Some(path)
            }
            _ => None,
        }
    }

    /// The location as a person reads it (for messages).
    pub(crate) fn display(&self) -> String {
        self.0.display()
    }

    /// The last segment of the path or key (a file name).
    pub(crate) fn file_name(&self) -> String {
        match &self.0 {
            StoreLocation::Local(path) => path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            StoreLocation::Url { key, .. } => key.rsplit('/').next().unwrap_or("").to_string(),
        }
    }

    /// The store holding the location and the key (prefix) of the location inside it: for a
    /// URL the bucket's store and the URL's path, for a path a filesystem store rooted there
    /// and `""`.
    pub(crate) fn open_parts(&self) -> Result<(Arc<dyn Store>, String), Failure> {
        self.0
            .open(remote_options())
            .map_err(|e| Failure(e.to_string()))
    }

    /// A store seen from the location: the tree (array, group, file) to read. A local path
    /// must exist.
    pub(crate) fn open_read(&self) -> Result<Arc<dyn Store>, Failure> {
        if let Some(path) = self.local() {
            if !path.exists() {
                return Err(Failure(format!("'{}' does not exist", path.display())));
            }
        }
        self.rooted()
    }

    /// The store rooted at the location (no check that anything is there).
    fn rooted(&self) -> Result<Arc<dyn Store>, Failure> {
        let (store, key) = self.open_parts()?;
        if key.is_empty() {
            return Ok(store);
        }
        Ok(Arc::new(PrefixStore::new(store, &key).map_err(|e| {
            Failure(format!("{}: {e}", self.display()))
        })?))
    }

    /// For a URL: a store rooted at it to write a new tree into, emptied first (objects are
    /// written in place, see docs/remote.md). The root of a bucket that holds anything is
    /// refused rather than emptied.
    pub(crate) fn open_remote_replace(&self) -> Result<Arc<dyn Store>, Failure> {
        let (store, key) = self.open_parts()?;
        let fail = |e: neurochunk_store::StoreError| Failure(format!("{}: {e}", self.display()));
        if key.is_empty() {
            let listing = store.list_dir("").map_err(fail)?;
            if !listing.keys.is_empty() || !listing.prefixes.is_empty() {
                return Err(Failure(format!(
                    "{}: refusing to replace the whole bucket; name a prefix inside it",
                    self.display()
                )));
            }
            return Ok(store);
        }
        let view: Arc<dyn Store> = Arc::new(PrefixStore::new(store, &key).map_err(fail)?);
        view.delete_prefix("").map_err(fail)?;
        Ok(view)
    }
}

/// Options of the commands that write arrays, hierarchies and files (`put`, `convert`,
/// `consolidate`, `demo`, `nwb demo`, `nwb convert`; the `table` commands spell the same option
/// in their output options).
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct WriteArgs {
    /// Make every write durable before the command returns: fsync each value's file before it
    /// is renamed into place and its directory after (slower; see docs/durability.md). Local
    /// paths only.
    #[arg(long)]
    pub fsync: bool,
}

impl WriteArgs {
    /// The durability asked for.
    pub(crate) fn durability(&self) -> Durability {
        if self.fsync {
            Durability::Fsync
        } else {
            Durability::Buffered
        }
    }

    /// A store over the directory `root` to write into (created on the first write), with the
    /// durability asked for. Like every `FsStore`, it refuses to write through a symbolic link
    /// leading out of `root`.
    pub(crate) fn store(&self, root: &Path) -> Arc<dyn Store> {
        Arc::new(FsStore::new(root).with_durability(self.durability()))
    }

    /// The store to write the tree at `location` in place (`consolidate`): a local directory
    /// with the durability asked for, or the URL's prefix.
    pub(crate) fn store_at(&self, location: &Location) -> Result<Arc<dyn Store>, Failure> {
        match location.local() {
            Some(path) => {
                location.open_read()?;
                Ok(self.store(path))
            }
            None => location.open_read(),
        }
    }
}
