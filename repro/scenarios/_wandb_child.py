"""The real-wandb part of ``fork_safety[mode=wandb*]``, in a fresh interpreter.

``python -m repro.scenarios._wandb_child START_METHOD``, started by
``repro.scenarios.fork_safety`` with a pinned wandb first on ``PYTHONPATH`` and ``WANDB_MODE``,
``WANDB_DIR`` (and ``WANDB_START_METHOD``) set. It reports through the case's events file
(``REPRO_CASE``/``REPRO_EVENTS``/``REPRO_WORKDIR``, as the harness does) and answers the
watchdog's SIGUSR1 with every thread's stack, as do the DataLoader workers it forks.

What it does is wandb/wandb#12079's recipe (F2-2): ``wandb.init`` (offline), then a public-API
handle inside a reference cycle with the parent's GC off, then fork DataLoader workers whose
samples from ``COLLECT_FROM`` on run ``gc.collect()``. The handle is wandb's ``ServiceApi`` with
its session opened - what ``wandb.Api()`` holds and opens on its first query; ``wandb.Api()``
itself verifies the API key over the network, which offline cases must not need. Opening the
session registers the ``weakref.finalize`` (``_cleanup -> api_cleanup_request``) that waits on
the parent's asyncio thread in an affected release.
"""

from __future__ import annotations

import gc
import os
import sys
import time

from repro import case_protocol as protocol
from repro.case_api import Context
from repro.case_protocol import arm_stack_dump
from repro.scenarios.fork_safety import WORKERS, CollectingDataset, child_budget_s

SAMPLES = 16
#: Samples 0-7 (batches 0-3) come back before the workers start collecting: the parent reaches a
#: steady rhythm of heartbeats, then hangs "at a random step" as in the field, which the watchdog
#: reports as a stall (each batch beat declares a budget) instead of waiting for the hard timeout.
COLLECT_FROM = 8
EPOCHS = 1
STEP_S = 0.05  # a token training step between batches


def _open_public_api(ctx: Context):
    """wandb's public-API service handle with its session open, or None before wandb 0.25.1
    (whose public API talks HTTP directly and has no such finalizer)."""
    try:
        from wandb.apis.public.service_api import ServiceApi
        from wandb.sdk import wandb_setup
    except ImportError:
        ctx.property("public_api", "no ServiceApi (wandb < 0.25.1)")
        return None
    api = ServiceApi(settings=wandb_setup.singleton().settings.model_copy())
    api._get_api_session()  # what wandb.Api()'s first query does; local to wandb-core
    ctx.property("public_api", "ServiceApi session open")
    return api


def main(start_method: str) -> None:
    arm_stack_dump()
    case = protocol.case_spec()
    ctx = Context(
        case["case_id"], case["params"], os.environ["REPRO_EVENTS"], os.environ["REPRO_WORKDIR"]
    )
    import wandb
    from torch.utils.data import DataLoader

    ctx.property("wandb_version", wandb.__version__)
    ctx.property("wandb_start_method_env", os.environ.get("WANDB_START_METHOD", ""))
    gc.disable()  # keep the parent's GC from collecting the handle before the workers fork
    ctx.heartbeat("wandb_init")
    run = wandb.init(project="repro-matrix", dir=os.environ["WANDB_DIR"])
    api = _open_public_api(ctx)
    if api is not None:
        api.cycle = api  # a reference cycle: only the cyclic GC can collect it
        del api
    dataset = CollectingDataset(samples=SAMPLES, collect_from=COLLECT_FROM)
    loader = DataLoader(
        dataset, batch_size=2, num_workers=WORKERS, multiprocessing_context=start_method
    )
    total, steps = 0.0, 0
    budget = child_budget_s(start_method)  # each batch within it: a stall is a hang at once
    for _epoch in range(EPOCHS):
        for batch in loader:
            ctx.heartbeat("batch", steps, budget_s=budget)
            run.log({"value": float(batch.sum())})
            total += float(batch.sum())
            steps += 1
            time.sleep(STEP_S)
    ctx.heartbeat("finish")  # the batch budget ends with the loop: run.finish() may take longer
    gc.enable()
    gc.collect()  # in the parent the asyncio thread is alive: the cleanup goes through
    run.finish()
    expected = float(sum(range(SAMPLES)) * 4 * EPOCHS)
    assert total == expected, f"batches summed to {total}, expected {expected}"
    ctx.metric("steps", steps)
    print(f"wandb {wandb.__version__}: {steps} steps with {start_method} workers", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
