#!/usr/bin/env python3
"""libCacheSim comparison benchmark: object-mode LRU, plus block-mode throughput.

Run it through ``bench/run_libcachesim_compare.sh`` (which makes the venv with
libcachesim 0.3.5 and builds cloudcache in release mode). In one run it

1. builds the input: the shared CloudPhysics vscsi sample replicated N times
   (default 20) on disjoint address ranges, one copy after the other in time;
2. replays it through libCacheSim's C core (``LRU(...).process_trace``) at each
   cache size, one size at a time, timing each call;
3. replays it through ``cloudcache sim --mode object --policy lru --jobs 1``
   (all sizes in one command), and once more with the default jobs;
4. checks that request (and byte) miss ratios agree at every size;
5. measures ``cloudcache sim --mode block`` block accesses per second per core;
6. prints markdown tables and writes the section
   ``## libCacheSim comparison (object-mode LRU)`` of ``docs/benchmarks.md``.

Every timing is repeated ``--repeats`` times (default 3) and the median is
reported. The repetitions are interleaved (one round = every libCacheSim size,
then every cloudcache command) so a burst of load from elsewhere disturbs both
simulators alike. Exits 1 if the miss ratios disagree.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import os
import platform
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SECTION = "## libCacheSim comparison (object-mode LRU)"
SIZES = [("16MiB", 16 << 20), ("64MiB", 64 << 20), ("256MiB", 256 << 20), ("1GiB", 1 << 30)]
SAMPLE_NAME = "cloudPhysicsIO.vscsi"
SAMPLE_RECORDS = 113_872
TOLERANCE = 1e-9
# Targets stated in the issue.
TARGET_SPEEDUP = 2.0
TARGET_BLOCK_RATE = 20e6

# vscsi v1: u32 sn, u32 len (bytes), u32 n_sg, u16 cmd, u16 ver, u64 lbn (512-B sectors), u64 ts (us).
VSCSI_V1 = np.dtype(
    [("sn", "<u4"), ("len", "<u4"), ("nsg", "<u4"), ("cmd", "<u2"), ("ver", "<u2"), ("lbn", "<u8"), ("ts", "<u8")]
)
assert VSCSI_V1.itemsize == 32

REPO = Path(__file__).resolve().parent.parent


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def loadavg() -> tuple[float, float, float]:
    return os.getloadavg()


def fmt_load(load: tuple[float, float, float]) -> str:
    return " / ".join(f"{x:.2f}" for x in load)


def wait_for_quiet(max_load: float, max_wait: float, poll: float) -> str:
    """Wait until the 1-minute load average is below max_load; say what happened."""
    start = time.monotonic()
    first = loadavg()
    while True:
        load = loadavg()
        waited = time.monotonic() - start
        if load[0] < max_load:
            if waited < 1:
                return f"1-min load {load[0]:.2f} < {max_load} at start, no wait"
            return f"waited {waited:.0f} s for the 1-min load to drop from {first[0]:.2f} to {load[0]:.2f} (< {max_load})"
        if waited >= max_wait:
            return (
                f"1-min load still {load[0]:.2f} (>= {max_load}) after waiting {waited:.0f} s; "
                "measured anyway, timings may be disturbed"
            )
        log(f"load average {fmt_load(load)} >= {max_load}; waiting {poll:.0f} s (waited {waited:.0f} of {max_wait:.0f} s)")
        time.sleep(poll)


# ---- input -------------------------------------------------------------------------------------


def build_input(sample: Path, out: Path, replicas: int) -> dict:
    """Replicate the sample `replicas` times on disjoint LBN ranges, one after the other in time."""
    raw = sample.read_bytes()
    if len(raw) % VSCSI_V1.itemsize:
        sys.exit(f"error: {sample} is {len(raw)} bytes, not a whole number of 32-byte vscsi v1 records")
    recs = np.frombuffer(raw, dtype=VSCSI_V1)
    if not np.all(recs["ver"] >> 8 == 1):
        sys.exit(f"error: {sample} is not vscsi version 1 (ver >> 8 != 1 in some record)")
    if len(recs) != SAMPLE_RECORDS:
        log(f"warning: {sample} has {len(recs)} records, expected {SAMPLE_RECORDS}")
    lbn_stride = int(recs["lbn"].max()) + 1
    ts_stride = int(recs["ts"].max()) - int(recs["ts"].min()) + 1
    out_recs = np.tile(recs, replicas)
    k = np.repeat(np.arange(replicas, dtype=np.uint64), len(recs))
    out_recs["lbn"] += k * np.uint64(lbn_stride)
    out_recs["ts"] += k * np.uint64(ts_stride)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    out_recs.tofile(tmp)
    tmp.replace(out)
    cmds, counts = np.unique(out_recs["cmd"], return_counts=True)
    return {
        "path": out,
        "sample_records": len(recs),
        "replicas": replicas,
        "records": len(out_recs),
        "distinct_lbns": int(np.unique(out_recs["lbn"]).size),
        "zero_length": int((out_recs["len"] == 0).sum()),
        "max_len": int(out_recs["len"].max()),
        "cmds": {f"0x{int(c):02x}": int(n) for c, n in zip(cmds, counts)},
        "lbn_stride": lbn_stride,
        "ts_stride": ts_stride,
        "bytes": out.stat().st_size,
    }


# ---- libCacheSim -------------------------------------------------------------------------------


def run_libcachesim_round(lcs, workfile: Path, hashpower: int) -> list[dict]:
    """One process_trace per size, sequentially, each on a fresh cache."""
    results = []
    for name, size in SIZES:
        reader = lcs.TraceReader(str(workfile), lcs.TraceType.VSCSI_TRACE, lcs.ReaderInitParam())
        cache = lcs.LRU(size, hashpower=hashpower)
        c0 = time.thread_time()
        t0 = time.perf_counter()
        req_mr, byte_mr = cache.process_trace(reader)
        seconds = time.perf_counter() - t0
        cpu = time.thread_time() - c0
        n_req = int(cache._cache.n_req)  # the C core's own request counter (cache_get_base)
        results.append(
            {
                "size_name": name,
                "size": size,
                "seconds": seconds,
                "cpu": cpu,
                "requests": n_req,
                "req_miss_ratio": req_mr,
                "byte_miss_ratio": byte_mr,
                "hits": round((1.0 - req_mr) * n_req),
                "reader_requests": int(reader.n_read_req),
            }
        )
        # Not reader.close(): in libcachesim 0.3.5 the reader's destructor frees the C reader again
        # after close(), which aborts with "double free or corruption". Dropping it is enough.
        del cache, reader
    return results


# ---- cloudcache --------------------------------------------------------------------------------


def cloudcache_cmd(binary: Path, workfile: Path, mode: str, json_out: Path, jobs: int | None) -> list[str]:
    cmd = [str(binary), "sim", str(workfile), "--mode", mode, "--policy", "lru"]
    cmd += ["--cache-size", ",".join(n for n, _ in SIZES)]
    if jobs is not None:
        cmd += ["--jobs", str(jobs)]
    cmd += ["--quiet", "--json", str(json_out)]
    return cmd


def run_cloudcache(cmd: list[str], json_out: Path) -> dict:
    if json_out.exists():
        json_out.unlink()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if proc.returncode != 0:
        sys.exit(f"error: {shlex.join(cmd)} exited {proc.returncode}:\n{proc.stderr}")
    doc = json.loads(json_out.read_text())
    return {"wall": wall, "cpu": cpu, "doc": doc}


# ---- reporting ---------------------------------------------------------------------------------


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def rate(n: float, seconds: float) -> str:
    return f"{n / seconds / 1e6:.2f} M/s"


def machine_info() -> dict:
    model, cpus = platform.processor() or "unknown", str(os.cpu_count())
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        fields = dict(
            (k.strip(), v.strip()) for k, v in (line.split(":", 1) for line in out.splitlines() if ":" in line)
        )
        model = fields.get("Model name", model)
        cpus = fields.get("CPU(s)", cpus)
        cores = int(fields.get("Core(s) per socket", "0")) * int(fields.get("Socket(s)", "1"))
        threads = fields.get("Thread(s) per core", "?")
    except (OSError, subprocess.CalledProcessError, ValueError):
        cores, threads = os.cpu_count(), "?"
    return {"model": model, "cpus": cpus, "cores": cores, "threads_per_core": threads, "kernel": platform.release()}


def git_state() -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "crates", "Cargo.toml", "Cargo.lock"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"
    return f"commit {head}" + (" plus uncommitted changes under crates/ or Cargo.*" if dirty else "")


def cloudcache_version(binary: Path) -> str:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True)
    return out.stdout.strip() or "cloudcache ?"


def rel(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(REPO))
    except ValueError:
        return str(p)


def write_section(doc_path: Path, section: str) -> None:
    """Replace our section (from its heading to the next level-1 or level-2 heading outside a
    code fence, or the end) or append it; other sections are kept as they are."""
    text = doc_path.read_text() if doc_path.exists() else "# Benchmarks\n"
    lines = text.splitlines(keepends=True)
    headings = []  # (line index, level) of markdown headings outside ``` fences
    fenced = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            m = re.match(r"^(#{1,6}) ", line)
            if m:
                headings.append((i, len(m.group(1))))
    start = next((i for i, _ in headings if lines[i].rstrip("\n") == SECTION), None)
    if start is None:
        new = text.rstrip("\n") + "\n\n" + section
    else:
        end = next((i for i, level in headings if i > start and level <= 2), len(lines))
        tail = "".join(lines[end:])
        new = "".join(lines[:start]) + section.rstrip("\n") + "\n" + ("\n" + tail if tail else "")
    doc_path.write_text(new.rstrip("\n") + "\n")


# ---- main --------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3, help="timing repetitions; the median is reported (3)")
    ap.add_argument("--replicas", type=int, default=20, help="copies of the sample trace (20)")
    ap.add_argument("--max-load", type=float, default=1.0, help="wait until the 1-min load average is below this")
    ap.add_argument("--max-wait", type=float, default=600, help="give up waiting for a low load after this many s")
    ap.add_argument("--poll", type=float, default=30, help="seconds between load checks")
    ap.add_argument("--binary", type=Path, default=REPO / "target/release/cloudcache")
    ap.add_argument("--work", type=Path, default=REPO / "bench/work")
    ap.add_argument("--doc", type=Path, default=REPO / "docs/benchmarks.md")
    ap.add_argument("--no-doc", action="store_true", help="print the tables only; leave docs/ alone")
    ap.add_argument("--command", default="bench/run_libcachesim_compare.sh", help="command line to cite in the doc")
    args = ap.parse_args()

    sample = REPO.parent / "shared" / "data" / SAMPLE_NAME
    if not sample.is_file():
        sys.exit(
            f"error: the sample trace {sample} is missing. This benchmark reads shared/data/{SAMPLE_NAME} "
            "beside the repository (<repo>/../shared/data)."
        )
    if not args.binary.is_file():
        sys.exit(f"error: {args.binary} not found; build it with `cargo build --release` (the wrapper does)")
    try:
        import libcachesim as lcs
    except ImportError:
        sys.exit("error: the libcachesim package is not installed; run bench/run_libcachesim_compare.sh")

    started = dt.datetime.now(dt.timezone.utc)
    workfile = args.work / f"cloudPhysicsIO_x{args.replicas}.vscsi"
    log(f"building {workfile} ({args.replicas} replicas of {sample})")
    inp = build_input(sample, workfile, args.replicas)
    hashpower = math.ceil(math.log2(inp["distinct_lbns"]))
    log(
        f"{inp['records']:,} records, {inp['distinct_lbns']:,} distinct lbns -> hashpower {hashpower}; "
        f"cmds {inp['cmds']}, zero-length {inp['zero_length']}"
    )

    obj_json = args.work / "cloudcache_object.json"
    par_json = args.work / "cloudcache_object_parallel.json"
    blk_json = args.work / "cloudcache_block.json"
    # Run a private copy: other people's `cargo build` may replace target/release/cloudcache mid-run.
    git_desc = git_state()
    binary = args.work / "cloudcache-bench"
    shutil.copy2(args.binary, binary)
    binary_sha = hashlib.sha256(binary.read_bytes()).hexdigest()[:16]
    log(f"running a copy of {args.binary} ({git_desc}, sha256 {binary_sha}...)")
    obj_cmd = cloudcache_cmd(binary, workfile, "object", obj_json, jobs=1)
    par_cmd = cloudcache_cmd(binary, workfile, "object", par_json, jobs=None)
    blk_cmd = cloudcache_cmd(binary, workfile, "block", blk_json, jobs=1)

    wait_note = wait_for_quiet(args.max_load, args.max_wait, args.poll)
    log(wait_note)
    loads = [("start", loadavg())]

    lcs_runs: list[list[dict]] = []
    obj_runs, par_runs, blk_runs = [], [], []
    for rnd in range(args.repeats):
        log(f"round {rnd + 1}/{args.repeats}: libCacheSim LRU, one size at a time")
        lcs_runs.append(run_libcachesim_round(lcs, workfile, hashpower))
        log(f"round {rnd + 1}/{args.repeats}: cloudcache object mode, --jobs 1")
        obj_runs.append(run_cloudcache(obj_cmd, obj_json))
        log(f"round {rnd + 1}/{args.repeats}: cloudcache object mode, default jobs")
        par_runs.append(run_cloudcache(par_cmd, par_json))
        log(f"round {rnd + 1}/{args.repeats}: cloudcache block mode, --jobs 1")
        blk_runs.append(run_cloudcache(blk_cmd, blk_json))
        loads.append((f"after round {rnd + 1}", loadavg()))

    # ---- object mode: agreement and speed ----
    ok = True
    problems = []
    rows = []
    for i, (name, size) in enumerate(SIZES):
        lruns = [r[i] for r in lcs_runs]
        cruns = [r["doc"]["results"][i] for r in obj_runs]
        l0, c0 = lruns[0], cruns[0]
        assert c0["cache_size_bytes"] == size, (c0["cache_size_bytes"], size)
        # Both simulators are deterministic: every repetition must give the same counts.
        for r in lruns[1:]:
            if (r["requests"], r["hits"]) != (l0["requests"], l0["hits"]):
                problems.append(f"{name}: libCacheSim repetitions disagree")
        for r in cruns[1:]:
            if (r["requests"], r["request_hits"]) != (c0["requests"], c0["request_hits"]):
                problems.append(f"{name}: cloudcache repetitions disagree")
        c_mr = c0["request_miss_ratio"]
        c_bmr = (c0["bytes_accessed"] - c0["byte_hits"]) / c0["bytes_accessed"]
        d_req = abs(c_mr - l0["req_miss_ratio"])
        d_byte = abs(c_bmr - l0["byte_miss_ratio"])
        same = (
            d_req <= TOLERANCE
            and d_byte <= TOLERANCE
            and c0["requests"] == l0["requests"]
            and c0["request_hits"] == l0["hits"]
        )
        if not same:
            ok = False
            problems.append(
                f"{name}: requests {l0['requests']} vs {c0['requests']}, hits {l0['hits']} vs {c0['request_hits']}, "
                f"req miss ratio {l0['req_miss_ratio']!r} vs {c_mr!r} (|d| {d_req:.3g}), "
                f"byte miss ratio {l0['byte_miss_ratio']!r} vs {c_bmr!r} (|d| {d_byte:.3g})"
            )
        l_sec = median([r["seconds"] for r in lruns])
        c_sec = median([r["replay_seconds"] for r in cruns])
        rows.append(
            {
                "name": name,
                "requests": c0["requests"],
                "lcs_requests": l0["requests"],
                "lcs_mr": l0["req_miss_ratio"],
                "cc_mr": c_mr,
                "lcs_bmr": l0["byte_miss_ratio"],
                "cc_bmr": c_bmr,
                "d_req": d_req,
                "d_byte": d_byte,
                "bit_identical": c_mr == l0["req_miss_ratio"],
                "same": same,
                "lcs_sec": l_sec,
                "cc_sec": c_sec,
                "lcs_rate": l0["requests"] / l_sec,
                "cc_rate": c0["requests"] / c_sec,
                "speedup": (c0["requests"] / c_sec) / (l0["requests"] / l_sec),
                "lcs_all": [r["seconds"] for r in lruns],
                "cc_all": [r["replay_seconds"] for r in cruns],
            }
        )

    lcs_total = sum(r["lcs_sec"] for r in rows)
    lcs_total_runs = [sum(r[i]["seconds"] for i in range(len(SIZES))) for r in lcs_runs]
    obj_wall = median([r["wall"] for r in obj_runs])
    obj_cpu = median([r["cpu"] for r in obj_runs])
    par_cpu = median([r["cpu"] for r in par_runs])
    lcs_cpu = median([sum(x["cpu"] for x in r) for r in lcs_runs])
    lcs_cpu_share = median([x["cpu"] / x["seconds"] for r in lcs_runs for x in r])
    obj_cpu_share = median([r["cpu"] / r["wall"] for r in obj_runs])
    par_wall = median([r["wall"] for r in par_runs])
    obj_replay_sum = median([sum(x["replay_seconds"] for x in r["doc"]["results"]) for r in obj_runs])

    # ---- block mode ----
    blk_rows = []
    for i, (name, size) in enumerate(SIZES):
        bruns = [r["doc"]["results"][i] for r in blk_runs]
        b0 = bruns[0]
        assert b0["cache_size_bytes"] == size
        sec = median([r["replay_seconds"] for r in bruns])
        blk_rows.append(
            {
                "name": name,
                "requests": b0["requests"],
                "block_accesses": b0["block_accesses"],
                "block_miss_ratio": b0["block_miss_ratio"],
                "sec": sec,
                "rate": b0["block_accesses"] / sec,
                "all": [r["replay_seconds"] for r in bruns],
            }
        )
    blk_wall = median([r["wall"] for r in blk_runs])

    # ---- text ----
    mach = machine_info()
    repeats = args.repeats
    speed_met = all(r["speedup"] >= TARGET_SPEEDUP for r in rows)
    blk_met = all(r["rate"] >= TARGET_BLOCK_RATE for r in blk_rows)
    cc_ver = cloudcache_version(binary)
    lcs_ver = getattr(lcs, "__version__", "?")

    def cmd_text(cmd: list[str]) -> str:
        shown = [rel(Path(c)) if c.startswith("/") else c for c in cmd]
        shown[0] = "target/release/cloudcache"
        return shlex.join(shown)

    out = []
    w = out.append
    w(SECTION + "\n\n")
    w(
        f"Written by `bench/libcachesim_compare.py` on {started:%Y-%m-%d %H:%M} UTC; every number below was "
        f"measured by that run (rerun `{args.command}` to refresh it, do not edit by hand).\n\n"
    )
    w(
        f"- Machine: {mach['model']} (`lscpu` model name), {mach['cpus']} CPUs ({mach['cores']} cores, "
        f"{mach['threads_per_core']} thread(s) per core), Linux {mach['kernel']}; Python {platform.python_version()}.\n"
    )
    w(f"- Versions: libcachesim {lcs_ver} (PyPI wheel, its C core); {cc_ver} built with `cargo build --release` from {git_desc} (binary sha256 {binary_sha}..., run from a private copy).\n")
    w(f"- Load: {wait_note}. Load averages (1/5/15 min): " + "; ".join(f"{k} {fmt_load(v)}" for k, v in loads) + ".\n")
    w(
        f"- Input: `shared/data/{SAMPLE_NAME}` ({inp['sample_records']:,} vscsi v1 records) replicated "
        f"{inp['replicas']} times on disjoint address ranges (copy k adds k x {inp['lbn_stride']:,} to the lbn and "
        f"k x {inp['ts_stride']:,} us to the timestamp, so the copies follow each other in time): "
        f"{inp['records']:,} records, {inp['distinct_lbns']:,} distinct lbns, {inp['zero_length']} zero-length records, "
        f"largest request {inp['max_len']:,} B, SCSI commands "
        + ", ".join(f"{c}: {n:,}" for c, n in inp["cmds"].items())
        + f". Written to `{rel(workfile)}` (git-ignored).\n"
    )
    w(
        f"- libCacheSim: `TraceReader(path, TraceType.VSCSI_TRACE, ReaderInitParam())` (obj_id = lbn, "
        f"obj_size = len) and `LRU(size, hashpower={hashpower})`, hashpower = ceil(log2(distinct lbns)) = "
        f"ceil(log2({inp['distinct_lbns']:,})) (no +1); a fresh cache per size, sizes one after the other in one "
        "thread; each `cache.process_trace(reader)` call is timed with `time.perf_counter` (it includes reading the "
        "mmapped trace); requests are the C core's own counter `cache._cache.n_req`, and hits are derived from its "
        "returned miss ratio.\n"
    )
    w(
        "- cloudcache: one command replays all four sizes from one in-memory copy of the trace; per-size speed "
        "uses `replay_seconds` from its JSON (replay only, after loading); the whole command is timed with "
        "`time.perf_counter` around the process.\n"
    )
    w(
        f"- Timing: each measurement was repeated {repeats} times and the **median** is shown; the repetitions are "
        "interleaved (one round = libCacheSim at every size, then each cloudcache command).\n\n"
    )
    w("Commands (`WORKFILE` = `" + rel(workfile) + "`):\n\n```sh\n")
    w(args.command + "\n")
    w("# which runs, per round:\n")
    w(f"#   python: LRU(size, hashpower={hashpower}).process_trace(TraceReader(WORKFILE, TraceType.VSCSI_TRACE, ReaderInitParam())) for each size\n")
    for c in (obj_cmd, par_cmd, blk_cmd):
        w(cmd_text(c).replace(rel(workfile), "WORKFILE") + "\n")
    w("```\n\n")

    w("### Object mode, LRU: miss ratios and throughput per cache size\n\n")
    w(
        "| cache | requests | libCacheSim miss ratio | cloudcache miss ratio | identical (abs diff <= 1e-9, same hit count) "
        "| libCacheSim req/s (process_trace) | cloudcache req/s (replay_seconds, --jobs 1) | cloudcache / libCacheSim |\n"
    )
    w("|---|---:|---:|---:|---|---:|---:|---:|\n")
    for r in rows:
        ident = ("yes" if r["same"] else "**NO**") + (", bit-identical" if r["bit_identical"] else f", abs diff {r['d_req']:.1e}")
        w(
            f"| {r['name']} | {r['requests']:,} | {r['lcs_mr']:.12f} | {r['cc_mr']:.12f} | {ident} "
            f"| {rate(r['lcs_requests'], r['lcs_sec'])} ({r['lcs_sec']:.3f} s) | {rate(r['requests'], r['cc_sec'])} "
            f"({r['cc_sec']:.3f} s) | {r['speedup']:.2f}x |\n"
        )
    w("\n")
    w(
        "Byte miss ratios (libCacheSim's second return value vs cloudcache's (bytes_accessed - byte_hits) / "
        "bytes_accessed): "
        + "; ".join(
            f"{r['name']} {r['lcs_bmr']:.12f} vs {r['cc_bmr']:.12f}" + (" (same)" if r["d_byte"] <= TOLERANCE else " (**differ**)")
            for r in rows
        )
        + ".\n\n"
    )
    w("### Whole-command time, all four sizes (median)\n\n")
    w(
        "Wall seconds are what a user waits; CPU seconds (user + system: `time.thread_time` around each "
        "`process_trace`, `getrusage` of the cloudcache process) are less disturbed by other load on the machine.\n\n"
    )
    w("| what | wall s | requests replayed / wall s | CPU s | requests replayed / CPU s |\n|---|---:|---:|---:|---:|\n")
    n_all = sum(r["requests"] for r in rows)
    w(
        f"| libCacheSim: sum of the four `process_trace` calls (reading included, no process start) "
        f"| {lcs_total:.3f} | {rate(n_all, lcs_total)} | {lcs_cpu:.3f} | {rate(n_all, lcs_cpu)} |\n"
    )
    w(
        f"| cloudcache `--jobs 1`: whole command (start, load + parse once, 4 replays, JSON) "
        f"| {obj_wall:.3f} | {rate(n_all, obj_wall)} | {obj_cpu:.3f} | {rate(n_all, obj_cpu)} |\n"
    )
    w(
        f"| cloudcache `--jobs 1`: sum of the four `replay_seconds` (replay only) "
        f"| {obj_replay_sum:.3f} | {rate(n_all, obj_replay_sum)} | | |\n"
    )
    w(
        f"| cloudcache default jobs ({mach['cpus']} CPUs): whole command "
        f"| {par_wall:.3f} | {rate(n_all, par_wall)} | {par_cpu:.3f} | {rate(n_all, par_cpu)} |\n\n"
    )
    w(
        f"CPU share (CPU s / wall s, median; 1.00 = a whole core): libCacheSim `process_trace` {lcs_cpu_share:.2f}, "
        f"cloudcache `--jobs 1` command {obj_cpu_share:.2f}. Well below 1 means the run waited for a CPU that "
        "other work held, and its wall times overstate its cost.\n\n"
    )
    speedups = ", ".join(f"{r['speedup']:.2f}x" for r in rows)
    w(
        f"Target (issue): cloudcache at least {TARGET_SPEEDUP:g}x libCacheSim's throughput with identical results. "
        f"Results identical at every size: **{'yes' if ok else 'no'}**. Throughput target met at every size "
        f"(replay_seconds vs process_trace): **{'yes' if speed_met else 'no'}** "
        f"(ratios {speedups}); whole command vs summed process_trace: "
        f"{lcs_total / obj_wall:.2f}x with `--jobs 1`, {lcs_total / par_wall:.2f}x with default jobs; in CPU "
        f"seconds {lcs_cpu / obj_cpu:.2f}x (`--jobs 1`).\n\n"
    )

    w("### Block mode (4 KiB blocks, LRU, write-back), `--jobs 1`\n\n")
    w("| cache | requests | block accesses | block miss ratio | replay_seconds (median) | block accesses / s per core |\n")
    w("|---|---:|---:|---:|---:|---:|\n")
    for r in blk_rows:
        w(
            f"| {r['name']} | {r['requests']:,} | {r['block_accesses']:,} | {r['block_miss_ratio']:.6f} "
            f"| {r['sec']:.3f} | {rate(r['block_accesses'], r['sec'])} |\n"
        )
    w("\n")
    w(
        f"Whole block-mode command (`--jobs 1`, four sizes): {blk_wall:.3f} s (median). Target (issue): "
        f"{TARGET_BLOCK_RATE / 1e6:g} M block accesses/s per core: "
        + ("**met** at every size" if blk_met else "**not met** at " + ", ".join(r["name"] for r in blk_rows if r["rate"] < TARGET_BLOCK_RATE))
        + ".\n\n"
    )
    w("All repetitions (seconds):\n\n")
    for r in rows:
        w(
            f"- object {r['name']}: libCacheSim process_trace "
            + ", ".join(f"{x:.3f}" for x in r["lcs_all"])
            + "; cloudcache replay_seconds "
            + ", ".join(f"{x:.3f}" for x in r["cc_all"])
            + "\n"
        )
    for r in blk_rows:
        w(f"- block {r['name']}: cloudcache replay_seconds " + ", ".join(f"{x:.3f}" for x in r["all"]) + "\n")
    w(
        "- whole commands (wall): libCacheSim sum "
        + ", ".join(f"{x:.3f}" for x in lcs_total_runs)
        + "; cloudcache object --jobs 1 "
        + ", ".join(f"{r['wall']:.3f}" for r in obj_runs)
        + "; object default jobs "
        + ", ".join(f"{r['wall']:.3f}" for r in par_runs)
        + "; block --jobs 1 "
        + ", ".join(f"{r['wall']:.3f}" for r in blk_runs)
        + "\n"
    )
    if problems:
        w("\nProblems found by this run:\n\n" + "".join(f"- {p}\n" for p in problems))
    section = "".join(out)

    print(section)
    if not args.no_doc:
        write_section(args.doc, section)
        log(f"wrote the section '{SECTION}' of {rel(args.doc)}")
    if not ok:
        log("MISMATCH: miss ratios differ between libCacheSim and cloudcache; see 'Problems found by this run'")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
