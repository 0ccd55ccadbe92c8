"""torch.distributed's environment from Slurm's, for ranks that ``srun`` starts itself.

``torchrun`` hands each rank RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT. When
``srun`` starts the ranks instead (one task per rank, ``--ntasks-per-node`` = GPUs per node),
each task has Slurm's variables (srun(1), OUTPUT ENVIRONMENT VARIABLES) and the training script
maps them, as Lightning's SLURMEnvironment and most cluster templates do:

- RANK <- SLURM_PROCID (the task's rank in the step, 0..ntasks-1)
- WORLD_SIZE <- SLURM_NTASKS (or SLURM_STEP_NUM_TASKS: the step's task count)
- LOCAL_RANK <- SLURM_LOCALID (the task's index on its node)
- MASTER_ADDR <- the first host of SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST), unless set
- MASTER_PORT <- a port the job chose (every task must agree on it)

Measured inside a 22.05.8 allocation of this project (``sbatch --ntasks=2``): ``srun -n2`` gives
``SLURM_PROCID=0/1 SLURM_NTASKS=2 SLURM_LOCALID=0/1``. Stdlib only (the worker imports it
before torch).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_RANGE = re.compile(r"^([^\[,]*)\[([^\]]+)\](.*)$")


def first_host(nodelist: str) -> str:
    """The first host of a Slurm host list: ``gpu[03-05,09]`` -> ``gpu03``, ``a,b`` -> ``a``,
    ``node7`` -> ``node7`` (what ``scontrol show hostnames LIST | head -1`` prints)."""
    text = nodelist.strip()
    match = _RANGE.match(text)
    if match and "," not in match.group(1):
        prefix, ranges, _suffix = match.groups()
        return prefix + ranges.split(",")[0].split("-")[0]
    return text.split(",")[0]


def torch_env(
    environ: Mapping[str, str], master_port: int, world_size: int | None = None
) -> dict[str, str]:
    """RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from ``environ`` (a task's
    Slurm variables). ``world_size`` overrides the task count: what a script does that takes
    its world size from its own configuration (``devices=2``) instead of from Slurm, the
    mistake of a job submitted without ``--ntasks-per-node``. Raises KeyError when
    SLURM_PROCID or the task count is missing (not a task that srun started)."""
    tasks = environ.get("SLURM_STEP_NUM_TASKS") or environ["SLURM_NTASKS"]
    nodes = environ.get("SLURM_STEP_NODELIST") or environ.get("SLURM_JOB_NODELIST") or ""
    return {
        "RANK": environ["SLURM_PROCID"],
        "LOCAL_RANK": environ.get("SLURM_LOCALID", "0"),
        "WORLD_SIZE": str(world_size) if world_size is not None else tasks,
        "MASTER_ADDR": environ.get("MASTER_ADDR") or first_host(nodes) or "127.0.0.1",
        "MASTER_PORT": str(master_port),
    }
