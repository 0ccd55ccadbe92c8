"""``dataloader``: DataLoader workers under each start method, with and without the accelerator
initialised in the parent; measures start-up apart from steady throughput.

Failure family 1 of ../shared/field-reports.md: CUDA touched in a forked worker
(``Cannot re-initialize CUDA in forked subprocess``, pytorch/pytorch#77159, #40403; silent data
change #128497), worker deaths (``DataLoader worker (pid N) is killed by signal``,
pytorch/pytorch#5040), spawn start-up cost (pytorch/pytorch#103117, O1 "spawn 10x slower"),
persistent workers on re-iteration (pytorch/pytorch#48370, #62066), and the ROCm fork deadlock
(O2) when the accelerator is initialised before the workers fork.

The CPU lane runs at most ``CPU_LANE_MAX_WORKERS`` workers; the accelerator lane the whole
``workers`` axis. With ``workers=0`` the loader runs in the main process and the start method
does not apply. Each case iterates the loader twice:

1. The first iteration measures start-up and steady state. Its sampler keeps handing out
   indices (pass after pass over the dataset) until the measurement is done, so the windows
   last as long as they need on any host. Start-up: ``first_batch_s`` (time to the first
   batch), ``startup_s`` (until every worker has delivered a batch) and ``worker_start_s``
   (median of the workers' own start latencies, each from ``iter()`` to its first sample, read
   on the worker's ``CLOCK_MONOTONIC``; ``.spread``/``.n`` over the workers). Steady state:
   after every worker has delivered and the prefetch queue has turned over once,
   ``STEADY_WINDOWS`` windows of at least ``WINDOW_S`` seconds and ``WINDOW_MIN_BATCHES``
   batches each; ``steady_it_per_s`` is their median it/s with ``.spread`` (interquartile
   range) and ``.n`` (``repro.measurement``), and ``steady_it_per_cpu_s`` the same windows'
   batches per CPU second of the loader's processes (main and workers, per-thread schedstat):
   on a host shared with other jobs the first moved 3x between runs of one build, the second
   under 10 % (``repro compare`` counts a drop of the first only when the second dropped too). The H100 run showed why: the old ``it_per_s``,
   11 batches right after the first, read 879 and 18 it/s for two configurations that should
   agree, depending on whether the other workers had finished importing torch.
2. The second iteration is one pass: ``epoch2_first_batch_s`` is its start-up, what persistent
   workers win back.

Every complete pass of both iterations is checked against the checksum computed in the main
process, so a silent data change fails the case.

``fault`` plants a failure for the test suite (not in the default catalogue):
``worker_exception`` raises in a worker, ``worker_segfault`` kills a worker with SIGSEGV,
``worker_hang`` blocks a worker forever (the parent waits in ``_try_get_data``: O2's freeze),
``worker_touches_accel`` does the real anti-pattern (a CUDA tensor created inside the worker).
``$REPRO_DATALOADER_SLOWDOWN`` (a whole factor, default 1) makes the dataset do its work that
many times per sample without changing any case id: the planted slowdown
``benchmarks/metric_stability.py`` must find.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback

from repro import measurement

PARAMS = {
    "device": ["cpu", "cuda"],
    "start_method": ["fork", "spawn", "forkserver"],
    "workers": [0, 2, 4],
    "persistent": [False, True],
    "accel_init": [False, True],
    "fault": ["none"],
}
TIMEOUT_S = 90.0
#: A fresh interpreter (not a zygote fork, repro.runner.zygote) where the workers are forks of
#: the case process; spawn and forkserver workers are new interpreters either way.
FRESH = lambda params: params["workers"] > 0 and params["start_method"] == "fork"  # noqa: E731
EXCLUSIVE = True  # runs alone under -j N: time to first batch and it/s are its measurements
QUIET_DEFAULTS = {"fault": "none"}
FAULTS = ("none", "worker_exception", "worker_segfault", "worker_hang", "worker_touches_accel")

SAMPLES = 96
BATCH_SIZE = 8
IMAGE_SHAPE = (3, 96, 96)
#: The dataset's blur (its per-sample work, see SyntheticImages): kernel side and box passes;
#: 1.3 ms of CPU per sample here, about as much per batch as a batch's trip from a worker.
BLUR = 7
BLUR_PASSES = 3
#: Steady state: this many windows, each at least WINDOW_S seconds and WINDOW_MIN_BATCHES batches
#: (a fast GPU host gets hundreds of batches per window, a loaded 2-core host a dozen).
STEADY_WINDOWS = 5
WINDOW_S = 0.25
WINDOW_MIN_BATCHES = 4
#: Batches a DataLoader keeps in flight per worker (torch's default prefetch_factor): the steady
#: windows start once that queue has turned over after the last worker's first batch.
PREFETCH_FACTOR = 2
#: The planted slowdown (see the module docstring).
SLOWDOWN_ENV = "REPRO_DATALOADER_SLOWDOWN"
#: The CPU lane's worker counts stop here (issue 13 item 5: CPU lanes shrink, accelerator lanes
#: keep the field's sizes). Each spawn/forkserver worker imports torch (~1.8 CPU-s), so the four-
#: worker cases cost 42 of the main job's 190 CPU-seconds on a 2-core host and told nothing the
#: two-worker cases do not: start-up cost per worker, persistence across epochs, data integrity.
CPU_LANE_MAX_WORKERS = 2


def valid(params) -> bool:
    if params["workers"] == 0 and (params["start_method"] != "fork" or params["persistent"]):
        return False  # one in-process case: start method and persistence do not apply
    if params["accel_init"] and params["device"] != "cuda":
        return False  # nothing to initialise on the cpu lane
    if params["device"] == "cpu" and params["workers"] > CPU_LANE_MAX_WORKERS:
        return False
    return params["fault"] in FAULTS


def requires(params) -> list[str]:
    needs = [f"start_method:{params['start_method']}"] if params["workers"] else []
    if params["device"] == "cuda":
        needs.append("accelerator")
    return needs


class SyntheticImages:
    """Map-style dataset of deterministic fake images (``IMAGE_SHAPE`` float32) and labels.

    A plain class rather than a ``torch.utils.data.Dataset`` subclass so this module stays
    importable without torch (the runner imports it); spawned workers unpickle it by name.
    Each sample is ``(image, label, worker_ready)``: ``worker_ready`` is when the process that
    made it produced its first sample (``time.monotonic()``, one system-wide clock on Linux).
    ``work`` repeats the per-sample work (the planted slowdown).
    """

    def __init__(self, fault: str = "none", work: int = 1):
        self.fault = fault
        self.work = work
        self._ready: float | None = None

    def __len__(self) -> int:
        return SAMPLES

    def __getitem__(self, index: int):
        import torch

        if self._ready is None:
            self._ready = time.monotonic()
        index = index % SAMPLES
        if self.fault != "none" and index == SAMPLES // 2:
            self._plant_fault()
        for _ in range(self.work):
            generator = torch.Generator().manual_seed(index)
            image = torch.rand(IMAGE_SHAPE, generator=generator)
            # An augmentation's worth of CPU work (a blur of BLUR_PASSES box passes, then a
            # normalisation), so the dataset, not the batches' trip between processes, is most
            # of a batch's CPU time, as decoding and augmenting are in real loaders: a slower
            # dataset then shows in the steady it/s.
            kernel = torch.full((IMAGE_SHAPE[0], 1, BLUR, BLUR), 1.0 / (BLUR * BLUR))
            image = image.unsqueeze(0)
            for _pass in range(BLUR_PASSES):
                image = torch.nn.functional.conv2d(
                    image, kernel, padding=BLUR // 2, groups=IMAGE_SHAPE[0]
                )
            image = (image[0] - 0.5) / 0.25
        return image, index % 10, self._ready

    def _plant_fault(self) -> None:
        import torch

        if self.fault == "worker_exception":
            raise RuntimeError(
                "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
                "you must use the 'spawn' start method (planted by repro for testing)"
            )
        if self.fault == "worker_segfault":
            os.kill(os.getpid(), signal.SIGSEGV)
        if self.fault == "worker_hang":
            import threading

            threading.Event().wait()
        if self.fault == "worker_touches_accel":
            torch.zeros(1, device="cuda")


class PassSampler:
    """Indices 0..SAMPLES-1 in order, pass after pass, until :attr:`done` is set (checked at
    batch boundaries, so every batch is full); ``open=False`` gives exactly one pass. Iterated in
    the main process only (never pickled), so the measuring loop can end the iteration."""

    def __init__(self) -> None:
        self.open = True
        self.done = False

    def __iter__(self):
        index = 0
        while True:
            if index and index % SAMPLES == 0 and (not self.open or self.done):
                return
            yield index % SAMPLES
            index += 1


def tree_cpu_s(process) -> float:
    """CPU seconds of ``process`` (a ``psutil.Process``) and every descendant alive now: the
    loader's main process (its pin-memory thread included) and its workers. Read from each
    thread's ``/proc/PID/task/TID/schedstat`` (nanoseconds) where Linux has it, else psutil's
    ``cpu_times`` (clock ticks: 10 ms, too coarse for a 0.25 s window of two workers)."""
    import psutil

    total = 0.0
    for proc in (process, *process.children(recursive=True)):
        exact = _schedstat_cpu_s(proc.pid)
        if exact is not None:
            total += exact
            continue
        try:
            times = proc.cpu_times()
        except psutil.Error:  # gone between the listing and the read
            continue
        total += times.user + times.system
    return total


def host_cpu_s() -> tuple[float, float] | None:
    """``(busy, total)`` CPU seconds of the whole host since boot, summed over its CPUs, from
    the first line of ``/proc/stat`` (proc(5): user nice system idle iowait irq softirq steal;
    busy is all but idle and iowait, so the hypervisor's steal counts as taken); None where
    unreadable. A window's busy seconds less the loader's own, over its total, is the share of
    the host other processes took (``repro.measurement.HOST_BUSY``)."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(v) for v in stat.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    if len(fields) < 8:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]
    return (sum(fields) - idle) / tick, sum(fields) / tick


def _schedstat_cpu_s(pid: int) -> float | None:
    """The summed on-CPU time of a process's threads in seconds, or None where unreadable."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat", encoding="ascii") as stat:
                total += int(stat.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total / 1e9


def slowdown() -> int:
    """The planted slowdown factor from ``$REPRO_DATALOADER_SLOWDOWN`` (1 when unset or bad)."""
    text = os.environ.get(SLOWDOWN_ENV, "1").strip()
    return int(text) if text.isdigit() and 1 <= int(text) <= 100 else 1


def expected_checksum() -> float:
    """Sum of every pixel of the dataset, computed in the main process (the reference)."""
    dataset = SyntheticImages()
    return float(sum(dataset[i][0].double().sum() for i in range(SAMPLES)))


class _Pass:
    """The checksum of the pass over the dataset being received, checked when it completes."""

    def __init__(self, ctx, reference: float, float64) -> None:
        self.ctx, self.reference, self.float64 = ctx, reference, float64
        self.samples, self.checksum, self.passes = 0, 0.0, 0

    def add(self, images, iteration: int) -> None:
        self.checksum += float(images.sum(dtype=self.float64))  # no float64 copy of the batch
        self.samples += int(images.shape[0])
        if self.samples == SAMPLES:
            if abs(self.checksum - self.reference) > 1e-6 * max(1.0, abs(self.reference)):
                self.ctx.fail(
                    f"iteration {iteration}, pass {self.passes}: data changed in transit: "
                    f"checksum {self.checksum!r} != {self.reference!r} (silent corruption, "
                    "pytorch/pytorch#128497)"
                )
            self.samples, self.checksum, self.passes = 0, 0.0, self.passes + 1


def run(ctx, params) -> None:
    import psutil
    import torch
    from torch.utils.data import DataLoader

    from repro.case_api import CaseFailed

    device = torch.device(params["device"])
    workers = int(params["workers"])
    # The main process only moves and sums batches; one intra-op thread keeps OpenMP's waits on
    # a busy host out of the figure (2 threads on a loaded 2-core host: 68 it/s in-process
    # instead of 386), as DataLoader workers run with one (torch's _worker_loop).
    torch.set_num_threads(1)
    ctx.property("main_threads", 1)
    if params["accel_init"]:
        ctx.heartbeat("accel_init")
        torch.zeros(1, device=device)  # the parent owns a CUDA/HIP context before the fork
    reference = expected_checksum()
    work = slowdown()
    if work != 1:
        ctx.property("planted_slowdown", work)
    sampler = PassSampler()
    loader = DataLoader(
        SyntheticImages(params["fault"], work),
        batch_size=BATCH_SIZE,
        sampler=sampler,
        num_workers=workers,
        persistent_workers=bool(params["persistent"]),
        multiprocessing_context=params["start_method"] if workers else None,
        pin_memory=device.type == "cuda",
    )
    batches = 0
    try:
        # Iteration 1: start-up, then steady windows; the sampler runs until they are done.
        ctx.heartbeat("epoch_start", 0)
        checked = _Pass(ctx, reference, torch.float64)
        start = time.perf_counter()
        start_mono = time.monotonic()
        first_batch_s = startup_s = None
        ready: dict[float, None] = {}  # each worker's first-sample time (monotonic)
        warm_from = None  # the batch after which the windows start
        windows: list[float] = []  # it/s of each window
        cpu_windows: list[float] = []  # batches per CPU second of the loader's processes
        busy_windows: list[float] = []  # share of the host's CPU others took (host_busy)
        me = psutil.Process()
        window_start, window_cpu, window_batches = 0.0, 0.0, 0
        window_host = host_cpu_s()
        for images, _labels, worker_ready in loader:
            images = images.to(device, non_blocking=True)
            checked.add(images, 0)
            now = time.perf_counter()
            batches += 1
            ctx.heartbeat("batch", batches)
            if first_batch_s is None:
                first_batch_s = now - start
            ready.update(dict.fromkeys(float(t) for t in worker_ready))
            if startup_s is None and len(ready) >= max(workers, 1):
                startup_s = now - start
                # the batches already in flight arrive at once: let the queue turn over
                warm_from = batches + PREFETCH_FACTOR * max(workers, 1)
            if warm_from is None or batches < warm_from or len(windows) >= STEADY_WINDOWS:
                continue
            if batches == warm_from:  # the first window starts with this batch's arrival
                window_start, window_cpu, window_batches = now, tree_cpu_s(me), 0
                window_host = host_cpu_s()
                continue
            window_batches += 1
            if now - window_start >= WINDOW_S and window_batches >= WINDOW_MIN_BATCHES:
                cpu, host = tree_cpu_s(me), host_cpu_s()
                windows.append(window_batches / (now - window_start))
                if cpu > window_cpu:
                    cpu_windows.append(window_batches / (cpu - window_cpu))
                if host is not None and window_host is not None and host[1] > window_host[1]:
                    others = host[0] - window_host[0] - (cpu - window_cpu)
                    busy_windows.append(min(1.0, max(0.0, others / (host[1] - window_host[1]))))
                window_start, window_cpu, window_batches = time.perf_counter(), cpu, 0
                window_host = host
                if len(windows) == STEADY_WINDOWS:
                    ctx.heartbeat("steady_done", batches)
                    sampler.done = True  # the loader drains what is in flight, then stops
        if checked.passes < 1:
            ctx.fail(f"iteration 0: {checked.samples} samples, expected at least {SAMPLES}")
        ctx.metric("first_batch_s", first_batch_s)
        ctx.metric("startup_s", startup_s if startup_s is not None else first_batch_s)
        if workers:
            ctx.measurement("worker_start_s", [t - start_mono for t in ready])
        ctx.measurement("steady_it_per_s", windows)
        ctx.measurement("steady_it_per_cpu_s", cpu_windows)
        if busy_windows:
            ctx.measurement(measurement.HOST_BUSY, busy_windows)
        ctx.metric("passes", checked.passes)

        # Iteration 2: one pass; its first batch is the re-iteration start-up.
        sampler.open = False
        ctx.heartbeat("epoch_start", 1)
        checked = _Pass(ctx, reference, torch.float64)
        start = time.perf_counter()
        first = None
        for images, _labels, _ready in loader:
            images = images.to(device, non_blocking=True)
            checked.add(images, 1)
            if first is None:
                first = time.perf_counter() - start
            batches += 1
            ctx.heartbeat("batch", batches)
        ctx.metric("epoch2_first_batch_s", first)
        if checked.passes != 1:
            ctx.fail(f"iteration 1: {checked.passes} passes, expected 1")
    except CaseFailed:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the loader raises is the reproduced failure
        # A worker death can surface first as a broken fd transfer (ConnectionResetError) and
        # then again as torch's SIGCHLD handler raising "DataLoader worker ... is killed" at any
        # bytecode, even while the first traceback is printed; the second is the root cause.
        cause: BaseException = exc
        try:
            traceback.print_exc()  # the log keeps the worker's Original Traceback
        except RuntimeError as again:
            print(f"{type(again).__name__}: {again}", file=sys.stderr, flush=True)
            cause = again
        text = str(cause).strip()
        first = text.splitlines()[0] if text else ""
        ctx.fail(f"DataLoader failed after {batches} batches: {type(cause).__name__}: {first}")
    ctx.metric("batches", batches)
    ctx.property("samples_per_epoch", SAMPLES)
