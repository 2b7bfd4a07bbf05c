//! Helpers the workspace's tests share (a dev-dependency only, never published): the files of
//! a written tree with their bytes, and those bytes with the random object ids an NWB write
//! draws blanked, so that two writes of the same content compare equal; real pickles made by
//! CPython and NumPy ([`pickle_fixtures`]) and the pickle writer's cases ([`pickle_cases`]),
//! which the pickle crate's and the codec crate's tests share.
//!
//! ```
//! let dir = tempfile_free_dir();
//! std::fs::create_dir_all(dir.join("a")).unwrap();
//! std::fs::write(dir.join("a/x"), b"id 123e4567-e89b-42d3-a456-426614174000").unwrap();
//! let files = neurochunk_testkit::tree_files_without_uuids(&dir);
//! assert_eq!(files.len(), 1);
//! assert_eq!(files[0].0, std::path::Path::new("a/x"));
//! assert_eq!(files[0].1, b"id 00000000-0000-0000-0000-000000000000");
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # fn tempfile_free_dir() -> std::path::PathBuf {
//! #     let d = std::env::temp_dir().join(format!("nc-testkit-doc-{}", std::process::id()));
//! #     let _ = std::fs::remove_dir_all(&d);
//! #     d
//! # }
//! ```

pub mod pickle_cases;
pub mod pickle_fixtures;

use std::path::{Path, PathBuf};

/// The text every UUID becomes in [`blank_uuids`].
pub const BLANK_UUID: &[u8; 36] = b"00000000-0000-0000-0000-000000000000";

/// `bytes` with every UUID in its canonical text form (8-4-4-4-12 hexadecimal digits) replaced
/// by [`BLANK_UUID`].
pub fn blank_uuids(mut bytes: Vec<u8>) -> Vec<u8> {
    let is_uuid = |w: &[u8]| {
        w.iter().enumerate().all(|(i, &b)| {
            if [8, 13, 18, 23].contains(&i) {
                b == b'-'
            } else {
                b.is_ascii_hexdigit()
            }
        })
    };
    let mut i = 0;
    while i + BLANK_UUID.len() <= bytes.len() {
        if is_uuid(&bytes[i..i + BLANK_UUID.len()]) {
            bytes[i..i + BLANK_UUID.len()].copy_from_slice(BLANK_UUID);
            i += BLANK_UUID.len();
        } else {
            i += 1;
        }
    }
    bytes
}

/// Every file below `path` (or `path` itself when it is a file, with an empty name): names
/// relative to `path` and contents, sorted by name. Panics on I/O errors (it is for tests).
pub fn tree_files(path: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pending = vec![path.to_path_buf()];
    while let Some(p) = pending.pop() {
        if p.is_dir() {
            let entries = std::fs::read_dir(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            pending.extend(entries.map(|e| e.expect("directory entry").path()));
        } else {
            let name = p.strip_prefix(path).expect("below the root").to_path_buf();
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            out.push((name, bytes));
        }
    }
    out.sort();
    out
}

/// [`tree_files`] with [`blank_uuids`] applied to every file's contents.
pub fn tree_files_without_uuids(path: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    tree_files(path)
        .into_iter()
        .map(|(name, bytes)| (name, blank_uuids(bytes)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blanks_only_canonical_uuids() {
        let text = b"a 123e4567-e89b-42d3-a456-426614174000 b 123e4567+e89b-42d3-a456-426614174000";
        let got = blank_uuids(text.to_vec());
        assert_eq!(
            got,
            b"a 00000000-0000-0000-0000-000000000000 b 123e4567+e89b-42d3-a456-426614174000"
        );
    }

    #[test]
    fn a_file_is_its_own_tree() {
        let path = std::env::temp_dir().join(format!("nc-testkit-file-{}", std::process::id()));
        std::fs::write(&path, b"x").unwrap();
        assert_eq!(tree_files(&path), vec![(PathBuf::new(), b"x".to_vec())]);
        std::fs::remove_file(&path).unwrap();
    }
}
