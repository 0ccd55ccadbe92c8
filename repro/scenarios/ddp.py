"""``ddp``: ``torch.distributed.run`` (torchrun) with 2 ranks on one machine.

Failure family 5 of ../shared/field-reports.md (O3): rendezvous, RANK/LOCAL_RANK/WORLD_SIZE
propagation, all_reduce, one DDP step with DistributedSampler, clean destroy_process_group
(gloo on CPU, nccl on >= 2 GPUs). Planted faults show what users hit:

- ``rank_raises``: rank 1 raises; the launcher must exit non-zero (pytorch/pytorch#20728: an old
  launcher returned 0; O3's wrapper printed success while a rank crashed) -> ``failed``,
  ``rank_failed``.
- ``port_in_use``: the master port is already taken, as with a hard-coded 29500
  (pytorch/pytorch#72816, meta-pytorch/torchtune#1025) -> ``failed``, ``address_in_use``.
- ``duplicate_gpu`` (nccl only, needs just 1 GPU): every rank ignores LOCAL_RANK and uses GPU 0,
  as when a script never calls ``torch.cuda.set_device`` (F5-4: Peterande/D-FINE#289,
  Lightning-AI/pytorch-lightning#4420) -> ``failed``, ``nccl_duplicate_gpu``.
- ``masked_segfault``: rank 1 segfaults and a wrapper script prints "Training pipeline
  completed" and exits 0 (O3; huggingface/accelerate#996) -> the launcher's output still shows
  the rank failure, so the case is ``failed`` with ``exit_code_masked``.

Any case whose launcher exits 0 while its output shows a failure signature is reported as
``exit_code_masked`` (F5-5: parse the failure summary, never trust a wrapper's exit status).

Ranks' output is teed into the case log with a per-rank prefix (F5-6: never keep only rank 0).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from repro.signatures import engine as signatures

#: What O3's launcher script did: run the job, then report success whatever happened.
MASKING_WRAPPER = (
    "import subprocess, sys; subprocess.call(sys.argv[1:]); "
    "print('\\u2713 Training pipeline completed', flush=True); sys.exit(0)"
)
#: Warning-level signatures that do not make a run failed (field reports, precedence rule 1).
_HARMLESS = {"fork_multithread_warning", "cuda_ipc_producer_terminated"}

PARAMS = {
    "backend": ["gloo", "nccl"],
    "fault": ["none", "rank_raises", "port_in_use", "masked_segfault", "duplicate_gpu"],
}
TIMEOUT_S = 120.0
NPROC = 2


def valid(params) -> bool:
    return params["fault"] != "duplicate_gpu" or params["backend"] == "nccl"


def requires(params) -> list[str]:
    if params["backend"] != "nccl":
        return []
    # The duplicate-GPU error needs only one GPU: that is the point of it.
    return ["accelerator"] if params["fault"] == "duplicate_gpu" else [f"gpus>={NPROC}"]


def free_port() -> int:
    """A TCP port nobody listens on right now (bound then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def occupy(port: int) -> socket.socket:
    """Listen on ``port`` on every address (dual-stack when IPv6 exists), like a leftover job."""
    try:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(("::", port))
    except OSError:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("0.0.0.0", port))
    sock.listen(1)
    return sock


def launcher_command(port: int, backend: str, fault: str, log_dir: str) -> list[str]:
    """The torchrun command line (wrapped in the masking script for ``masked_segfault``)."""
    if fault == "masked_segfault":
        wrapped = launcher_command(port, backend, "rank_segfault", log_dir)
        return [sys.executable, "-c", MASKING_WRAPPER, *wrapped]
    return [
        sys.executable, "-m", "torch.distributed.run",
        "--nnodes=1", f"--nproc-per-node={NPROC}",
        "--master-addr=127.0.0.1", f"--master-port={port}",
        "--max-restarts=0", "--tee=3", f"--log-dir={log_dir}",
        "--module", "repro.scenarios._ddp_worker",
        "--backend", backend, "--fault", fault,
    ]  # fmt: skip


def run(ctx, params) -> None:
    backend, fault = params["backend"], params["fault"]
    port = free_port()
    blocker = occupy(port) if fault == "port_in_use" else None
    env = dict(os.environ, OMP_NUM_THREADS="1")
    command = launcher_command(port, backend, fault, os.path.join(ctx.workdir, "torchrun"))
    ctx.log(" ".join(command))
    ctx.heartbeat("launcher")
    try:
        returncode, output = _tee(command, env)
    finally:
        if blocker is not None:
            blocker.close()
    ctx.property("launcher_exit", returncode)
    ctx.property("master_port", port)
    if returncode != 0:
        ctx.fail(
            f"torchrun exited with status {returncode} (backend {backend}, {NPROC} ranks, fault {fault})"
        )
    found = signatures.classify(output)
    if found.name != signatures.UNKNOWN and found.name not in _HARMLESS:
        ctx.fail(
            f"launcher exited 0 but its output shows {found.name}: {found.message}",
            signature="exit_code_masked",
        )
    if fault != "none":
        ctx.fail(
            f"launcher exited 0 although fault {fault!r} was planted and nothing shows it",
            signature="exit_code_masked",
        )


def _tee(command: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run ``command``, copying its output to the case log as it comes; returns (status, text)."""
    proc = subprocess.Popen(
        command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert proc.stdout is not None
    chunks = []
    for raw in proc.stdout:
        sys.stdout.buffer.write(raw)
        sys.stdout.flush()
        chunks.append(raw.decode("utf-8", errors="replace"))
    return proc.wait(), "".join(chunks)
