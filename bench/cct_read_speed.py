#!/usr/bin/env python3
"""Read speed of cloudcache's binary trace format against the CSV it came from.

Runs the measurement in crates/trace/tests/cct.rs (`read_speed`, ignored in
normal test runs): the sample trace replicated 20 times is written as MSR
Cambridge CSV and as .cct, and each file is opened and read to the end through
the same reader API the simulator uses (best of three inside the test). This
script repeats that 3 times, reports the medians, and writes the section
"## Binary trace read speed (.cct vs CSV)" of docs/benchmarks.md.
"""

import re
import statistics
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SECTION = "## Binary trace read speed (.cct vs CSV)"
COMMAND = ["cargo", "test", "--release", "-p", "cloudcache-trace", "--test", "cct", "--", "--ignored",
           "--nocapture", "read_speed"]
LINE = re.compile(
    r"(\d+) requests: msr csv (\d+) bytes in ([\d.]+) s \(([\d.]+) M req/s\); "
    r"cct (\d+) bytes in ([\d.]+) s \(([\d.]+) M req/s\): cct is ([\d.]+)x faster")


def write_section(doc_path: Path, section: str) -> None:
    """Replace the section of the document whose heading is `section`'s first line (or append
    it), leaving the others."""
    heading = section.splitlines()[0]
    text = doc_path.read_text() if doc_path.exists() else "# Benchmarks\n"
    lines = text.splitlines(keepends=True)
    start = next((i for i, l in enumerate(lines) if l.rstrip("\n") == heading), None)
    if start is None:
        new = text.rstrip("\n") + "\n\n" + section
    else:
        end = next((i for i in range(start + 1, len(lines)) if re.match(r"^#{1,2} ", lines[i])), len(lines))
        tail = "".join(lines[end:])
        new = "".join(lines[:start]) + section + ("\n" + tail if tail else "")
    doc_path.write_text(new.rstrip("\n") + "\n")


def main() -> int:
    if not (REPO.parent / "shared/data/cloudPhysicsIO.vscsi").exists():
        print("shared/data/cloudPhysicsIO.vscsi not found beside the repository", file=sys.stderr)
        return 1
    runs = []
    for _ in range(3):
        out = subprocess.run(COMMAND, cwd=REPO, capture_output=True, text=True, check=True)
        match = LINE.search(out.stderr + out.stdout)
        if not match:
            print(out.stderr, file=sys.stderr)
            return 1
        runs.append(match)
    load = Path("/proc/loadavg").read_text().split()[:3]
    cpu = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                if l.startswith("model name")), "unknown CPU")
    med = lambda i, conv=float: statistics.median(conv(m.group(i)) for m in runs)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    section = f"""{SECTION}

Written by `bench/cct_read_speed.py` on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC from commit {commit}
({cpu}; 1/5/15-min load {' / '.join(load)} at the end). Command, run 3 times (each run takes the best of
three reads of each file); medians below:

```sh
{' '.join(COMMAND)}
```

| file | requests | bytes | read time | requests / s |
|---|---:|---:|---:|---:|
| MSR Cambridge CSV | {int(med(1)):,} | {int(med(2)):,} | {med(3):.3f} s | {med(4):.1f} M/s |
| `.cct` | {int(med(1)):,} | {int(med(5)):,} | {med(6):.3f} s | {med(7):.1f} M/s |

`.cct` reads **{med(8):.1f}x** faster than the CSV it came from (per-run ratios:
{', '.join(m.group(8) + 'x' for m in runs)}; the issue's target is at least 5x). Both are read through
`cloudcache_trace::open` and `next_request`, the path `cloudcache sim` uses.
"""
    write_section(REPO / "docs/benchmarks.md", section)
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
