//! Forks of a session, for writers in other processes (Dask's distributed workers, a
//! process pool): [`Session::fork`] gives a [`Fork`], bytes that travel to a worker, where
//! [`Fork::open`] makes it the process's session of that branch (every neurochunk writer of
//! a path inside the repository writes into it, as in the session's own process), and
//! [`ForkSession::finish`] gives it back, with its changes, for [`Session::merge`]. Chunks
//! are uploaded by the workers themselves; only the change sets travel.
//!
//! Icechunk merges change sets chunk by chunk, the last fork winning. Forks that wrote parts
//! of one chunk (or shard) would lose each other's values that way; [`Session::merge`] gives
//! every chunk written by several forks to a [`ChunkMerger`], which combines the versions
//! against the forks' common base (the array layer's element-wise merge keeps each fork's
//! changed elements, and refuses an element two forks changed differently).

use std::collections::BTreeMap;

use icechunk::session::Session as IcSession;
use tokio::runtime::Runtime;

use super::sessions::{register_explicit, unregister, Session};
use super::{new_runtime, IcechunkStore};
use crate::{Bytes, Store, StoreError, StoreResult};

/// What starts the bytes of a fork, and the version of their layout.
const MAGIC: &[u8; 8] = b"NCFORK1\n";

/// A fork of a [`Session`]: a change set of its own, begun from the session's state, that
/// another process opens ([`Fork::open`]), writes and gives back to [`Session::merge`].
/// [`Fork::to_bytes`] and [`Fork::from_bytes`] carry it between processes.
#[derive(Clone, PartialEq, Eq)]
pub struct Fork {
    identity: String,
    branch: String,
    /// The fork as icechunk serialises it when made: the base the forks' versions of a
    /// chunk are merged against.
    base: Vec<u8>,
    /// The fork now, with what was written into it.
    state: Vec<u8>,
}

impl std::fmt::Debug for Fork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fork")
            .field("repository", &self.identity)
            .field("branch", &self.branch)
            .field("written", &(self.base != self.state))
            .finish()
    }
}

/// Combines the versions of a chunk that several forks wrote.
pub trait ChunkMerger {
    /// The chunk at grid position `coords` of the array at `array` (a path in the
    /// repository, no leading `/`) whose metadata document (`zarr.json`) is `metadata`:
    /// `base` is the chunk the forks began from, `written` each fork's version (`None`: none
    /// stored, the fill value). Returns the merged chunk (`None`: nothing to store), or an
    /// error naming what the forks both changed.
    fn merge(
        &self,
        array: &str,
        coords: &[u64],
        metadata: &[u8],
        base: Option<Bytes>,
        written: Vec<Option<Bytes>>,
    ) -> StoreResult<Option<Bytes>>;
}

/// What [`Session::merge`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergeSummary {
    /// Forks merged.
    pub forks: usize,
    /// Chunks written by more than one fork, combined by the [`ChunkMerger`].
    pub chunks_combined: usize,
}

impl Fork {
    /// The branch the fork's changes are for.
    pub fn branch(&self) -> &str {
        &self.branch
    }

    /// The fork as bytes, for another process.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            MAGIC.len()
                + 24
                + self.identity.len()
                + self.branch.len()
                + self.base.len()
                + self.state.len(),
        );
        out.extend_from_slice(MAGIC);
        for part in [
            self.identity.as_bytes(),
            self.branch.as_bytes(),
            &self.base,
            &self.state,
        ] {
            out.extend_from_slice(&(part.len() as u64).to_le_bytes());
            out.extend_from_slice(part);
        }
        out
    }

    /// A fork from [`Fork::to_bytes`]; anything else is an error.
    pub fn from_bytes(bytes: &[u8]) -> StoreResult<Fork> {
        let bad = |why: &str| StoreError::backend("fork", "", format!("not a fork: {why}"));
        let mut rest = bytes
            .strip_prefix(MAGIC.as_slice())
            .ok_or_else(|| bad("it does not begin as one"))?;
        let mut parts: Vec<&[u8]> = Vec::with_capacity(4);
        for _ in 0..4 {
            let (len, tail) = rest
                .split_first_chunk::<8>()
                .ok_or_else(|| bad("it ends early"))?;
            let len = usize::try_from(u64::from_le_bytes(*len))
                .ok()
                .filter(|&n| n <= tail.len())
                .ok_or_else(|| bad("it ends early"))?;
            let (part, tail) = tail.split_at(len);
            parts.push(part);
            rest = tail;
        }
        if !rest.is_empty() {
            return Err(bad("bytes follow its end"));
        }
        let text = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| bad("a name is not text"));
        Ok(Fork {
            identity: text(parts[0])?,
            branch: text(parts[1])?,
            base: parts[2].to_vec(),
            state: parts[3].to_vec(),
        })
    }

    /// Open the fork in this process: until [`ForkSession::finish`], every path or URL
    /// inside the repository at the fork's branch opens as the fork, so neurochunk's
    /// writers write into it. Refused when this process has a session on that branch open.
    pub fn open(self) -> StoreResult<ForkSession> {
        let store = std::sync::Arc::new(self.store(&self.state, new_runtime(&self.identity)?)?);
        register_explicit(&self.identity, &self.branch, store.clone())?;
        Ok(ForkSession {
            fork: self,
            store,
            open: true,
        })
    }

    /// A store over the fork's session as serialised in `bytes` (its base or its state).
    fn store(&self, bytes: &[u8], runtime: std::sync::Arc<Runtime>) -> StoreResult<IcechunkStore> {
        let session = IcSession::from_bytes(bytes)
            .map_err(|e| StoreError::backend(&self.identity, "", format!("a fork: {e}")))?;
        Ok(IcechunkStore::over(
            session,
            runtime,
            self.identity.clone(),
            format!("{} (fork of branch '{}')", self.identity, self.branch),
            Some(self.branch.clone()),
        ))
    }
}

