"""The training script torchrun starts in each rank for the ``ddp`` scenario.

``python -m torch.distributed.run ... --module repro.scenarios._ddp_worker --backend B --fault F``.
Checks RANK/LOCAL_RANK/WORLD_SIZE propagation, rendezvous, an all_reduce, one DDP step with a
DistributedSampler (parameters identical on every rank afterwards), and a clean
``destroy_process_group``. ``--fault rank_raises`` makes rank 1 raise after the all_reduce;
``--fault rank_segfault`` kills rank 1 with SIGSEGV there; ``--fault duplicate_gpu`` ignores
LOCAL_RANK so every rank lands on GPU 0 (F5-4: NCCL's "Duplicate GPU detected").
"""

from __future__ import annotations

import argparse
import os
import signal
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


@record  # writes the rank's traceback to the error file torchrun reports as root cause
def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=["gloo", "nccl"], required=True)
    parser.add_argument("--fault", default="none")
    args = parser.parse_args()

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
    dist.init_process_group(args.backend, timeout=timedelta(seconds=60))
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

    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(64, 10), torch.randn(64, 1))
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    model = DistributedDataParallel(
        torch.nn.Linear(10, 1).to(device),
        device_ids=[local_rank] if device.type == "cuda" else None,
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs, targets = next(iter(loader))
    loss = torch.nn.functional.mse_loss(model(inputs.to(device)), targets.to(device))
    loss.backward()
    optimizer.step()

    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    reference = flat.clone()
    dist.broadcast(reference, src=0)
    assert torch.equal(flat, reference), "parameters differ across ranks after a DDP step"
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank}: DDP step ok, loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
