"""The zygote (repro.runner.zygote): fork safety checks, a forked case equal to a fresh one,
outcome parity on real scenarios, and kill -9 of the runner leaving nothing behind."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from conftest import REPO, cases_by_name, cli_env, only_run_dir, write_matrix
from junitparser import JUnitXml

from repro.host import fork_check
from repro.model import Fingerprint
from repro.runner import context, executor, zygote_client, zygote_pool, zygote_wire
from repro.scenarios import expand

FINGERPRINT = {
    "runtime": {"accelerator_count": 0, "start_methods": ["fork", "spawn", "forkserver"]}
}


def _ctx(run_dir: Path, isolation: str) -> context.RunContext:
    return context.RunContext(
        run_dir=run_dir,
        fingerprint=Fingerprint.from_json(FINGERPRINT),
        suite_properties={},
        run_info={},
        isolation=isolation,
    )


def _python(code: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**cli_env(), **(env or {})},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_fork_hazards_names_a_thread_a_fixed_start_method_and_nothing_in_a_clean_process():
    out = _python(
        """
        import json, multiprocessing, threading, time
        from repro.runner.zygote import fork_hazards
        import torch
        clean = fork_hazards()
        threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
        threaded = fork_hazards()
        multiprocessing.set_start_method("spawn")
        print(json.dumps([clean, threaded, fork_hazards()]))
        """,
        env=zygote_wire.ZYGOTE_POOL_LIMITS,  # as the zygote imports (numpy's OpenBLAS pool)
    )
    clean, threaded, both = json.loads(out)
    assert clean == []
    assert threaded == ["2 threads"]
    assert both == ["2 threads", "start method fixed (spawn)"]


def test_numpy_starts_a_blas_pool_at_import_unless_the_zygote_limits_it():
    """Issue 19: in the environment users have, ``import torch`` imports numpy, whose OpenBLAS
    starts one thread per extra core; the zygote's limits keep the import single-threaded."""
    pytest.importorskip("numpy")
    code = """
        import json, os
        import torch, numpy
        print(json.dumps(len(os.listdir("/proc/self/task"))))
        """
    cores = len(os.sched_getaffinity(0))
    limited = json.loads(_python(code, env=zygote_wire.ZYGOTE_POOL_LIMITS))
    unlimited = json.loads(_python(code, env={"OPENBLAS_NUM_THREADS": str(cores)}))
    assert limited == 1
    if cores > 1:
        assert unlimited == cores


def test_omp_num_threads_set_after_fork_does_not_change_torch_threads():
    """Why a scenario that sets OMP_NUM_THREADS must be FRESH: libgomp read it when torch was
    imported, so a forked child keeps the zygote's value (and get_num_threads starts no pool)."""
    out = _python(
        """
        import json, os
        import torch
        r, w = os.pipe()
        if os.fork() == 0:
            os.environ["OMP_NUM_THREADS"] = "2"
            n = torch.get_num_threads()
            os.write(w, json.dumps([n, len(os.listdir("/proc/self/task"))]).encode())
            os._exit(0)
        os.wait()
        print(os.read(r, 100).decode())
        """,
        env={"OMP_NUM_THREADS": "1"},
    )
    assert json.loads(out) == [1, 1]


PROBE = """
import os, sys, threading
PARAMS = {"x": [0]}
TIMEOUT_S = 30.0

def run(ctx, params):
    fds = sorted(int(f) for f in os.listdir("/proc/self/fd"))
    watcher = os.getppid()
    ctx.property("session_is_watcher", os.getsid(0) == watcher == os.getpgid(0))
    ctx.property("cwd_is_workdir", os.getcwd() == os.environ["REPRO_WORKDIR"])
    ctx.property("token", "REPRO_CASE_TOKEN" in os.environ)
    ctx.property("stdin", os.readlink("/proc/self/fd/0"))
    ctx.property("fd_count", len(fds))
    ctx.property("threads", threading.active_count())
    ctx.property("probe_var", os.environ.get("REPRO_PROBE_VAR", ""))
    ctx.property("path0_is_workdir", sys.path[0] == os.environ["REPRO_WORKDIR"])
    ctx.property("env_keys", ",".join(sorted(os.environ)))
    print("to stdout"); print("to stderr", file=sys.stderr)
"""


