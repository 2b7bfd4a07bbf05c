//! Virtual chunks: chunks of a repository that are byte ranges of other files (an HDF5
//! file's chunks, as `nwb import --virtual` records them), fetched from the repository's
//! virtual chunk containers, one per directory or URL prefix the files are in.
//!
//! Writing a reference needs a container holding its file: [`Repo::add_virtual_container`]
//! adds the container of the file's directory to the repository's configuration. Reading
//! fetches only from containers the reader allows, as external links are confined: those
//! beside the repository (in the directory holding it, or under the URL prefix holding it),
//! under [`RemoteOptions::allowed_virtual`], or anywhere with
//! [`RemoteOptions::allow_any_virtual`]. A chunk in any other container is an error naming
//! the container and the option that allows it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use icechunk::config::{Credentials, HttpConfig};
use icechunk::format::manifest::{
    Checksum, SecondsSinceEpoch, VirtualChunkLocation, VirtualChunkRef,
};
use icechunk::storage::{S3Credentials, S3Options};
use icechunk::virtual_chunks::VirtualChunkContainer;
use icechunk::{ObjectStoreConfig, RepositoryConfig};

use super::{repo_error, Repo};
use crate::remote::StoreLocation;
use crate::{RemoteOptions, StoreError, StoreResult, VirtualRef};

/// The S3 settings neurochunk's remote stores use (endpoint, region, addressing, unsigned
/// requests), for a repository's storage and for a virtual chunk container alike.
pub(super) fn s3_options(options: &RemoteOptions) -> S3Options {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let mut s3 = S3Options::default();
    s3.region = options
        .region
        .clone()
        .or_else(|| env("AWS_REGION"))
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .or_else(|| Some("us-east-1".into()));
    s3.endpoint_url = options
        .endpoint
        .clone()
        .or_else(|| env("AWS_ENDPOINT_URL"))
        .or_else(|| env("AWS_ENDPOINT"));
    s3.anonymous = options.anonymous;
    s3.allow_http = options.allows_http();
    s3.force_path_style = options.path_style.unwrap_or(true);
    s3
}

/// The credentials of S3 requests: unsigned, or from the environment.
pub(super) fn s3_credentials(options: &RemoteOptions) -> S3Credentials {
    if options.anonymous {
        S3Credentials::Anonymous
    } else {
        S3Credentials::FromEnv
    }
}

/// The URL prefix of the directory holding the file at `url` (`file:///data/a.nwb` →
/// `file:///data/`).
fn directory_of(url: &str) -> Option<&str> {
    let (scheme, rest) = url.split_once("://")?;
    let slash = rest.rfind('/')?;
    // A host (or bucket) must remain for the object stores; `file:///` has an empty one.
    (scheme == "file" || slash > 0).then(|| &url[..scheme.len() + 3 + slash + 1])
}

/// The container of the files in the directory of `url`.
fn container_for(url: &str, options: &RemoteOptions) -> Result<VirtualChunkContainer, String> {
    let prefix = directory_of(url)
        .ok_or_else(|| format!("{url}: not the URL of a file in a directory"))?
        .to_string();
    let store = match prefix.split_once("://").map(|(s, _)| s) {
        Some("file") => {
            let dir = url::Url::parse(&prefix)
                .ok()
                .and_then(|u| u.to_file_path().ok())
                .ok_or_else(|| format!("{prefix}: not a local directory"))?;
            ObjectStoreConfig::LocalFileSystem(dir)
        }
        Some("s3") => ObjectStoreConfig::S3(s3_options(options)),
        Some("gs" | "gcs") => ObjectStoreConfig::Gcs(HashMap::new()),
        Some("http" | "https") => ObjectStoreConfig::Http(HttpConfig::default()),
        _ => {
            return Err(format!(
                "{url}: virtual chunks cannot point at this kind of URL"
            ))
        }
    };
    VirtualChunkContainer::new(prefix, store)
}

/// The `file://` URL prefix of a local directory (symbolic links resolved where it exists).
fn directory_url(dir: &Path) -> Option<String> {
    let dir = std::fs::canonicalize(dir)
        .or_else(|_| std::path::absolute(dir))
        .ok()?;
    url::Url::from_directory_path(dir).ok().map(String::from)
}

/// URL prefixes under which a reader of the repository at `location` fetches virtual chunks.
fn allowed_prefixes(location: &StoreLocation, options: &RemoteOptions) -> Vec<String> {
    let mut allowed = Vec::new();
    match location {
        StoreLocation::Local(path) => {
            let absolute = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            if let Some(parent) = absolute.parent() {
                allowed.extend(directory_url(parent));
            }
        }
        url => {
            let shown = url.display();
            if let Some(parent) = directory_of(shown.trim_end_matches('/')) {
                allowed.push(parent.to_string());
            }
        }
    }
    for entry in &options.allowed_virtual {
        if entry.contains("://") {
            let mut prefix = entry.clone();
            if !prefix.ends_with('/') {
                prefix.push('/');
            }
            allowed.push(prefix);
        } else {
            allowed.extend(directory_url(&PathBuf::from(entry)));
        }
    }
    allowed
}

