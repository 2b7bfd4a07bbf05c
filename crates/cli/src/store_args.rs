//! The stores the commands write through, and the options every writing command shares.

use std::path::Path;
use std::sync::Arc;

use clap::Args;
use neurochunk_array::{Durability, FsStore, Store};

/// Options of the commands that write arrays, hierarchies and files (`put`, `convert`,
/// `consolidate`, `demo`, `nwb demo`, `nwb convert`; the `table` commands spell the same option
/// in their output options).
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct WriteArgs {
    /// Make every write durable before the command returns: fsync each value's file before it
    /// is renamed into place and its directory after (slower; see docs/durability.md).
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
}
