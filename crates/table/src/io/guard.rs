//! A boundary around the arrow and parquet decoders: on some corrupt inputs they panic (a
//! buffer slice past the end of an IPC body, for one) instead of returning an error. Every
//! call into them from this crate runs under [`guarded`], and every batch iterator they
//! return is wrapped in [`PanicGuard`], so such a panic becomes a [`TableError`] naming the
//! file, and the process goes on.
//!
//! Whether the default panic hook still prints the panic is the program's choice: the
//! `neurochunk` command line keeps quiet about panics inside these decoder crates
//! ([`is_decoder_panic`]), because they are reported as errors.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use arrow::array::RecordBatch;

use crate::error::{Result, TableError};

/// Source paths of the crates whose panics on corrupt input are caught here.
const DECODER_CRATES: &[&str] = &["/arrow-", "/parquet-"];

/// True when a panic raised at `file` (a source path, as in a panic's location) comes from
/// one of the decoder crates whose panics this module turns into errors.
pub fn is_decoder_panic(file: &str) -> bool {
    DECODER_CRATES.iter().any(|c| file.contains(c))
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
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| Err(corrupt(path, what, &*payload)))
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
        match catch_unwind(AssertUnwindSafe(|| inner.next())) {
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
        assert!(is_decoder_panic(
            "/root/.cargo/registry/src/x/arrow-buffer-60.1.0/src/buffer/immutable.rs"
        ));
        assert!(!is_decoder_panic("crates/table/src/io/mod.rs"));
    }
}
