"""``model``: 10 training steps of a DBNet-style text detector on synthetic data.

Failure family 3/4 of ../shared/field-reports.md, origin O1: a DBNet (ResNet-18 encoder, FPN
decoder, DB head) trained with Dice + masked L1 + balanced BCE hit ``CUDNN_STATUS_EXECUTION_FAILED``
in the FPN fusion conv around steps 10-14, an illegal instruction in backward, ``NaN/Inf gradient
detected in model.encoder...`` and the Dice ``assert loss <= 1`` (F4-1, F4-4) - on WSL2 with an
RTX 3060, while the same code trained on native Linux. O1's own check was "synthetic-data
forward/backward of the full model passed 10/10": this is that check, as a matrix cell, so a host
where it fails is told apart from one where only the real pipeline fails.

Each step is forward, loss, backward, SGD step (MhLiao/DB's lr 0.007, momentum 0.9), with a
heartbeat; loss and every gradient must be finite. Shapes: 2 x 3 x 320 x 320 on cpu (fast
enough for the CPU lane), 4 x 3 x 640 x 640 on cuda (DB's training crop). Records
``metric.step_s`` (median seconds per step), ``metric.it_per_s`` (median steps per second, with
``.spread`` and ``.n``: ``repro.measurement``) and ``metric.first_step_s``.
"""

from __future__ import annotations

import time
import traceback

PARAMS = {"device": ["cpu", "cuda"]}
TIMEOUT_S = 240.0
EXCLUSIVE = True  # runs alone under -j N (every core): step_s and it_per_s are measured

STEPS = 10
#: device -> (batch, image size). The CPU lane keeps every step of the loop on a small shape
#: (2 x 320 px took over 60 s on a 2-core host); the GPU lane keeps the field's size.
SHAPES = {"cpu": (2, 160), "cuda": (4, 640)}


def requires(params) -> list[str]:
    return ["accelerator"] if params["device"] == "cuda" else []


def run(ctx, params) -> None:
    import torch

    from repro.scenarios import _dbnet

    device = torch.device(params["device"])
    batch_size, size = SHAPES[device.type]
    torch.manual_seed(0)
    model = _dbnet.DBNet(k=50.0, step_form="sigmoid").to(device)
    criterion = _dbnet.DBLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.007, momentum=0.9, weight_decay=1e-4)
    batch = _dbnet.synthetic_batch(batch_size, size, device=device)
    ctx.property("parameters", sum(p.numel() for p in model.parameters()))
    ctx.property("input_shape", f"{batch_size}x3x{size}x{size}")
    if device.type == "cuda":
        ctx.property("device_name", torch.cuda.get_device_name(device))
        ctx.property("cudnn_version", torch.backends.cudnn.version())

    times, losses, step = [], [], 0
    try:
        for step in range(STEPS):
            ctx.heartbeat("step", step)
            start = time.perf_counter()
            out = model(batch["image"])
            loss, _parts = _dbnet.training_loss(ctx, criterion, out, batch, step)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            value = float(loss.detach())
            _dbnet.check_finite(ctx, step, loss=loss, grads=model)
            optimizer.step()
            if device.type == "cuda":
                torch.cuda.synchronize(device)  # surface asynchronous kernel errors at this step
            times.append(time.perf_counter() - start)
            losses.append(value)
    except RuntimeError as exc:  # incl. torch.AcceleratorError; the log line names the cause
        traceback.print_exc()
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        ctx.fail(f"step {step}: {first}")
    median = sorted(times)[len(times) // 2]
    ctx.metric("step_s", median)
    # steps per second with its spread over the steps (repro.measurement): what compare weighs
    ctx.measurement("it_per_s", [1.0 / t for t in times if t > 0])
    ctx.metric("first_step_s", times[0])
    ctx.metric("first_loss", losses[0])
    ctx.metric("final_loss", losses[-1])
    ctx.log(f"{STEPS} steps, median {median:.3f} s/step, loss {losses[0]:.3f} -> {losses[-1]:.3f}")