/// A [`Fork`] open in this process (see [`Fork::open`]).
pub struct ForkSession {
    fork: Fork,
    store: std::sync::Arc<IcechunkStore>,
    open: bool,
}

impl std::fmt::Debug for ForkSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForkSession")
            .field("fork", &self.fork)
            .finish()
    }
}

impl ForkSession {
    /// The fork's store (what any location inside the repository opens as meanwhile).
    pub fn store(&self) -> std::sync::Arc<IcechunkStore> {
        std::sync::Arc::clone(&self.store)
    }

    /// Close the fork in this process and return it with what was written, for
    /// [`Session::merge`].
    pub fn finish(mut self) -> StoreResult<Fork> {
        self.close();
        let state = self
            .store
            .runtime
            .block_on(self.store.store.as_bytes())
            .map_err(|e| self.store.error("", e))?;
        Ok(Fork {
            state: state.to_vec(),
            ..self.fork.clone()
        })
    }

    fn close(&mut self) {
        if std::mem::take(&mut self.open) {
            unregister(&self.fork.identity, &self.store);
        }
    }
}

impl Drop for ForkSession {
    fn drop(&mut self) {
        self.close();
    }
}

/// The Zarr key of chunk `coords` of the array at icechunk path `path` (`/a/b`), whose
/// metadata document is `metadata`.
fn chunk_key(path: &str, metadata: &[u8], coords: &[u32]) -> String {
    let doc: serde_json::Value = serde_json::from_slice(metadata).unwrap_or_default();
    let encoding = &doc["chunk_key_encoding"];
    let v2 = encoding["name"] == "v2";
    let separator = encoding["configuration"]["separator"]
        .as_str()
        .unwrap_or(if v2 { "." } else { "/" });
    let parts: Vec<String> = coords.iter().map(u32::to_string).collect();
    let name = if v2 {
        if parts.is_empty() {
            "0".to_string()
        } else {
            parts.join(separator)
        }
    } else {
        std::iter::once("c".to_string())
            .chain(parts)
            .collect::<Vec<_>>()
            .join(separator)
    };
    let node = path.trim_matches('/');
    if node.is_empty() {
        name
    } else {
        format!("{node}/{name}")
    }
}

impl Session {
    /// A fork of the session for another process (see [`Fork`]): opened there with
    /// [`Fork::open`], given back by [`ForkSession::finish`], taken in by
    /// [`Session::merge`]. The session's own changes so far are part of the fork's base.
    pub fn fork(&self) -> StoreResult<Fork> {
        let state = self
            .store
            .runtime
            .block_on(async {
                let session = self.store.store.session();
                let forked = session.read().await.fork().await?;
                forked.as_bytes()
            })
            .map_err(|e| self.store.error("", format!("fork: {e}")))?;
        Ok(Fork {
            identity: self.identity.clone(),
            branch: self.branch.clone(),
            base: state.clone(),
            state,
        })
    }