def _probe_case(tmp_path, monkeypatch, module: str, source: str):
    """The one case of a probe scenario module written into ``tmp_path`` (importable here and
    in the case processes)."""
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{REPO}")
    monkeypatch.syspath_prepend(str(tmp_path))
    (case,) = expand("probe", module=module)
    return case


def _fresh_then_forked(tmp_path, case, env: dict[str, str] | None = None):
    """``(isolation, ctx, result)`` of ``case`` run fresh, then forked from a zygote (closed
    after)."""
    for isolation in ("fresh", "zygote"):
        ctx = _ctx(tmp_path / isolation, isolation)
        ctx.env = dict(env or {})
        try:
            result = executor.run_case(ctx, case)
        finally:
            zygote_pool.close_zygote(ctx)
        yield isolation, ctx, result


@pytest.mark.slow
def test_a_forked_case_sees_what_a_fresh_case_sees(tmp_path, monkeypatch):
    case = _probe_case(tmp_path, monkeypatch, "zygote_probe", PROBE)
    seen = {}
    for isolation, ctx, result in _fresh_then_forked(
        tmp_path, case, {"REPRO_PROBE_VAR": "from-variant"}
    ):
        assert result.outcome.value == "passed", result.message
        assert result.properties["repro.isolation"] == isolation
        log = (ctx.run_dir / result.log_path).read_text()
        assert "to stdout" in log and "to stderr" in log
        assert float(result.properties["repro.cpu_s"]) > 0  # the case process's own CPU time
        varies = ("repro.isolation", "repro.returncode", "repro.cpu_s")
        seen[isolation] = {k: v for k, v in result.properties.items() if k not in varies}
    assert seen["zygote"] == seen["fresh"]
    assert seen["zygote"]["session_is_watcher"] == "True"
    assert seen["zygote"]["probe_var"] == "from-variant"
    assert seen["zygote"]["path0_is_workdir"] == "True"


FINALIZER_PROBE = """
import atexit, os, weakref
PARAMS = {"x": [0]}
TIMEOUT_S = 30.0

class _Thing:
    pass

_OUT = os.environ.get("REPRO_PROBE_OUT")  # also imported by the test process (expand)

def _note(label):
    if _OUT:
        with open(_OUT, "a") as out:
            out.write(f"{os.getpid()} {label}\\n")

_AT_IMPORT = _Thing()
weakref.finalize(_AT_IMPORT, _note, "import-finalizer")
atexit.register(_note, "import-atexit")

def run(ctx, params):
    ctx.property("pid", os.getpid())
    global _AT_RUN
    _AT_RUN = _Thing()
    weakref.finalize(_AT_RUN, _note, "run-finalizer")
"""


@pytest.mark.slow
def test_a_forked_case_runs_the_exit_callbacks_a_fresh_case_runs(tmp_path, monkeypatch):
    """The zygote skips torch's own op-library finalizers at a forked case's exit (106 ms per
    case), never a scenario module's or the case's: a module pre-imported by the zygote still has
    its import-time ``weakref.finalize`` and ``atexit`` callbacks run by each forked case, as a
    fresh case runs them."""
    out = tmp_path / "notes.txt"
    monkeypatch.setenv("REPRO_PROBE_OUT", str(out))
    case = _probe_case(tmp_path, monkeypatch, "zygote_fin_probe", FINALIZER_PROBE)
    monkeypatch.setattr(context, "zygote_modules", lambda: ["zygote_fin_probe"])  # pre-imported
    ran = {}
    for isolation, _, result in _fresh_then_forked(tmp_path, case):
        ran[isolation] = result.properties["pid"]
        assert result.outcome.value == "passed", result.message
        assert result.properties["repro.isolation"] == isolation
    notes = [line.split(" ", 1) for line in out.read_text().splitlines()]
    by_pid = {pid: sorted(label for p, label in notes if p == pid) for pid in ran.values()}
    expected = ["import-atexit", "import-finalizer", "run-finalizer"]
    assert by_pid == {ran["fresh"]: expected, ran["zygote"]: expected}


