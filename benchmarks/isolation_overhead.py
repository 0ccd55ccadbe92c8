"""Measure the runner's per-case isolation overhead, in seconds per case.

Compares, for the empty ``noop`` scenario, (a) ``repro.runner.executor.run_case`` - a fresh child process
in its own process group, events file, log, classification, leak scan - with (b) calling the
harness's ``run_case`` in this process. The difference is what isolation costs per case. The
same is done for ``noop[torch=1]``, where the child also imports torch, which is what every
real scenario case pays.

    python benchmarks/isolation_overhead.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from repro.runner import executor as runner  # noqa: E402
from repro.runner import harness
from repro.scenarios import expand  # noqa: E402


def timed(fn, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repeat", type=int, default=10, help="cases per measurement (default: %(default)s)"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="repro-bench-") as tmp:
        run_dir = Path(tmp)
        fingerprint = {
            "runtime": {"accelerator_count": 0, "start_methods": ["fork", "spawn", "forkserver"]}
        }
        ctx = runner.RunContext(
            run_dir=run_dir, fingerprint=fingerprint, suite_properties={}, run_info={}
        )
        rows = []
        for with_torch in (False, True):
            (case,) = expand("noop", params={"torch": [with_torch]})
            isolated = timed(lambda case=case: runner.run_case(ctx, case), args.repeat)
            spec = {
                "scenario": case.scenario,
                "module": case.module,
                "case_id": case.case_id,
                "params": case.param_dict,
            }
            events = os.path.join(tmp, "events.jsonl")
            in_process = timed(
                lambda spec=spec, events=events: harness.run_case(spec, events, tmp), args.repeat
            )
            rows.append((case.case_id, statistics.median(isolated), statistics.median(in_process)))

    print(f"isolation overhead, median of {args.repeat} cases each (seconds per case)")
    print(f"{'case':<20} {'isolated':>10} {'in-process':>12} {'overhead':>10}")
    for case_id, isolated_s, in_process_s in rows:
        print(
            f"{case_id:<20} {isolated_s:>10.3f} {in_process_s:>12.4f} {isolated_s - in_process_s:>10.3f}"
        )
    print(
        "(in-process torch import is cached after the first call, so the torch row's overhead"
        " includes the child's `import torch`, which every real case pays)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
