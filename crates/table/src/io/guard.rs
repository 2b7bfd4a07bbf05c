//! A boundary around the arrow and parquet decoders: on some corrupt inputs they panic (a
//! buffer slice past the end of an IPC body, for one) instead of returning an error. Every
//! call into them from this crate runs under [`guarded`], and every batch iterator they
//! return is wrapped in [`PanicGuard`], so such a panic becomes a [`TableError`] naming the
//! file, and the process goes on.
//!
//! Whether the default panic hook still prints such a panic is the program's choice: the
//! `neurochunk` command line keeps quiet about a panic while [`decoder_panic_is_caught`] says
//! it will be caught and reported (any other panic is printed as usual).

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use arrow::array::RecordBatch;

use crate::error::{Result, TableError};

thread_local! {
    /// How many guarded decoder calls the current thread is inside.
    static GUARDED: Cell<usize> = const { Cell::new(0) };
}

/// True when a panic raised now, on this thread, happens inside a call into a decoder that
/// this module guards, so it will become an error rather than end the program. A panic hook
/// can use it to stay quiet about such panics.
pub fn decoder_panic_is_caught() -> bool {
    GUARDED.with(|g| g.get() > 0)
}

/// Run `f` with the current thread marked as inside a guarded call.
fn marked<T>(f: impl FnOnce() -> T) -> std::thread::Result<T> {
    GUARDED.with(|g| g.set(g.get() + 1));
    let result = catch_unwind(AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(g.get() - 1));
    result
}

/// The text of a panic's payload.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "the decoder failed".to_string())
}

/// The error of a decoder that panicked while reading `what` of `path`.
fn corrupt(path: &Path, what: &str, payload: &(dyn std::any::Any + Send)) -> TableError {
    TableError::format(
        path,
        format!("corrupt {what}: {}", panic_text(payload).replace('\n', " ")),
    )
}

/// Run `f`, a call into a decoder; a panic becomes an error naming `path` and `what`.
pub(crate) fn guarded<T>(path: &Path, what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    marked(f).unwrap_or_else(|payload| Err(corrupt(path, what, &*payload)))
}

/// A decoder's batch iterator whose panics become one final error.
pub(crate) struct PanicGuard<I> {
    inner: Option<I>,
    path: PathBuf,
    what: &'static str,
}

impl<I> PanicGuard<I> {
    /// Guard `inner`, which decodes `what` of `path`.
    pub(crate) fn new(inner: I, path: PathBuf, what: &'static str) -> Self {
        PanicGuard {
            inner: Some(inner),
            path,
            what,
        }
    }
}

impl<I: Iterator<Item = Result<RecordBatch>>> Iterator for PanicGuard<I> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let inner = self.inner.as_mut()?;
        match marked(|| inner.next()) {
            Ok(item) => item,
            Err(payload) => {
                // A decoder that panicked is in no state to go on.
                self.inner = None;
                Some(Err(corrupt(&self.path, self.what, &*payload)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_decoder_becomes_one_error_naming_the_file() {
        let batches = (0..3).map(|i| -> Result<RecordBatch> {
            if i == 1 {
                panic!("slice offset=832 length=15744 selflen=960");
            }
            Ok(RecordBatch::new_empty(std::sync::Arc::new(
                arrow::datatypes::Schema::empty(),
            )))
        });
        let mut guard = PanicGuard::new(batches, PathBuf::from("t.arrow"), "Arrow IPC data");
        assert!(guard.next().unwrap().is_ok());
        let err = guard.next().unwrap().unwrap_err().to_string();
        assert!(
            err.contains("t.arrow")
                && err.contains("corrupt Arrow IPC data")
                && err.contains("selflen=960"),
            "{err}"
        );
        assert!(
            guard.next().is_none(),
            "a panicked decoder is not asked again"
        );
        let opened: Result<()> = guarded(Path::new("t.parquet"), "Parquet metadata", || {
            panic!("bad footer")
        });
        assert!(opened.unwrap_err().to_string().contains("t.parquet"));
        assert!(
            !decoder_panic_is_caught(),
            "the mark is gone after the call"
        );
        let inside = guarded(Path::new("t"), "x", || Ok(decoder_panic_is_caught()));
        assert!(inside.unwrap());
    }
}
