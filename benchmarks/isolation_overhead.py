"""Measure the runner's per-case isolation overhead, in seconds per case.

Compares, for the empty ``noop`` scenario, (a) ``repro.runner.executor.run_case`` with
``isolation="fresh"`` - a fresh child process in its own process group, events file, log,
classification, leak scan - (b) the same forked from the zygote (``isolation="zygote"``,
``repro.runner.zygote``; its start-up is paid once, before timing) and (c) calling the
harness's ``run_case`` in this process. The difference is what isolation costs per case. The
same is done for ``noop[torch=1]``, where the child also imports torch, which is what every
real scenario case pays (issue 13's target: zygote <= 0.1 s against ~1.8 s fresh).

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

from repro.runner import (
    context,  # noqa: E402
    harness,
    zygote_pool,
)
from repro.runner import executor as runner  # noqa: E402
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
        contexts = {
            isolation: context.RunContext(
                run_dir=run_dir / isolation,
                fingerprint=fingerprint,
                suite_properties={},
                run_info={},
                isolation=isolation,
            )
            for isolation in ("fresh", "zygote")
        }
        rows = []
        try:
            for with_torch in (False, True):
                (case,) = expand("noop", params={"torch": [with_torch]})
                runner.run_case(contexts["zygote"], case)  # start the zygote, untimed
                medians = {
                    isolation: statistics.median(
                        timed(lambda ctx=ctx, case=case: runner.run_case(ctx, case), args.repeat)
                    )
                    for isolation, ctx in contexts.items()
                }
                spec = {
                    "scenario": case.scenario,
                    "module": case.module,
                    "case_id": case.case_id,
                    "params": case.param_dict,
                }
                events = os.path.join(tmp, "events.jsonl")
                in_process = timed(
                    lambda spec=spec, events=events: harness.run_case(spec, events, tmp),
                    args.repeat,
                )
                rows.append((case.case_id, medians, statistics.median(in_process)))
        finally:
            zygote_pool.close_zygote(contexts["zygote"])

    print(f"isolation overhead, median of {args.repeat} cases each (seconds per case)")
    print(
        f"{'case':<16} {'fresh':>8} {'zygote':>8} {'in-process':>11} {'fresh ovh':>10}"
        f" {'zygote ovh':>11} {'ratio':>6}"
    )
    for case_id, medians, in_process_s in rows:
        fresh, forked = medians["fresh"] - in_process_s, medians["zygote"] - in_process_s
        print(
            f"{case_id:<16} {medians['fresh']:>8.3f} {medians['zygote']:>8.3f} {in_process_s:>11.4f}"
            f" {fresh:>10.3f} {forked:>11.3f} {fresh / max(forked, 1e-6):>5.1f}x"
        )
    print(
        "(in-process torch import is cached after the first call, so the torch row's fresh"
        " overhead includes the child's `import torch`, which every fresh case pays)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
