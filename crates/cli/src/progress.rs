//! Progress bars for long operations (hidden when stderr is not a terminal).

use indicatif::{ProgressBar, ProgressStyle};

/// A bar counting `total` chunks of `what`.
pub(crate) fn bar(total: u64, what: &str) -> ProgressBar {
    bar_of(total, what, "chunks")
}

/// A bar counting `total` `unit`s of `what`.
pub(crate) fn bar_of(total: u64, what: &str, unit: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    let template = format!(
        "{{spinner}} {what} [{{bar:40}}] {{pos}}/{{len}} {unit} ({{elapsed}}, eta {{eta}})"
    );
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
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
