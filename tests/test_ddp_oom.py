"""ddp[fault=oom_halving]: the allocator cap leaves its headroom to activations.

On Hopper torch gives cuBLAS a 32 MiB workspace from the caching allocator (pytorch/pytorch#89027);
with the cap taken before the probe's first step, weights (16 MiB) + gradients (16 MiB) + that
workspace fill the 64 MiB headroom and even batch 1 fails, for a reason that is not the recovery
path. Runs the real ``_oom_halving`` on the CPU with ``torch.cuda``'s memory functions replaced
by a capped allocator (same signatures as torch's) that refuses batches above 256 once capped.
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import torch

from repro.scenarios import _ddp_worker as worker

MiB = 2**20
TOTAL = 80 * 2**30  # an H100's memory
RESERVED_AFTER_STEP = 64 * MiB  # weights + gradients + cuBLAS workspace (Hopper)
FITS = 256


def test_the_cap_is_taken_after_a_batch_one_step(monkeypatch):
    events: list[tuple] = []
    capped = {"fraction": None}
    real_linear = torch.nn.functional.linear

    def linear(x, weight, bias=None):
        events.append(("matmul", x.shape[0]))
        if capped["fraction"] is not None and x.shape[0] > FITS:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB")
        return real_linear(x, weight, bias)

    def set_per_process_memory_fraction(fraction, device=None):
        capped["fraction"] = fraction
        events.append(("cap", fraction))

    fakes = {
        "get_device_properties": lambda device=None: SimpleNamespace(total_memory=TOTAL),
        "memory_reserved": lambda device=None: RESERVED_AFTER_STEP,
        "set_per_process_memory_fraction": set_per_process_memory_fraction,
        "empty_cache": lambda: None,
        "synchronize": lambda device=None: None,
    }
    for name, fake in fakes.items():  # each double takes what torch's function takes
        real = inspect.signature(getattr(torch.cuda, name))
        assert list(inspect.signature(fake).parameters) == list(real.parameters), name
        monkeypatch.setattr(torch.cuda, name, fake)
    monkeypatch.setattr(torch.nn.functional, "linear", linear)
    monkeypatch.setattr(worker.dist, "all_reduce", lambda tensor, op=None, group=None: None)

    final, retries = worker._oom_halving(torch.device("cpu"), rank=0)

    assert events[0] == ("matmul", 1)  # the batch-1 step reserves weights, grads, workspace ...
    cap_at = events.index(("cap", capped["fraction"]))
    assert cap_at > 0  # ... before the cap is taken
    assert capped["fraction"] == (RESERVED_AFTER_STEP + worker.OOM_HEADROOM_BYTES) / TOTAL
    assert (final, retries) == (FITS, 8)  # 65536 halved 8 times
