//! Progress bars for long operations (hidden when stderr is not a terminal).

use indicatif::{ProgressBar, ProgressStyle};

/// A bar counting `total` units of `what`.
pub(crate) fn bar(total: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    let template = format!(
        "{{spinner}} {what} [{{bar:40}}] {{pos}}/{{len}} chunks ({{elapsed}}, eta {{eta}})"
    );
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}
