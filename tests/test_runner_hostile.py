"""Issue 9 against the runner, with real child processes: a hostile events file, processes that
try to escape cleanup (also when the runner itself is killed with SIGKILL), a chatty case, NaN
timeouts, and a results directory that fills up or turns read-only mid-run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import psutil
import pytest
from conftest import cases_by_name, cli_env, only_run_dir, run_cli, write_matrix

from repro.runner import protocol
from repro.runner.case_api import Context
from repro.runner.caselog import MIN_CAP_BYTES, CaseLog

pytestmark = pytest.mark.slow


# ---- the events reader, in process ---------------------------------------------------------


def test_reader_turns_each_kind_of_bad_record_into_a_problem_not_an_exception(tmp_path):
    bad_lines = {
        '{"event": "result", "outcome": "exploded"}': "unknown outcome",
        '{"event": "metric", "name": "x", "value": NaN}': "not JSON",
        '{"event": "metric", "name": "x", "value": "fast"}': "finite number",
        "[1, 2, 3]": "JSON object",
        "not json at all": "not JSON",
        '{"event": "heartbeat", "phase": {"a": 1}}': "heartbeat",
    }
    for line, why in bad_lines.items():
        path = tmp_path / "events.jsonl"
        path.write_text('{"event": "metric", "name": "ok_s", "value": 1.5}\n' + line + "\n")
        events = protocol.read_events(path)
        assert events.problem is not None and why in events.problem, (line, events.problem)
        assert events.metrics == {"ok_s": 1.5}  # what came before the bad record is kept


def test_reader_refuses_an_oversized_line_a_fifo_and_a_dev_zero_link_without_blocking(tmp_path):
    long_line = tmp_path / "long.jsonl"
    long_line.write_bytes(b'{"event": "property", "name": "x", "value": "' + b"y" * 10**6)
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.jsonl"
    zero.symlink_to("/dev/zero")
    started = time.monotonic()
    expected = {long_line: "longer than", fifo: "not a regular file", zero: "cannot be opened"}
    for path, why in expected.items():
        events = protocol.read_events(path)
        assert events.problem and why in events.problem, (path, events.problem)
    assert time.monotonic() - started < 5


def test_an_honest_case_never_breaks_the_protocol_with_a_diverged_loss_or_a_numpy_step(tmp_path):
    path = tmp_path / "events.jsonl"
    ctx = Context("planted[kind=pass]", {}, str(path), str(tmp_path))
    ctx.metric("final_loss", float("nan"))
    ctx.metric("it_per_s", 12)
    ctx.heartbeat("step", True + 2)  # an int subclass, as numpy and torch scalars convert
    ctx.property("mode", "fork")
    events = protocol.read_events(path)
    assert events.problem is None
    assert events.metrics == {"it_per_s": 12.0}
    assert events.properties == {"metric.final_loss": "nan", "mode": "fork"}
    assert (events.last_phase, events.last_step) == ("step", 3)


def test_reader_keeps_a_line_cut_by_a_crash_out_of_the_verdict(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('{"event": "heartbeat", "phase": "load", "step": 2}\n{"event": "met')
    events = protocol.read_events(path)
    assert events.problem is None and events.last_phase == "load" and events.last_step == 2


def test_case_log_keeps_the_tail_under_its_cap_and_says_where_it_was_cut(tmp_path):
    cap = MIN_CAP_BYTES
    log = CaseLog(tmp_path / "case.log", b"# header\n", cap_bytes=cap)
    for i in range(1000):
        log.write(f"line {i:05d} ".encode() + b"z" * 500 + b"\n")
    log.close()
    text = (tmp_path / "case.log").read_text()
    assert len(text.encode()) <= cap
    assert text.startswith("# header\n\n# repro: ") and "bytes of output cut here" in text
    assert text.rstrip().endswith("z") and "line 00999 " in text and "line 00000 " not in text
    with pytest.raises(FileExistsError):  # a second case never writes into this log
        CaseLog(tmp_path / "case.log", b"", cap_bytes=cap)


# ---- the runner end to end -------------------------------------------------------------------


def _parse_both_ways(junit: Path) -> None:
    ET.parse(junit)
    cases_by_name(junit)


def test_bad_event_records_make_that_case_an_events_protocol_error_and_the_run_goes_on(project):
    write_matrix(
        project,
        "planted: {module: planted, timeout_s: 20, params: {kind: [events_outcome, events_nan, events_budget, events_array, events_long_line, pass]}}\n",
    )
    done = run_cli("run", "--no-doctor", cwd=project, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    junit = only_run_dir(project / "results") / "junit.xml"
    _parse_both_ways(junit)
    verdicts = {
        name: (props["repro.outcome"], props.get("repro.signature"))
        for name, (_c, props) in cases_by_name(junit).items()
    }
    for kind in (
        "events_outcome",
        "events_nan",
        "events_budget",
        "events_array",
        "events_long_line",
    ):
        assert verdicts[f"planted[kind={kind}]"] == ("error", "events_protocol"), kind
    assert verdicts["planted[kind=pass]"] == ("passed", None)


def test_an_events_file_turned_into_a_fifo_or_dev_zero_cannot_stop_the_hard_deadline(project):
    write_matrix(
        project,
        "planted: {module: planted, timeout_s: 3, params: {kind: [events_fifo, events_devzero]}}\n",
    )
    started = time.monotonic()
    done = run_cli("run", "--no-doctor", cwd=project, timeout=60)
    assert done.returncode == 1, done.stderr
    cases = cases_by_name(only_run_dir(project / "results") / "junit.xml")
    for kind in ("events_fifo", "events_devzero"):
        case, props = cases[f"planted[kind={kind}]"]
        assert props["repro.outcome"] == "hung", (kind, props)
        assert case.time < 3 + 8
    assert time.monotonic() - started < 45


@pytest.mark.parametrize("scale", ["nan", "inf", "0", "-1"])
def test_a_timeout_scale_that_would_disable_the_watchdog_is_refused(project, scale):
    write_matrix(project, "planted: {module: planted, params: {kind: [pass]}}\n")
    done = run_cli("run", "--list", f"--timeout-scale={scale}", cwd=project, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--timeout-scale" in done.stderr, done.stderr


def _pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def _alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            continue
    return alive


def _runner(project: Path, pid_file: Path, *args: str) -> subprocess.Popen:
    env = cli_env()
    env["REPRO_PLANTED_PIDS"] = str(pid_file)
    return subprocess.Popen(
        [sys.executable, "-m", "repro", "run", "--no-doctor", *args], cwd=project, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip


def test_a_setsid_grandchild_with_a_clean_environment_is_killed_and_counted(project):
    pid_file = project / "pids"
    write_matrix(
        project,
        "planted: {module: planted, timeout_s: 20, params: {kind: [setsid_leak, kill_harness]}}\n",
    )
    runner = _runner(project, pid_file)
    _out, err = runner.communicate(timeout=60)
    assert runner.returncode == 1, err  # kill_harness ends as crashed
    cases = cases_by_name(only_run_dir(project / "results") / "junit.xml")
    leak = cases["planted[kind=setsid_leak]"][1]
    assert (leak["repro.outcome"], leak["repro.leaked_processes"]) == ("passed", "1")
    orphaned = cases["planted[kind=kill_harness]"][1]
    assert orphaned["repro.outcome"] == "crashed"
    assert int(orphaned["repro.leaked_processes"]) >= 1
    grandchildren = _pids(pid_file)
    assert len(grandchildren) == 2 and _alive(grandchildren) == []


def _case_processes(kind: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if f"planted[kind={kind}]" in proc.environ().get("REPRO_CASE", ""):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_kill_9_of_the_runner_leaves_neither_a_sigterm_ignoring_case_nor_a_setsid_grandchild(
    project,
):
    """Acceptance (issue 9): two runs at once, one running a case that ignores SIGTERM, the other
    a case whose grandchild left the session with a clean environment; both runners get SIGKILL;
    5 s later no process of either case is alive (by pid, and by the case's environment)."""
    runners, pid_files = [], []
    for kind in ("ignore_term", "setsid_sleep"):
        directory = project / kind
        directory.mkdir()
        write_matrix(
            directory, f"planted: {{module: planted, timeout_s: 120, params: {{kind: [{kind}]}}}}\n"
        )
        pid_files.append(directory / "pids")
        # fresh: members are found by their /proc environment (see tests/test_zygote.py)
        runners.append(_runner(directory, pid_files[-1], "--isolation", "fresh"))
    try:
        deadline = time.monotonic() + 30
        while not all(_pids(f) for f in pid_files):
            assert all(r.poll() is None for r in runners), "a runner ended early"
            assert time.monotonic() < deadline, "the cases never started"
            time.sleep(0.1)
        pids = [pid for f in pid_files for pid in _pids(f)]
        members = [p.pid for kind in ("ignore_term", "setsid_sleep") for p in _case_processes(kind)]
        assert len(members) >= 4  # each case's harness and case process
        for runner in runners:
            os.kill(runner.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        for runner in runners:
            runner.communicate(timeout=10)
        while _alive(pids + members) and time.monotonic() - killed_at < 5:
            time.sleep(0.1)
        assert _alive(pids + members) == []
        assert _case_processes("ignore_term") + _case_processes("setsid_sleep") == []
    finally:
        for runner in runners:
            if runner.poll() is None:
                runner.kill()
                runner.communicate()
        for f in pid_files:
            for pid in _alive(_pids(f)):
                os.kill(pid, signal.SIGKILL)


def test_a_case_printing_200_mb_gets_a_log_no_larger_than_its_cap(project):
    write_matrix(project, "planted: {module: planted, timeout_s: 60, params: {kind: [chatty]}}\n")
    done = run_cli("run", "--no-doctor", "--log-cap-mib", "8", cwd=project, timeout=120)
    assert done.returncode == 0, done.stderr
    run_dir = only_run_dir(project / "results")
    props = cases_by_name(run_dir / "junit.xml")["planted[kind=chatty]"][1]
    log = run_dir / props["repro.log"]
    assert log.stat().st_size <= 8 * 1024 * 1024
    text = log.read_text()
    assert "bytes of output cut here" in text and text.endswith("x" * 1023 + "\n")


# ---- the results directory fails mid-run -------------------------------------------------


@pytest.fixture
def small_mount(tmp_path: Path):
    """A 2 MiB tmpfs (needs root with CAP_SYS_ADMIN: skipped elsewhere)."""
    mount = tmp_path / "mnt"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    for _ in range(2):  # the read-only bind mount, if any, then the tmpfs
        subprocess.run(["umount", "-l", str(mount)], check=False, capture_output=True)


def _one_fatal_line(stderr: str) -> str:
    errors = [line for line in stderr.splitlines() if line.startswith("repro: error:")]
    assert len(errors) == 1 and "Traceback" not in stderr, stderr
    return errors[0]


def test_a_full_disk_mid_run_is_one_line_exit_3_and_keeps_every_finished_case(project, small_mount):
    write_matrix(
        project,
        "planted: {module: planted, timeout_s: 60, params: {kind: [pass, fail, chatty, error]}}\n",
    )
    # -j 1: under -j 2 the chatty case fills the disk while the fail case still runs, and the
    # fail case's result then cannot be written (correctly: it was not finished before the disk
    # filled); one case at a time makes "the cases finished before" pass and fail every time.
    done = run_cli(
        "run", "--no-doctor", "-j", "1", "--results-dir", str(small_mount), cwd=project,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "No space left on device" in _one_fatal_line(done.stderr)
    junit = only_run_dir(small_mount) / "junit.xml"
    _parse_both_ways(junit)
    assert list(cases_by_name(junit)) == ["planted[kind=pass]", "planted[kind=fail]"]
    assert _case_processes("chatty") == []


@pytest.mark.parametrize("junit_written", [False, True])
def test_the_full_disk_message_names_junit_xml_only_when_one_was_written(
    tmp_path, monkeypatch, junit_written
):
    """Issue 25: with a disk full from the start the run said "junit.xml ... keeps every
    finished case" when no junit.xml existed."""
    from repro.errors import FatalError
    from repro.model import Fingerprint
    from repro.outcomes import CaseResult, Outcome
    from repro.runner import context, run_all

    calls = []

    def full(run_dir, info):
        calls.append(info)
        if len(calls) > (1 if junit_written else 0):
            raise OSError(28, "No space left on device", str(run_dir / "run.json"))

    monkeypatch.setattr(run_all, "write_run_info", full)
    ctx = context.RunContext(tmp_path, Fingerprint.from_json({"host": {}}), {}, {})
    preflight = [CaseResult("doctor", "doctor[nvml]", Outcome.PASSED, 0.1)] * junit_written
    with pytest.raises(FatalError) as raised:
        run_all.run_all(ctx, [], preflight=preflight)
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / 'run.json'}: cannot write results: No space left")
    assert (tmp_path / "junit.xml").is_file() == junit_written
    if junit_written:
        assert message.endswith(f"junit.xml in {tmp_path} keeps every case written before it")
    else:
        assert message.endswith(f"no junit.xml was written in {tmp_path}")


def test_a_results_directory_made_read_only_mid_run_is_one_line_exit_3(project, small_mount):
    write_matrix(
        project,
        "planted: {module: planted, timeout_s: 3, params: {kind: [pass, slow, error]}}\n",
    )
    runner = subprocess.Popen(
        [sys.executable, "-m", "repro", "run", "--no-doctor", "--results-dir", str(small_mount)],
        cwd=project, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not list(small_mount.glob("*/junit.xml")):
            assert time.monotonic() < deadline and runner.poll() is None
            time.sleep(0.05)
        # A read-only bind mount over the directory: files the runner has open stay writable
        # (a remount would be refused as busy), every new file (junit.xml's rewrite) is EROFS.
        subprocess.run(["mount", "--bind", str(small_mount), str(small_mount)], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", str(small_mount)], check=True)
        _out, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()
    assert runner.returncode == 3, err
    assert "Read-only file system" in _one_fatal_line(err)
    junit = only_run_dir(small_mount) / "junit.xml"
    _parse_both_ways(junit)
    assert list(cases_by_name(junit)) == ["planted[kind=pass]"]
    assert _case_processes("slow") == []
