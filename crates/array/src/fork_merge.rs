//! Combining versions of one chunk written by several writers that began from the same
//! chunk (forks of an Icechunk session, each writing part of one shard): an element-wise
//! three-way merge. Every element a version changed from the base is kept; an element two
//! versions changed to different values is a conflict, reported with the chunk and the
//! element, and nothing is combined. Elements are compared as stored bytes, so NaNs and
//! signed zeros count as the values their bits are.
//!
//! ```
//! use neurochunk_array::fork_merge::merge_versions;
//! use neurochunk_array::{ArrayBuilder, DataType, Selection};
//! use neurochunk_store::{MemoryStore, Store};
//! use std::sync::Arc;
//!
//! let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
//! let array = ArrayBuilder::new(vec![4], DataType::UInt8).create(store.clone(), "a")?;
//! let doc = store.get("a/zarr.json")?.unwrap();
//! let key = array.chunk_key(&[0]);
//! // Two writers each set half of the chunk.
//! array.write_elements(&Selection::from_box(&[0], &[2]), &[1u8, 2])?;
//! let left = store.get(&key)?;
//! store.delete(&key)?;
//! array.write_elements(&Selection::from_box(&[2], &[2]), &[3u8, 4])?;
//! let right = store.get(&key)?;
//! let merged = merge_versions("a", &[0], &doc, None, vec![left, right])?.unwrap();
//! store.set(&key, merged)?;
//! assert_eq!(array.read_elements::<u8>(&Selection::all())?.1, vec![1, 2, 3, 4]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::sync::Arc;

use neurochunk_store::{Bytes, MemoryStore, Store};

use crate::array::Array;
use crate::error::{ArrayError, ArrayResult};
use crate::metadata::ArrayMetadata;
use crate::ArrayBytes;

/// Most conflicting elements an error lists.
const SHOWN_CONFLICTS: usize = 4;

/// The chunk at grid position `coords` of the Zarr v3 array at `path` (metadata document
/// `metadata`) combined from `written`, the versions of writers that all began from `base`
/// (`None`: not stored, the fill value). Returns the combined chunk encoded as the array
/// stores it, `None` when it is all fill value and the array does not store such chunks.
pub fn merge_versions(
    path: &str,
    coords: &[u64],
    metadata: &[u8],
    base: Option<Bytes>,
    written: Vec<Option<Bytes>>,
) -> ArrayResult<Option<Bytes>> {
    let invalid = |message: String| ArrayError::Metadata {
        path: crate::display_path(path),
        message,
    };
    let doc: serde_json::Value =
        serde_json::from_slice(metadata).map_err(|e| invalid(e.to_string()))?;
    let meta = ArrayMetadata::from_v3(&doc, path)?;
    let element = meta.data_type.fixed_size().ok_or_else(|| {
        invalid(format!(
            "chunks of {} cannot be merged element by element",
            meta.data_type
        ))
    })?;
    let decode = |value: Option<Bytes>| -> ArrayResult<(Array, Vec<u8>)> {
        let scratch: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let array = Array::from_metadata(scratch.clone(), "a", meta.clone());
        if let Some(bytes) = value {
            scratch.set(&array.chunk_key(coords), bytes)?;
        }
        match array.retrieve_chunk(coords)? {
            ArrayBytes::Fixed(bytes) => Ok((array, bytes)),
            _ => Err(invalid("a chunk of variable-size elements".into())),
        }
    };
    let (scratch, mut merged) = decode(base)?;
    let base_bytes = merged.clone();
    // Which version set each element that changed.
    let mut setter: Vec<Option<usize>> = vec![None; base_bytes.len() / element.max(1)];
    let mut conflicts: Vec<usize> = Vec::new();
    for (v, version) in written.into_iter().enumerate() {
        let (_, bytes) = decode(version)?;
        if bytes.len() != base_bytes.len() {
            return Err(invalid("versions of one chunk differ in size".into()));
        }
        for (i, (new, old)) in bytes
            .chunks_exact(element)
            .zip(base_bytes.chunks_exact(element))
            .enumerate()
        {
            if new == old {
                continue;
            }
            let slot = &mut merged[i * element..(i + 1) * element];
            match setter[i] {
                Some(_) if slot == new => {}
                Some(_) => conflicts.push(i),
                None => {
                    slot.copy_from_slice(new);
                    setter[i] = Some(v);
                }
            }
        }
    }
    if !conflicts.is_empty() {
        conflicts.sort_unstable();
        conflicts.dedup();
        let chunk_shape = meta.chunk_shape.clone();
        let shown: Vec<String> = conflicts
            .iter()
            .take(SHOWN_CONFLICTS)
            .map(|&i| format!("{:?}", element_position(i as u64, coords, &chunk_shape)))
            .collect();
        let more = conflicts.len().saturating_sub(SHOWN_CONFLICTS);
        return Err(ArrayError::Store(neurochunk_store::StoreError::backend(
            crate::display_path(path),
            scratch.chunk_key(coords),
            format!(
                "two writers changed the same elements of chunk {coords:?} differently: at {}{}; \
                 nothing was merged",
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ),
        )));
    }
    scratch.store_chunk(coords, ArrayBytes::Fixed(merged))?;
    Ok(scratch.store().get(&scratch.chunk_key(coords))?)
}

