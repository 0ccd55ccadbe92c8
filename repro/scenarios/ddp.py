"""``ddp``: ``torch.distributed.run`` (torchrun) with 1..N ranks on one machine.

Failure family 5 of ../shared/field-reports.md (O3), set up as the field runs it (issue 14):
world size as an axis (1 and 2 ranks on CPU with gloo; on GPUs up to the visible count with
nccl, ``requires gpus>=N``; 1 rank is the field's single-GPU DDP), a DistributedSampler loader
with ``num_workers`` 0/2 (``pin_memory`` on GPU), logging from rank 0 only (by ``RANK``; the
scenario checks that rank 0 alone wrote the metrics file), rendezvous, RANK/LOCAL_RANK/WORLD_SIZE
propagation, all_reduce, clean destroy_process_group. Planted faults run at one point of the grid
(``FAULT_WORLD_SIZE`` ranks, no loader workers) and show what users hit:

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

- ``oom_halving`` (nccl only): the batch-size-halving OOM recovery path - a capped allocator,
  ``torch.cuda.OutOfMemoryError`` caught, batch halved, step retried in lock-step on every rank;
  ``passed`` when it recovers, with ``metric.oom_retries`` and ``metric.oom_final_batch``. The CPU
  lane lists it skipped (no device memory to exhaust). Not yet run on a GPU by this project.

Launchers (issue 33, item 4; the ``launcher`` axis, ``torchrun`` by default): inside a Slurm
allocation the ranks can also be started by ``srun`` (one task per rank; each maps SLURM_PROCID,
SLURM_NTASKS, SLURM_LOCALID and the node list to RANK, WORLD_SIZE, LOCAL_RANK and MASTER_ADDR:
``repro.scenarios._slurm_env``), and two mistakes users make there are reproduced (world size 2,
no loader workers, no planted fault):

- ``srun_torchrun``: torchrun inside an srun step of several tasks per node. Each srun task
  starts its own torchrun, which starts its own ranks: 2 x 2 rank processes for a world of 2,
  two independent worlds (``--standalone``: each picks its own port) doing the same work, on
  GPUs fighting over the same devices -> ``failed``, ``slurm_double_launch``
  (Lightning-AI/pytorch-lightning#4389: "multiple processes are assigned the same global rank").
- ``srun_ntasks_missing``: a job submitted without ``--ntasks-per-node`` gets one task per node;
  the script takes its world size from its own configuration (2 devices), so rank 0 waits in
  ``init_process_group`` for a rank that never starts (Lightning-AI/pytorch-lightning#8707:
  "it seems like it is able to get 4 GPUs initialized, and then hangs waiting for the rest";
  #10150) -> ``failed``, ``slurm_ntasks_mismatch`` after the rendezvous timeout
  (:data:`SRUN_INIT_TIMEOUT_S`).

Without an allocation (no ``SLURM_JOB_ID``, or no ``srun`` on PATH) those cases are skipped
with the reason; ``repro slurm`` runs them on the cluster. srun steps use ``--overcommit`` so a
task that asked for one CPU can still start its ranks (measured: without it a 1-task job's
``srun -n2`` fails "More processors requested than permitted").

Any case whose launcher exits 0 while its output shows a failure signature is reported as
``exit_code_masked`` (F5-5: parse the failure summary, never trust a wrapper's exit status).

Ranks' output is teed into the case log with a per-rank prefix (F5-6: never keep only rank 0).
"""

from __future__ import annotations

import json
import os
import re
import shutil
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
_OOM_LINE = re.compile(
    r"oom_recovery: start_batch=(?P<start>\d+) final_batch=(?P<final>\d+) retries=(?P<retries>\d+)"
)

