//! Streaming writes: [`ValueWriter`], and [`BufferedWriter`], the in-memory writer behind
//! the default [`Store::writer`] and [`Store::owned_writer`].

use std::io::Write;
use std::ops::Deref;

use crate::{Bytes, Store, StoreResult};

/// A value being written piece by piece (from [`Store::writer`]).
///
/// Write the bytes with [`std::io::Write`], then [`commit`](ValueWriter::commit): only then
/// does the value appear, atomically, under its key. Dropping the writer without committing
/// abandons the value and leaves nothing behind.
pub trait ValueWriter: Write + Send {
    /// Make the written bytes the value of the key.
    fn commit(self: Box<Self>) -> StoreResult<()>;
}

/// A [`ValueWriter`] that collects the value in memory and [`Store::set`]s it on commit,
/// through `H`: a borrowed store (`&S`, [`Store::writer`]) or a handle of its own (`Arc<S>`,
/// [`Store::owned_writer`]).
#[derive(Debug)]
pub struct BufferedWriter<H> {
    store: H,
    key: String,
    buffer: Vec<u8>,
}

impl<H> BufferedWriter<H> {
    /// A writer that will set `key` in the store `store` leads to.
    pub fn new(store: H, key: &str) -> Self {
        BufferedWriter {
            store,
            key: key.to_string(),
            buffer: Vec::new(),
        }
    }
}

impl<H> Write for BufferedWriter<H> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<H, S> ValueWriter for BufferedWriter<H>
where
    H: Deref<Target = S> + Send,
    S: Store + ?Sized,
{
    fn commit(self: Box<Self>) -> StoreResult<()> {
        let this = *self;
        this.store.set(&this.key, Bytes::from(this.buffer))
    }
}
