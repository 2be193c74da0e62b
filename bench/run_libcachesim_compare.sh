#!/usr/bin/env bash
# libCacheSim comparison benchmark (see bench/libcachesim_compare.py and docs/benchmarks.md).
# Makes bench/.venv with libcachesim 0.3.5, builds cloudcache in release mode, and runs the
# benchmark, which rewrites the "libCacheSim comparison" section of docs/benchmarks.md.
# Extra arguments go to the script (e.g. --repeats 5, --no-doc, --max-load 1.5).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ! -f ../shared/data/cloudPhysicsIO.vscsi ]]; then
    echo "error: ../shared/data/cloudPhysicsIO.vscsi (shared/ beside the repository) is missing" >&2
    exit 2
fi

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
if [[ ! -x bench/.venv/bin/python ]]; then
    "$PY" -m venv bench/.venv
fi
bench/.venv/bin/python -m pip install --quiet --disable-pip-version-check libcachesim==0.3.5

cargo build --release --quiet

exec bench/.venv/bin/python bench/libcachesim_compare.py "$@"
