"""The training script torchrun starts in each rank for the ``ddp`` scenario.

``python -m torch.distributed.run ... --module repro.scenarios._ddp_worker --backend B
--workers N --log-file PATH [--fault F]``, or under ``srun`` with ``--launcher srun
--master-port P`` (torch's variables mapped from Slurm's: ``repro.scenarios._slurm_env``). Set up as the field runs DDP (F5-1/O3, issue 14):
RANK/LOCAL_RANK/WORLD_SIZE propagation, rendezvous, an all_reduce, one epoch over a
DistributedSampler loader with ``num_workers`` N (``pin_memory`` on GPU), logging from rank 0
only (decided by ``RANK``, as O3's rank-0-only wandb), parameters identical on every rank
afterwards, and a clean ``destroy_process_group``.

Faults: ``rank_raises`` makes rank 1 raise after the all_reduce; ``rank_segfault`` kills rank 1
with SIGSEGV there; ``duplicate_gpu`` ignores LOCAL_RANK so every rank lands on GPU 0 (F5-4:
NCCL's "Duplicate GPU detected"); ``oom_halving`` (GPU only) caps the allocator and starts with
a batch too large for it: ``torch.cuda.OutOfMemoryError`` is caught, the batch halved and the
step retried, and rank 0 prints ``oom_recovery: start_batch=S final_batch=F retries=R``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

SAMPLES = 64
BATCH = 8
FEATURES = 10
#: oom_halving: the first batch size tried, the hidden width, and how much device memory beyond
#: what a batch-1 step reserved the capped allocator allows (bytes, activations only). 65536 x
#: 1024 fp32 inputs alone are 256 MiB, so the first attempts must fail and a few hundred fit.
#: The batch-1 step comes first because weights (16 MiB), gradients (16 MiB) and cuBLAS's
#: workspace, which torch takes from the same caching allocator (32 MiB per handle on Hopper:
#: pytorch/pytorch#89027), would otherwise fill a 64 MiB headroom before any activation.
OOM_START_BATCH = 65536
OOM_WIDTH = 1024
OOM_HEADROOM_BYTES = 64 * 2**20


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=["gloo", "nccl"], required=True)
    parser.add_argument("--fault", default="none")
    parser.add_argument("--workers", type=int, default=0, help="DataLoader num_workers")
    parser.add_argument("--log-file", required=True, help="rank 0's metrics (JSON lines)")
    parser.add_argument(
        "--launcher",
        choices=["torchrun", "srun"],
        default="torchrun",
        help="who started this rank: torchrun (its env) or srun (SLURM_* mapped to torch's env)",
    )
    parser.add_argument("--master-port", type=int, default=0, help="srun: the agreed port")
    parser.add_argument(
        "--world-size",
        type=int,
        default=None,
        help="srun: the world size the job believes in, instead of SLURM_NTASKS (the mistake "
        "of a job submitted without --ntasks-per-node)",
    )
    parser.add_argument("--ranks-dir", default=None, help="write this process's rank record here")
    parser.add_argument("--init-timeout", type=float, default=60.0, help="seconds")
    return parser.parse_args()


def _record_rank(ranks_dir: str | None) -> None:
    """One JSON file per rank process (RANK, WORLD_SIZE, LOCAL_RANK, SLURM_PROCID, pid), written
    before the rendezvous: the scenario counts the processes a launcher really started."""
    if not ranks_dir:
        return
    record = {
        "pid": os.getpid(),
        "rank": int(os.environ["RANK"]),
        "world_size": int(os.environ["WORLD_SIZE"]),
        "local_rank": int(os.environ.get("LOCAL_RANK", "0")),
        "slurm_procid": os.environ.get("SLURM_PROCID"),
    }
    path = os.path.join(ranks_dir, f"rank-{os.getpid()}.json")
    with open(path + ".tmp", "w") as handle:
        json.dump(record, handle)
    os.replace(path + ".tmp", path)


def _train_epoch(model, device, workers: int, rank: int, world: int, log_file: str) -> int:
    """One epoch over a DistributedSampler loader; rank 0 alone appends one record per step."""
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(SAMPLES, FEATURES), torch.randn(SAMPLES, 1))
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=0)
    sampler.set_epoch(0)
    loader = DataLoader(
        dataset,
        batch_size=BATCH,
        sampler=sampler,
        num_workers=workers,
        pin_memory=device.type == "cuda",  # the field's setting; only meaningful on a GPU
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    is_logger = int(os.environ["RANK"]) == 0  # rank-0-only logging, decided as O3 did
    steps = 0
    for inputs, targets in loader:
        optimizer.zero_grad(set_to_none=True)
        outputs = model(inputs.to(device, non_blocking=True))
        loss = torch.nn.functional.mse_loss(outputs, targets.to(device, non_blocking=True))
        loss.backward()
        optimizer.step()
        if is_logger:
            with open(log_file, "a") as handle:
                handle.write(json.dumps({"rank": rank, "step": steps, "loss": loss.item()}) + "\n")
        steps += 1
    return steps


def _oom_halving(device, rank: int) -> tuple[int, int]:
    """Find a batch that fits a capped allocator by halving on OutOfMemoryError, in lock-step.

    Each attempt runs without any collective (so a rank that runs out of memory cannot strand
    the others inside an all-reduce); the ranks then agree (all_reduce MIN of "it fit") and all
    halve together. Returns (final batch, retries); the caller takes the real DDP step.
    """
    probe = torch.nn.Sequential(
        torch.nn.Linear(OOM_WIDTH, 4 * OOM_WIDTH),
        torch.nn.ReLU(),
        torch.nn.Linear(4 * OOM_WIDTH, 1),
    ).to(device)
    # Weights, gradients and the cuBLAS workspace are reserved by a batch-1 step before the cap,
    # so the headroom is the activations' alone (OOM_HEADROOM_BYTES).
    probe(torch.randn(1, OOM_WIDTH, device=device)).square().mean().backward()
    probe.zero_grad(set_to_none=False)  # gradients stay allocated, inside the reserved bytes
    torch.cuda.synchronize(device)
    total = torch.cuda.get_device_properties(device).total_memory
    allowed = torch.cuda.memory_reserved(device) + OOM_HEADROOM_BYTES
    torch.cuda.set_per_process_memory_fraction(min(1.0, allowed / total), device)
    batch, retries = OOM_START_BATCH, 0
    while batch >= 1:
        fitted = 1
        try:
            inputs = torch.randn(batch, OOM_WIDTH, device=device)
            probe(inputs).square().mean().backward()
        except torch.cuda.OutOfMemoryError:
            fitted = 0
        inputs = None
        probe.zero_grad(set_to_none=False)
        torch.cuda.empty_cache()
        agreed = torch.tensor([fitted], device=device)
        dist.all_reduce(agreed, op=dist.ReduceOp.MIN)
        if agreed.item() == 1:
            return batch, retries
        batch //= 2
        retries += 1
    raise RuntimeError("oom_halving: not even a batch of 1 fits the capped allocator")


@record  # writes the rank's traceback to the error file torchrun reports as root cause
def main() -> None:
    args = _parse()
    if args.launcher == "srun":  # srun started this rank: torch's variables from Slurm's
        from repro.scenarios._slurm_env import torch_env

        os.environ.update(torch_env(os.environ, args.master_port, args.world_size))
    _record_rank(args.ranks_dir)
    rank, local_rank, world = (int(os.environ[k]) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE"))
    print(
        f"rank {rank}: RANK={rank} LOCAL_RANK={local_rank} WORLD_SIZE={world} MASTER_PORT={os.environ.get('MASTER_PORT')}",
        flush=True,
    )
    if args.backend == "nccl":
        gpu = 0 if args.fault == "duplicate_gpu" else local_rank
        torch.cuda.set_device(gpu)  # without this, every rank lands on GPU 0 (F5-4)
        device = torch.device("cuda", gpu)
    else:
        device = torch.device("cpu")
    dist.init_process_group(args.backend, timeout=timedelta(seconds=args.init_timeout))
    assert dist.get_rank() == rank, f"dist rank {dist.get_rank()} != RANK {rank}"
    assert dist.get_world_size() == world, (
        f"dist world size {dist.get_world_size()} != WORLD_SIZE {world}"
    )

    value = torch.tensor([rank + 1.0], device=device)
    dist.all_reduce(value)
    expected = world * (world + 1) / 2
    assert value.item() == expected, f"all_reduce gave {value.item()}, expected {expected}"

    if args.fault == "rank_raises" and rank == 1:
        raise RuntimeError("repro planted failure: rank 1 raises after all_reduce")
    if args.fault == "rank_segfault" and rank == 1:
        os.kill(os.getpid(), signal.SIGSEGV)
    if args.fault == "oom_halving":
        final, retries = _oom_halving(device, rank)
        if rank == 0:
            print(
                f"oom_recovery: start_batch={OOM_START_BATCH} final_batch={final} retries={retries}",
                flush=True,
            )

    model = DistributedDataParallel(
        torch.nn.Linear(FEATURES, 1).to(device),
        device_ids=[local_rank] if device.type == "cuda" else None,
    )
    steps = _train_epoch(model, device, args.workers, rank, world, args.log_file)

    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    reference = flat.clone()
    dist.broadcast(reference, src=0)
    assert torch.equal(flat, reference), "parameters differ across ranks after DDP steps"
    dist.barrier()
    # Drop what holds the process group (DDP) and collective tensors first, so that
    # destroy_process_group really ends it and joins gloo's threads. Otherwise a "pt_gloo_runloop"
    # thread may still free the last collective's work (a Python-owned tensor: it needs the GIL)
    # while the interpreter finalizes, and CPython <= 3.13 force-exits it: "terminate called
    # without an active exception", SIGABRT, torchrun exit 1 after "DDP step ok" (gdb backtrace,
    # python/cpython#87135; measured here: 2 of 44 two-rank gloo runs beside load, 0 of 100 so).
    del model, flat, reference, value
    gc.collect()
    dist.destroy_process_group()
    print(f"rank {rank}: DDP step ok, {steps} steps, {args.workers} loader workers", flush=True)


if __name__ == "__main__":
    main()
