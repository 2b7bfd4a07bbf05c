//! The stores the commands write through, and the options every writing command shares.

use std::path::Path;
use std::sync::Arc;

use clap::Args;
use neurochunk_array::{Durability, FsStore, Store};

/// Options of the commands that write arrays (`put`, `convert`, `consolidate`, `demo`).
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct WriteArgs {
    /// Make every write durable before the command returns: fsync each value's file before it
    /// is renamed into place and its directory after (slower; see docs/durability.md).
    #[arg(long)]
    pub fsync: bool,
}

impl WriteArgs {
    /// A store over the directory `root` to write into (created on the first write), with the
    /// durability asked for. Like every `FsStore`, it refuses to write through a symbolic link
    /// leading out of `root`.
    pub(crate) fn store(&self, root: &Path) -> Arc<dyn Store> {
        let durability = if self.fsync {
            Durability::Fsync
        } else {
            Durability::Buffered
        };
        Arc::new(FsStore::new(root).with_durability(durability))
    }
}
