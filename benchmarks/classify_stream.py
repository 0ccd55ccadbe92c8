"""Measure ``repro classify`` on a big log piped to stdin: wall time, throughput, peak RSS.

Writes SIZE MiB of training-progress lines (``--loss`` adds ``loss=0.43`` to each line, which
makes the ``nan_detected`` pattern scan every block: the slow case) followed by a cuDNN traceback
into the stdin of a ``python -m repro classify --json -`` child, and reads its peak RSS with
``RUSAGE_CHILDREN`` (this process has no other child). Issue 9 asks for < 200 MB on 1 GB.

    python benchmarks/classify_stream.py [--mib 1024] [--loss]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="log size in MiB (default 1024)")
    parser.add_argument("--loss", action="store_true", help="lines contain 'loss=' (slow path)")
    args = parser.parse_args()

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
