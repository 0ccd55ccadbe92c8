"""``dataloader``: DataLoader workers under each start method, with and without the accelerator
initialised in the parent; measures time to first batch and steady throughput.

Failure family 1 of ../shared/field-reports.md: CUDA touched in a forked worker
(``Cannot re-initialize CUDA in forked subprocess``, pytorch/pytorch#77159, #40403; silent data
change #128497), worker deaths (``DataLoader worker (pid N) is killed by signal``,
pytorch/pytorch#5040), spawn start-up cost (pytorch/pytorch#103117, O1 "spawn 10x slower"),
persistent workers on re-iteration (pytorch/pytorch#48370, #62066), and the ROCm fork deadlock
(O2) when the accelerator is initialised before the workers fork.

The CPU lane runs at most ``CPU_LANE_MAX_WORKERS`` workers; the accelerator lane the whole
``workers`` axis. Each case runs two epochs and checks a checksum of every sample against the
value computed in the main process, so a silent data change fails the case. With ``workers=0``
the loader runs in the main process and the start method does not apply.

``fault`` plants a failure for the test suite (not in the default catalogue):
``worker_exception`` raises in a worker, ``worker_segfault`` kills a worker with SIGSEGV,
``worker_hang`` blocks a worker forever (the parent waits in ``_try_get_data``: O2's freeze),
``worker_touches_accel`` does the real anti-pattern (a CUDA tensor created inside the worker).
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback

PARAMS = {
    "device": ["cpu", "cuda"],
    "start_method": ["fork", "spawn", "forkserver"],
    "workers": [0, 2, 4],
    "persistent": [False, True],
    "accel_init": [False, True],
    "fault": ["none"],
}
TIMEOUT_S = 90.0
#: A fresh interpreter (not a zygote fork, repro.runner.zygote) where the workers are forks of
#: the case process; spawn and forkserver workers are new interpreters either way.
FRESH = lambda params: params["workers"] > 0 and params["start_method"] == "fork"  # noqa: E731
EXCLUSIVE = True  # runs alone under -j N: time to first batch and it/s are its measurements
QUIET_DEFAULTS = {"fault": "none"}
FAULTS = ("none", "worker_exception", "worker_segfault", "worker_hang", "worker_touches_accel")

SAMPLES = 96
BATCH_SIZE = 8
IMAGE_SHAPE = (3, 96, 96)
EPOCHS = 2
#: The CPU lane's worker counts stop here (issue 13 item 5: CPU lanes shrink, accelerator lanes
#: keep the field's sizes). Each spawn/forkserver worker imports torch (~1.8 CPU-s), so the four-
#: worker cases cost 42 of the main job's 190 CPU-seconds on a 2-core host and told nothing the
#: two-worker cases do not: start-up cost per worker, persistence across epochs, data integrity.
CPU_LANE_MAX_WORKERS = 2


def valid(params) -> bool:
    if params["workers"] == 0 and (params["start_method"] != "fork" or params["persistent"]):
        return False  # one in-process case: start method and persistence do not apply
    if params["accel_init"] and params["device"] != "cuda":
        return False  # nothing to initialise on the cpu lane
    if params["device"] == "cpu" and params["workers"] > CPU_LANE_MAX_WORKERS:
        return False
    return params["fault"] in FAULTS


def requires(params) -> list[str]:
    needs = [f"start_method:{params['start_method']}"] if params["workers"] else []
    if params["device"] == "cuda":
        needs.append("accelerator")
    return needs


class SyntheticImages:
    """Map-style dataset of deterministic fake images (``IMAGE_SHAPE`` float32) and labels.

    A plain class rather than a ``torch.utils.data.Dataset`` subclass so this module stays
    importable without torch (the runner imports it); spawned workers unpickle it by name.
    """

    def __init__(self, fault: str = "none"):
        self.fault = fault

    def __len__(self) -> int:
        return SAMPLES

    def __getitem__(self, index: int):
        import torch

        if self.fault != "none" and index == SAMPLES // 2:
            self._plant_fault()
        generator = torch.Generator().manual_seed(index)
        image = torch.rand(IMAGE_SHAPE, generator=generator)
        image = (image - 0.5) / 0.25  # a normalisation's worth of CPU work
        return image, index % 10

    def _plant_fault(self) -> None:
        import torch

        if self.fault == "worker_exception":
            raise RuntimeError(
                "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
                "you must use the 'spawn' start method (planted by repro for testing)"
            )
        if self.fault == "worker_segfault":
            os.kill(os.getpid(), signal.SIGSEGV)
        if self.fault == "worker_hang":
            import threading

            threading.Event().wait()
        if self.fault == "worker_touches_accel":
            torch.zeros(1, device="cuda")


def expected_checksum() -> float:
    """Sum of every pixel of the dataset, computed in the main process (the reference)."""
    dataset = SyntheticImages()
    return float(sum(dataset[i][0].double().sum() for i in range(SAMPLES)))


def run(ctx, params) -> None:
    import torch
    from torch.utils.data import DataLoader

    from repro.runner.case_api import CaseFailed

    device = torch.device(params["device"])
    workers = int(params["workers"])
    if params["accel_init"]:
        ctx.heartbeat("accel_init")
        torch.zeros(1, device=device)  # the parent owns a CUDA/HIP context before the fork
    reference = expected_checksum()

    loader = DataLoader(
        SyntheticImages(params["fault"]),
        batch_size=BATCH_SIZE,
        num_workers=workers,
        persistent_workers=bool(params["persistent"]),
        multiprocessing_context=params["start_method"] if workers else None,
        pin_memory=device.type == "cuda",
    )
    batches = 0
    try:
        for epoch in range(EPOCHS):
            ctx.heartbeat("epoch_start", epoch)
            checksum = 0.0
            start = time.perf_counter()
            first_batch_s = None
            for _step, (images, _labels) in enumerate(loader):
                images = images.to(device, non_blocking=True)
                checksum += float(images.double().sum())
                if first_batch_s is None:
                    first_batch_s = time.perf_counter() - start
                    steady_start = time.perf_counter()
                batches += 1
                ctx.heartbeat("batch", batches)
            steady_s = time.perf_counter() - steady_start
            steady_batches = len(loader) - 1
            if epoch == 0:
                ctx.metric("first_batch_s", first_batch_s)
                ctx.metric("it_per_s", steady_batches / steady_s if steady_s > 0 else 0.0)
            else:
                ctx.metric("epoch2_first_batch_s", first_batch_s)
            if abs(checksum - reference) > 1e-6 * max(1.0, abs(reference)):
                ctx.fail(
                    f"epoch {epoch}: data changed in transit: checksum {checksum!r} != {reference!r} (silent corruption, pytorch/pytorch#128497)"
                )
    except CaseFailed:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the loader raises is the reproduced failure
        # A worker death can surface first as a broken fd transfer (ConnectionResetError) and
        # then again as torch's SIGCHLD handler raising "DataLoader worker ... is killed" at any
        # bytecode, even while the first traceback is printed; the second is the root cause.
        cause: BaseException = exc
        try:
            traceback.print_exc()  # the log keeps the worker's Original Traceback
        except RuntimeError as again:
            print(f"{type(again).__name__}: {again}", file=sys.stderr, flush=True)
            cause = again
        text = str(cause).strip()
        first = text.splitlines()[0] if text else ""
        ctx.fail(f"DataLoader failed after {batches} batches: {type(cause).__name__}: {first}")
    ctx.metric("batches", batches)
    ctx.property("samples_per_epoch", SAMPLES)
