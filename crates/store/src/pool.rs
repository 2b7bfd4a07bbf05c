//! A small process-wide pool of byte buffers, so that reading many chunks one after another
//! reuses memory instead of asking the allocator (and the kernel, page by page) for fresh
//! buffers each time. Backends read values into [`take_buffer`]; the array layer hands
//! buffers it is done with (decoded chunks, once copied into the caller's output) back with
//! [`recycle_buffer`]. The pool keeps at most 16 buffers and 16 MiB, none above 4 MiB.

use std::sync::Mutex;

/// Buffers the pool keeps at most.
const MAX_BUFFERS: usize = 16;
/// Bytes (of capacity) the pool keeps at most.
const MAX_BYTES: usize = 16 << 20;

static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// An empty buffer with room for at least `len` bytes: a pooled one that fits (not much
/// larger than needed), or a new one.
pub fn take_buffer(len: usize) -> Vec<u8> {
    if let Ok(mut pool) = POOL.lock() {
        let fits = |b: &Vec<u8>| b.capacity() >= len && b.capacity() <= 2 * len + (64 << 10);
        if let Some(i) = pool
            .iter()
            .enumerate()
            .filter(|(_, b)| fits(b))
            .min_by_key(|(_, b)| b.capacity())
            .map(|(i, _)| i)
        {
            return pool.swap_remove(i);
        }
    }
    Vec::with_capacity(len)
}

/// Give a buffer back for [`take_buffer`] to hand out again (it is dropped instead when the
/// pool is full).
pub fn recycle_buffer(mut buffer: Vec<u8>) {
    if buffer.capacity() == 0 || buffer.capacity() > MAX_BYTES / 4 {
        return;
    }
    buffer.clear();
    if let Ok(mut pool) = POOL.lock() {
        let held: usize = pool.iter().map(Vec::capacity).sum();
        if pool.len() < MAX_BUFFERS && held + buffer.capacity() <= MAX_BYTES {
            pool.push(buffer);
        }
    }
}
