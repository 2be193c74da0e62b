//! `cloudcache`: the command line over the cloudcache crates. Each
//! subcommand parses its arguments, calls into a library crate, and prints;
//! the logic lives in the crates.

mod analysis_commands;
mod commands;
mod offline;
mod progress;
mod units;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    restore_default_sigpipe();
    let cli = commands::Cli::parse();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Let a closed pipe end the process quietly, as it ends `cat` or `grep`
/// (`cloudcache mrc TRACE | head`), instead of every print panicking on
/// EPIPE: Rust starts programs with SIGPIPE ignored. Files are unaffected.
/// A future long-running server command must not do this: a client closing
/// its socket would kill it.
#[cfg(unix)]
fn restore_default_sigpipe() {
    // SAFETY: called first thing in main, before any thread exists;
    // SIG_DFL is a valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn restore_default_sigpipe() {}
