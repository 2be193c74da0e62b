#!/usr/bin/env python3
"""Cost of on-demand allocation: replay with RWSS allocation against plain LRU.

Both replays run the same binary on the same in-memory trace, one worker
(`--jobs 1`), and the time compared is the JSON's `replay_seconds` (trace
loading excluded). Inputs: the embedded 12-VM demo workload (generated into
bench/work/demo.cct; 24 h windows) and, when shared/ is beside the
repository, the CloudPhysics sample (10 min windows). Each pair runs
--repeats times, alternating, and the medians are compared. The script
waits for a quiet machine (1-minute load below --max-load) and writes the
section "## On-demand allocation cost (rwss vs lru)" of docs/benchmarks.md.

Usage: python3 bench/allocation_cost.py [--repeats 5] [--max-load 1.5] [--no-doc]
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cct_read_speed import write_section  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "bench/work"
BINARY = REPO / "target/release/cloudcache"
SECTION = "## On-demand allocation cost (rwss vs lru)"
SAMPLE = REPO.parent / "shared/data/cloudPhysicsIO.vscsi"


def load1() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def wait_for_quiet(max_load: float, max_wait: float = 900) -> None:
    started = time.time()
    while load1() > max_load and time.time() - started < max_wait:
        print(f"waiting for a quiet machine (load {load1():.2f} > {max_load})", file=sys.stderr)
        time.sleep(15)


def replay_seconds(trace: Path, size: str, extra: list[str]) -> tuple[float, dict]:
    out = WORK / "alloc_cost.json"
    cmd = [str(BINARY), "sim", str(trace), "--jobs", "1", "--quiet", "--cache-size", size,
           "--json", str(out)] + extra
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    result = json.loads(out.read_text())["results"][0]
    return result["replay_seconds"], result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--max-load", type=float, default=1.5)
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=REPO, check=True)
    WORK.mkdir(parents=True, exist_ok=True)
    demo = WORK / "demo.cct"
    if not demo.exists():
        subprocess.run([str(BINARY), "trace", "generate", "demo", str(demo)], check=True)
    inputs = [("demo workload (12 VMs, 14 days, 2.48 M requests)", demo, "1GiB", "24h")]
    if SAMPLE.exists():
        inputs.append(("CloudPhysics sample (1 VM, 2 h, 113,872 requests)", SAMPLE, "256MiB", "10min"))
    rows = []
    loads = []
    for label, trace, size, window in inputs:
        plain, rwss = [], []
        for _ in range(args.repeats):
            wait_for_quiet(args.max_load)
            loads.append(load1())
            seconds, lru_result = replay_seconds(trace, size, [])
            plain.append(seconds)
            seconds, rwss_result = replay_seconds(trace, size, ["--allocation", "rwss", "--window", window])
            rwss.append(seconds)
        blocks = lru_result["block_accesses"]
        lru_s, rwss_s = statistics.median(plain), statistics.median(rwss)
        rows.append((label, size, window, blocks, lru_s, rwss_s))
        print(f"{label}: lru {lru_s:.3f} s, rwss {rwss_s:.3f} s, ratio {rwss_s / lru_s:.2f}x", file=sys.stderr)
    cpu = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                if l.startswith("model name")), "unknown CPU")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    lines = [
        SECTION,
        "",
        "Replay time of `cloudcache sim --jobs 1` with `--allocation rwss` (windows, RWS_1 tracking,",
        "self-tuning prediction, hybrid staging, per-volume LRU with share enforcement) against plain",
        "shared LRU on the same trace and cache size; `replay_seconds` from the JSON (loading excluded),",
        f"median of {args.repeats} alternating runs each. Target: rwss at most 1.5x LRU.",
        "",
        "| input | cache | window | block accesses | LRU s | rwss s | rwss / LRU |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, size, window, blocks, lru_s, rwss_s in rows:
        lines.append(f"| {label} | {size} | {window} | {blocks:,} | {lru_s:.3f} | {rwss_s:.3f} | "
                     f"{rwss_s / lru_s:.2f}x |")
    lines += [
        "",
        f"Machine: {cpu}; 1-minute load {min(loads):.2f}-{max(loads):.2f} during the runs; commit {commit}.",
        "Produced by `python3 bench/allocation_cost.py`.",
    ]
    section = "\n".join(lines) + "\n"
    print(section)
    if not args.no_doc:
        write_section(REPO / "docs/benchmarks.md", section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