PARAMS = {
    "backend": ["gloo", "nccl"],
    # Ranks on this machine; on GPU hosts widen with matrix.yaml params (e.g. [1, 2, 4, 8]).
    "world_size": [1, 2],
    "workers": [0, 2],  # DataLoader num_workers per rank
    "fault": [
        "none", "rank_raises", "port_in_use", "masked_segfault", "duplicate_gpu", "oom_halving",
    ],
    # Who starts the ranks: torchrun, or srun inside a Slurm allocation (and its two mistakes).
    "launcher": ["torchrun", "srun", "srun_torchrun", "srun_ntasks_missing"],
}  # fmt: skip
QUIET_DEFAULTS = {"fault": "none", "launcher": "torchrun"}
#: The launchers that need a Slurm allocation (srun).
SRUN_LAUNCHERS = ("srun", "srun_torchrun", "srun_ntasks_missing")
#: Seconds a rank waits in init_process_group for the others (srun_ntasks_missing waits all
#: of it: short, so the case costs seconds, not the default 30 minutes).
SRUN_INIT_TIMEOUT_S = 15.0
TIMEOUT_S = 120.0
#: Reproductions red by design (the report shows them as expected, and flags one that ever
#: passes): matrix.yaml's ``expect:`` entries, kept beside the scenario (issue 20); the
#: file's own entries override these (``repro.config.load``).
EXPECT = [
    {
        "case": "ddp[backend=*,fault=rank_raises]",
        "outcome": "failed",
        "signature": "rank_failed",
        "reason": "planted fault: rank 1 raises, so the launcher must exit non-zero",
        "link": "https://github.com/pytorch/pytorch/issues/20728",
    },
    {
        "case": "ddp[backend=*,fault=port_in_use]",
        "outcome": "failed",
        "signature": "address_in_use",
        "reason": "planted fault: the master port is already taken (a hard-coded 29500)",
        "link": "https://github.com/pytorch/pytorch/issues/72816",
    },
    {
        "case": "ddp[backend=*,fault=masked_segfault]",
        "outcome": "failed",
        "signature": "exit_code_masked",
        "reason": (
            "planted fault: a rank segfaults and a wrapper exits 0; the failure must still be "
            "found in the launcher's output"
        ),
        "link": "https://github.com/huggingface/accelerate/issues/996",
    },
    {
        "case": "ddp[backend=*,launcher=srun_torchrun]",
        "outcome": "failed",
        "signature": "slurm_double_launch",
        "reason": (
            "a launcher mistake reproduced: torchrun inside an srun step of 2 tasks starts "
            "2 x 2 ranks for a world of 2"
        ),
        "link": "https://github.com/Lightning-AI/pytorch-lightning/issues/4389",
    },
    {
        "case": "ddp[backend=*,launcher=srun_ntasks_missing]",
        "outcome": "failed",
        "signature": "slurm_ntasks_mismatch",
        "reason": (
            "a launcher mistake reproduced: without --ntasks-per-node srun starts 1 task, the "
            "ranks expect 2, rank 0 waits for rank 1 until the rendezvous times out"
        ),
        "link": "https://github.com/Lightning-AI/pytorch-lightning/issues/8707",
    },
    {
        "case": "ddp[backend=nccl,*,fault=duplicate_gpu]",
        "outcome": "failed",
        "signature": "nccl_duplicate_gpu",
        "reason": "planted fault: both ranks on GPU 0 because LOCAL_RANK is ignored",
        "link": "https://github.com/Lightning-AI/pytorch-lightning/issues/4420",
    },
]
# Zygote-eligible (repro.runner.zygote): torchrun and its ranks are new interpreters, so the case
# process that starts them may be a fork (parity: tests/test_zygote.py).
#: Under -j N nccl cases run alone: each rank takes a whole GPU. gloo cases use free ports.
#: srun cases too: two srun steps at once could wait for each other's share of the allocation.
EXCLUSIVE = lambda params: params["backend"] == "nccl" or params["launcher"] != "torchrun"  # noqa: E731
#: Where in the grid the planted faults run: one world size and loader, as before the grid grew.
FAULT_WORLD_SIZE = 2
FAULT_WORKERS = 0


def valid(params) -> bool:
    fault, backend = params["fault"], params["backend"]
    launcher = params.get("launcher", "torchrun")
    if launcher != "torchrun":  # srun launchers: no planted fault, no loader workers
        if fault != "none" or params["workers"] != FAULT_WORKERS:
            return False
        return launcher == "srun" or params["world_size"] == FAULT_WORLD_SIZE
    if fault == "none":
        return True
    if params["workers"] != FAULT_WORKERS:
        return False
    if fault == "oom_halving":  # a device-memory path; any world size (1 GPU is enough)
        return backend == "nccl"
    if fault == "duplicate_gpu" and backend != "nccl":
        return False
    return params["world_size"] == FAULT_WORLD_SIZE


def requires(params) -> list[str]:
    if params["backend"] != "nccl":
        return []
    # The duplicate-GPU error needs only one GPU: that is the point of it.
    if params["fault"] == "duplicate_gpu" or params["world_size"] == 1:
        return ["accelerator"]
    return [f"gpus>={params['world_size']}"]


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


