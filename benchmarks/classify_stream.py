"""Measure ``repro classify`` on a big log piped to stdin: wall time, throughput, peak RSS.

Writes SIZE MiB of training-progress lines (``--loss`` adds ``loss=0.43`` to each line, which
makes the ``nan_detected`` pattern scan every block: the slow case) followed by a cuDNN traceback
into the stdin of a ``python -m repro classify --json -`` child, and reads its peak RSS with
``RUSAGE_CHILDREN`` (this process has no other child). Issue 9 asks for < 200 MB on 1 GB.

``--in-process`` times :func:`repro.signatures.engine.classify` instead on :func:`progress_log`
(40,000 varied progress lines, 4.1 MB) and a cuDNN traceback, ``--repeat`` times: the figure
tests/test_signatures.py's exactness test used to assert (speed is measured here, never asserted
in a unit test).

    python benchmarks/classify_stream.py [--mib 1024] [--loss]
    python benchmarks/classify_stream.py --in-process [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The traceback :func:`in_process` appends: its verdict is ``cudnn_execution_failed``.
CUDNN_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 3, in <module>\n'
    "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\n"
)


def progress_log(lines: int = 40_000, seed: int = 0) -> str:
    """``lines`` training-progress lines with varied numbers (about 100 bytes each: 4.1 MB for the
    default 40,000), no trailing newline; the same text for the same ``seed``."""
    rng = random.Random(seed)
    return "\n".join(
        f"Epoch {i // 500}: step {i} loss={rng.random():.4f} lr=1e-4 it/s=2.53 "
        f"batch torch.Size([4, 3, 640, 640]) CUDA mem 5.1 GiB"
        for i in range(lines)
    )


def in_process(repeat: int) -> int:
    """Time ``classify`` on :func:`progress_log` plus :data:`CUDNN_TRACEBACK`; print each run's
    seconds, their min/median/max and the verdict."""
    sys.path.insert(0, str(ROOT))
    from repro.signatures.engine import classify

    text = progress_log() + "\n" + CUDNN_TRACEBACK
    times, found = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        found = classify(text)
        times.append(time.perf_counter() - start)
    assert found is not None
    print(f"log:        {len(text) / 1e6:.1f} MB, {text.count(chr(10))} lines (in-process)")
    print(f"verdict:    {found.name} at line {found.line_no}")
    print(f"runs (s):   {' '.join(f'{t:.2f}' for t in times)}")
    print(
        f"wall time:  min {min(times):.2f} s, median {statistics.median(times):.2f} s,"
        f" max {max(times):.2f} s; load average {os.getloadavg()[0]:.1f}"
    )
    return 0 if found.name == "cudnn_execution_failed" else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="log size in MiB (default 1024)")
    parser.add_argument("--loss", action="store_true", help="lines contain 'loss=' (slow path)")
    parser.add_argument(
        "--in-process", action="store_true", help="time classify() on the 4.1 MB progress log"
    )
    parser.add_argument("--repeat", type=int, default=5, help="--in-process runs (default 5)")
    args = parser.parse_args()
    if args.in_process:
        return in_process(args.repeat)

    line = b"Epoch 3: step 12345 " + (b"loss=0.4312 " if args.loss else b"") + b"it/s=2.53\n"
    block = line * 16384
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "repro", "classify", "--json", "-"]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    written, size = 0, args.mib << 20
    while written < size:
        proc.stdin.write(block)
        written += len(block)
    proc.stdin.write(
        b"Traceback (most recent call last):\n  File 'train.py', line 3\n"
        b"RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\n"
    )
    proc.stdin.close()
    found = json.loads(proc.stdout.read())["logs"][0]
    proc.wait()
    elapsed = time.perf_counter() - started
    rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"log:        {written / (1 << 20):.0f} MiB, {written // len(line) + 3} lines")
    print(f"verdict:    {found['signature']} at line {found['line']}")
    print(f"wall time:  {elapsed:.1f} s ({written / (1 << 20) / elapsed:.0f} MiB/s)")
    print(f"peak RSS:   {rss_mib:.1f} MiB (classify child)")
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
