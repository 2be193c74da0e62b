#!/usr/bin/env python3
"""cloudcache serve against nbdkit, with fio's nbd engine, all in one run.

1. Warm hits: fio 4 KiB random reads at queue depth 16 over a 128 MiB
   working set that fits the cache, after one read pass has warmed it:
   - cloudcache serve (write-back, 512 MiB flash file) over the disk file;
   - nbdkit's `file` plugin serving the same file directly;
   - nbdkit's `cache` filter (cache=writeback) in front of the same file.
2. Cold misses: the backend is the same file behind nbdkit's `delay`
   filter (rdelay=1ms), the cache starts cold, and fio reads 4 KiB at random
   over 1 GiB at queue depth 16 (nearly every read a miss):
   - cloudcache serve with an nbd+unix:// volume pointing at that nbdkit;
   - nbdkit's `cache` filter in front of the `delay` filter.

Reports IOPS and p99 completion latency for each and the ratios the issue
sets targets for (warm: >= nbdkit cache filter and >= 0.8x direct file;
cold: >= 10x nbdkit cache filter). Each configuration runs --repeats times
interleaved, and the medians are compared. The script waits for a quiet
machine and writes the section "## NBD server (cloudcache serve vs nbdkit)"
of docs/benchmarks.md.

Usage: python3 bench/nbd_compare.py [--runtime 10] [--repeats 3] [--max-load 1.5] [--no-doc]
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from allocation_cost import wait_for_quiet  # noqa: E402
from cct_read_speed import write_section  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
BINARY = REPO / "target/release/cloudcache"
SECTION = "## NBD server (cloudcache serve vs nbdkit)"
DISK_BYTES = 1 << 30
WARM_SET = "128M"


def wait_for_socket(path: Path, proc: subprocess.Popen) -> None:
    """Waits until the server accepts connections on `path`."""
    deadline = time.time() + 30
    while True:
        if proc.poll() is not None or time.time() > deadline:
            raise RuntimeError(f"server for {path} did not start")
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(str(path))
            return
        except OSError:
            time.sleep(0.05)


class Server:
    """A server process on a Unix socket, stopped on exit."""

    def __init__(self, name: str, argv: list[str], socket: Path, export: str = ""):
        self.name, self.socket = name, socket
        self.log = socket.with_suffix(".log")
        # A previous round's server may have left its socket file behind.
        socket.unlink(missing_ok=True)
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
        try:
            wait_for_socket(socket, self.proc)
        except RuntimeError as e:
            raise RuntimeError(f"{e}: {' '.join(argv)}\n{self.log.read_text()}") from None
        self.uri = f"nbd+unix:///{export}?socket={socket}"

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def nbdkit(work: Path, name: str, filters: list[str], params: list[str]) -> Server:
    socket = work / f"{name}.sock"
    argv = ["nbdkit", "-f", "-U", str(socket)] + [f"--filter={f}" for f in filters]
    argv += ["file", str(work / "disk.img")] + params
    return Server(name, argv, socket)


def cloudcache(work: Path, name: str, backend: str) -> Server:
    socket = work / f"{name}.sock"
    flash = work / f"{name}-flash.img"
    if flash.exists():
        flash.unlink()
    argv = [str(BINARY), "serve", "--listen", f"unix:{socket}", "--flash", str(flash),
            "--flash-size", "512MiB", "--volume", f"vm={backend}:write-back"]
    return Server(name, argv, socket, export="vm")


def fio(uri: str, size: str, runtime: int, rw: str = "randread") -> dict:
    argv = ["fio", "--name=bench", "--ioengine=nbd", f"--uri={uri}", f"--rw={rw}", "--bs=4k",
            "--iodepth=16", f"--size={size}", f"--runtime={runtime}", "--time_based=1",
            "--randrepeat=0", "--output-format=json"]
    out = subprocess.run(argv, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{out.stderr}{out.stdout[-2000:]}")
    # The nbd engine may print a line before the JSON.
    job = json.loads(out.stdout[out.stdout.index("{"):])["jobs"][0]["read"]
    return {"iops": job["iops"], "p99_us": job["clat_ns"]["percentile"]["99.000000"] / 1000}


def warm(uri: str, size: str) -> None:
    subprocess.run(["fio", "--name=warm", "--ioengine=nbd", f"--uri={uri}", "--rw=read", "--bs=1M",
                    "--iodepth=4", f"--size={size}", "--output-format=terse"],
                   check=True, stdout=subprocess.DEVNULL)


def median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-load", type=float, default=1.5)
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()
    for tool in ["nbdkit", "fio"]:
        if not shutil.which(tool):
            print(f"{tool} is not installed (Debian: nbdkit fio)", file=sys.stderr)
            return 1
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=REPO, check=True)
    work = Path(tempfile.mkdtemp(prefix="cc-nbd-bench-"))
    try:
        with open(work / "disk.img", "wb") as f:
            chunk = os.urandom(1 << 20)
            for _ in range(DISK_BYTES >> 20):
                f.write(chunk)
        wait_for_quiet(args.max_load)
        load_before = Path("/proc/loadavg").read_text().split()[:3]
        warm_runs = {"cloudcache": [], "nbdkit-file": [], "nbdkit-cache": []}
        cold_runs = {"cloudcache": [], "nbdkit-cache": []}
        for _ in range(args.repeats):
            # Warm hits.
            servers = {
                "cloudcache": cloudcache(work, "cc-warm", str(work / "disk.img")),
                "nbdkit-file": nbdkit(work, "file", [], []),
                "nbdkit-cache": nbdkit(work, "cache", ["cache"], ["cache=writeback"]),
            }
            try:
                for name, server in servers.items():
                    if name != "nbdkit-file":
                        warm(server.uri, WARM_SET)
                    warm_runs[name].append(fio(server.uri, WARM_SET, args.runtime))
            finally:
                for server in servers.values():
                    server.stop()
            # Cold misses behind a 1 ms backend.
            delayed = nbdkit(work, "delayed", ["delay"], ["rdelay=1ms"])
            servers = {
                "cloudcache": cloudcache(work, "cc-cold", delayed.uri),
                "nbdkit-cache": nbdkit(work, "cache-delay", ["cache", "delay"], ["cache=writeback", "rdelay=1ms"]),
            }
            try:
                for name, server in servers.items():
                    cold_runs[name].append(fio(server.uri, "1G", args.runtime))
            finally:
                for server in servers.values():
                    server.stop()
                delayed.stop()
        load_after = Path("/proc/loadavg").read_text().split()[:3]
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def row(label: str, runs: list[dict]) -> str:
        iops = [f"{r['iops']:,.0f}" for r in runs]
        return f"| {label} | {median(runs, 'iops'):,.0f} | {median(runs, 'p99_us'):,.0f} | {', '.join(iops)} |"

    warm_cc, warm_file, warm_cache = (median(warm_runs[k], "iops") for k in ["cloudcache", "nbdkit-file", "nbdkit-cache"])
    cold_cc, cold_cache = (median(cold_runs[k], "iops") for k in ["cloudcache", "nbdkit-cache"])
    cpu = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                if l.startswith("model name")), "unknown CPU")
    section = f"""{SECTION}

