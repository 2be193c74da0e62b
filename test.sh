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
if [ ! -f ../shared/data/cloudPhysicsIO.vscsi ]; then
    echo "note: ../shared/data/cloudPhysicsIO.vscsi not found: the tests that replay the real" \
         "CloudPhysics trace are skipped (they pass without checking it)"
fi
cargo test --workspace --locked
