"""The runner with real child processes: crashes, hangs, errors, kill -9 of the runner itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
from conftest import cases_by_name, cli_env, only_run_dir, run_cli, write_matrix
from junitparser import JUnitXml

pytestmark = pytest.mark.slow


def test_planted_crash_hang_error_fail_are_classified_and_the_run_goes_on(project):
    write_matrix(
        project,
        """\
        planted:
          module: planted
          timeout_s: 4
          params: {kind: [segfault, hang, error, fail, abort, masked_exit, pass]}
        """,
    )
    done = run_cli("run", "--no-doctor", cwd=project)
    assert done.returncode == 1, done.stderr
    run_dir = only_run_dir(project / "results")
    cases = cases_by_name(run_dir / "junit.xml")
    outcome = {name: props["repro.outcome"] for name, (_case, props) in cases.items()}
    assert outcome == {
        "planted[kind=segfault]": "crashed",
        "planted[kind=hang]": "hung",
        "planted[kind=error]": "error",
        "planted[kind=fail]": "failed",
        "planted[kind=abort]": "crashed",
        "planted[kind=masked_exit]": "error",
        "planted[kind=pass]": "passed",  # the run went on after every failure above
    }

    segv_case, segv = cases["planted[kind=segfault]"]
    assert (segv["repro.signal"], segv["repro.signature"]) == ("SIGSEGV", "segfault")
    assert "Fatal Python error: Segmentation fault" in (run_dir / segv["repro.log"]).read_text()
    assert cases["planted[kind=abort]"][1]["repro.signal"] == "SIGABRT"

    hang_case, hang = cases["planted[kind=hang]"]
    assert hang["repro.signature"] == "hang_timeout"
    assert 4 <= hang_case.time < 4 + 10
    hang_log = (run_dir / hang["repro.log"]).read_text()
    assert hang_log.count("Thread 0x") + hang_log.count("Current thread 0x") >= 2  # every thread
    assert "planted.py" in hang_log and "planted-sleeper" not in hang["repro.outcome"]

    error_case, _ = cases["planted[kind=error]"]
    assert error_case.result[0].message == "ValueError: planted error outside the check"
    assert (
        cases["planted[kind=masked_exit]"][0]
        .result[0]
        .message.startswith("no verdict, exit status 0")
    )
    # metrics reach the JUnit even from a case that later crashed
    assert segv["metric.planted_metric_s"] == "0.25"


def test_fork_safety_hangs_under_fork_with_a_multithread_stack_and_passes_otherwise(project):
    write_matrix(project, "fork_safety: {timeout_s: 6, params: {mode: [lock]}}\n")
    started = time.monotonic()
    done = run_cli("run", cwd=project)
    # the fork hang is fork_safety's EXPECT: an expected reproduction, so exit 0 (issue 29)
    assert done.returncode == 0, done.stderr
    assert "problems: 0 · expected reproductions: 1 · " in done.stderr
    run_dir = only_run_dir(project / "results")
    cases = cases_by_name(run_dir / "junit.xml")
    fork_case, fork = cases["fork_safety[start_method=fork]"]
    assert fork["repro.outcome"] == "hung"
    assert fork_case.time <= 6 + 10
    log = (run_dir / fork["repro.log"]).read_text()
    assert "_hold_library_lock" in log  # the background thread holding the lock
    assert "_child_uses_library" in log  # the forked child blocked on it
    assert log.count("# --- stacks of pid") >= 2
    assert cases["fork_safety[start_method=spawn]"][1]["repro.outcome"] == "passed"
    assert cases["fork_safety[start_method=forkserver]"][1]["repro.outcome"] == "passed"
    assert time.monotonic() - started < 60


def _planted_processes() -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if "planted[kind=sleep]" in proc.environ().get("REPRO_CASE", ""):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_kill_9_of_the_runner_keeps_every_finished_case_and_leaves_no_case_behind(project):
    write_matrix(
        project,
        "planted: {module: planted, timeout_s: 120, params: {kind: [pass, fail, error, sleep, segfault]}}\n",
    )
    runner = subprocess.Popen(
        # fresh: the cases are found by their /proc environment, which a forked (zygote) case
        # does not show; the zygote's kill -9 is tests/test_zygote.py's.
        # -j 1: three cases finished before the sleeper (tests/test_zygote.py covers -j 2).
        [sys.executable, "-m", "repro", "run", "--no-doctor", "--isolation", "fresh", "-j", "1"],
        cwd=project, env=cli_env(),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not _planted_processes():
            assert runner.poll() is None, "runner ended before the slow case"
            assert time.monotonic() < deadline, "slow case never started"
            time.sleep(0.1)
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait()
    finally:
        if runner.poll() is None:
            runner.kill()
    run_dir = only_run_dir(project / "results")
    xml = JUnitXml.fromfile(str(run_dir / "junit.xml"))
    names = [case.name for suite in xml for case in suite]
    assert names == ["planted[kind=pass]", "planted[kind=fail]", "planted[kind=error]"]
    run_info = json.loads((run_dir / "run.json").read_text())
    assert (run_info["cases_done"], run_info["cases_total"], run_info["finished"]) == (3, 5, None)
    # the case that was running dies with the runner (PR_SET_PDEATHSIG), tree and all
    deadline = time.monotonic() + 10
    while _planted_processes():
        assert time.monotonic() < deadline, "the running case outlived the killed runner"
        time.sleep(0.1)


def test_ddp_two_rank_gloo_passes_and_planted_faults_are_classified(project):
    write_matrix(
        project,
        "ddp: {timeout_s: 120, params: {backend: [gloo], world_size: [2], workers: [0]}}\n",
    )
    done = run_cli("run", cwd=project)
    # the three planted faults are ddp's EXPECT: expected reproductions, so exit 0 (issue 29)
    assert done.returncode == 0, done.stderr
    assert "problems: 0 · expected reproductions: 3 · passed: 1 · " in done.stderr
    run_dir = only_run_dir(project / "results")
    cases = cases_by_name(run_dir / "junit.xml")
    ok = cases["ddp[backend=gloo,world_size=2,workers=0]"][1]
    assert ok["repro.outcome"] == "passed", (run_dir / ok["repro.log"]).read_text()[-3000:]
    log = (run_dir / ok["repro.log"]).read_text()
    assert "RANK=1 LOCAL_RANK=1 WORLD_SIZE=2" in log and "rank 0: DDP step ok" in log

    raised_case, raised = cases["ddp[backend=gloo,world_size=2,workers=0,fault=rank_raises]"]
    assert (raised["repro.outcome"], raised["repro.signature"]) == ("failed", "rank_failed")
    assert raised["launcher_exit"] != "0"
    assert "torchrun exited with status" in raised_case.result[0].message

    busy = cases["ddp[backend=gloo,world_size=2,workers=0,fault=port_in_use]"][1]
    assert (busy["repro.outcome"], busy["repro.signature"]) == ("failed", "address_in_use")


def test_dataloader_records_metrics_and_classifies_worker_failures(project):
    write_matrix(
        project,
        """\
        dataloader:
          timeout_s: 60
          params:
            device: [cpu]
            start_method: [fork]
            workers: [2]
            persistent: [false]
            fault: [none, worker_exception, worker_segfault]
        """,
    )
    done = run_cli("run", cwd=project)
    assert done.returncode == 1, done.stderr
    cases = cases_by_name(only_run_dir(project / "results") / "junit.xml")
    ok = cases["dataloader[device=cpu,start_method=fork,workers=2,persistent=0,accel_init=0]"][1]
    assert ok["repro.outcome"] == "passed"
    assert float(ok["metric.first_batch_s"]) > 0 and float(ok["metric.steady_it_per_s"]) > 0
    # start-up apart from steady state; the steady figure is a median of windows with its spread
    assert float(ok["metric.startup_s"]) >= float(ok["metric.first_batch_s"])
    assert float(ok["metric.worker_start_s.n"]) == 2  # one start latency per worker
    assert float(ok["metric.steady_it_per_s.n"]) == 5
    assert float(ok["metric.steady_it_per_s.spread"]) >= 0
    assert (
        float(ok["metric.steady_it_per_cpu_s"]) > 0
        and float(ok["metric.steady_it_per_cpu_s.n"]) == 5
    )
    assert float(ok["metric.epoch2_first_batch_s"]) > 0 and "metric.it_per_s" not in ok
    assert float(ok["metric.passes"]) >= 1  # every full pass was checksummed

    raised = cases[
        "dataloader[device=cpu,start_method=fork,workers=2,persistent=0,accel_init=0,fault=worker_exception]"
    ][1]
    # classified from the worker's Original Traceback, not the "Caught ... in DataLoader worker" wrapper
    assert (raised["repro.outcome"], raised["repro.signature"]) == (
        "failed",
        "cuda_reinit_in_forked_subprocess",
    )
    killed = cases[
        "dataloader[device=cpu,start_method=fork,workers=2,persistent=0,accel_init=0,fault=worker_segfault]"
    ][1]
    assert (killed["repro.outcome"], killed["repro.signature"]) == (
        "failed",
        "dataloader_worker_killed",
    )


def test_cuda_cases_are_skipped_with_a_reason_on_a_host_without_gpu(project):
    write_matrix(project, "cuda_basic: {}\n")
    done = run_cli("run", cwd=project)
    assert done.returncode == 0, done.stderr
    cases = cases_by_name(only_run_dir(project / "results") / "junit.xml")
    skipped_case, props = cases["cuda_basic[device=cuda]"]
    assert props["repro.outcome"] == "skipped"
    assert "no CUDA/ROCm device visible" in skipped_case.result[0].message
    assert cases["cuda_basic[device=cpu]"][1]["repro.outcome"] == "passed"
    # the health pre-flight comes first, as infra findings, never as torch failures
    assert cases["doctor[check=dev_shm]"][1]["repro.outcome"] == "passed"
    nvidia_smi_case, nvidia_smi = cases["doctor[check=nvidia_smi]"]
    assert (
        nvidia_smi["repro.outcome"] == "skipped"
        and "no NVIDIA GPU" in nvidia_smi_case.result[0].message
    )


def test_planted_field_failures_are_classified_as_the_reports_predict(project):
    write_matrix(
        project,
        """\
        planted: {module: planted, timeout_s: 10, params: {kind: [cudnn, nan_dice]}}
        ddp: {timeout_s: 120, params: {backend: [gloo], fault: [masked_segfault]}}
        dataloader:
          timeout_s: 60
          params: {device: [cpu], start_method: [fork], workers: [2], persistent: [false], fault: [worker_hang]}
        """,
    )
    done = run_cli("run", "--no-doctor", cwd=project)
    assert done.returncode == 1, done.stderr
    cases = cases_by_name(only_run_dir(project / "results") / "junit.xml")
    verdicts = {
        name: (props["repro.outcome"], props.get("repro.signature"))
        for name, (_c, props) in cases.items()
    }
    assert verdicts == {
        "planted[kind=cudnn]": ("error", "cudnn_execution_failed"),
        "planted[kind=nan_dice]": (
            "failed",
            "nan_detected",
        ),  # a bare AssertionError, read as NaN (F4-4)
        "ddp[backend=gloo,world_size=2,workers=0,fault=masked_segfault]": (
            "failed",
            "exit_code_masked",
        ),
        "dataloader[device=cpu,start_method=fork,workers=2,persistent=0,accel_init=0,fault=worker_hang]": (
            "hung",
            "hang.dataloader_wait",
        ),
    }
    masked = (
        cases["ddp[backend=gloo,world_size=2,workers=0,fault=masked_segfault]"][0].result[0].message
    )
    assert "segfault" in masked  # the rank's own crash is named behind the wrapper's exit 0
    hung_case, hung = cases[
        "dataloader[device=cpu,start_method=fork,workers=2,persistent=0,accel_init=0,fault=worker_hang]"
    ]
    # a steady phase that went silent is a hang before the 60 s hard timeout
    assert hung_case.time < 40 and "no heartbeat for" in hung_case.result[0].message
    assert hung["repro.last_phase"] == "batch"


def test_slow_progress_is_not_a_hang_and_a_stall_is_caught_early(project):
    write_matrix(project, "planted: {module: planted, timeout_s: 6, params: {kind: [slow]}}\n")
    done = run_cli("run", cwd=project)
    cases = cases_by_name(only_run_dir(project / "results") / "junit.xml")
    slow_case, slow = cases["planted[kind=slow]"]
    assert (slow["repro.outcome"], slow["repro.signature"]) == ("error", "timeout_slow_progress")
    assert "slow, not hung" in slow_case.result[0].message
    assert done.returncode == 1


def test_a_phase_past_its_declared_budget_is_hung_long_before_the_timeout(project):
    # budget_stall: one heartbeat with budget_s=1, then silence; the hard timeout is 60 s.
    write_matrix(
        project, "planted: {module: planted, timeout_s: 60, params: {kind: [budget_stall]}}\n"
    )
    done = run_cli("run", "--no-doctor", cwd=project)
    assert done.returncode == 1, done.stderr
    case, props = cases_by_name(only_run_dir(project / "results") / "junit.xml")[
        "planted[kind=budget_stall]"
    ]
    assert props["repro.outcome"] == "hung" and props["repro.last_phase"] == "short_phase"
    assert "no heartbeat for 1 s (its declared budget)" in case.result[0].message
    assert case.time < 15

    # --timeout-scale scales declared budgets too (a slow machine gets 3 s, not 1 s)
    done = run_cli("run", "--no-doctor", "--timeout-scale", "3", cwd=project)
    newest = sorted((project / "results").iterdir())[-1]
    case, _props = cases_by_name(newest / "junit.xml")["planted[kind=budget_stall]"]
    assert "no heartbeat for 3 s (its declared budget)" in case.result[0].message


def test_logger_finalizer_hangs_forked_workers_and_its_fixes_pass(project):
    # 30 s, not the 8 s this test had: the cases that pass start spawn workers that import
    # torch, which took 13-24 s at load 5-8 (every branch of this session's run saw
    # logger_pid_guard end as hung at 8 s); the expected hang is still called by its 3 s
    # heartbeat budget, not by the timeout.
    write_matrix(
        project,
        "fork_safety: {timeout_s: 30, params: {start_method: [fork, spawn], mode: [logger_process, logger_pid_guard, logger_thread]}}\n",
    )
    done = run_cli("run", cwd=project)
    # logger_process under fork is fork_safety's EXPECT: expected, so exit 0 (issue 29)
    assert done.returncode == 0, done.stderr
    cases = cases_by_name(only_run_dir(project / "results") / "junit.xml")
    verdicts = {
        name: (props["repro.outcome"], props.get("repro.signature"))
        for name, (_c, props) in cases.items()
    }
    assert verdicts["fork_safety[start_method=fork,mode=logger_process]"] == (
        "hung",
        "hang.fork_finalizer",
    )
    assert verdicts["fork_safety[start_method=fork,mode=logger_pid_guard]"] == ("passed", None)
    assert verdicts["fork_safety[start_method=fork,mode=logger_thread]"] == ("passed", None)
    assert verdicts["fork_safety[start_method=spawn,mode=logger_process]"] == ("passed", None)
    # The real wandb modes: tests/test_field_scenarios.py.


def test_a_gpu_variant_without_a_visible_device_fails_loudly_instead_of_skipping(project):
    # The known trap (field report F3-8): a driver problem makes is_available() False and the
    # scenario silently "passes" on the CPU. On a GPU variant that must be a failure.
    write_matrix(project, "cuda_basic: {}\n")
    (project / "matrix.yaml").write_text(
        (project / "matrix.yaml")
        .read_text()
        .replace(
            "variants:\n",
            'variants:\n  - {runtime: cu128, torch: "2.8.0", base_image: "nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04"}\n',
        )
    )
    # This interpreter's torch is not the variant's: the flag records it there all the same,
    # as a cu128 image whose driver is broken would.
    done = run_cli("run", "--as-variant", "cu128-torch2.8", "--allow-variant-mismatch", cwd=project)
    assert done.returncode == 1, done.stderr
    cases = cases_by_name(only_run_dir(project / "results") / "junit.xml")
    gpu_case, gpu = cases["cuda_basic[device=cuda]"]
    assert (gpu["repro.outcome"], gpu["repro.signature"]) == ("failed", "accelerator_unavailable")
    assert "torch.cuda.is_available() is False" in gpu_case.result[0].message
    assert cases["cuda_basic[device=cpu]"][1]["repro.outcome"] == "passed"


def test_a_beat_written_after_the_last_read_is_not_a_stall(tmp_path):
    # The runner reads the events file every 0.25 s (longer when it is itself starved); a beat
    # the case wrote since then must be read before the phase is judged silent past its budget.
    from repro.runner import protocol
    from repro.runner.executor import confirmed_stall
    from repro.runner.watchdog import Heartbeats

    events = tmp_path / "events.jsonl"
    started = time.monotonic()
    protocol.append_event(
        str(events), started, "heartbeat", {"phase": "batch", "step": 0, "budget_s": 1.0}
    )
    beats = Heartbeats(protocol.EventReader(events))
    beats.poll(100.0)
    protocol.append_event(
        str(events), started, "heartbeat", {"phase": "batch", "step": 1, "budget_s": 1.0}
    )

    assert beats.stalled(101.5)  # judged on the stale read alone: a false hang
    assert not confirmed_stall(beats, 101.5)  # the fresh read finds step 1
    assert beats.last_step == 1
    assert confirmed_stall(beats, 103.0)  # and silence past the budget after it is still a hang


def _spinners(count: int) -> list[subprocess.Popen]:
    return [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
        for _ in range(count)
    ]


def test_run_queue_wait_grows_for_processes_kept_off_the_cpu_and_not_for_a_sleeper():
    """schedstat's run-queue wait (watchdog.run_queue_wait_ns) is what tells starved from
    stuck: busy loops beyond the cores wait for a CPU; a process asleep on a pipe never does."""
    from repro.runner import watchdog

    cores = len(os.sched_getaffinity(0))
    sleeper = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                               stdin=subprocess.PIPE)  # fmt: skip
    busy = _spinners(3 * cores)
    try:
        time.sleep(0.5)
        before = watchdog.run_queue_wait_ns([p.pid for p in busy])
        asleep = watchdog.run_queue_wait_ns([sleeper.pid])
        time.sleep(1.0)
        waited_s = (watchdog.run_queue_wait_ns([p.pid for p in busy]) - before) / 1e9
        asleep_s = (watchdog.run_queue_wait_ns([sleeper.pid]) - asleep) / 1e9
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
        sleeper.kill()
        sleeper.wait()
    # 3 loops per core: about two thirds of each loop's second is spent waiting
    assert waited_s > watchdog.STARVED_SHARE * len(busy)
    assert asleep_s < 0.01
    assert watchdog.run_queue_wait_ns([2**22 + 12345]) is None  # no such process: no evidence


@pytest.mark.slow
def test_a_case_starved_of_cpu_past_its_budget_is_not_called_hung(project):
    """Issue 19: under load a forked DataLoader worker can stay silent past its 3 s budget while
    runnable; the watchdog waits while the case's processes wait for a CPU, and still calls a
    sleeping case hung at its budget (the budget_stall test above)."""
    write_matrix(project, "planted: {module: planted, timeout_s: 60, params: {kind: [starved]}}\n")
    done = run_cli("run", "--no-doctor", cwd=project)
    run_dir = only_run_dir(project / "results")
    case, props = cases_by_name(run_dir / "junit.xml")["planted[kind=starved]"]
    assert props["repro.outcome"] == "passed", case.result[0].message if case.result else ""
    assert done.returncode == 0, done.stderr
    log = (run_dir / props["repro.log"]).read_text()
    assert "the hang verdict waited" in log
