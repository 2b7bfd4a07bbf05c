//! The `fsync` calls of durable writes ([`Durability::Fsync`](crate::Durability)), in one
//! place so that every writer (the filesystem store, staging publishes, the table and NWB
//! writers) syncs the same way, and counted: [`counts`] tells how many files and directories
//! this process has synced, which is how tests check that a durability setting reached the
//! code that writes.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

static FILES: AtomicU64 = AtomicU64::new(0);
static DIRECTORIES: AtomicU64 = AtomicU64::new(0);

/// How many `fsync` calls this process has made through [`sync_file`] and [`sync_dir`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncCounts {
    /// Files synced (a value's bytes before its rename).
    pub files: u64,
    /// Directories synced (entries added or removed).
    pub directories: u64,
}

impl SyncCounts {
    /// The calls made since `earlier` (a count taken before).
    pub fn since(self, earlier: SyncCounts) -> SyncCounts {
        SyncCounts {
            files: self.files - earlier.files,
            directories: self.directories - earlier.directories,
        }
    }
}

/// The calls made so far by this process.
pub fn counts() -> SyncCounts {
    SyncCounts {
        files: FILES.load(Ordering::Relaxed),
        directories: DIRECTORIES.load(Ordering::Relaxed),
    }
}

/// `fsync` an open file: its bytes (and size) reach the disk.
pub fn sync_file(file: &File) -> io::Result<()> {
    FILES.fetch_add(1, Ordering::Relaxed);
    file.sync_all()
}

/// `fsync` a directory, so that entries just added to or removed from it persist.
/// Directories cannot be opened as files on every platform; where they cannot, this does
/// nothing.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    DIRECTORIES.fetch_add(1, Ordering::Relaxed);
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}