/// The array coordinates of element `i` (C order) of the chunk at `coords`.
fn element_position(mut i: u64, coords: &[u64], chunk_shape: &[usize]) -> Vec<u64> {
    let mut position = vec![0u64; chunk_shape.len()];
    for d in (0..chunk_shape.len()).rev() {
        let n = chunk_shape[d].max(1) as u64;
        position[d] = coords[d] * n + i % n;
        i /= n;
    }
    position
}

/// [`merge_versions`] as the merger of an Icechunk session's forks
/// ([`Session::merge`](neurochunk_store::icechunk::Session::merge)).
#[cfg(feature = "icechunk")]
#[derive(Clone, Copy, Debug, Default)]
pub struct ElementMerge;

#[cfg(feature = "icechunk")]
impl neurochunk_store::icechunk::ChunkMerger for ElementMerge {
    fn merge(
        &self,
        array: &str,
        coords: &[u64],
        metadata: &[u8],
        base: Option<Bytes>,
        written: Vec<Option<Bytes>>,
    ) -> neurochunk_store::StoreResult<Option<Bytes>> {
        merge_versions(array, coords, metadata, base, written).map_err(|e| match e {
            ArrayError::Store(e) => e,
            other => neurochunk_store::StoreError::backend(
                crate::display_path(array),
                "",
                other.to_string(),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ArrayBuilder, DataType, Selection};

    fn write(array: &Array, start: &[u64], shape: &[u64], value: u16) {
        let count = shape.iter().product::<u64>() as usize;
        array
            .write_elements(&Selection::from_box(start, shape), &vec![value; count])
            .unwrap();
    }

    fn sharded() -> (Arc<dyn Store>, Array, Bytes) {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let array = ArrayBuilder::new(vec![8, 8], DataType::UInt16)
            .chunks(vec![2, 2])
            .shards(vec![8, 8])
            .create(store.clone(), "v")
            .unwrap();
        let doc = store.get("v/zarr.json").unwrap().unwrap();
        (store, array, doc)
    }

    #[test]
    fn parts_of_one_shard_are_combined_and_clashes_refused() {
        let (store, array, doc) = sharded();
        let key = array.chunk_key(&[0, 0]);
        write(&array, &[0, 0], &[8, 8], 1);
        let base = store.get(&key).unwrap();
        let version = |start: [u64; 2], value: u16| {
            store.set(&key, base.clone().unwrap()).unwrap();
            write(&array, &start, &[4, 4], value);
            store.get(&key).unwrap()
        };
        let (a, b, c) = (version([0, 0], 5), version([4, 4], 6), version([2, 2], 7));
        let merged = merge_versions("v", &[0, 0], &doc, base.clone(), vec![a.clone(), b])
            .unwrap()
            .unwrap();
        store.set(&key, merged).unwrap();
        let (_, values) = array.read_elements::<u16>(&Selection::all()).unwrap();
        for (i, v) in values.iter().enumerate() {
            let (r, col) = (i / 8, i % 8);
            let expected = if r < 4 && col < 4 {
                5
            } else if r >= 4 && col >= 4 {
                6
            } else {
                1
            };
            assert_eq!(*v, expected, "element ({r}, {col})");
        }
        // `c` overlaps `a` with another value: refused, naming an element.
        let err = merge_versions("v", &[0, 0], &doc, base, vec![a, c])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("[2, 2]") && err.contains("nothing was merged"),
            "{err}"
        );
    }

    #[test]
    fn equal_changes_agree_and_missing_chunks_are_fill() {
        let (store, array, doc) = sharded();
        let key = array.chunk_key(&[0, 0]);
        write(&array, &[0, 0], &[1, 1], 9);
        let one = store.get(&key).unwrap();
        let merged = merge_versions("v", &[0, 0], &doc, None, vec![one.clone(), one, None])
            .unwrap()
            .unwrap();
        store.set(&key, merged).unwrap();
        let (_, values) = array
            .read_elements::<u16>(&Selection::from_box(&[0, 0], &[1, 2]))
            .unwrap();
        assert_eq!(values, vec![9, 0]);
        assert_eq!(element_position(10, &[1, 1], &[4, 4]), vec![6, 6]);
    }
}
