"""``cudnn``: conv forward/backward under the cuDNN knobs users flip, and the "test phase" sequence.

Failure family 3 of ../shared/field-reports.md: ``CUDNN_STATUS_EXECUTION_FAILED`` in the FPN
decoder's fusion conv and ``FIND was unable to find an engine`` at ``loss.backward()`` (O1),
cuDNN failures only with AMP/fp16 in backward (pytorch/pytorch#50475), with
``cudnn.benchmark=True`` (pytorch/pytorch#27115), on arch-unsupported builds (F3-2,
pytorch/pytorch#32881), and the DBNet validation-step cuDNN error (WenmuZhou/DBNet.pytorch#61,
F3-7): eval runs under ``torch.no_grad()`` with other batch and image sizes, and with
``benchmark=True`` each new shape triggers a new algorithm search.

The network is a DB-head-like conv stack (strided convs, a 3x3 "fusion" conv, BatchNorm,
transposed convs back to full resolution). Each case trains 5 SGD steps and checks that outputs,
loss and gradients are finite; ``phase=train_then_eval`` then evaluates three batches of other
shapes under ``no_grad``; ``deterministic=1`` also checks that two identical backward passes give
bitwise-identical gradients. cuDNN/CUDA errors fail the case and the runner names them from the
log (``cudnn_execution_failed``, ``cudnn_no_engine``, ...).

Grid (pruned by :func:`valid`): ``benchmark``/``deterministic`` are cuDNN flags, so the cpu lane
runs with both off; never both on; fp16 only on cuda; reduced precision without
``deterministic``, and on cuda with ``benchmark`` on (the AMP-style setup); channels_last with
fp32 on cpu and with fp16/bf16 on cuda; ``train_then_eval`` in fp32 NCHW (the DBNet report).
"""

from __future__ import annotations

import time
import traceback

PARAMS = {
    "device": ["cpu", "cuda"],
    "dtype": ["fp32", "fp16", "bf16"],
    "benchmark": [False, True],
    "deterministic": [False, True],
    "channels_last": [False, True],
    "phase": ["train", "train_then_eval"],
}
TIMEOUT_S = 120.0
EXCLUSIVE = True  # runs alone under -j N (every core): step_s and eval_s are measured

STEPS = 5
#: (batch, height, width) of the training batch per device, and the eval batches after it.
TRAIN_SHAPE = {"cpu": (4, 128, 128), "cuda": (8, 256, 256)}
EVAL_SHAPES = ((1, 160, 224), (3, 96, 128), (2, 224, 160))


def valid(params) -> bool:
    bench, det = bool(params["benchmark"]), bool(params["deterministic"])
    dtype, cl, cpu = params["dtype"], bool(params["channels_last"]), params["device"] == "cpu"
    if bench and det:
        return False
    if cpu and (bench or det or dtype == "fp16"):
        return False  # cuDNN flags do nothing on the cpu; fp16 conv training is a GPU setup
    if dtype != "fp32" and (det or (not cpu and not bench)):
        return False
    if cl and (params["phase"] != "train" or (dtype == "fp32") != cpu):
        return False
    return not (params["phase"] == "train_then_eval" and (dtype != "fp32" or det))


def requires(params) -> list[str]:
    return ["accelerator"] if params["device"] == "cuda" else []


def build_net(torch):
    """The DB-head-like conv stack: (N,3,H,W) -> logits (N,1,H,W); H, W multiples of 4."""
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(32),
        nn.ReLU(inplace=True),
        nn.Conv2d(32, 64, 3, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(inplace=True),
        nn.Conv2d(64, 64, 3, padding=1, bias=False),  # stands for the FPN fusion conv (O1)
        nn.BatchNorm2d(64),
        nn.ReLU(inplace=True),
        nn.ConvTranspose2d(64, 32, 2, 2),
        nn.BatchNorm2d(32),
        nn.ReLU(inplace=True),
        nn.ConvTranspose2d(32, 1, 2, 2),
    )


