"""``cuda_ipc``: tensors made in a producer process and consumed in the case process, through a
``torch.multiprocessing`` queue (spawn), with the producer staying alive or exiting early.

Failure family 5 of ../shared/field-reports.md, F5-7: ``[W CudaIPCTypes.cpp] Producer process
has been terminated before all shared CUDA tensors released. See Note [Sharing CUDA tensors]``
(zju3dv/Vox-Fusion#6, #7, #9, #24; Lucaslab-Berkeley/Leopard-EM PR #72; pytorch/pytorch#118859;
O3, whose dataset was forced to the CPU to stop it). It is a warning and the process can exit 0,
so it is warning-level here: the case records ``producer_warning`` and passes unless the data the
consumer reads is wrong (every tensor is compared with the value the producer wrote).

- ``device=cuda,sharing=cuda_ipc``: CUDA tensors cross by CUDA IPC handles.
  ``producer=waits``: the producer stays until the consumer is done (the documented pattern).
  ``producer=exits_early``: the producer exits once the consumer has received the tensors but
  before it has used them - the F5-7 situation.
- ``device=cpu``: CPU tensors cross through shared memory with
  ``torch.multiprocessing.set_sharing_strategy`` ``file_descriptor`` (fds passed over a Unix
  socket) or ``file_system`` (named shm files), same producer modes. The strategy is per
  process: a spawned producer starts with the default, so it sets the strategy itself (the case
  records the default it found, ``producer_default_strategy``).

``producer=exits_unreceived`` (not in the default grid; widen with ``params``) makes the
producer exit right after ``put`` - before the consumer received anything. Measured on
torch 2.13 CPU: ``file_descriptor`` fails to rebuild the tensor (``FileNotFoundError`` /
``ConnectionRefusedError``: the fd travels through the producer's resource-sharer socket, gone
with it); ``file_system`` failed (``RuntimeError: No such file or directory``) or passed from
run to run, depending on whether ``torch_shm_manager`` still held the segment - a race, which is
why this mode stays out of the default grid. The producer must outlive the receipt.
"""

from __future__ import annotations

import os
import queue as queue_module
import re
import sys
import time
import traceback

PARAMS = {
    "device": ["cpu", "cuda"],
    "sharing": ["file_descriptor", "file_system", "cuda_ipc"],
    "producer": ["waits", "exits_early"],
}
TIMEOUT_S = 90.0
# Zygote-eligible (repro.runner.zygote): the producer is a spawned interpreter, so the case
# process's own start does not matter (parity: tests/test_zygote.py, benchmarks/main_job.py).
PRODUCER_MODES = ("waits", "exits_early", "exits_unreceived")

TENSORS = 4
NUMEL = 1 << 20  # 4 MiB of float32 per tensor
WAIT_S = 60.0
PRODUCER_WARNING = re.compile(
    r"Producer process has been terminated before all shared CUDA tensors released"
    r"|Producer process tried to deallocate over \d+ memory blocks"
)


def valid(params) -> bool:
    on_cuda = params["device"] == "cuda"
    return on_cuda == (params["sharing"] == "cuda_ipc") and params["producer"] in PRODUCER_MODES


def requires(params) -> list[str]:
    return (
        ["accelerator", "start_method:spawn"]
        if params["device"] == "cuda"
        else ["start_method:spawn"]
    )


def expected_tensor(torch, index: int, device: str):
    """What the producer sends as tensor ``index`` (distinct values per tensor and element)."""
    return torch.arange(NUMEL, dtype=torch.float32, device=device) * 0.5 + index


def _producer(queue, received, done, device: str, sharing: str, mode: str, log_path: str) -> None:
    """Spawned producer: sends a header, then ``TENSORS`` tensors; lives as long as ``mode`` says."""
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)  # C++ warnings ([W CudaIPCTypes.cpp]) go to fd 2: keep them for the parent
    os.dup2(fd, 2)
    import torch
    import torch.multiprocessing as torch_mp

    default = torch_mp.get_sharing_strategy()
    if sharing != "cuda_ipc":
        torch_mp.set_sharing_strategy(sharing)
    queue.put(
        {
            "pid": os.getpid(),
            "default_strategy": default,
            "strategy": torch_mp.get_sharing_strategy(),
        }
    )
    for index in range(TENSORS):
        queue.put(expected_tensor(torch, index, device))
    if device == "cuda":
        torch.cuda.synchronize()
    if mode == "waits":
        done.wait(WAIT_S)
    elif mode == "exits_early":
        received.wait(WAIT_S)
    print(f"producer {os.getpid()} exiting ({mode})", flush=True)