`python3 bench/nbd_compare.py --runtime {args.runtime} --repeats {args.repeats}`: fio {subprocess.run(['fio', '--version'], capture_output=True, text=True).stdout.strip()}
(`--ioengine=nbd`, 4 KiB random reads, queue depth 16, one job), nbdkit {subprocess.run(['nbdkit', '--version'], capture_output=True, text=True).stdout.split()[1]},
all over Unix sockets on one machine ({os.cpu_count()} cores, {cpu}; load {' '.join(load_before)} before,
{' '.join(load_after)} after). Medians of {args.repeats} interleaved runs of {args.runtime} s; the last column lists every run.

**Warm hits** ({WARM_SET} working set, read once before measuring; cloudcache: 512 MiB flash file, write-back):

| server | IOPS | p99 µs | runs (IOPS) |
|---|---:|---:|---|
{row("cloudcache serve", warm_runs["cloudcache"])}
{row("nbdkit file (direct, no cache)", warm_runs["nbdkit-file"])}
{row("nbdkit cache filter over file", warm_runs["nbdkit-cache"])}

cloudcache / nbdkit cache filter: **{warm_cc / warm_cache:.2f}x** (target >= 1); cloudcache / direct file:
**{warm_cc / warm_file:.2f}x** (target >= 0.8).

**Cold misses** (backend behind nbdkit's delay filter, rdelay=1ms; random reads over 1 GiB, cache cold):

| server | IOPS | p99 µs | runs (IOPS) |
|---|---:|---:|---|
{row("cloudcache serve (nbd+unix:// backend)", cold_runs["cloudcache"])}
{row("nbdkit cache filter over delay filter", cold_runs["nbdkit-cache"])}

cloudcache / nbdkit cache filter: **{cold_cc / cold_cache:.1f}x** (target >= 10).

What it shows: a warm hit in cloudcache is served by the connection's reader thread itself
(engine decision, one `pread` of the flash file, one reply write), with no hand-off to a worker,
which is why it can beat even the direct `file` plugin. Cold, nbdkit's cache filter completes
about one miss per backend delay ({cold_cache:,.0f} IOPS against a 1 ms delay: its misses are
serialised), while cloudcache keeps all 16 in flight (lane tickets order only requests on the
same blocks), close to the 16,000 IOPS that 16 concurrent 1 ms reads allow.
"""
    print(section)
    if not args.no_doc:
        write_section(REPO / "docs/benchmarks.md", section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