def launcher_command(
    port: int, params: dict, log_dir: str, metrics_file: str, fault: str | None = None
) -> list[str]:
    """The torchrun command line (wrapped in the masking script for ``masked_segfault``).

    ``params``: the case's backend, world_size, workers, fault; ``metrics_file``: where rank 0
    logs; ``fault`` overrides ``params["fault"]`` (the wrapped inner command)."""
    fault = fault or params["fault"]
    if fault == "masked_segfault":
        wrapped = launcher_command(port, params, log_dir, metrics_file, "rank_segfault")
        return [sys.executable, "-c", MASKING_WRAPPER, *wrapped]
    return [
        sys.executable, "-m", "torch.distributed.run",
        "--nnodes=1", f"--nproc-per-node={params['world_size']}",
        "--master-addr=127.0.0.1", f"--master-port={port}",
        "--max-restarts=0", "--tee=3", f"--log-dir={log_dir}",
        "--module", "repro.scenarios._ddp_worker",
        "--backend", params["backend"], "--fault", fault,
        "--workers", str(params["workers"]), "--log-file", metrics_file,
    ]  # fmt: skip


def slurm_allocation_missing(environ=None) -> str | None:
    """Why srun cannot start ranks here (no allocation, no srun), or None."""
    environ = os.environ if environ is None else environ
    if not environ.get("SLURM_JOB_ID"):
        return (
            "no Slurm allocation here (SLURM_JOB_ID is not set): srun starts ranks only inside "
            "sbatch/salloc; `repro slurm` runs these cases on a cluster"
        )
    if shutil.which("srun") is None:
        return "srun is not on PATH inside this Slurm allocation"
    return None


def srun_command(params: dict, port: int, metrics_file: str, ranks_dir: str) -> list[str]:
    """The srun command line of a ``launcher=srun*`` case (one node, ``--overcommit``)."""
    world, launcher = params["world_size"], params["launcher"]
    worker = [
        "--backend", params["backend"], "--workers", str(params["workers"]),
        "--log-file", metrics_file, "--ranks-dir", ranks_dir,
        "--init-timeout", f"{SRUN_INIT_TIMEOUT_S:g}",
    ]  # fmt: skip
    srun = ["srun", "--nodes=1", "--overcommit", "--kill-on-bad-exit=1", "--unbuffered"]
    srun_worker = [sys.executable, "-m", "repro.scenarios._ddp_worker", "--launcher", "srun",
                   "--master-port", str(port), *worker]  # fmt: skip
    if launcher == "srun":
        return [*srun, f"--ntasks={world}", f"--ntasks-per-node={world}", *srun_worker]
    if launcher == "srun_ntasks_missing":  # one task (no --ntasks-per-node), world from config
        return [*srun, "--ntasks=1", *srun_worker, "--world-size", str(world)]
    if launcher == "srun_torchrun":  # each srun task runs a torchrun of `world` ranks
        return [
            *srun, f"--ntasks={world}", f"--ntasks-per-node={world}",
            sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc-per-node={world}", "--max-restarts=0",
            "--module", "repro.scenarios._ddp_worker", *worker,
        ]  # fmt: skip
    raise ValueError(f"not an srun launcher: {launcher!r}")


def _rank_records(ranks_dir: str) -> list[dict]:
    out = []
    for name in sorted(os.listdir(ranks_dir)):
        if name.endswith(".json"):
            with open(os.path.join(ranks_dir, name)) as handle:
                out.append(json.load(handle))
    return out


def _check_srun_ranks(ctx, params, ranks_dir: str) -> None:
    """The two launcher mistakes, judged by the rank processes that really started."""
    world = params["world_size"]
    records = _rank_records(ranks_dir)
    ranks = sorted(r["rank"] for r in records)
    tasks = sorted({r["slurm_procid"] for r in records if r["slurm_procid"] is not None})
    ctx.metric("rank_processes", len(records))
    ctx.property("ranks_started", ",".join(map(str, ranks)))
    if len(records) > world or len(set(ranks)) < len(ranks):
        twice = sorted({r for r in ranks if ranks.count(r) > 1})
        ctx.fail(
            f"{len(records)} rank processes for WORLD_SIZE {world} (RANK "
            f"{', '.join(map(str, twice))} more than once): {len(tasks)} srun tasks each "
            f"started their own torchrun of {world} ranks",
            signature="slurm_double_launch",
        )
    if len(records) < world:
        ctx.fail(
            f"srun started {len(records)} of the {world} ranks the job expects (SLURM_NTASKS="
            f"{len(tasks)}, no --ntasks-per-node): rank 0 waited {SRUN_INIT_TIMEOUT_S:g} s in "
            "init_process_group for the others",
            signature="slurm_ntasks_mismatch",
        )