#: A small set of cases per zygote-eligible scenario (the full catalogue: benchmarks/).
PARITY = [
    ("cuda_basic", {"device": ["cpu"]}),
    ("arch", {"device": ["cpu"]}),
    ("losses", {"device": ["cpu"], "case": ["normal", "nan_pred"], "eps": [0]}),
    ("data_validation", {"device": ["cpu"]}),
    ("noop", {"torch": [True]}),
    # training cases: an optimizer imports torch._dynamo, which the zygote pre-imports
    (
        "cudnn",
        {"device": ["cpu"], "dtype": ["fp32"], "channels_last": [False], "phase": ["train"]},
    ),
    ("model", {"device": ["cpu"]}),
    ("amp", {"device": ["cpu"], "loss": ["bce_logits"]}),
    ("shm", {"workers": [0]}),
    # eligible cases of process scenarios: their children are new interpreters either way
    ("fork_safety", {"start_method": ["spawn"], "mode": ["lock"], "wandb": ["none"]}),
    ("cuda_ipc", {"device": ["cpu"], "sharing": ["file_descriptor"], "producer": ["exits_early"]}),
    (
        "dataloader",
        {"device": ["cpu"], "start_method": ["spawn"], "workers": [2], "persistent": [True]},
    ),
    (
        "ddp",
        {"backend": ["gloo"], "world_size": [1], "workers": [0], "fault": ["none", "rank_raises"]},
    ),
]


@pytest.mark.slow
def test_zygote_eligible_scenarios_give_the_same_outcome_and_signature_fresh_and_forked(tmp_path):
    cases = [c for name, params in PARITY for c in expand(name, params=params)]
    verdicts = {}
    for isolation in ("fresh", "zygote"):
        ctx = _ctx(tmp_path / isolation, isolation)
        try:
            results = [executor.run_case(ctx, case) for case in cases]
        finally:
            zygote_pool.close_zygote(ctx)
        assert {r.properties["repro.isolation"] for r in results} == {isolation}
        verdicts[isolation] = [(r.case_id, r.outcome.value, r.signature) for r in results]
    assert verdicts["zygote"] == verdicts["fresh"]
    assert {v[1] for v in verdicts["fresh"]} >= {"passed", "failed"}  # both kinds compared


@pytest.mark.slow
def test_auto_forks_eligible_cases_and_starts_fresh_ones_fresh(tmp_path):
    ctx = _ctx(tmp_path, "auto")
    (arch_case,) = expand("arch", params={"device": ["cpu"]})
    (fork_lock,) = expand("fork_safety", params={"start_method": ["fork"], "mode": ["lock"]})
    (spawn_lock,) = expand("fork_safety", params={"start_method": ["spawn"], "mode": ["lock"]})
    fork_workers, spawn_workers = expand(
        "dataloader",
        params={
            "device": ["cpu"],
            "start_method": ["fork", "spawn"],
            "workers": [2],
            "persistent": [False],
        },
    )
    (poisoned,) = expand("cuda_fault", params={"device": ["cuda"]})
    assert zygote_pool.wants_zygote(ctx, arch_case)
    # the case process forks (its own threads and locks are the subject): fresh
    assert not zygote_pool.wants_zygote(ctx, fork_lock)
    assert not zygote_pool.wants_zygote(ctx, fork_workers)
    assert not zygote_pool.wants_zygote(ctx, poisoned)  # FRESH = True
    # its children are spawned interpreters: the case process may be a zygote fork
    assert zygote_pool.wants_zygote(ctx, spawn_lock)
    assert zygote_pool.wants_zygote(ctx, spawn_workers)
    assert zygote_pool.wants_zygote(_ctx(tmp_path, "zygote"), fork_lock)
    assert not zygote_pool.wants_zygote(_ctx(tmp_path, "fresh"), arch_case)