def run(ctx, params) -> None:
    import torch

    from repro.scenarios import _dbnet

    device = torch.device(params["device"])
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[params["dtype"]]
    fmt = torch.channels_last if params["channels_last"] else torch.contiguous_format
    torch.backends.cudnn.benchmark = bool(params["benchmark"])
    torch.backends.cudnn.deterministic = bool(params["deterministic"])
    if device.type == "cuda":
        ctx.property("cudnn_version", torch.backends.cudnn.version())
        ctx.property("cudnn_enabled", torch.backends.cudnn.enabled)
        ctx.property("device_name", torch.cuda.get_device_name(device))
    else:
        ctx.property("mkldnn_available", torch.backends.mkldnn.is_available())

    torch.manual_seed(0)
    net = build_net(torch).to(device=device, dtype=dtype, memory_format=fmt)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    batch, height, width = TRAIN_SHAPE[device.type]
    data = _dbnet.synthetic_batch(batch, (height, width), device=device)
    images = data["image"].to(dtype=dtype).contiguous(memory_format=fmt)
    target = data["gt"]

    step_times = []
    phase, step = "train", 0
    try:
        for step in range(STEPS):
            ctx.heartbeat("train", step)
            start = time.perf_counter()
            loss = _train_step(torch, net, optimizer, images, target)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            step_times.append(time.perf_counter() - start)
            _dbnet.check_finite(ctx, step, loss=loss, grads=net, note=" (train phase)")
        ctx.metric("step_s", sorted(step_times)[len(step_times) // 2])
        ctx.metric("final_loss", float(loss))

        if params["deterministic"]:
            phase = "determinism"
            ctx.heartbeat("determinism")
            diff = _repeat_backward_diff(torch, net, images, target)
            ctx.metric("grad_max_abs_diff", diff)
            if diff != 0.0:
                ctx.fail(
                    f"cudnn.deterministic=True but two identical backward passes differ by {diff:g}"
                )

        if params["phase"] == "train_then_eval":
            phase = "eval"
            net.eval()
            start = time.perf_counter()
            with torch.no_grad():
                for step, (n, h, w) in enumerate(EVAL_SHAPES):
                    ctx.heartbeat("eval", step)
                    x = torch.randn(n, 3, h, w, device=device, dtype=dtype).contiguous(
                        memory_format=fmt
                    )
                    out = net(x)
                    assert out.shape == (n, 1, h, w), (
                        f"eval output shape {tuple(out.shape)} for input {(n, 3, h, w)}"
                    )
                    if not torch.isfinite(out).all():
                        ctx.fail(
                            f"eval batch {step} {(n, 3, h, w)}: output has NaN/Inf",
                            signature="nan_detected",
                        )
            if device.type == "cuda":
                torch.cuda.synchronize(device)  # surface asynchronous errors of the eval phase
            ctx.metric("eval_s", time.perf_counter() - start)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    except RuntimeError as exc:  # incl. torch.AcceleratorError; the log line names the cause
        traceback.print_exc()
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        ctx.fail(f"{phase} step {step}: {first}")


def _train_step(torch, net, optimizer, images, target):
    optimizer.zero_grad(set_to_none=True)
    logits = net(images)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits.float(), target)
    loss.backward()
    optimizer.step()
    return loss.detach()


def _repeat_backward_diff(torch, net, images, target) -> float:
    """Largest absolute difference between the gradients of two identical backward passes."""
    state = {k: v.clone() for k, v in net.state_dict().items()}  # BatchNorm stats move per pass
    grads = []
    for _ in range(2):
        net.load_state_dict(state)
        net.zero_grad(set_to_none=True)
        logits = net(images)
        torch.nn.functional.binary_cross_entropy_with_logits(logits.float(), target).backward()
        grads.append([p.grad.detach().float().clone() for p in net.parameters()])
    return max(float((a - b).abs().max()) for a, b in zip(*grads, strict=True))
