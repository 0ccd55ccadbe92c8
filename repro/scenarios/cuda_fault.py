"""``cuda_fault``: inject a device-side assert, then try to "fall back to the CPU" in the same process.

Why repro-matrix isolates every case in its own process. A device-side assert (here: an index
out of range, read by a kernel on the device) or an illegal memory access is a *sticky* CUDA
error: it poisons the process's CUDA context, and every later CUDA call in that process fails
with the same error, including the copy a "fall back to the CPU" needs to bring tensors home
(pytorch/pytorch#2300: "Once a device-side assert is triggered the whole CUDA context is put
into an incorrect state"; #49019, #74079; stanford-oval/genienlp#181). The seed reports' in-process
CPU fallback after a CUDA error (O1) therefore cannot work; a fresh process can.

The case, on ``device=cuda``:

1. ``device_assert``: ``x[idx]`` with ``idx`` out of range on the device, then a synchronize.
   ``RuntimeError: CUDA error: device-side assert triggered`` is expected (``torch.AcceleratorError``
   from torch 2.8); no error at all is a failed check (AssertionError).
2. ``cpu_fallback``: what a fallback does next, each in turn: copy the CUDA tensor to the CPU,
   allocate a new CUDA tensor, synchronize. Each failure is recorded (``fallback.N`` properties).
3. ``fresh_process``: a new interpreter runs a small CUDA computation (``FRESH_TIMEOUT_S``).

Verdict: later calls failed and the fresh process worked -> ``failed`` with
``cuda_context_poisoned`` (the reproduced behaviour, a red cell by design, like the other fault
scenarios); the fresh process failed too -> ``error`` (the host or driver is broken, its output
is in the log); no later call failed -> ``passed`` (this torch/driver recovered; worth knowing).

``device=cpu`` (the CPU lane): skipped with the reason; the out-of-range index raises
``IndexError`` on the spot there and nothing is sticky. Imports torch only inside ``run``.
"""

from __future__ import annotations

import subprocess
import sys

PARAMS = {"device": ["cuda"]}
TIMEOUT_S = 120.0
FRESH = True  # a new interpreter per case (repro.runner.zygote): its subject is a poisoned CUDA context versus a fresh process
EXCLUSIVE = True  # runs alone under -j N: it poisons the device's CUDA context on purpose
OPT_IN = True  # runs only when matrix.yaml names it (it faults the GPU on purpose)
#: Seconds the fresh process may take (import torch + CUDA init + one kernel).
FRESH_TIMEOUT_S = 90.0
#: The fresh process: one CUDA computation, its result on stdout.
FRESH_PROBE = (
    "import torch; x = torch.arange(4.0, device='cuda'); "
    "print('fresh-process-ok', float((x * 2).sum().item()))"
)
CPU_REASON = (
    "cuda_fault needs a CUDA/ROCm device: on the CPU an out-of-range index raises IndexError "
    "at once and no error is sticky"
)


def requires(params) -> list[str]:
    return ["accelerator"]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def run(ctx, params) -> None:
    if params.get("device", "cuda") != "cuda":
        ctx.skip(CPU_REASON)
    import torch

    if not torch.cuda.is_available():
        ctx.skip(f"torch {torch.__version__} sees no CUDA/ROCm device")

    ctx.heartbeat("device_assert")
    x = torch.zeros(8, device="cuda")
    index = torch.tensor([8], device="cuda")  # one past the end: the check runs on the device
    try:
        x[index].sum()
        torch.cuda.synchronize()
    except RuntimeError as exc:  # torch.AcceleratorError subclasses RuntimeError (>= 2.8)
        first = _first_line(exc)
    else:
        raise AssertionError("an out-of-range index on the device raised no error")
    ctx.property("fault", first)
    ctx.log(f"injected: {first}")

    ctx.heartbeat("cpu_fallback")
    attempts = (
        ("copy the CUDA tensor to the CPU", lambda: x.cpu()),
        ("allocate a new CUDA tensor", lambda: (torch.ones(2, device="cuda") + 1).cpu()),
        ("synchronize the device", torch.cuda.synchronize),
    )
    failed = []
    for number, (what, call) in enumerate(attempts):
        try:
            call()
        except RuntimeError as exc:
            failed.append(f"{what}: {_first_line(exc)}")
            ctx.property(f"fallback.{number}", f"failed: {_first_line(exc)}")
        else:
            ctx.property(f"fallback.{number}", f"worked: {what}")
    ctx.metric("fallback_calls_failed", len(failed))

    ctx.heartbeat("fresh_process")
    fresh = _fresh_process()
    ctx.property("fresh_process", fresh[1])
    if not fresh[0]:
        ctx.log(fresh[2])  # the fresh process's own output: the log classifies it
        raise RuntimeError(f"a fresh process could not use CUDA either: {fresh[1]}")
    if failed:
        ctx.fail(
            f"after the device-side assert {len(failed)}/{len(attempts)} later CUDA calls in "
            f"this process failed ({failed[0]}); a fresh process worked: the context is "
            "poisoned, only a new process recovers",
            signature="cuda_context_poisoned",
        )
    ctx.log("every later CUDA call worked after the assert: this build recovered in-process")


def _fresh_process() -> tuple[bool, str, str]:
    """``(worked, one line, full output)`` of :data:`FRESH_PROBE` in a new interpreter."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", FRESH_PROBE],
            capture_output=True,
            text=True,
            timeout=FRESH_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, f"no answer within {FRESH_TIMEOUT_S:g} s", ""
    output = (done.stdout or "") + (done.stderr or "")
    if done.returncode == 0 and "fresh-process-ok" in done.stdout:
        return True, done.stdout.strip().splitlines()[-1], output
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return False, f"exit status {done.returncode}: {lines[-1] if lines else 'no output'}", output
