"""``ddp``: ``torch.distributed.run`` (torchrun) with 2 ranks on one machine.

Failure family 5 of ../shared/field-reports.md (O3): rendezvous, RANK/LOCAL_RANK/WORLD_SIZE
propagation, all_reduce, one DDP step with DistributedSampler, clean destroy_process_group
(gloo on CPU, nccl on >= 2 GPUs). Planted faults show what users hit:

- ``rank_raises``: rank 1 raises; the launcher must exit non-zero (pytorch/pytorch#20728: an old
  launcher returned 0; O3's wrapper printed success while a rank crashed) -> ``failed``,
  ``rank_failed``.
- ``port_in_use``: the master port is already taken, as with a hard-coded 29500
  (pytorch/pytorch#72816, meta-pytorch/torchtune#1025) -> ``failed``, ``address_in_use``.

Ranks' output is teed into the case log with a per-rank prefix (F5-6: never keep only rank 0).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

PARAMS = {"backend": ["gloo", "nccl"], "fault": ["none", "rank_raises", "port_in_use"]}
TIMEOUT_S = 120.0
NPROC = 2


def requires(params) -> list[str]:
    return [f"gpus>={NPROC}"] if params["backend"] == "nccl" else []


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
        returncode = subprocess.call(command, env=env, stdin=subprocess.DEVNULL)
    finally:
        if blocker is not None:
            blocker.close()
    ctx.property("launcher_exit", returncode)
    ctx.property("master_port", port)
    if returncode != 0:
        ctx.fail(
            f"torchrun exited with status {returncode} (backend {backend}, {NPROC} ranks, fault {fault})"
        )
    if fault != "none":
        ctx.fail(
            f"torchrun exited 0 although fault {fault!r} was planted: a failure was masked",
            signature="exit_code_masked",
        )
