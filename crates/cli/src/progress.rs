//! Progress bars for long operations, with the requests and bytes of remote stores.
//!
//! Bars are drawn on standard error only when it is a terminal, and never with `--quiet` or
//! `--no-progress` (global options, see [`configure`]). A bar of a job that reaches object
//! storage shows the bytes read and written and the requests made since it started
//! ([`neurochunk_store::traffic`]), updated a few times a second.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{HumanBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};
use neurochunk_store::{traffic, Traffic};

/// `(progress shown, quiet)`, set once from the command line.
static MODE: OnceLock<(bool, bool)> = OnceLock::new();

/// Set from the global options: `--no-progress` hides bars, `--quiet` hides bars and notes.
pub(crate) fn configure(no_progress: bool, quiet: bool) {
    let _ = MODE.set((!no_progress && !quiet, quiet));
}

/// True with `--quiet`: informational notes are not printed either.
pub(crate) fn quiet() -> bool {
    MODE.get().is_some_and(|m| m.1)
}

fn shown() -> bool {
    MODE.get().is_none_or(|m| m.0) && std::io::stderr().is_terminal()
}

/// A progress bar (or spinner) that also shows the remote traffic since it started. Derefs to
/// the [`ProgressBar`]; dropping it stops its updates.
pub(crate) struct Bar {
    bar: ProgressBar,
    ticker: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
}

impl std::ops::Deref for Bar {
    type Target = ProgressBar;

    fn deref(&self) -> &ProgressBar {
        &self.bar
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some((stop, thread)) = self.ticker.take() {
            stop.store(true, Ordering::Relaxed);
            let _ = thread.join();
        }
        // A bar dropped on an error leaves no line behind the error message.
        if !self.bar.is_finished() {
            self.bar.finish_and_clear();
        }
    }
}

/// What a bar says about the traffic between `start` and `now` (empty without any).
pub(crate) fn traffic_message(start: Traffic, now: Traffic) -> String {
    let requests = now.requests.saturating_sub(start.requests);
    if requests == 0 {
        return String::new();
    }
    let read = now.bytes_read.saturating_sub(start.bytes_read);
    let written = now.bytes_written.saturating_sub(start.bytes_written);
    let mut text = format!("{} read", HumanBytes(read));
    if written > 0 {
        text.push_str(&format!(", {} written", HumanBytes(written)));
    }
    text.push_str(&format!(
        ", {requests} request{}",
        if requests == 1 { "" } else { "s" }
    ));
    text
}

fn with_traffic(bar: ProgressBar) -> Bar {
    if bar.is_hidden() {
        return Bar { bar, ticker: None };
    }
    let stop = Arc::new(AtomicBool::new(false));
    let start = traffic();
    let (flag, shown) = (stop.clone(), bar.clone());
    let thread = std::thread::spawn(move || {
        while !flag.load(Ordering::Relaxed) {
            shown.set_message(traffic_message(start, traffic()));
            std::thread::sleep(Duration::from_millis(150));
        }
    });
    Bar {
        bar,
        ticker: Some((stop, thread)),
    }
}

fn new_bar(total: Option<u64>) -> ProgressBar {
    let bar = match total {
        Some(total) => ProgressBar::new(total),
        None => ProgressBar::new_spinner(),
    };
    if !shown() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar
}

/// A bar counting `total` chunks of `what`.
pub(crate) fn bar(total: u64, what: &str) -> Bar {
    bar_of(total, what, "chunks")
}

/// A bar counting `total` `unit`s of `what`.
pub(crate) fn bar_of(total: u64, what: &str, unit: &str) -> Bar {
    let bar = new_bar(Some(total));
    let template = format!(
        "{{spinner}} {what} [{{bar:40}}] {{pos}}/{{len}} {unit} ({{elapsed}}, eta {{eta}}) {{msg}}"
    );
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    with_traffic(bar)
}

/// A spinner for a job of unknown length (`what`, e.g. "reading s3://…"), ticking on its
/// own, with the remote traffic.
pub(crate) fn spinner(what: &str) -> Bar {
    let bar = new_bar(None);
    let template = format!("{{spinner}} {what} ({{elapsed}}) {{msg}}");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    if !bar.is_hidden() {
        bar.enable_steady_tick(Duration::from_millis(100));
    }
    with_traffic(bar)
}

/// A bar counting bytes of `what` (its length set later).
pub(crate) fn bytes_bar(what: &str) -> ProgressBar {
    let bar = ProgressBar::new(0);
    let template = format!(
        "{{spinner}} {what} [{{bar:40}}] {{bytes}}/{{total_bytes}} ({{binary_bytes_per_sec}}, eta {{eta}})"
    );
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traffic_messages_name_bytes_and_requests() {
        let start = Traffic {
            requests: 10,
            bytes_read: 1000,
            bytes_written: 0,
        };
        assert_eq!(traffic_message(start, start), "");
        let now = Traffic {
            requests: 11,
            bytes_read: 1000 + 3 * 1024 * 1024,
            bytes_written: 0,
        };
        assert_eq!(traffic_message(start, now), "3.00 MiB read, 1 request");
        let now = Traffic {
            requests: 1010,
            bytes_read: 1000 + 512,
            bytes_written: 5 << 30,
        };
        assert_eq!(
            traffic_message(start, now),
            "512 B read, 5.00 GiB written, 1000 requests"
        );
    }
}