def run(ctx, params) -> None:
    import torch
    import torch.multiprocessing as torch_mp

    device, sharing, mode = params["device"], params["sharing"], params["producer"]
    if sharing != "cuda_ipc":
        torch_mp.set_sharing_strategy(sharing)
    mp = torch_mp.get_context("spawn")
    queue, received, done = mp.Queue(), mp.Event(), mp.Event()
    log_path = os.path.join(ctx.workdir, "producer.log")
    producer = mp.Process(
        target=_producer,
        args=(queue, received, done, device, sharing, mode, log_path),
        name="ipc-producer",
    )
    ctx.heartbeat("producer_start")
    producer.start()
    try:
        header = queue.get(timeout=WAIT_S)
        ctx.property("producer_default_strategy", header["default_strategy"])
        ctx.property("producer_strategy", header["strategy"])
        if mode == "exits_unreceived":
            _wait_exit(producer)  # gone before the consumer rebuilt anything
        tensors = []
        for index in range(TENSORS):
            ctx.heartbeat("receive", index)
            try:
                tensors.append(queue.get(timeout=WAIT_S))
            except queue_module.Empty:
                ctx.fail(f"no tensor {index} from the producer within {WAIT_S:g} s")
            except (OSError, RuntimeError, EOFError) as exc:
                traceback.print_exc()
                ctx.fail(
                    f"could not rebuild tensor {index} sent with {sharing} (producer {mode}): {type(exc).__name__}: {exc}"
                )
        received.set()
        if mode == "exits_early":
            _wait_exit(producer)  # the consumer still holds every tensor
            ctx.property("producer_gone_before_use", int(not producer.is_alive()))

        ctx.heartbeat("verify")
        wrong = [
            i
            for i, t in enumerate(tensors)
            if not torch.equal(t, expected_tensor(torch, i, device))
        ]
        if device == "cuda":
            torch.cuda.synchronize()  # surface asynchronous errors inside this case
        del tensors
        if device == "cuda":
            torch.cuda.ipc_collect()
    finally:
        done.set()
        received.set()
        ctx.metric("producer_exit_wait_s", _wait_exit(producer))
        if producer.is_alive():
            producer.kill()
            _wait_exit(producer, 10.0)
        _echo_producer_log(ctx, log_path)
    ctx.property("producer_exitcode", producer.exitcode)
    if wrong:
        ctx.fail(
            f"data changed in transit: tensors {wrong} differ from what the producer wrote ({sharing}, producer {mode})"
        )
    if producer.exitcode != 0:
        ctx.fail(f"producer exited with status {producer.exitcode}")


def _wait_exit(process, timeout: float = WAIT_S) -> float:
    """Wait for ``process`` to end by polling its exit status; return the seconds waited.

    Not ``Process.join(timeout)``: join waits for EOF on the process sentinel pipe, and with the
    ``file_system`` strategy the producer starts ``torch_shm_manager``, which inherits that pipe
    and outlives the producer - join then returns only at its timeout (measured, torch 2.13).
    """
    start = time.monotonic()
    while process.is_alive() and time.monotonic() - start < timeout:
        time.sleep(0.02)
    return time.monotonic() - start


def _echo_producer_log(ctx, log_path: str) -> None:
    try:
        with open(log_path, errors="replace") as handle:
            text = handle.read()
    except OSError:
        text = ""
    for line in text.splitlines():
        print(f"[producer] {line}", file=sys.stderr, flush=True)
    warned = PRODUCER_WARNING.search(text)
    ctx.property("producer_warning", int(bool(warned)))
    if warned:
        ctx.log(f"producer warned (F5-7, warning-level): {warned.group(0)}")
