//! `cloudcache`: the command line over the cloudcache crates. Each
//! subcommand parses its arguments, calls into a library crate, and prints;
//! the logic lives in the crates.

mod analysis_commands;
mod commands;
mod offline;
mod progress;
mod serve;
mod units;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = commands::Cli::parse();
    if !cli.is_server() {
        restore_default_sigpipe();
    }
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
/// The server must not do this: a client closing its socket would kill it.
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
