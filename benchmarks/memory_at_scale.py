"""Peak memory of ``repro report`` and ``repro compare`` on inputs at (and past) their caps.

Issue 25, item 4: ``repro report`` over 2.5 million testcases (files each under the per-file
caps) died with MemoryError at 6.2 GB; ``repro compare`` of a 100 MB matrix.json of empty cells
took 5.1 GB. This runs the real CLI in a child process and reports its exit status, seconds,
peak RSS (``os.wait4``'s ``ru_maxrss`` of that child) and the last
line it printed to stderr.

Inputs, generated into a temporary folder:

- ``report``: ``--cases`` testcases in files of ``MAX_TESTCASES_PER_FILE`` (100,000) minimal
  ``<testcase>`` elements each (about 6 MB, under the 50 MB per-file cap);
- ``compare-empty``: a matrix.json of ``--megabytes`` of cells with no cases;
- ``compare-cases``: a matrix.json of ``--megabytes`` of cells of realistic cases (outcome,
  signature, message, metrics), compared with itself;
- ``compare-regressions``: the same cases all passed in the base and all failed in the
  candidate (every case a regression: the largest result compare can hold);
- ``compare-string`` (issue 32): a small matrix.json whose one case message is a single string of
  ``--string-megabytes`` MB, compared with itself, at 0 MB (the start-up cost), a quarter of
  that size and that size (linear: 4x the string, about 4x the time above the start-up);
- ``classify-long-line`` (issue 32): a log whose second line is ``--line-megabytes`` MB long,
  then a CUDA OOM line, classified (the OOM must be named), at 0 MB, a quarter size and full
  size.

    python benchmarks/memory_at_scale.py [--cases 2500000] [--megabytes 100] [--only report]
    python benchmarks/memory_at_scale.py --only compare-string [--string-megabytes 128]
    python benchmarks/memory_at_scale.py --only classify-long-line [--line-megabytes 100]

Measured 2026-11-24 (2 shared cores, ijson 3.6 yajl2_c):

- report, 2,500,000 testcases in 25 files: exit 0, 164 s, 989 MB peak; the first 1,000,000
  reported, each of the 15 files past the cap named on one line (was MemoryError at 6.2 GB);
- compare-empty, 105 MB (1,248,295 cells): exit 2 in 1.9 s, 46 MB, one line (over 50,000 cells;
  was 5.1 GB);
- compare-cases, 105 MB (372,850 cases a side): exit 0, 52 s, 468 MB;
- compare-regressions, 105 MB: exit 1, 61 s, 571 MB; ``--megabytes 268`` (997,050 cases a side,
  every one a regression, at the case cap): exit 1, 164 s, 1,473 MB.

Measured 2026-11-27 (issue 32; 2 shared cores at load 4 to 6; main ``ef0dbf8`` in the same window):

- compare-string, one 0 / 32 / 128 MB string: 1.5 / 1.6 / 1.4 s, 34 / 37 / 37 MB (the string is
  cut to 64 KiB before the parser: time is the start-up); ``ef0dbf8``: 1.7 / 31.9 / 315.3 s,
  34 / 132 / 420 MB (quadratic: 4x the string, 10x the time);
- classify-long-line, one 0 / 25 / 100 MB line: 2.1 / 1.6 / 2.2 s, 35 / 37 / 37 MB, the OOM after
  it named (line 3); ``ef0dbf8`` at 100 MB: 2.4 s, "no failure found" (the read stopped at the
  line). In-process, without the start-up: 0.15 s / 0.32 s for 25 / 100 MB;
- compare-cases, 52 MB: 42.7 and 46.7 s, 260 MB; ``ef0dbf8`` 40.1 and 38.1 s, 252 MB (the token
  filter's cost on an ordinary matrix: +6 to +22 %).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repro.junit.reader import MAX_TESTCASES_PER_FILE  # noqa: E402
from repro.report.model import SCHEMA_VERSION  # noqa: E402


def write_junit_files(folder: Path, cases: int) -> int:
    """``cases`` testcases over files of at most MAX_TESTCASES_PER_FILE; returns the file count."""
    files = 0
    left = cases
    while left > 0:
        count = min(left, MAX_TESTCASES_PER_FILE)
        run = folder / f"run{files:03d}"
        run.mkdir(parents=True)
        with open(run / "junit.xml", "w", encoding="utf-8") as out:
            out.write('<?xml version="1.0" encoding="utf-8"?>\n<testsuites>')
            out.write(f'<testsuite name="repro.s{files}" tests="{count}">\n')
            for i in range(count):
                out.write(f'<testcase classname="repro.s{files}" name="c[i={i}]" time="0.1"/>\n')
            out.write("</testsuite></testsuites>\n")
        files += 1
        left -= count
    return files


def write_matrix(
    path: Path, megabytes: float, with_cases: bool, outcome: str = "failed", cells_at_most=None
) -> int:
    """A matrix.json of about ``megabytes`` MB (cases of ``outcome``), or of ``cells_at_most``
    cells when it comes first; returns its cells."""
    target = int(megabytes * 1024 * 1024)
    case = {
        "scenario": "dataloader",
        "outcome": outcome,
        "signature": "hang.dataloader_wait" if outcome != "passed" else None,
        "message": "no heartbeat for 45 s in phase 'batch'",
        "excerpt": "",
        "time_s": 12.5,
        "metrics": {"it_per_s": 41.5},
        "log": None,
        "file": "results/run/junit.xml",
    }
    written = cells = 0
    with open(path, "w", encoding="utf-8") as out:
        out.write(f'{{"schema_version": {SCHEMA_VERSION}, "generated_at": "now", "cells": [')
        while written < target and (cells_at_most is None or cells < cells_at_most):
            cases = (
                [{**case, "case": f"dataloader[i={cells}-{n}]"} for n in range(50)]
                if with_cases
                else []
            )
            cell = {
                "cases": cases,
                "host": f"host {cells % 1000}",
                "variant": f"cu128-torch2.{cells // 1000}",
                "state": "failed",
            }
            text = ("," if cells else "") + json.dumps(cell)
            out.write(text)
            written += len(text)
            cells += 1
        out.write("]}\n")
    return cells


def write_string_matrix(path: Path, megabytes: float) -> None:
    """A matrix.json of one cell, one case, whose message is one string of ``megabytes`` MB."""
    head = {"scenario": "s", "case": "c[i=0]", "outcome": "failed", "signature": "oom"}
    with open(path, "w", encoding="utf-8") as out:
        out.write(f'{{"schema_version": {SCHEMA_VERSION}, "generated_at": "now", "cells": [')
        out.write('{"host": "h", "variant": "v", "state": "failed", "cases": [')
        out.write(json.dumps(head)[:-1] + ', "message": "')
        block = "x" * (1 << 20)
        for _ in range(int(megabytes)):
            out.write(block)
        out.write('"}]}]}\n')


def write_long_line_log(path: Path, megabytes: float) -> None:
    """A log: a line, one line of ``megabytes`` MB, then a CUDA out-of-memory error."""
    with open(path, "wb") as out:
        out.write(b"epoch 1 step 10 loss 0.31\n")
        block = b"A" * (1 << 20)
        for _ in range(int(megabytes)):
            out.write(block)
        out.write(b"\nRuntimeError: CUDA error: out of memory\n")


def measure(argv: list[str], cwd: Path) -> dict:
    """Run ``python -m repro ARGV``; its status, seconds, peak RSS (``os.wait4``'s rusage of
    that very child), last stderr line and the start of its stdout."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as errors, tempfile.TemporaryFile() as output:
        proc = subprocess.Popen(
            [sys.executable, "-m", "repro", *argv],
            cwd=cwd,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=output,
            stderr=errors,
        )
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        errors.seek(0)
        text = errors.read().decode(errors="replace")
        output.seek(0)
        said = output.read(2000).decode(errors="replace")
    lines = [line for line in text.splitlines() if line.strip()]
    return {
        "rc": proc.returncode,
        "seconds": round(time.monotonic() - started, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "stderr_lines": len(lines),
        "last_stderr": lines[-1][:300] if lines else "",
        "stdout_head": said[:160],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2_500_000)
    parser.add_argument("--megabytes", type=float, default=100)
    parser.add_argument("--string-megabytes", type=float, default=128)
    parser.add_argument("--line-megabytes", type=float, default=100)
    kinds = ("compare-empty", "compare-cases", "compare-regressions")
    parser.add_argument("--only", choices=("report", *kinds, *LINEAR))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="repro-scale-") as tmp:
        work = Path(tmp)
        if args.only in (None, "report"):
            started = time.monotonic()
            files = write_junit_files(work / "results", args.cases)
            print(f"report: {args.cases} testcases in {files} files "
                  f"(generated in {time.monotonic() - started:.0f} s)")  # fmt: skip
            print(" ", measure(["report", "results", "-o", "out"], work))
        for kind in kinds:
            if args.only not in (None, kind):
                continue
            path, base = work / f"{kind}.json", work / f"{kind}-base.json"
            cells = write_matrix(path, args.megabytes, kind != "compare-empty")
            if kind == "compare-regressions":
                write_matrix(base, 2 * args.megabytes, True, "passed", cells_at_most=cells)
            else:
                base = path
            size = path.stat().st_size
            print(f"{kind}: {size / 1e6:.0f} MB matrix.json, {cells} cells")
            print(" ", measure(["compare", str(base), str(path), "--json"], work))
        for kind in LINEAR:
            if args.only not in (None, kind):
                continue
            full = args.string_megabytes if kind == "compare-string" else args.line_megabytes
            for megabytes in (0, full / 4, full):  # 0: the command's fixed start-up cost
                path = work / f"{kind}-{megabytes:g}"
                if kind == "compare-string":
                    write_string_matrix(path, megabytes)
                    argv = ["compare", str(path), str(path), "--json"]
                else:
                    write_long_line_log(path, megabytes)
                    argv = ["classify", "--json", str(path)]
                print(f"{kind}: one {megabytes:g} MB {'string' if kind == 'compare-string' else 'line'}"
                      f", {path.stat().st_size / 1e6:.0f} MB file")  # fmt: skip
                print(" ", measure(argv, work))
                path.unlink()


#: The inputs of issue 32 measured at two sizes, 4x apart.
LINEAR = ("compare-string", "classify-long-line")


if __name__ == "__main__":
    main()
