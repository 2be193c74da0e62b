//! Progress bars on stderr, shown only to a person at a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar counting `total` requests (or a spinner when the total is unknown).
pub fn bar(total: Option<u64>, message: &str, quiet: bool) -> ProgressBar {
    let bar = match total {
        Some(total) => ProgressBar::new(total).with_style(
            ProgressStyle::with_template(
                "{msg:>10} [{bar:40}] {human_pos}/{human_len} requests, {per_sec}, eta {eta}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        ),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{msg:>10} {spinner} {human_pos} requests, {per_sec}")
                .expect("valid template"),
        ),
    };
    if quiet {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_message(message.to_owned());
    bar
}