HAZARD = """
import signal, threading, time
def _start_thread(*_):
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
signal.signal(signal.SIGALRM, _start_thread)
signal.setitimer(signal.ITIMER_REAL, 0.3)
"""


@pytest.mark.slow
def test_a_zygote_whose_run_ended_before_it_was_ready_exits_quietly(tmp_path):
    """Every case of a run ended before the zygote finished its imports: the runner closed its
    end, and the zygote's "ready" meets a closed socket (issue 32: a BrokenPipeError traceback
    in zygote.log)."""
    log = tmp_path / "zygote.log"
    env = {**cli_env(tmp_path), "REPRO_RUNNER_PID": str(os.getpid())}
    zygote = zygote_client.Zygote(sys.executable, env, [], log, wait=False)
    try:
        zygote.sock.close()  # the run is over; the zygote is still importing torch
        assert zygote.proc.wait(timeout=120) == 0
        text = log.read_text()
        assert "Traceback" not in text and "BrokenPipeError" not in text, text
    finally:
        zygote.close()


@pytest.mark.slow
def test_a_zygote_that_gained_a_thread_refuses_to_fork_and_exits(tmp_path):
    (tmp_path / "zygote_hazard.py").write_text(HAZARD)
    env = {**cli_env(tmp_path), "REPRO_RUNNER_PID": str(os.getpid())}
    zygote = zygote_client.Zygote(sys.executable, env, ["zygote_hazard"])
    try:
        time.sleep(1.0)  # the alarm starts a thread in the idle zygote
        read, write = os.pipe()
        with pytest.raises(zygote_client.ZygoteError, match="2 threads"):
            zygote.spawn(dict(env), str(tmp_path), write, write)
        os.close(read)
        os.close(write)
        zygote.proc.wait(timeout=10)
        assert not zygote.alive()
    finally:
        zygote.close()


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
def test_kill_9_of_the_runner_under_the_zygote_leaves_no_case_behind(tmp_path, jobs):
    write_matrix(
        tmp_path,
        "planted: {module: planted, timeout_s: 120, params: {kind: [pass, fail, error, sleep, segfault]}}\n",
    )
    # -j 1: three cases finished before the sleeper; -j 2: the segfault case too, beside it.
    finished = ["pass", "fail", "error"] + (["segfault"] if jobs > 1 else [])
    runner = subprocess.Popen(
        [sys.executable, "-m", "repro", "run", "--no-doctor", "--isolation", "zygote", "-j", str(jobs)],
        cwd=tmp_path, env=cli_env(), stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    members: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 50
        while len(members) < 3:  # zygote, then the sleep case's harness and case process
            assert runner.poll() is None, "runner ended before the slow case"
            assert time.monotonic() < deadline, "slow case never started"
            time.sleep(0.2)
            members = _descendants(runner.pid)
            if not any(_in_case_workdir(p) for p in members) or not _done(tmp_path, len(finished)):
                members = []
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait()
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    deadline = time.monotonic() + 10
    while alive := [p.pid for p in members if _alive(p)]:
        assert time.monotonic() < deadline, f"outlived the killed runner: {alive}"
        time.sleep(0.1)
    junit = only_run_dir(tmp_path / "results") / "junit.xml"
    names = [case.name for suite in JUnitXml.fromfile(str(junit)) for case in suite]
    assert names == [f"planted[kind={kind}]" for kind in finished]
    cases = cases_by_name(junit)
    assert {props["repro.isolation"] for _case, props in cases.values()} == {"zygote"}


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _in_case_workdir(proc: psutil.Process) -> bool:
    try:
        return Path(proc.cwd()).name.startswith("repro-case-")
    except psutil.Error:
        return False


def _done(project: Path, count: int) -> bool:
    try:
        run_dir = only_run_dir(project / "results")
        return json.loads((run_dir / "run.json").read_text())["cases_done"] >= count
    except (AssertionError, OSError, ValueError, KeyError):
        return False


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


POOLS_PROBE = """
import json, os
PARAMS = {"x": [0]}
TIMEOUT_S = 60.0

def run(ctx, params):
    import numpy, threadpoolctl, torch
    a = numpy.ones((512, 512))
    float((a @ a).sum())  # wakes OpenBLAS's pool
    t = torch.ones(512, 512)
    float((t @ t).sum())  # and torch's OpenMP pool
    pools = sorted(
        (p["internal_api"], p["prefix"], p["num_threads"])
        for p in threadpoolctl.threadpool_info()
    )
    ctx.property("pools", json.dumps(pools))
    ctx.property("torch_threads", torch.get_num_threads())
    ctx.property("os_threads", len(os.listdir("/proc/self/task")))
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "env",
    [{}, {"OMP_NUM_THREADS": "1"}, {"OPENBLAS_NUM_THREADS": "2"}],
    ids=["defaults", "omp1", "openblas2"],
)
def test_a_forked_case_has_the_thread_pools_a_fresh_interpreter_has(tmp_path, monkeypatch, env):
    """Issue 19: the zygote imports numpy with a one-thread OpenBLAS pool; each forked case
    gets back the pool sizes (threadpoolctl's view) and OS thread count a fresh one has."""
    pytest.importorskip("numpy")
    pytest.importorskip("threadpoolctl")
    (tmp_path / "zygote_pools.py").write_text(POOLS_PROBE)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{REPO}")
    monkeypatch.syspath_prepend(str(tmp_path))
    (case,) = expand("pools", module="zygote_pools")
    seen = {}
    for isolation in ("fresh", "zygote"):
        ctx = _ctx(tmp_path / isolation, isolation)
        ctx.env = dict(env)
        try:
            result = executor.run_case(ctx, case)
        finally:
            zygote_pool.close_zygote(ctx)
        assert result.outcome.value == "passed", result.message
        assert result.properties["repro.isolation"] == isolation
        seen[isolation] = {
            k: result.properties[k] for k in ("pools", "torch_threads", "os_threads")
        }
    assert seen["zygote"] == seen["fresh"]
    pools = json.loads(seen["fresh"]["pools"])
    assert any(api == "openblas" for api, _, _ in pools)  # the subject was really there


WEDGE_KINDS = ["pass~a", "pass~b", "stop_zygote", "pass~c", "pass~d", "kill_zygote", "pass~e"]


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_stopped_or_killed_zygote_costs_no_case_and_leaves_nothing(tmp_path, jobs):
    """Issue 25, item 1: a case SIGSTOPs the zygote it was forked from (its harness's exit
    report never comes; the next fork gets no answer), later another SIGKILLs one. Every case
    keeps its own verdict, the run ends within the answer timeouts, the zygotes are gone and
    their private TMPDIRs removed."""
    write_matrix(
        tmp_path,
        f"planted: {{module: planted, timeout_s: 60, params: {{kind: [{', '.join(WEDGE_KINDS)}]}}}}\n",
    )
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    pid_file = tmp_path / "zygotes"
    env = {**cli_env(), "REPRO_PLANTED_PIDS": str(pid_file), "TMPDIR": str(tmp)}
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "repro", "run", "--no-doctor", "--isolation", "zygote",
         "-j", str(jobs)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    seconds = time.monotonic() - start
    run_dir = only_run_dir(tmp_path / "results")
    cases = cases_by_name(run_dir / "junit.xml")
    outcomes = {name: props["repro.outcome"] for name, (_case, props) in cases.items()}
    assert outcomes == {f"planted[kind={k}]": "passed" for k in WEDGE_KINDS}, done.stderr
    assert done.returncode == 0, done.stderr
    # each wedging case ran forked (it found its zygote) and stopped or killed a distinct one
    zygotes = [int(x) for x in pid_file.read_text().split()]
    assert len(zygotes) == 2 and zygotes[0] != zygotes[1]
    for pid in zygotes:
        with contextlib.suppress(psutil.NoSuchProcess):
            assert psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, pid
    summary = json.loads((run_dir / "run.json").read_text())["zygote"]
    assert summary["started"] >= 2, summary
    # the zygotes' imports (torch._dynamo makes torchinductor_<user>/) wrote only to their own
    # TMPDIRs, removed with them: the run's TMPDIR is as it was
    assert sorted(p.name for p in tmp.iterdir()) == []
    # the answer and socket timeouts (10 s each) bound the wait on the stopped zygote
    budget = zygote_client.ANSWER_TIMEOUT_S + zygote_client.SOCKET_TIMEOUT_S + 60
    assert seconds < budget, (seconds, done.stderr)


# ---- the fork check on accelerator lanes (issue 23) -----------------------------------------

#: A CUDA build of torch, as far as ``repro.host.accel_probe fork`` can tell, whose device works
#: in the importing process and fails in a forked child with the driver's text
#: ("CUDA error: initialization error", what cuInit before fork gives: pytorch/pytorch#40403).
CUDA_BREAKS_AFTER_FORK = """
import os

__version__ = "2.8.0+cu128"
_PARENT = os.getpid()


class version:
    cuda = "12.8"
    hip = None


class _Tensor:
    def __matmul__(self, other):
        return self

    def sum(self):
        return self

    def item(self):
        return 64.0**3


def ones(*shape, device=None):
    if os.getpid() != _PARENT:
        raise RuntimeError("CUDA error: initialization error")
    return _Tensor()


class cuda:
    is_initialized = staticmethod(lambda: False)
    synchronize = staticmethod(lambda: None)
    get_device_name = staticmethod(lambda index: "NVIDIA H100 80GB HBM3")
"""

GPU_FINGERPRINT = {
    **FINGERPRINT,
    "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}],
}


def _torch_breaking_after_fork(root: Path) -> Path:
    """A directory holding the planted ``torch`` (and an empty ``torch._dynamo``)."""
    package = root / "fake-torch" / "torch"
    (package / "_dynamo").mkdir(parents=True)
    (package / "__init__.py").write_text(CUDA_BREAKS_AFTER_FORK)
    (package / "_dynamo" / "__init__.py").write_text("")
    return package.parent


def test_fork_check_fails_in_a_real_child_whose_cuda_breaks_after_fork(tmp_path):
    fake = _torch_breaking_after_fork(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(fake)}
    found = fork_check.run(
        sys.executable, ["torch._dynamo", "repro.scenarios.noop", "no_such_module"], env=env
    )
    assert found.status == fork_check.FAILED, found
    assert "works in this interpreter but not in a child forked" in found.reason
    assert "CUDA error: initialization error" in found.reason
    assert not found.fork_is_safe


def test_an_accelerator_lane_whose_fork_check_fails_runs_every_case_fresh_and_says_why(tmp_path):
    fake = _torch_breaking_after_fork(tmp_path)
    ctx = context.RunContext(
        run_dir=tmp_path / "run",
        fingerprint=Fingerprint.from_json(GPU_FINGERPRINT),
        suite_properties={},
        run_info={},
        isolation="auto",
        env={"PYTHONPATH": os.pathsep.join([str(fake), str(REPO)])},
    )
    cases = expand("noop", params={"torch": [False]}) * zygote_pool.MIN_CASES  # a zygote pays
    try:
        zygote_pool.plan_zygote(ctx, cases)  # as run_all does, once per run
        results = [executor.run_case(ctx, case) for case in cases]
    finally:
        zygote_pool.close_zygote(ctx)
    assert ctx.pool().given_up.startswith("fork check failed: ")
    assert ctx.pool().started == 0
    assert [r.outcome.value for r in results] == ["passed"] * zygote_pool.MIN_CASES
    assert {r.properties["repro.isolation"] for r in results} == {"fresh"}
    for result in results:
        log = (ctx.run_dir / result.log_path).read_text()
        assert "running fresh" in log and "CUDA error: initialization error" in log, log
    assert ctx.run_info["fork_check"]["status"] == "failed"
    assert not (ctx.run_dir / "zygote.log").exists()  # no zygote was started


def test_the_fork_check_runs_on_accelerator_lanes_only_and_once(tmp_path, monkeypatch):
    calls = []

    def counted(python, modules, **kwargs):
        calls.append(list(modules))
        return fork_check.ForkCheck(fork_check.NA, "torch 2.13.0+cpu is a CPU build", 0.1)

    monkeypatch.setattr(zygote_pool.fork_check, "run", counted)
    cpu = _ctx(tmp_path / "cpu", "zygote")
    assert zygote_pool.check_fork(cpu, ["repro.scenarios.noop"], {}) is None
    assert calls == [] and "fork_check" not in cpu.run_info
    for gpu in (
        dataclasses.replace(
            _ctx(tmp_path / "gpu", "zygote"), fingerprint=Fingerprint.from_json(GPU_FINGERPRINT)
        ),
        dataclasses.replace(_ctx(tmp_path / "variant", "zygote"), expect_accelerator=True),
    ):
        for _ in range(2):
            assert zygote_pool.check_fork(gpu, ["repro.scenarios.noop"], {}) is None
        assert gpu.run_info["fork_check"]["status"] == "n/a"
    assert calls == [["torch._dynamo", "repro.scenarios.noop"]] * 2


@pytest.mark.slow
def test_on_this_cpu_host_a_gpu_variant_still_gets_its_zygote(tmp_path):
    """The real check under this CPU torch answers n/a (no accelerator), which is no reason to
    give up the zygote."""
    ctx = dataclasses.replace(_ctx(tmp_path, "zygote"), expect_accelerator=True)
    (case,) = expand("noop", params={"torch": [False]})
    try:
        zygote_pool.plan_zygote(ctx, [case])
        result = executor.run_case(ctx, case)
    finally:
        zygote_pool.close_zygote(ctx)
    assert ctx.run_info["fork_check"]["status"] == "n/a"
    assert "CPU build" in ctx.run_info["fork_check"]["reason"]
    assert result.properties["repro.isolation"] == "zygote"


@pytest.mark.slow
def test_an_exclusive_case_waits_for_a_zygote_importing_beside_it(tmp_path):
    """An ``EXCLUSIVE`` case runs alone, and a zygote importing torch in the background is not
    alone: under ``auto`` the first dataloader case used to start while the zygote imported on
    the other core (its ``host_busy`` read 0.50 in all 10 runs of benchmarks/metric_stability.py,
    so ``repro compare`` set every figure of it aside) and then ran fresh. Now it waits for the
    zygote and is forked from it, like the eligible cases after it."""
    write_matrix(tmp_path, "dataloader: {params: {device: [cpu]}}\n")
    done = subprocess.run(
        [sys.executable, "-m", "repro", "run", "--no-doctor",
         "-k", "dataloader[device=cpu,start_method=fork,workers=0*",
         "-k", "dataloader[device=cpu,start_method=spawn,*",
         "-k", "dataloader[device=cpu,start_method=forkserver,*"],
        cwd=tmp_path, env=cli_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    run_dir = only_run_dir(tmp_path / "results")
    cases = cases_by_name(run_dir / "junit.xml")
    first = "dataloader[device=cpu,start_method=fork,workers=0,persistent=0,accel_init=0]"
    assert list(cases)[0] == first and len(cases) == 5
    assert {props["repro.isolation"] for _case, props in cases.values()} == {"zygote"}
    assert json.loads((run_dir / "run.json").read_text())["zygote"]["forked"] == 5
