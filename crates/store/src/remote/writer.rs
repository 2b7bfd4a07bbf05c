//! Streamed values of a [`RemoteStore`]: one `PUT` when small, a multipart upload when large.

use std::io::Write;
use std::ops::Deref;

use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload, WriteMultipart};

use super::RemoteStore;
use crate::{Bytes, StoreResult, ValueWriter};

/// Parts of one upload in flight at once.
const PARTS_IN_FLIGHT: usize = 4;

/// A value streamed to a [`RemoteStore`]. The bytes are buffered up to the store's part size;
/// a value that stays smaller is stored with one `PUT` on commit, a larger one is uploaded in
/// parts as it is written and completed on commit. Nothing is visible before the commit; a
/// failed or dropped writer aborts its upload.
pub(super) struct RemoteWriter<H: Deref<Target = RemoteStore>> {
    store: H,
    key: String,
    path: Path,
    buffer: Vec<u8>,
    upload: Option<WriteMultipart>,
}

impl<H: Deref<Target = RemoteStore>> RemoteWriter<H> {
    /// A writer of `key` (`path` in the object store) through the handle `store`: borrowed
    /// (`Store::writer`) or shared (`Store::owned_writer`).
    pub(super) fn new(store: H, key: &str, path: Path) -> Self {
        RemoteWriter {
            store,
            key: key.to_string(),
            path,
            buffer: Vec::new(),
            upload: None,
        }
    }

    /// Hand the buffered bytes to the upload (started on the first call).
    fn ship(&mut self) -> StoreResult<()> {
        let store = &*self.store;
        if self.upload.is_none() {
            super::count_requests(1);
            let upload = store
                .block_on(store.inner.put_multipart(&self.path))
                .map_err(|e| store.error(&self.key, e))?;
            self.upload = Some(WriteMultipart::new_with_chunk_size(upload, store.part_size));
        }
        let upload = self.upload.as_mut().expect("the upload was just started");
        let bytes = Bytes::from(std::mem::take(&mut self.buffer));
        super::count_requests(1);
        super::count_written(bytes.len());
        {
            // Parts are spawned on the store's runtime.
            let _context = store.runtime.enter();
            upload.put(bytes);
        }
        let waited = store.block_on(upload.wait_for_capacity(PARTS_IN_FLIGHT));
        if let Err(e) = waited {
            let error = store.error(&self.key, e);
            self.abort();
            return Err(error);
        }
        Ok(())
    }

    fn abort(&mut self) {
        if let Some(upload) = self.upload.take() {
            let _ = self.store.block_on(upload.abort());
        }
    }
}

impl<H: Deref<Target = RemoteStore>> Write for RemoteWriter<H> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(buf);
        if self.buffer.len() >= self.store.part_size {
            self.ship().map_err(std::io::Error::other)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<H: Deref<Target = RemoteStore> + Send> ValueWriter for RemoteWriter<H> {
    fn commit(mut self: Box<Self>) -> StoreResult<()> {
        let store = &*self.store;
        store.forget(&self.key);
        let Some(mut upload) = self.upload.take() else {
            let value = Bytes::from(std::mem::take(&mut self.buffer));
            super::count_requests(1);
            super::count_written(value.len());
            return store
                .block_on(store.inner.put(&self.path, PutPayload::from_bytes(value)))
                .map(drop)
                .map_err(|e| store.error(&self.key, e));
        };
        if !self.buffer.is_empty() {
            super::count_requests(1);
            super::count_written(self.buffer.len());
            let _context = store.runtime.enter();
            upload.put(Bytes::from(std::mem::take(&mut self.buffer)));
        }
        super::count_requests(1); // the completion
                                  // `finish` aborts the upload itself when a part or the completion fails.
        store
            .block_on(upload.finish())
            .map(drop)
            .map_err(|e| store.error(&self.key, e))
    }
}

impl<H: Deref<Target = RemoteStore>> Drop for RemoteWriter<H> {
    fn drop(&mut self) {
        self.abort();
    }
}