def run(ctx, params) -> None:
    backend, fault, world = params["backend"], params["fault"], params["world_size"]
    launcher = params.get("launcher", "torchrun")
    if launcher != "torchrun":
        missing = slurm_allocation_missing()
        if missing:
            ctx.skip(missing)
    port = free_port()
    blocker = occupy(port) if fault == "port_in_use" else None
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if backend == "nccl":
        # The evidence the field asks for first (issue reports on NCCL init/network failures):
        # NCCL's own INIT and NET lines land in the case log. A user's own setting wins.
        env.setdefault("NCCL_DEBUG", "INFO")
        env.setdefault("NCCL_DEBUG_SUBSYS", "INIT,NET")
        ctx.property("nccl_debug", f"{env['NCCL_DEBUG']}/{env['NCCL_DEBUG_SUBSYS']}")
    metrics_file = os.path.join(ctx.workdir, "rank0-metrics.jsonl")
    ranks_dir = os.path.join(ctx.workdir, "ranks")
    if launcher == "torchrun":
        command = launcher_command(
            port, params, os.path.join(ctx.workdir, "torchrun"), metrics_file
        )
    else:
        os.makedirs(ranks_dir)
        # One node: every rank is local, whatever the node's name resolves to.
        env["MASTER_ADDR"] = "127.0.0.1"
        command = srun_command(params, port, metrics_file, ranks_dir)
    ctx.log(" ".join(command))
    ctx.heartbeat("launcher")
    try:
        returncode, output = _tee(command, env)
    finally:
        if blocker is not None:
            blocker.close()
    ctx.property("launcher_exit", returncode)
    ctx.property("master_port", port)
    if launcher != "torchrun":
        ctx.property("launcher", launcher)
        if launcher != "srun":
            _check_srun_ranks(ctx, params, ranks_dir)
    if returncode != 0:
        ctx.fail(
            f"torchrun exited with status {returncode} (backend {backend}, {world} ranks, fault {fault})"
        )
    found = signatures.classify(output)
    if found.name != signatures.UNKNOWN and found.name not in _HARMLESS:
        ctx.fail(
            f"launcher exited 0 but its output shows {found.name}: {found.message}",
            signature="exit_code_masked",
        )
    if fault not in ("none", "oom_halving"):
        ctx.fail(
            f"launcher exited 0 although fault {fault!r} was planted and nothing shows it",
            signature="exit_code_masked",
        )

    _check_rank0_logging(ctx, metrics_file)
    if fault == "oom_halving":
        _record_oom_recovery(ctx, output)


def _check_rank0_logging(ctx, metrics_file: str) -> None:
    """Rank 0, and only rank 0, wrote one metrics record per step."""
    try:
        with open(metrics_file) as handle:
            records = [json.loads(line) for line in handle if line.strip()]
    except FileNotFoundError:
        ctx.fail("rank 0 logged nothing: the rank-0-only logger never ran")
    ranks = sorted({record["rank"] for record in records})
    ctx.property("logging_ranks", ",".join(map(str, ranks)))
    ctx.metric("rank0_logged_steps", len(records))
    if ranks != [0]:
        ctx.fail(f"metrics were logged by ranks {ranks}; only rank 0 may log (RANK=0)")


def _record_oom_recovery(ctx, output: str) -> None:
    """Record what the OOM recovery did (rank 0's ``oom_recovery:`` line)."""
    found = _OOM_LINE.search(output)
    if found is None:
        ctx.fail("oom_halving ran but rank 0 reported no oom_recovery line")
    start, final, retries = (int(found.group(k)) for k in ("start", "final", "retries"))
    ctx.metric("oom_start_batch", start)
    ctx.metric("oom_final_batch", final)
    ctx.metric("oom_retries", retries)
    ctx.property("oom_recovery", "recovered" if retries else "no OOM at the first batch")
    if retries == 0:
        ctx.fail(f"the capped allocator fitted batch {start}: the recovery path was not exercised")


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
