"""Child-process checks of ``repro doctor --deep`` that must touch the accelerator or /dev/shm.

Run as ``python -m repro.host.accel_probe fork [MODULE ...]``, ``... smoke`` or ``... shm BYTES``
by :mod:`repro.host.fork_check` and :mod:`repro.host.deep` under the interpreter being checked;
each prints one JSON object as its last line::

    {"check": "fork", "status": "ok" | "failed" | "n/a", "reason": "...", ...}

Like :mod:`repro.host.torch_probe`, this is a throwaway process allowed to import torch and
initialise CUDA/ROCm; nothing here is imported by the runner. ``shm`` needs no torch: a
``SIGBUS`` while it writes is the finding (the parent reads the signal from the exit status).
Kept compatible with old interpreters: images may ship any Python.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import time

OK = "ok"
FAILED = "failed"
NA = "n/a"
#: Seconds the forked child may take for its first CUDA op (context creation included).
FORK_CHILD_TIMEOUT_S = 60.0
#: Errors that mean "no device here", not "broken" (torch/c10 and HIP wording).
NO_DEVICE = (
    "no CUDA GPUs are available",
    "Found no NVIDIA driver",
    "no ROCm-capable device",
    "no HIP GPUs are available",
    "Torch not compiled with CUDA enabled",
)


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0].strip()}" if text else type(exc).__name__


def _no_device(text: str) -> bool:
    return any(marker.lower() in text.lower() for marker in NO_DEVICE)


def _import_torch():
    """(torch, accelerator "cuda"/"rocm"/None, None) or (None, None, why)."""
    try:
        import torch
    except Exception as exc:  # ImportError or a broken install: nothing to check
        return None, None, f"cannot import torch: {_line(exc)}"
    if getattr(torch.version, "hip", None):
        return torch, "rocm", None
    if getattr(torch.version, "cuda", None):
        return torch, "cuda", None
    return torch, None, None


def _cuda_op(torch) -> str:
    """A small matmul on device 0, synchronised; returns the device name."""
    x = torch.ones(64, 64, device="cuda")
    value = float((x @ x).sum().item())
    torch.cuda.synchronize()
    if value != 64.0 * 64 * 64:
        raise RuntimeError(f"matmul on the device gave {value}, expected {64.0**3}")
    return str(torch.cuda.get_device_name(0))


def fork_check(modules=("torch._dynamo",), timeout_s: float = FORK_CHILD_TIMEOUT_S) -> dict:
    """Import torch and ``modules`` (what the zygote pre-imports), check CUDA was not initialised
    by the imports, fork, and run a CUDA op in the forked child. The parent never touches the
    device before the fork; only when the child fails does it run the same op itself, to tell a
    fork problem from an accelerator that fails everywhere."""
    out = {"check": "fork", "modules": ["torch"]}
    torch, accelerator, why = _import_torch()
    if torch is None:
        out.update(status=NA, reason=why)
        return out
    # As the zygote does (repro.runner.zygote._preimport): a module that fails to import is
    # left to the case that uses it, so the check goes on with the others.
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:
            out.setdefault("not_imported", {})[name] = _line(exc)
        else:
            out["modules"].append(name)
    out["torch"] = str(torch.__version__)
    if accelerator is None:
        out.update(status=NA, reason=f"torch {torch.__version__} is a CPU build: no accelerator")
        return out
    imported = ", ".join(out["modules"])
    if torch.cuda.is_initialized():
        out.update(
            status=FAILED,
            reason=f"importing {imported} initialised {accelerator} in the parent: every forked "
            "case fails with 'Cannot re-initialize CUDA in forked subprocess'",
        )
        return out
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the forked child: the zygote's case process
        os.close(read_end)
        try:
            message = {"ok": True, "device": _cuda_op(torch)}
        except BaseException as exc:  # the error is the finding
            message = {"ok": False, "error": _line(exc)}
        os.write(write_end, json.dumps(message).encode())
        os._exit(0)
    os.close(write_end)
    deadline = time.monotonic() + timeout_s
    status = None
    while status is None:
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status = code
        elif time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_end)
            out.update(
                status=FAILED,
                reason=f"the forked child hung for {timeout_s:g} s in its first {accelerator} op "
                "(fork after import deadlocks: the zygote must start cases fresh)",
            )
            return out
        else:
            time.sleep(0.05)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        out.update(status=FAILED, reason=f"the forked child died of {name} in its first op")
        return out
    message = json.loads(data.decode() or "{}") if data else {"ok": False, "error": "no reply"}
    if message.get("ok"):
        out.update(
            status=OK,
            reason=f"{accelerator} op in a forked child of an interpreter that imported "
            f"{imported}: ok on {message.get('device')}",
        )
        return out
    error = message.get("error", "?")
    try:
        _cuda_op(torch)
        control = None
    except Exception as exc:  # the accelerator fails without fork too
        control = _line(exc)
    if control is None:
        out.update(
            status=FAILED,
            reason=f"{accelerator} works in this interpreter but not in a child forked after "
            f"importing {imported}: {error}",
        )
    elif _no_device(error) or _no_device(control):
        out.update(status=NA, reason=f"no {accelerator} device: {control}")
    else:
        out.update(
            status=NA,
            reason=f"{accelerator} fails here without a fork too ({control}): not a fork "
            "problem, see the cuda_init check",
        )
    return out


def smoke() -> dict:
    """CUDA (matmul), cuDNN/MIOpen (conv2d forward and backward) and NCCL/RCCL (a one-rank
    all_reduce through a HashStore) on device 0, each step recorded; the first failing step
    decides."""
    out = {"check": "smoke", "steps": []}
    torch, accelerator, why = _import_torch()
    if torch is None:
        out.update(status=NA, reason=why)
        return out
    out["torch"] = str(torch.__version__)
    if accelerator is None:
        out.update(status=NA, reason=f"torch {torch.__version__} is a CPU build: no accelerator")
        return out
    try:
        count = torch.cuda.device_count()
    except Exception as exc:
        count, why = 0, _line(exc)
    if count < 1:
        out.update(status=NA, reason=f"no {accelerator} device visible to torch {why or ''}")
        return out
    versions = {
        "cuda": getattr(torch.version, "cuda", None),
        "hip": getattr(torch.version, "hip", None),
    }
    steps = out["steps"]

    def step(name, run):
        try:
            detail = run()
        except Exception as exc:  # the failing step is the finding
            steps.append({"step": name, "ok": False, "detail": _line(exc)})
            return False
        steps.append({"step": name, "ok": True, "detail": detail})
        return True

    def matmul():
        return f"{_cuda_op(torch)} ({accelerator} {versions['cuda'] or versions['hip']})"

    def conv():
        if not torch.backends.cudnn.is_available():
            raise RuntimeError("cuDNN/MIOpen is not available in this build")
        torch.backends.cudnn.enabled = True
        conv = torch.nn.Conv2d(3, 8, 3, padding=1).cuda()
        image = torch.randn(2, 3, 32, 32, device="cuda", requires_grad=True)
        conv(image).square().mean().backward()
        torch.cuda.synchronize()
        if not bool(torch.isfinite(image.grad).all()):
            raise RuntimeError("conv2d backward gave non-finite gradients")
        return f"conv2d forward+backward, cudnn {torch.backends.cudnn.version()}"

    def collective():
        import torch.distributed as dist

        if not dist.is_available() or not dist.is_nccl_available():
            raise RuntimeError("this build has no NCCL/RCCL backend")
        dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
        try:
            tensor = torch.ones(4, device="cuda")
            dist.all_reduce(tensor)
            torch.cuda.synchronize()
            if float(tensor.sum().item()) != 4.0:
                raise RuntimeError(f"all_reduce gave {tensor.tolist()}")
        finally:
            dist.destroy_process_group()
        version = torch.cuda.nccl.version()
        version = ".".join(str(v) for v in version) if isinstance(version, tuple) else version
        return f"one-rank all_reduce, nccl {version}"

    for name, run in (("cuda", matmul), ("cudnn", conv), ("nccl", collective)):
        if not step(name, run):
            failed = steps[-1]
            out.update(status=FAILED, reason=f"{name}: {failed['detail']}")
            return out
    out.update(status=OK, reason="; ".join(s["detail"] for s in steps))
    return out


def shm(size: int) -> dict:
    """Create a POSIX shared-memory segment of ``size`` bytes (in /dev/shm on Linux) and write
    every page, as a DataLoader worker returning a batch does. A full /dev/shm kills this
    process with SIGBUS (the parent reports it); other failures are reported here."""
    from multiprocessing import shared_memory

    out = {"check": "shm", "bytes": size}
    try:
        segment = shared_memory.SharedMemory(create=True, size=size)
    except OSError as exc:
        out.update(status=FAILED, reason=f"cannot create a {size} byte segment: {_line(exc)}")
        return out
    # Unlinked before the first write: if SIGBUS kills this process, nothing is left in /dev/shm.
    segment.unlink()
    try:
        buffer = segment.buf
        for offset in range(0, size, 4096):
            buffer[offset] = 1
        out.update(status=OK, reason=f"wrote {size // 2**20} MiB into a shared-memory segment")
    finally:
        segment.close()
    return out


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    what = argv[0] if argv else ""
    if what == "fork":
        result = fork_check(tuple(argv[1:]) or ("torch._dynamo",))
    elif what == "smoke":
        result = smoke()
    elif what == "shm" and len(argv) == 2 and argv[1].isdigit():
        result = shm(int(argv[1]))
    else:
        sys.stderr.write(
            "usage: python -m repro.host.accel_probe fork [MODULE ...] | smoke | shm BYTES\n"
        )
        return 2
    sys.stdout.write("\n" + json.dumps(result, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