    /// Take the changes of `forks` (each given back by [`ForkSession::finish`]) into the
    /// session, to be committed with it. A chunk written by several forks is combined by
    /// `merger` against the forks' base; a fork of another repository or branch is refused
    /// before anything is merged.
    pub fn merge(&self, forks: Vec<Fork>, merger: &dyn ChunkMerger) -> StoreResult<MergeSummary> {
        let runtime = &self.store.runtime;
        for fork in &forks {
            if fork.identity != self.identity || fork.branch != self.branch {
                return Err(self.store.error(
                    "",
                    format!(
                        "a fork of branch '{}' of {} cannot be merged into this session",
                        fork.branch, fork.identity
                    ),
                ));
            }
        }
        // Each fork's store, opened once: which chunks it wrote, and their values.
        let stores = forks
            .iter()
            .map(|fork| fork.store(&fork.state, std::sync::Arc::clone(runtime)))
            .collect::<StoreResult<Vec<_>>>()?;
        let mut writers: BTreeMap<(String, Vec<u32>), Vec<usize>> = BTreeMap::new();
        for (i, store) in stores.iter().enumerate() {
            let status = runtime
                .block_on(async { store.store.session().read().await.status().await })
                .map_err(|e| store.error("", format!("a fork: {e}")))?;
            for (path, chunks) in status.updated_chunks {
                for chunk in chunks {
                    writers
                        .entry((path.to_string(), chunk.0))
                        .or_default()
                        .push(i);
                }
            }
        }
        // Chunks several forks wrote, combined before the change sets are merged, against
        // the base of the first fork that wrote them (opened once per fork).
        let mut bases: Vec<Option<IcechunkStore>> = (0..forks.len()).map(|_| None).collect();
        let mut combined: Vec<(String, Option<Bytes>)> = Vec::new();
        for ((path, coords), which) in writers.into_iter().filter(|(_, w)| w.len() > 1) {
            let first = &stores[which[0]];
            let node = path.trim_matches('/');
            let meta_key = if node.is_empty() {
                "zarr.json".to_string()
            } else {
                format!("{node}/zarr.json")
            };
            let metadata = first.get_required(&meta_key)?;
            let key = chunk_key(&path, &metadata, &coords);
            let base = match &mut bases[which[0]] {
                Some(store) => store,
                slot => {
                    let fork = &forks[which[0]];
                    slot.insert(fork.store(&fork.base, std::sync::Arc::clone(runtime))?)
                }
            };
            let base = base.get(&key)?;
            let written = which
                .iter()
                .map(|&i| stores[i].get(&key))
                .collect::<StoreResult<Vec<_>>>()?;
            let grid: Vec<u64> = coords.iter().map(|&c| u64::from(c)).collect();
            let merged = merger.merge(node, &grid, &metadata, base, written)?;
            combined.push((key, merged));
        }
        drop(stores);
        drop(bases);
        for fork in &forks {
            let other = IcSession::from_bytes(&fork.state)
                .map_err(|e| self.store.error("", format!("a fork: {e}")))?;
            runtime
                .block_on(async {
                    let session = self.store.store.session();
                    let mut session = session.write().await;
                    session.merge(other).await
                })
                .map_err(|e| self.store.error("", format!("merging a fork: {e}")))?;
        }
        for (key, value) in &combined {
            match value {
                Some(bytes) => self.store.set(key, bytes.clone())?,
                None => self.store.delete(key)?,
            }
        }
        Ok(MergeSummary {
            forks: forks.len(),
            chunks_combined: combined.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_keys_follow_the_encoding() {
        let v3 = br#"{"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}}}"#;
        assert_eq!(chunk_key("/a/b", v3, &[1, 2]), "a/b/c/1/2");
        let dotted =
            br#"{"chunk_key_encoding":{"name":"default","configuration":{"separator":"."}}}"#;
        assert_eq!(chunk_key("/x", dotted, &[3, 0]), "x/c.3.0");
        let v2 = br#"{"chunk_key_encoding":{"name":"v2"}}"#;
        assert_eq!(chunk_key("/x", v2, &[3, 0]), "x/3.0");
        assert_eq!(chunk_key("/", v3, &[0]), "c/0");
    }

    #[test]
    fn forks_travel_as_bytes_and_damage_is_refused() {
        let fork = Fork {
            identity: "/data/repo".into(),
            branch: "main".into(),
            base: vec![1, 2, 3],
            state: vec![4, 5],
        };
        let bytes = fork.to_bytes();
        assert_eq!(Fork::from_bytes(&bytes).unwrap(), fork);
        for cut in [0, 5, 8, 12, bytes.len() - 1] {
            assert!(Fork::from_bytes(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Fork::from_bytes(&longer).is_err());
    }
}
