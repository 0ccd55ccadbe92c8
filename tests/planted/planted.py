"""Planted failures for the test suite (never in the default catalogue).

``kind`` picks what the case does: pass, fail (AssertionError), error (ValueError), segfault
(SIGSEGV in the case process), abort (SIGABRT), hang (blocks forever with a second thread
alive), sleep (a slow case, for killing the runner mid-run), masked_exit (exit 0 before any
verdict), cudnn (prints a real cuDNN error text, then raises), nan_dice (the DB Dice loss's
``assert loss <= 1`` meeting a NaN, field report F4-4), slow (keeps beating, never finishes),
stall (beats steadily, then goes silent), starved (silent 3 s past a 0.5 s budget while
4 busy loops per core in its own tree keep its processes waiting for a CPU), budget_stall (one heartbeat declaring a 1 s budget,
then silence).

Hostile kinds (issue 9): events_outcome, events_nan, events_array, events_long_line (bad
records in the events file), events_fifo, events_devzero (the events file replaced by a FIFO or
a symlink to /dev/zero, then a hang), setsid_leak (passes, leaving a ``setsid``'ed grandchild
with a clean environment), setsid_sleep (sleeps with such a grandchild), ignore_term (ignores
SIGTERM and sleeps), kill_harness (kills its own harness, leaving a clean setsid grandchild),
chatty (prints 200 MB), stop_zygote and kill_zygote (a forked case that SIGSTOPs or SIGKILLs
the zygote it was forked from, recording its pid, then passes; fails when not forked).
Grandchildren write their pid to ``$REPRO_PLANTED_PIDS`` when set.

Flaky and switched kinds (issue 11): flaky_once fails on its first attempt and passes on the
next (a marker file in ``$REPRO_PLANTED_STATE``, a directory the test makes);
fail_when_switched fails only when ``$REPRO_PLANTED_BREAK`` is set (a regression against a
baseline run without it); slow_pass passes after 1.5 s.

Parallel kinds (issue 13): window (sleeps 1 s and writes when it ran and its torch thread count
to ``$REPRO_PLANTED_STATE/<kind>.json``) and alone (the same, declared ``EXCLUSIVE``).

Rate kinds (issue 29, ``repro run --repeat``): rate records the measurement
``planted_it_per_s`` with samples 10k..10k+4 on its k-th attempt (counted in
``$REPRO_PLANTED_STATE``); rate_red_later does the same but fails on its second attempt.

Result kinds (issue 32): override (writes ``override.xml`` beside its run's junit.xml, and one
in ``logs/``, restating itself as passed under the run's host and variant, then fails; the
results root is ``$REPRO_PLANTED_RESULTS``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

PARAMS = {"kind": ["pass"]}
TIMEOUT_S = 10.0
#: ``alone~...`` cases declare they must run alone under ``repro run -j N``.
EXCLUSIVE = lambda params: params["kind"].startswith("alone")  # noqa: E731


def run(ctx, params) -> None:
    kind = params["kind"].partition("~")[0]  # "pass~xxxx": a long case id, same behaviour
    ctx.heartbeat("planted", 1)
    ctx.metric("planted_metric_s", 0.25)
    if kind == "pass":
        return
    if kind == "flaky_once":
        marker = os.path.join(os.environ["REPRO_PLANTED_STATE"], "flaky_once.attempted")
        if not os.path.exists(marker):
            open(marker, "w").close()
            raise AssertionError("planted flaky check failed on the first attempt")
        return
    if kind in ("window", "alone"):  # when it ran, for the -j tests: {"start", "end", "threads"}
        import torch

        start = time.time()
        time.sleep(1.0)
        record = {"start": start, "end": time.time(), "threads": torch.get_num_threads()}
        path = os.path.join(os.environ["REPRO_PLANTED_STATE"], params["kind"] + ".json")
        with open(path, "w") as handle:
            json.dump(record, handle)
        return
    if kind in ("rate", "rate_red_later"):
        counter = os.path.join(os.environ["REPRO_PLANTED_STATE"], kind + ".attempts")
        with open(counter, "a+") as attempts:
            attempts.write("x")
            attempts.seek(0)
            attempt = len(attempts.read())
        if kind == "rate_red_later" and attempt == 2:
            raise AssertionError("planted failure on the second attempt")
        ctx.measurement("planted_it_per_s", [10.0 * attempt + i for i in range(5)])
        return
    if kind == "slow_pass":  # a second and a half: a TTY shows its line redrawn in place
        time.sleep(1.5)
        return
    if kind == "fail_when_switched":
        assert not os.environ.get("REPRO_PLANTED_BREAK"), "planted regression"
        return
    if kind == "fail":
        assert 1 + 1 == 3, "planted check failed"
    if kind == "error":
        raise ValueError("planted error outside the check")
    if kind == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if kind == "abort":
        os.abort()
    if kind == "hang":
        threading.Thread(
            target=time.sleep, args=(3600,), name="planted-sleeper", daemon=True
        ).start()
        threading.Event().wait()
    if kind == "sleep":
        time.sleep(3600)
    if kind == "masked_exit":
        os._exit(0)
    if kind == "cudnn":
        print("RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED", flush=True)
        raise RuntimeError("cuDNN error: CUDNN_STATUS_EXECUTION_FAILED")
    if kind == "nan_dice":
        _dice_loss(float("nan"))
    if kind == "slow":
        for step in range(10**6):
            ctx.heartbeat("slow_step", step)
            time.sleep(0.5)
    if kind == "stall":
        for step in range(5):
            ctx.heartbeat("steady_step", step)
            time.sleep(0.05)
        time.sleep(3600)
    if kind == "starved":  # silent past a 0.5 s budget, runnable but off the CPU: not hung
        ctx.heartbeat("starved_phase", budget_s=0.5)
        spinners = [
            subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(4 * len(os.sched_getaffinity(0)))
        ]
        time.sleep(3.0)
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
        ctx.heartbeat("done")
        return
    if kind == "budget_stall":
        ctx.heartbeat("short_phase", budget_s=1.0)
        time.sleep(3600)
    if kind.startswith("events_"):
        _hostile_events(kind, os.environ["REPRO_EVENTS"])
        return
    if kind == "setsid_leak":
        _setsid_grandchild()
        return
    if kind == "setsid_sleep":
        _setsid_grandchild()
        time.sleep(3600)
    if kind == "ignore_term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _record_pid(os.getpid())
        time.sleep(3600)
    if kind == "kill_harness":
        _setsid_grandchild()
        os.kill(os.getppid(), signal.SIGKILL)
        return
    if kind in ("stop_zygote", "kill_zygote"):
        zygote = _zygote_pid()
        _record_pid(zygote)
        os.kill(zygote, signal.SIGSTOP if kind == "stop_zygote" else signal.SIGKILL)
        return
    if kind == "chatty":
        line = b"x" * 1023 + b"\n"
        block = line * 1024  # 1 MiB
        for _ in range(200):
            os.write(1, block)
        return
    if kind == "override":
        _plant_override(os.environ["REPRO_PLANTED_RESULTS"])
        assert 1 + 1 == 3, "planted check failed (and restated as passed beside its junit.xml)"
    raise AssertionError(f"unknown planted kind {kind!r}")


def _plant_override(results: str) -> None:
    """Issue 32: write ``override.xml`` (and ``logs/override.xml``) into this case's run
    directory (the newest one under ``results``), restating this case as passed under the run's
    own host key and variant id, copied from its run.json."""
    runs = [os.path.join(results, name) for name in os.listdir(results)]
    run_dir = max((r for r in runs if os.path.isdir(r)), key=os.path.getmtime)
    with open(os.path.join(run_dir, "run.json")) as handle:
        info = json.load(handle)
    xml = (
        '<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="planted">'
        f'<properties><property name="host.key" value="{info["host_key"]}"/>'
        f'<property name="variant.id" value="{info["variant"]["id"]}"/></properties>'
        '<testcase classname="repro.planted" name="planted[kind=override]" time="0.1">'
        '<properties><property name="repro.outcome" value="passed"/></properties>'
        "</testcase></testsuite></testsuites>\n"
    )
    for where in (run_dir, os.path.join(run_dir, "logs")):
        os.makedirs(where, exist_ok=True)
        with open(os.path.join(where, "override.xml"), "w") as handle:
            handle.write(xml)


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rpartition(")")[2].split()[1])


def _zygote_pid() -> int:
    """The zygote this case process was forked from (case <- harness <- zygote)."""
    pid = _parent_of(os.getppid())
    with open(f"/proc/{pid}/cmdline", "rb") as handle:
        argv = handle.read().split(b"\0")
    assert b"repro.runner.zygote" in argv, f"not forked from a zygote: parent {pid} is {argv[:3]}"
    return pid


def _record_pid(pid: int) -> None:
    path = os.environ.get("REPRO_PLANTED_PIDS")
    if path:
        with open(path, "a") as handle:
            handle.write(f"{pid}\n")


def _setsid_grandchild() -> None:
    """Start a grandchild that leaves the session and drops every REPRO_* variable (so neither
    the process group nor the case token finds it), then return once it is running."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    code = (
        "import os, sys, time\n"
        "os.setsid()\n"
        "if os.fork(): os._exit(0)\n"  # double fork: re-parented away from the case
        "path = sys.argv[1]\n"
        "if path: open(path, 'a').write(f'{os.getpid()}\\n')\n"
        "time.sleep(3600)\n"
    )
    subprocess.run(
        [sys.executable, "-c", code, os.environ.get("REPRO_PLANTED_PIDS", "")],
        env=env,
        check=True,
    )


def _hostile_events(kind: str, path: str) -> None:
    if kind in ("events_fifo", "events_devzero"):
        os.unlink(path)
        if kind == "events_fifo":
            os.mkfifo(path)
        else:
            os.symlink("/dev/zero", path)
        time.sleep(3600)
    records = {
        "events_outcome": {"event": "result", "outcome": "exploded"},
        "events_nan": {"event": "metric", "name": "x", "value": float("nan")},
        "events_budget": {"event": "heartbeat", "phase": "p", "step": None, "budget_s": -1},
        "events_array": [1, 2, 3],
    }
    with open(path, "a") as handle:
        if kind == "events_long_line":
            handle.write('{"event": "property", "name": "x", "value": "' + "y" * 200_000 + '"}\n')
        else:
            handle.write(json.dumps(records[kind]) + "\n")


def _dice_loss(loss: float) -> float:
    assert loss <= 1
    return loss
