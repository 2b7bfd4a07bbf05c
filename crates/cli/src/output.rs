//! Standard output the way Unix tools use it: when the reader goes away (`neurochunk tree … |
//! head`), the command stops quietly with the status of a process ended by `SIGPIPE` (141)
//! instead of panicking, and any other failure to write is a one-line error.
//!
//! Rust ignores `SIGPIPE`, so a closed pipe shows up as an `EPIPE` write error; restoring the
//! signal's default action would also kill the process on a closed network socket, which the
//! remote stores must be able to report as an error instead.

use std::io::{self, Write};
use std::process;

/// The exit status of a process ended by `SIGPIPE` (128 + 13), as shells report it.
pub(crate) const BROKEN_PIPE_STATUS: i32 = 141;

/// Write formatted text to standard output, ending the process as described above when the
/// write fails.
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) {
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        if e.kind() == io::ErrorKind::BrokenPipe {
            process::exit(BROKEN_PIPE_STATUS);
        }
        eprintln!("neurochunk: error: cannot write to standard output: {e}");
        process::exit(1);
    }
}

/// `println!` for command output (see the module documentation).
macro_rules! outln {
    () => {
        $crate::output::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` for command output (see the module documentation).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!($($arg)*))
    };
}

/// A refusal to replace a destination ([`neurochunk_store::replace::ReplaceError::Refused`])
/// ends with how to replace it all the same.
pub(crate) fn with_overwrite_hint(message: &str) -> String {
    if message.contains(neurochunk_store::replace::REFUSAL) && !message.contains("--overwrite") {
        format!("{message}; pass --overwrite to replace it anyway")
    } else {
        message.to_string()
    }
}