/// The containers of `config` a reader of the repository at `location` may fetch from, with
/// the credentials of each (`None`: the environment's).
pub(super) fn authorizations(
    config: &RepositoryConfig,
    location: &StoreLocation,
    options: &RemoteOptions,
) -> HashMap<String, Option<Credentials>> {
    let allowed = allowed_prefixes(location, options);
    config
        .virtual_chunk_containers()
        .filter(|c| {
            options.allow_any_virtual || allowed.iter().any(|a| c.url_prefix().starts_with(a))
        })
        .map(|c| {
            let credentials = match &c.store {
                ObjectStoreConfig::S3(_) | ObjectStoreConfig::S3Compatible(_) => {
                    Some(Credentials::S3(s3_credentials(options)))
                }
                ObjectStoreConfig::LocalFileSystem(_) => Some(Credentials::LocalFileSystemAccess),
                ObjectStoreConfig::Http(_) => Some(Credentials::HttpAccess),
                _ => None,
            };
            (c.url_prefix().to_string(), credentials)
        })
        .collect()
}

/// Icechunk's form of a reference.
pub(super) fn to_icechunk(reference: &VirtualRef) -> Result<VirtualChunkRef, String> {
    let location = VirtualChunkLocation::from_url(&reference.url).map_err(|e| e.to_string())?;
    let checksum = reference
        .modified
        .and_then(|s| u32::try_from(s).ok())
        .map(|s| Checksum::LastModified(SecondsSinceEpoch(s)));
    Ok(VirtualChunkRef {
        location,
        offset: reference.offset,
        length: reference.length,
        checksum,
    })
}

/// A person's explanation of icechunk's refusal to fetch from a container this reader does
/// not allow, or `None` for any other error.
pub(super) fn unauthorized(message: &str) -> Option<String> {
    let (_, rest) = message.split_once("resolves to the url prefix ")?;
    let prefix = rest.split([' ', ',']).next().unwrap_or(rest);
    Some(format!(
        "a virtual chunk lies in {prefix}, outside where this repository's virtual chunks \
         may be read from (beside the repository); allow it with --allow-virtual {prefix} \
         (Python: allow_virtual=[...])"
    ))
}

impl Repo {
    /// Make sure the repository has a virtual chunk container holding the file at `url` (a
    /// `file://`, `s3://`, `gs://` or `https://` URL): if none does, the container of the
    /// file's directory is added to the repository's configuration and saved. Sessions
    /// begun afterwards may record references into the file.
    pub fn add_virtual_container(&mut self, url: &str, options: &RemoteOptions) -> StoreResult<()> {
        let covered = self
            .repo
            .config()
            .virtual_chunk_containers()
            .any(|c| url.starts_with(c.url_prefix()));
        if covered {
            return Ok(());
        }
        let container = container_for(url, options)
            .map_err(|message| StoreError::backend(&self.display, "", message))?;
        let mut config = self.repo.config().clone();
        config
            .set_virtual_chunk_container(container)
            .map_err(|message| StoreError::backend(&self.display, "", message))?;
        let reopened = self
            .block_on(self.repo.reopen(Some(config), None))
            .map_err(|e| repo_error(&self.display, e))?;
        self.block_on(reopened.save_config())
            .map_err(|e| repo_error(&self.display, e))?;
        self.repo = reopened;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_of_file_urls() {
        assert_eq!(directory_of("file:///data/a.nwb"), Some("file:///data/"));
        assert_eq!(directory_of("file:///a.nwb"), Some("file:///"));
        assert_eq!(directory_of("s3://bucket/x/a.nwb"), Some("s3://bucket/x/"));
        assert_eq!(directory_of("s3://bucket/a.nwb"), Some("s3://bucket/"));
        assert_eq!(directory_of("s3://bucket"), None);
        assert_eq!(directory_of("a.nwb"), None);
    }

    #[test]
    fn unauthorized_containers_are_named() {
        let text = "a virtual chunk in this repository resolves to the url prefix \
                    file:///data/, to be able to fetch the chunk you need to authorize";
        let message = unauthorized(text).unwrap();
        assert!(
            message.contains("--allow-virtual file:///data/"),
            "{message}"
        );
        assert_eq!(unauthorized("no such key"), None);
    }
}
