//! Streaming writes: [`ValueWriter`], and [`BufferedWriter`], the in-memory writer behind
//! the default [`Store::writer`].

use std::io::Write;

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

/// A [`ValueWriter`] that collects the value in memory and [`Store::set`]s it on commit.
#[derive(Debug)]
pub struct BufferedWriter<'a, S: Store + ?Sized> {
    store: &'a S,
    key: String,
    buffer: Vec<u8>,
}

impl<'a, S: Store + ?Sized> BufferedWriter<'a, S> {
    /// A writer that will set `key` in `store`.
    pub fn new(store: &'a S, key: &str) -> Self {
        BufferedWriter {
            store,
            key: key.to_string(),
            buffer: Vec::new(),
        }
    }
}

impl<S: Store + ?Sized> Write for BufferedWriter<'_, S> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<S: Store + ?Sized> ValueWriter for BufferedWriter<'_, S> {
    fn commit(self: Box<Self>) -> StoreResult<()> {
        let this = *self;
        this.store.set(&this.key, Bytes::from(this.buffer))
    }
}
