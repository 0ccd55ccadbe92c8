"""``shm``: DataLoader workers returning large batches through shared memory (``/dev/shm``).

Failure family 1 / cross-cutting in ../shared/field-reports.md (signature
``dataloader_shm_exhausted``): a worker hands every batch to the main process through a
shared-memory segment, so ``workers x prefetch_factor`` batches must fit in ``/dev/shm`` at
once. Docker's default ``/dev/shm`` is 64 MB: 2 workers returning 50 MB samples fail there with
``RuntimeError: unable to allocate shared memory(shm) for file </torch_...>: No space left on
device (28)`` (or a worker killed by ``Bus error``) while ``--shm-size=1g`` or ``--ipc=host``
passes (measured, ../shared/DESIGN.md "Testing here"). pytorch/pytorch#5040.

The case records the size of ``/dev/shm`` (``shm.dev_shm_bytes``) and the estimate of what the
loader needs at once (``shm.needed_bytes``), so a red cell explains itself. ``workers=0`` is the
control: no worker, no shared memory, passes everywhere. Outside a container it runs too (on a
host with a large ``/dev/shm`` it passes). CPU only: the failure is in the host-side transfer.
"""

from __future__ import annotations

import os
import time
import traceback

PARAMS = {"workers": [0, 2], "sample_mb": [50]}
TIMEOUT_S = 90.0
#: A fresh interpreter (not a zygote fork, repro.runner.zygote) when its DataLoader workers are
#: forks of the case process.
FRESH = lambda params: params["workers"] > 0  # noqa: E731

SAMPLES = 8
PREFETCH_FACTOR = 2
SHM_PATH = "/dev/shm"
#: Lines that name the shared-memory failure (the runner's signature table decides the name).
_EVIDENCE = ("shared memory", "shm", "bus error", "no space left on device")


def requires(params) -> list[str]:
    return ["start_method:fork"] if params["workers"] else []


class LargeSamples:
    """Map-style dataset of ``SAMPLES`` float32 tensors of ``sample_mb`` MB each, value = index.

    A plain class (not ``torch.utils.data.Dataset``) so the module imports without torch."""

    def __init__(self, sample_mb: int):
        self.elements = int(sample_mb) * 1024 * 1024 // 4

    def __len__(self) -> int:
        return SAMPLES

    def __getitem__(self, index: int):
        import torch

        return torch.full((self.elements,), float(index), dtype=torch.float32)


def shm_bytes(path: str = SHM_PATH) -> tuple[int, int] | None:
    """(total, free) bytes of the filesystem at ``path``; None where there is none."""
    try:
        stat = os.statvfs(path)
    except OSError:
        return None
    return stat.f_blocks * stat.f_frsize, stat.f_bavail * stat.f_frsize


def evidence_line(text: str) -> str:
    """The line of an exception text that names the shared-memory failure, else its last line
    (a DataLoader re-raises a worker's error as ``Caught RuntimeError in DataLoader worker
    process 0.`` with the worker's own message at the end of the Original Traceback)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for line in lines:
        if any(word in line.lower() for word in _EVIDENCE) and not line.startswith("File "):
            return line
    return lines[-1] if lines else ""


def run(ctx, params) -> None:
    import torch
    from torch.utils.data import DataLoader

    workers = int(params["workers"])
    sample_bytes = int(params["sample_mb"]) * 1024 * 1024
    sizes = shm_bytes()
    if sizes is not None:
        ctx.property("shm.dev_shm_bytes", sizes[0])
        ctx.property("shm.dev_shm_free_bytes", sizes[1])
        ctx.log(f"/dev/shm: {sizes[0] / 2**20:.0f} MiB, {sizes[1] / 2**20:.0f} MiB free")
    else:
        ctx.property("shm.dev_shm_bytes", "none")
    needed = workers * PREFETCH_FACTOR * sample_bytes
    ctx.property("shm.needed_bytes", needed)
    ctx.property("shm.sharing_strategy", torch.multiprocessing.get_sharing_strategy())

    loader = DataLoader(
        LargeSamples(params["sample_mb"]),
        batch_size=1,
        num_workers=workers,
        prefetch_factor=PREFETCH_FACTOR if workers else None,
        multiprocessing_context="fork" if workers else None,
    )
    batches = 0
    started = time.perf_counter()
    try:
        for index, batch in enumerate(loader):
            ctx.heartbeat("batch", index)
            if float(batch[0, 0]) != float(index) or batch.numel() * 4 != sample_bytes:
                ctx.fail(
                    f"batch {index}: wrong content or size ({batch.shape}, first value {float(batch[0, 0])})"
                )
            batches += 1
    except RuntimeError as exc:
        traceback.print_exc()  # the log keeps the worker's Original Traceback for classification
        line = evidence_line(str(exc)) or type(exc).__name__
        have = f"/dev/shm {sizes[0] / 2**20:.0f} MiB" if sizes else "no /dev/shm"
        ctx.fail(
            f"DataLoader failed after {batches} batches ({have}, about {needed / 2**20:.0f} MiB needed): {line}"
        )
    elapsed = time.perf_counter() - started
    ctx.metric("batches", batches)
    ctx.metric("mb_per_s", batches * sample_bytes / 2**20 / elapsed if elapsed > 0 else 0.0)
