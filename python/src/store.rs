//! Locations to stores: the one place that knows how a path or a URL becomes a [`Store`].
//!
//! A plain path is a filesystem store rooted at it; `s3://`, `gs://`, `az://`, `http(s)://`
//! and `file://` URLs open through the store crate's `open_url`, configured by the Python
//! side's `storage_options` (see [`remote_options`]).

use std::sync::Arc;
use std::time::Duration;

use neurochunk::store::remote::{is_url as store_is_url, Access};
use neurochunk::store::{RemoteOptions, StoreLocation};
use neurochunk::{Store, StoreError};
use pyo3::prelude::*;
use serde_json::Value;

use crate::errors::{invalid, store_to_py};

/// An opened location: the store and the node path inside it (`""`: the store's root).
pub(crate) struct Location {
    /// The store holding the node.
    pub store: Arc<dyn Store>,
    /// The node's path within the store.
    pub path: String,
    /// How the location is named in messages and reprs.
    pub display: String,
}

/// Whether `location` is a URL (`scheme://…`) rather than a local path.
pub(crate) fn is_url(location: &str) -> bool {
    store_is_url(location)
}

/// The remote options of `storage_options` (a JSON object), over the defaults and the
/// `NEUROCHUNK_*` environment variables: `endpoint` (also `endpoint_url`, or s3fs's
/// `client_kwargs.endpoint_url`), `region` (`region_name`), `anon` (`anonymous`),
/// `path_style`, `max_requests`, `max_retries`, `timeout` (seconds per request) and
/// `connect_timeout`.
pub(crate) fn remote_options(options: &Value) -> Result<RemoteOptions, String> {
    let mut out = RemoteOptions::from_env()?;
    let Value::Object(map) = options else {
        return if options.is_null() {
            Ok(out)
        } else {
            Err("storage_options must be a dict".into())
        };
    };
    let text = |key: &str, v: &Value| -> Result<Option<String>, String> {
        match v {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            _ => Err(format!("storage_options[{key:?}] must be a str")),
        }
    };
    let flag = |key: &str, v: &Value| -> Result<bool, String> {
        v.as_bool()
            .ok_or_else(|| format!("storage_options[{key:?}] must be a bool"))
    };
    let count = |key: &str, v: &Value| -> Result<usize, String> {
        v.as_u64()
            .map(|n| n as usize)
            .ok_or_else(|| format!("storage_options[{key:?}] must be a non-negative integer"))
    };
    let seconds = |key: &str, v: &Value| -> Result<Duration, String> {
        v.as_f64()
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| format!("storage_options[{key:?}] must be a positive number of seconds"))
    };
    for (key, v) in map {
        match key.as_str() {
            "endpoint" | "endpoint_url" => out.endpoint = text(key, v)?,
            "client_kwargs" => {
                let Value::Object(kw) = v else {
                    return Err("storage_options[\"client_kwargs\"] must be a dict".into());
                };
                for (k, v) in kw {
                    match k.as_str() {
                        "endpoint_url" => out.endpoint = text(k, v)?,
                        "region_name" => out.region = text(k, v)?,
                        other => {
                            return Err(format!(
                                "storage_options[\"client_kwargs\"][{other:?}] is not supported \
                                 (endpoint_url, region_name)"
                            ))
                        }
                    }
                }
            }
            "region" | "region_name" => out.region = text(key, v)?,
            "anon" | "anonymous" => out.anonymous = flag(key, v)?,
            "path_style" => out.path_style = Some(flag(key, v)?),
            "max_requests" => {
                out.max_requests = count(key, v)?;
                if out.max_requests == 0 {
                    return Err("storage_options[\"max_requests\"] must be positive".into());
                }
            }
            "max_retries" => out.max_retries = count(key, v)?,
            "timeout" | "request_timeout" => out.request_timeout = seconds(key, v)?,
            "connect_timeout" => out.connect_timeout = seconds(key, v)?,
            "branch" | "tag" | "snapshot" => crate::icechunk::version_option(key, v, &mut out)?,
            "allow_virtual" => crate::icechunk::allow_virtual_option(v, &mut out)?,
            "allow_any_virtual" => out.allow_any_virtual = flag(key, v)?,
            other => {
                return Err(format!(
                    "storage_options[{other:?}] is not supported (endpoint, region, anon, \
                     path_style, max_requests, max_retries, timeout, connect_timeout; \
                     branch, tag, snapshot, allow_virtual, allow_any_virtual for Icechunk \
                     repositories; \
                     credentials come from the environment, e.g. AWS_ACCESS_KEY_ID)"
                ))
            }
        }
    }
    Ok(out)
}

/// Open `location` (a local directory path or a URL, configured by `options`, the
/// `storage_options` as JSON) as a store and the node path inside it, writable unless
/// `read_only`. The library decides what a location is (a path, a URL, a path through a LINDI
/// reference file, an HDF5 file (`neurochunk::hdf5::open_hdf5_location`, its read-only view), a
/// BigDataViewer XML file or a container described by one:
/// `neurochunk::ome::open_location_read` for reading, `StoreLocation::open_for` for writing),
/// as it does for the command line.
pub(crate) fn open_store(location: &str, read_only: bool, options: &str) -> PyResult<Location> {
    let url = is_url(location);
    let options: Value = serde_json::from_str(options)
        .map_err(|e| invalid(format!("storage_options are not valid JSON: {e}")))?;
    let only_versions = match &options {
        Value::Object(map) => map
            .keys()
            .all(|k| crate::icechunk::VERSION_KEYS.contains(&k.as_str())),
        other => other.is_null(),
    };
    if !url && !only_versions {
        return Err(invalid(format!(
            "'{location}': storage_options are for URLs (s3://, gs://, https://, file://), \
             not local paths (except branch, tag, snapshot, allow_virtual and \
             allow_any_virtual, for Icechunk repositories)"
        )));
    }
    let remote = remote_options(&options).map_err(|reason| {
        store_to_py(StoreError::InvalidUrl {
            url: location.to_string(),
            reason,
        })
    })?;
    let parsed = StoreLocation::parse(location).map_err(store_to_py)?;
    let hdf5 = if read_only {
        neurochunk::hdf5::open_hdf5_location(&parsed, &remote)
            .map_err(|e| invalid(e.to_string()))?
    } else {
        None
    };
    let opened = if let Some(opened) = hdf5 {
        opened
    } else if read_only {
        neurochunk::ome::open_location_read(&parsed, &remote).map_err(|e| match e {
            neurochunk::ome::OmeError::Store(e) => store_to_py(e),
            other => invalid(format!("'{location}': {other}")),
        })?
    } else {
        parsed
            .open_for(&remote, Access::Write)
            .map_err(|e| match e {
                StoreError::ReadOnly { .. } => invalid(format!(
                    "'{location}': a LINDI reference file is read-only; open it with mode 'r'"
                )),
                other => store_to_py(other),
            })?
    };
    Ok(Location {
        store: opened.store,
        path: opened.key,
        display: if url {
            location.trim_end_matches('/').to_string()
        } else {
            location.to_string()
        },
    })
}
