"""``cuda_basic``: is the device usable at all? Tensor ops, conv forward, backward, and 10
repeated backward passes.

Failure family: the cross-cutting environment failures and Family 3 of
../shared/field-reports.md - ``no kernel image is available`` (pytorch/pytorch#150733), driver
too old (pytorch/pytorch PR #162531), ``CUDA error: an illegal instruction was encountered`` and
``CUDNN_STATUS_EXECUTION_FAILED`` in backward (O1). On ``cpu`` it is the control row.
"""

from __future__ import annotations

PARAMS = {"device": ["cpu", "cuda"]}
TIMEOUT_S = 120.0


def requires(params) -> list[str]:
    return ["accelerator"] if params["device"] == "cuda" else []


def run(ctx, params) -> None:
    import torch

    device = torch.device(params["device"])
    ctx.heartbeat("tensor_ops")
    a = torch.randn(256, 256, device=device)
    b = torch.randn(256, 256, device=device)
    c = (a @ b).relu_().sum()
    assert torch.isfinite(c), f"matmul produced {c.item()}"
    ctx.property(
        "device_name", torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    )

    ctx.heartbeat("conv_forward")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1),
        torch.nn.BatchNorm2d(16),
        torch.nn.ReLU(),
        torch.nn.Conv2d(16, 8, 3, padding=1),
    ).to(device)
    x = torch.randn(4, 3, 64, 64, device=device)
    y = model(x)
    assert y.shape == (4, 8, 64, 64), f"unexpected output shape {tuple(y.shape)}"

    ctx.heartbeat("backward")
    y.float().pow(2).mean().backward()
    _check_grads(model)

    for step in range(10):
        ctx.heartbeat("repeated_backward", step)
        model.zero_grad(set_to_none=True)
        loss = model(x).float().pow(2).mean()
        loss.backward()
        assert torch.isfinite(loss), f"loss is {loss.item()} at step {step}"
        _check_grads(model)
    if device.type == "cuda":
        torch.cuda.synchronize(device)  # surface asynchronous kernel errors inside this case
    ctx.metric("final_loss", float(loss))


def _check_grads(model) -> None:
    import torch

    for name, param in model.named_parameters():
        assert param.grad is not None, f"no gradient for {name}"
        assert torch.isfinite(param.grad).all(), f"NaN/Inf gradient detected in {name}"
