#!/usr/bin/env bash
# Runs every check the project has: formatting, lints, and all tests.
# Tests that read the sample trace in ../shared/data skip with a message when
# it is absent (a fresh clone without the shared folder).
set -euo pipefail
cd "$(dirname "$0")"

# The server's tests drive real NBD clients and play network storage with
# nbdkit (docs/server.md); they come from Debian's packages.
packages=(nbdkit qemu-utils libnbd-bin fio)
missing=()
for tool in nbdkit qemu-io nbdcopy nbdinfo fio; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing ${packages[*]} (missing: ${missing[*]})"
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    if command -v apt-get >/dev/null 2>&1 && { [ -z "$sudo" ] || command -v sudo >/dev/null 2>&1; }; then
        export DEBIAN_FRONTEND=noninteractive
        $sudo apt-get update -q >/dev/null
        $sudo apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null
    else
        echo "note: cannot install ${packages[*]} here: the server tests that need them are skipped"
    fi
fi

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
