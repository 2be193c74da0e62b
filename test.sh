#!/usr/bin/env bash
# Runs every check the project has: formatting, lints, and all tests.
# Tests that read the sample trace in ../shared/data skip with a message when
# it is absent (a fresh clone without the shared folder).
set -euo pipefail
cd "$(dirname "$0")"

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo test"
cargo test --workspace --locked
