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
    let cli = commands::Cli::parse();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
