"""``amp``: mixed-precision training of the DBNet-style model - autocast, GradScaler, and the
sigmoid + BCE loss that autocast refuses.

Failure family 4 of ../shared/field-reports.md:

- F4-5: MhLiao/DB's ``BalanceCrossEntropyLoss`` calls ``F.binary_cross_entropy`` on the sigmoid
  map; under CUDA autocast that raises ``RuntimeError: torch.nn.functional.binary_cross_entropy
  and torch.nn.BCELoss are unsafe to autocast`` (pytorch/pytorch#61098,
  Lightning-AI/pytorch-lightning#13871, Megvii-BaseDetection/YOLOX#336, SysCV/transfiner#43), so
  "try mixed precision" fails at once on DB-style heads. ``loss=bce`` is that code (expected red
  on cuda: ``failed``, ``amp_bce_unsafe``); ``loss=bce_logits`` is the fix
  (``binary_cross_entropy_with_logits`` on the logits).
- F4-6/F4-7: AMP making DBNet diverge (PaddlePaddle/PaddleOCR#10874, #8085) and loss-scaler
  messages (NVIDIA/apex#592, #715): occasional skipped steps are normal, a scale that collapses
  below 1 means every step overflowed -> ``failed``, ``nan_detected``.

Lanes: fp16 with ``torch.amp.GradScaler`` on cuda only; bf16 on cpu and cuda, without a scaler.
On the CPU, torch 2.13's autocast runs ``binary_cross_entropy`` in float32 and raises nothing
(measured), so ``device=cpu,loss=bce`` passes: the refusal is CUDA-autocast behaviour, and the
case records ``bce_dtype`` to show what really ran.
"""

from __future__ import annotations

import time
import traceback

PARAMS = {"device": ["cpu", "cuda"], "dtype": ["fp16", "bf16"], "loss": ["bce_logits", "bce"]}
TIMEOUT_S = 180.0
#: Reproductions red by design (the report shows them as expected, and flags one that ever
#: passes): matrix.yaml's ``expect:`` entries, kept beside the scenario (issue 20); the
#: file's own entries override these (``repro.config.load``).
EXPECT = [
    {
        "case": "amp[device=cuda,dtype=fp16,loss=bce]",
        "outcome": "failed",
        "signature": "amp_bce_unsafe",
        "reason": (
            "torch.nn.functional.binary_cross_entropy is unsafe to autocast on CUDA: the DB "
            "head's sigmoid + BCE refuses at once (the fix is bce_logits)"
        ),
        "link": "https://github.com/pytorch/pytorch/issues/61098",
    },
]
EXCLUSIVE = True  # runs alone under -j N (every core): step_s and it_per_s are measured

#: device -> (batch, image size, steps). The CPU lane checks the same autocast/GradScaler path on
#: a small shape: bf16 autocast of the DBNet at 2 x 256 px took 120-180 s on a 2-core host.
SHAPES = {"cpu": (1, 64, 2), "cuda": (4, 640, 10)}


def valid(params) -> bool:
    if params["dtype"] == "fp16":
        return params["device"] == "cuda"  # fp16 autocast is the GPU setup
    # bf16 + bce on cuda refuses exactly like fp16 + bce: one red cell is enough
    return not (params["device"] == "cuda" and params["loss"] == "bce")


def requires(params) -> list[str]:
    return ["accelerator"] if params["device"] == "cuda" else []


def run(ctx, params) -> None:
    import torch

    from repro.scenarios import _dbnet

    device = torch.device(params["device"])
    dtype = torch.float16 if params["dtype"] == "fp16" else torch.bfloat16
    batch_size, size, steps = SHAPES[device.type]
    torch.manual_seed(0)
    model = _dbnet.DBNet(k=50.0, step_form="sigmoid").to(device)
    criterion = _dbnet.DBLoss(from_logits=params["loss"] == "bce_logits")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.007, momentum=0.9, weight_decay=1e-4)
    scaler = torch.amp.GradScaler("cuda") if dtype == torch.float16 else None
    batch = _dbnet.synthetic_batch(batch_size, size, device=device)
    ctx.property("grad_scaler", int(scaler is not None))

    times, skipped, step = [], 0, 0
    try:
        for step in range(steps):
            ctx.heartbeat("step", step)
            start = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device.type, dtype=dtype):
                out = model(batch["image"])
                # the loss inside autocast, as Lightning's precision=16 computes it
                loss, parts = _dbnet.training_loss(ctx, criterion, out, batch, step)
            if step == 0:
                ctx.property("autocast_map_dtype", str(out["prob"].dtype).replace("torch.", ""))
                ctx.property("bce_dtype", str(parts["bce"].dtype).replace("torch.", ""))
            note = f" under {params['dtype']} autocast"
            _dbnet.check_finite(ctx, step, loss=loss, note=note)
            if scaler is None:
                loss.backward()
                _dbnet.check_finite(ctx, step, grads=model, note=note)
                optimizer.step()
            else:
                scale = scaler.get_scale()
                scaler.scale(loss).backward()
                scaler.step(optimizer)  # skips the step when the unscaled grads hold inf/NaN
                scaler.update()
                if scaler.get_scale() < scale:
                    skipped += 1
                    ctx.log(
                        f"step {step}: inf/NaN gradients, loss scale {scale:g} -> {scaler.get_scale():g} (step skipped)"
                    )
            if device.type == "cuda":
                torch.cuda.synchronize(device)  # surface asynchronous kernel errors at this step
            times.append(time.perf_counter() - start)
    except RuntimeError as exc:  # incl. torch.AcceleratorError
        traceback.print_exc()
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        signature = "amp_bce_unsafe" if "unsafe to autocast" in str(exc) else None
        ctx.fail(f"step {step}: {first}", signature=signature)

    if scaler is not None:
        ctx.metric("skipped_steps", skipped)
        ctx.metric("final_scale", scaler.get_scale())
        if skipped == steps or scaler.get_scale() < 1.0:
            ctx.fail(
                f"loss scale collapsed to {scaler.get_scale():g} ({skipped} of {steps} steps skipped; F4-7)",
                signature="nan_detected",
            )
    median = sorted(times)[len(times) // 2]
    ctx.metric("step_s", median)
    # steps per second with its spread over the steps (repro.measurement): what compare weighs
    ctx.measurement("it_per_s", [1.0 / t for t in times if t > 0])
    ctx.metric("final_loss", float(loss.detach()))
