//! Writes every case of `neurochunk-pickle`'s writer (and the `pickle` codec's own output) to
//! `DIR/<name>.pickle`, for checking with NumPy: the interop suite runs this program and loads
//! the files with `pickle.loads` and numcodecs (`tests/interop/*/test_pickle_writer_numpy_*.py`).
//!
//! ```text
//! cargo run --release -p neurochunk-codec --example pickle_writer_cases -- DIR
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: pickle_writer_cases DIR");
        return ExitCode::from(2);
    };
    match neurochunk_testkit::pickle_cases::write_all(std::path::Path::new(&dir)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pickle_writer_cases: {e}");
            ExitCode::FAILURE
        }
    }
}
