"""Measure the venv lane's environment cache, in seconds (issue 24's target: a cached
environment is reused in at most 2 s).

Makes (or finds) the environment of a matrix.yaml variant with ``repro.envs.ensure_env`` in a
cache directory of its own, then times (a) ``ensure_env`` reusing it in this process, (b) the
whole ``repro venv-run VARIANT -- --list`` command from a new process (the CLI's start, the
reuse, and ``repro run --list`` inside the environment: everything before the first case), and
(c) for comparison the first making of it (cold only for a new cache directory; uv's own
package cache stays warm across runs).

    python benchmarks/venv_reuse.py [--variant cpu-torch2.13] [--repeat 5] [--cache DIR]
        [-- venv-run source options, e.g. --find-links /opt/wheels --python 3.11]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repro import config as matrix_mod  # noqa: E402
from repro.cli import venv as venv_cli  # noqa: E402
from repro.cli.main import build_parser  # noqa: E402
from repro.envs import ensure_env, lane  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="cpu-torch2.13")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cache", help="environment cache (default: a new temporary directory)")
    parser.add_argument("source", nargs=argparse.REMAINDER, help="-- venv-run source options")
    args = parser.parse_args()
    source = [a for a in args.source if a != "--"]
    cache = Path(args.cache or tempfile.mkdtemp(prefix="repro-venv-bench-"))

    run_args = build_parser().parse_args(["venv-run", args.variant, *source])
    venv_cli.split_remainder(run_args)
    config = matrix_mod.load(ROOT / "matrix.yaml")
    spec = lane.spec_for_variant(
        config.variant(args.variant),
        venv_cli.overrides_from(run_args),
        venv_cli.source_options(run_args),
    )
    first = ensure_env(spec, root=cache)
    print(
        f"first ensure_env: {first.seconds:.2f} s ({'reused' if first.reused else 'made'}; "
        f"{first.versions})"
    )
    reuse = []
    for _ in range(args.repeat):
        env = ensure_env(spec, root=cache)
        assert env.reused, "the environment was made again"
        reuse.append(env.seconds)
    command = [
        sys.executable, "-m", "repro", "venv-run", args.variant, "--config",
        str(ROOT / "matrix.yaml"), "--env-cache", str(cache), *source, "--", "--list",
    ]  # fmt: skip
    whole, cpu = [], []
    for _ in range(args.repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        whole.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode != 0 or "reused" not in done.stderr:
            print(done.stderr[-2000:], file=sys.stderr)
            return 1
    print(f"ensure_env reuse:            median {statistics.median(reuse) * 1000:.1f} ms "
          f"(max {max(reuse) * 1000:.1f} ms, {args.repeat} runs)")  # fmt: skip
    print(f"repro venv-run ... -- --list: median {statistics.median(whole):.2f} s "
          f"(max {max(whole):.2f} s, {args.repeat} runs; target <= 2 s)")  # fmt: skip
    # CPU seconds (user + system, every process of the command): what the wall time would be
    # without other load on the machine's cores, whose 1-minute load average follows.
    print(f"  of which CPU:               median {statistics.median(cpu):.2f} s "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
