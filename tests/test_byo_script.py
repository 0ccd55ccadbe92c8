"""Bring your own repro (issue 14, item 4): a user's script in matrix.yaml runs as one case
under the real runner and is classified like a built-in case; bad entries are exit 2 with one
line. Real subprocesses through ``python -m repro run --config``, small timeouts."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import cases_by_name, only_run_dir, run_cli

from repro.config import load
from repro.containers.options import ResolvedDockerRun
from repro.errors import ConfigError
from repro.scenarios import script

pytestmark = pytest.mark.slow

HEADER = """\
version: 1
defaults: {results_dir: results}
variants:
  - {runtime: cpu, torch: "2.13.0", base_image: "python:3.12-slim"}
scenarios:
"""

#: The planted user scripts, one per outcome (names are what the log must show).
SCRIPTS = {
    "repro/fail.py": """\
        import sys
        print("training step 1", flush=True)
        print("RuntimeError: CUDA error: an illegal instruction was encountered", file=sys.stderr)
        sys.exit(1)
        """,
    "repro/segv.py": """\
        import os, signal
        print("about to crash", flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
        """,
    "repro/hang.py": """\
        import time
        def planted_wait_forever():
            while True:
                time.sleep(0.2)
        planted_wait_forever()
        """,
    "repro/ok.py": """\
        import json, os, sys
        import helper  # the script's own folder is on sys.path, as under `python ok.py`
        with open("out.txt", "w") as out:  # the working directory is writable, on both lanes
            out.write("written")
        config = open(os.path.join(os.environ["REPRO_CONFIG_DIR"], "matrix.yaml")).read()
        print("BYOR", json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "exe": sys.executable,
                                  "name": __name__, "helper": helper.VALUE,
                                  "config_dir": os.environ["REPRO_CONFIG_DIR"],
                                  "reads_config": "my_ok" in config}))
        """,
    "repro/helper.py": "VALUE = 42\n",
    "repro/child_tb.py": """\
        import multiprocessing as mp

        def work():
            mp.set_start_method("spawn")  # a second call: the child's own bug

        if __name__ == "__main__":
            mp.set_start_method("fork")
            child = mp.Process(target=work)
            child.start()
            child.join()
            print("child exit code", child.exitcode, flush=True)
        """,
    "repro/keyerr.py": """\
        config = {"batch_size": 8}
        try:
            lr = config["lr"]
        except KeyError as exc:
            raise RuntimeError("bad config") from exc
        """,
    "repro/abort.sh": """\
        #!/bin/sh
        echo "native tool starting"
        kill -ABRT $$
        """,
}

MATRIX = """\
  my_fail:
    script: repro/fail.py
    timeout_s: 30
    expect: {outcome: failed, signature: cuda_illegal_instruction, reason: "planted: O1's error text"}
  my_segv: {script: repro/segv.py, timeout_s: 30}
  my_hang: {script: repro/hang.py, timeout_s: 3}
  my_ok: {script: repro/ok.py, args: ["two words", "--steps", "3"], timeout_s: 30}
  my_native: {script: repro/abort.sh, timeout_s: 30}
  my_keyerr: {script: repro/keyerr.py, timeout_s: 30}
  my_child_tb: {script: repro/child_tb.py, timeout_s: 30}
  my_child_tb_strict:
    script: repro/child_tb.py
    timeout_s: 30
    fail_on: [cuda_reinit_in_forked_subprocess, {pattern: 'context has already been set'}]
"""


def _plant(root: Path, matrix_yaml: str, scripts: dict[str, str] = SCRIPTS) -> Path:
    for name, text in scripts.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        if name.endswith(".sh"):
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
    config = root / "matrix.yaml"
    config.write_text(HEADER + matrix_yaml)
    return config


@pytest.fixture(scope="module")
def byor_run(tmp_path_factory):
    """One real run of five planted scripts (a few seconds: the hang's 3 s timeout dominates);
    the run is started from another folder than matrix.yaml's."""
    root = tmp_path_factory.mktemp("byor")
    project = root / "project"
    config = _plant(project, MATRIX)
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    done = run_cli(
        "run", "--no-doctor", "--config", str(config), "--results-dir", str(root / "results"),
        cwd=elsewhere, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr  # red cases: exit 1, not 2 or 3
    run_dir = only_run_dir(root / "results")
    cases = cases_by_name(run_dir / "junit.xml")
    return project, run_dir, cases, done


def _log(run_dir: Path, props: dict) -> str:
    return (run_dir / props["repro.log"]).read_text()


def test_every_script_is_one_case_named_by_its_entry(byor_run):
    _project, _run_dir, cases, _done = byor_run
    assert sorted(cases) == [
        "my_child_tb", "my_child_tb_strict", "my_fail", "my_hang", "my_keyerr", "my_native",
        "my_ok", "my_segv",
    ]  # fmt: skip


def test_a_nonzero_exit_is_failed_with_the_signature_the_table_finds_in_its_output(byor_run):
    _project, run_dir, cases, _done = byor_run
    case, props = cases["my_fail"]
    assert props["repro.outcome"] == "failed"
    assert props["repro.signature"] == "cuda_illegal_instruction"
    assert "exited with status 1" in case.result[0].message
    log = _log(run_dir, props)
    assert "training step 1" in log  # stdout and stderr of the script are the case log
    assert "RuntimeError: CUDA error: an illegal instruction was encountered" in log


def test_an_unrecognised_failure_names_the_root_cause_not_only_the_exit_status(byor_run):
    """Issue 21, item 3: the chained exception's innermost cause is the JUnit message."""
    _project, _run_dir, cases, _done = byor_run
    case, props = cases["my_keyerr"]
    assert (props["repro.outcome"], props["repro.signature"]) == ("failed", "unknown")
    assert case.result[0].message == "keyerr.py exited with status 1 | KeyError: 'lr'"


def test_a_script_killed_by_a_signal_is_crashed_like_a_builtin_crash(byor_run):
    _project, run_dir, cases, _done = byor_run
    _case, props = cases["my_segv"]
    assert props["repro.outcome"] == "crashed"
    assert (props["repro.signal"], props["repro.signature"]) == ("SIGSEGV", "segfault")
    log = _log(run_dir, props)
    # faulthandler in the script's own interpreter: its frame, not the harness's, is the evidence
    assert "Fatal Python error: Segmentation fault" in log
    assert re.search(r'File ".*repro/segv\.py", line 3 in <module>', log), log


def test_a_silent_script_is_hung_at_its_timeout_with_its_own_stack_in_the_log(byor_run):
    _project, run_dir, cases, _done = byor_run
    case, props = cases["my_hang"]
    assert props["repro.outcome"] == "hung"
    assert props["repro.signature"] == "hang_timeout"
    assert 3 <= case.time < 3 + 15
    log = _log(run_dir, props)
    stacks = log.split("# repro watchdog: dumping stacks", 1)[1]
    assert re.search(r'File ".*repro/hang\.py", line 4 in planted_wait_forever', stacks), log


def test_a_zero_exit_passes_with_args_cwd_and_the_interpreter_under_test(byor_run):
    project, run_dir, cases, _done = byor_run
    _case, props = cases["my_ok"]
    assert props["repro.outcome"] == "passed"
    log = _log(run_dir, props)
    line = next(x for x in log.splitlines() if x.startswith("BYOR "))
    seen = json.loads(line[5:])
    assert seen["argv"][1:] == ["two words", "--steps", "3"]
    assert Path(seen["argv"][0]) == project / "repro" / "ok.py"
    assert seen["name"] == "__main__" and seen["helper"] == 42
    # a private writable folder, not matrix.yaml's (read-only in a container) nor ours
    assert Path(seen["cwd"]).name.startswith("repro-case-")
    assert Path(seen["config_dir"]) == project.resolve() and seen["reads_config"]
    assert not (project / "out.txt").exists()
    header_python = re.search(r"^# timeout .* s, python (.+)$", log, re.M).group(1)
    assert seen["exe"] == header_python  # the case's interpreter, not whatever `python` is


def test_a_native_executable_runs_directly_and_its_signal_is_the_cases(byor_run):
    _project, run_dir, cases, _done = byor_run
    _case, props = cases["my_native"]
    assert (props["repro.outcome"], props["repro.signal"]) == ("crashed", "SIGABRT")
    assert "native tool starting" in _log(run_dir, props)


def test_a_pass_after_a_child_traceback_shows_its_findings_in_every_output(byor_run, tmp_path):
    """Issue 21, item 4: exit 0 keeps the outcome, but the child's exception is recorded as a
    finding in junit.xml and shown in matrix.md and matrix.html."""
    _project, run_dir, cases, _done = byor_run
    _case, props = cases["my_child_tb"]
    assert props["repro.outcome"] == "passed"
    finding = "RuntimeError: context has already been set"
    assert (props["repro.findings"], props["repro.finding.1"]) == ("1", finding)
    assert cases["my_ok"][1].get("repro.findings") is None  # a clean pass has none
    done = run_cli("report", "-o", str(tmp_path), str(run_dir), cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    md = (tmp_path / "matrix.md").read_text()
    assert "🔎 1 finding" in md
    assert f"| 🟩 passed | my\\_child\\_tb |  | 1 finding: {finding} |" in md
    page = (tmp_path / "matrix.html").read_text()
    assert "🔎 1 finding" in page and f"1 finding: {finding}" in page
    [case] = [
        c
        for cell in json.loads((tmp_path / "matrix.json").read_text())["cells"]
        for c in cell["cases"]
        if c["case"] == "my_child_tb"
    ]
    assert (case["outcome"], case["findings"]) == ("passed", [finding])


def test_fail_on_makes_the_findings_of_a_passing_script_a_failure(byor_run):
    _project, _run_dir, cases, _done = byor_run
    case, props = cases["my_child_tb_strict"]
    assert (props["repro.outcome"], props["repro.signature"]) == ("failed", "unknown")
    assert case.result[0].message == (
        "passed, but fail_on 'context has already been set': "
        "RuntimeError: context has already been set"
    )
    assert "repro.findings" not in props  # a failure, not a pass with findings


def test_the_inline_expect_makes_the_report_show_the_failure_as_expected(byor_run, tmp_path):
    project, run_dir, _cases, _done = byor_run
    done = run_cli(
        "report", "--config", str(project / "matrix.yaml"), "-o", str(tmp_path), str(run_dir),
        cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [rule] = json.loads((tmp_path / "matrix.json").read_text())["expectations"]
    assert (rule["case"], rule["outcome"], rule["signature"]) == (
        "my_fail",
        "failed",
        "cuda_illegal_instruction",
    )
    assert (rule["matched"], rule["expected"]) == (1, 1)


def test_the_entry_loads_as_one_case_with_an_expectation_after_the_expect_list(tmp_path):
    config = _plant(
        tmp_path,
        "  my_bug: {script: repro/ok.py, args: [x], timeout_s: 7, expect: {outcome: crashed}}\n"
        "expect:\n  - {case: other, reason: listed}\n",
        {"repro/ok.py": "pass\n"},
    )
    matrix = load(config)
    [case] = matrix.cases()
    assert (case.case_id, case.timeout_s) == ("my_bug", 7.0)
    assert case.param_dict["args"] == ("x",)
    assert case.param_dict["script"] == str(tmp_path.resolve() / "repro" / "ok.py")
    listed, inline = matrix.expectations
    assert (listed.index, inline.index) == (0, 1)  # the report keys entries by index
    assert inline.label == "scenarios.my_bug.expect (case 'my_bug', scenario 'my_bug')"
    assert inline.expects("crashed", "segfault") and not inline.expects("failed", None)
    assert inline.matches(scenario="my_bug", case="my_bug", variant="v", host="h")


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("{script: repro/missing.py}", "scenarios.my_bug.script: expected an existing file"),
        ("{script: repro}", "scenarios.my_bug.script: expected a regular file"),
        (
            "{script: repro/ok.py, args: [--steps, 3]}",
            "scenarios.my_bug.args[1]: expected a string (quote numbers and booleans), got 3",
        ),
        ("{script: repro/ok.py, args: --steps}", "scenarios.my_bug.args: expected a list"),
        (
            "{script: repro/ok.py, fail_on: [no_such_signature]}",
            "scenarios.my_bug.fail_on[0]: expected a signature name of the table or {pattern: REGEX}",
        ),
        (
            "{script: repro/ok.py, fail_on: [{pattern: '('}]}",
            "scenarios.my_bug.fail_on[0].pattern: expected a Python regular expression",
        ),
        ("{script: repro/data.txt}", "scenarios.my_bug.script: expected a .py script or an exec"),
        ("{script: 12}", "scenarios.my_bug.script: expected a path to your repro script"),
        ("{script: repro/ok.py, timeout_s: -1}", "scenarios.my_bug.timeout_s: expected a posit"),
        ("{script: repro/ok.py, param: {a: [1]}}", "scenarios.my_bug.param: unknown key"),
        ("{script: ../outside.py}", "scenarios.my_bug.script: expected a path inside matrix.yaml"),
        ("{script: /etc/passwd}", "scenarios.my_bug.script: expected a path inside matrix.yaml"),
        (
            "{script: repro/ok.py, allow_outside: yes-please}",
            "scenarios.my_bug.allow_outside: expected true or false",
        ),
        (
            "{script: repro/ok.py, args: [" + ", ".join(["a" * 4000] * 140) + "]}",
            "scenarios.my_bug.args: expected arguments of at most 524288 bytes in all",
        ),
        (
            "{script: repro/ok.py, expect: {outcome: broken}}",
            "scenarios.my_bug.expect.outcome: expected one of failed",
        ),
    ],
)
def test_a_bad_entry_is_exit_2_with_one_line_naming_the_key(tmp_path, entry, expected):
    config = _plant(
        tmp_path,
        f"  my_bug: {entry}\n",
        {"repro/ok.py": "pass\n", "repro/data.txt": "not a program\n"},
    )
    done = run_cli("run", "--no-doctor", "--config", str(config), cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.strip()]
    assert line.startswith("repro: error: ") and str(config) in line and expected in line, line
    with pytest.raises(ConfigError, match=re.escape(expected)):
        load(config)


def test_an_absolute_path_inside_the_folder_is_accepted_and_one_outside_is_not(tmp_path):
    """Issue 29 item 5: users write '/home/me/cfg/ok.py' for a file beside matrix.yaml."""
    inside = tmp_path / "cfg" / "repro" / "ok.py"
    config = _plant(tmp_path / "cfg", f"  my_bug: {{script: {inside}}}\n", {"repro/ok.py": ""})
    [case] = load(config).cases()
    assert case.param_dict["script"] == str(inside)
    # Through a symlinked folder: the path the user wrote, resolved, is inside.
    os.symlink(tmp_path / "cfg", tmp_path / "link")
    config.write_text(HEADER + f"  my_bug: {{script: {tmp_path / 'link' / 'repro' / 'ok.py'}}}\n")
    assert len(load(config).cases()) == 1
    outside = tmp_path / "elsewhere.py"
    outside.write_text("")
    config.write_text(HEADER + f"  my_bug: {{script: {outside}}}\n")
    with pytest.raises(ConfigError, match=r"scenarios\.my_bug\.script: expected a path inside"):
        load(config)
    config.write_text(HEADER + f"  my_bug: {{script: {outside}, allow_outside: true}}\n")
    assert load(config).scenarios[0].script.outside


def test_an_absolute_script_path_is_read_below_the_mount_in_the_container(tmp_path, monkeypatch):
    """The container lane mounts matrix.yaml's folder at /repro/config and names the host's
    folder in $REPRO_CONFIG_ORIGIN; the same file loads there with the path mapped."""
    from repro.config import scripts as script_entries
    from repro.containers import spec as container_mod

    host = tmp_path / "home" / "me" / "cfg"
    text = HEADER + f"  my_bug: {{script: {host / 'repro' / 'ok.py'}}}\n"
    _plant(host, "", {"repro/ok.py": ""}).write_text(text)
    mount = tmp_path / "repro" / "config"  # what the container sees: a copy at another path
    _plant(mount, "", {"repro/ok.py": ""}).write_text(text)
    with pytest.raises(ConfigError, match="expected a path inside"):  # no origin: outside
        load(mount / "matrix.yaml")
    env = container_mod.docker_run_spec(
        _cpu_host(), "cpu", _container_options(str(host / "matrix.yaml"))
    ).kwargs["environment"]
    origin = env[script_entries.CONFIG_ORIGIN_ENV]
    assert origin == str(host)
    monkeypatch.setenv(script_entries.CONFIG_ORIGIN_ENV, origin)
    [case] = load(mount / "matrix.yaml").cases()
    assert case.param_dict["script"] == str(mount / "repro" / "ok.py")


def _cpu_host():
    from conftest import REPO

    from repro.host import hostkind

    return hostkind.load_fixture(REPO / "tests" / "fixtures" / "hosts" / "cpu")


def _container_options(config_file: str):
    from repro.containers import spec as container_mod

    return container_mod.ContainerRun(
        image="repro-matrix:cpu-torch2.13",
        variant_id="cpu-torch2.13",
        run_dir="/tmp/results/run-1",
        config_file=config_file,
        host_fingerprint_dir="/tmp/repro-host-fp-x",
        resolved=ResolvedDockerRun(),
    )


def test_a_symlink_to_a_regular_file_is_accepted_and_one_to_a_folder_is_not(tmp_path):
    config = _plant(tmp_path, "  a: {script: link.py}\n  b: {script: dirlink}\n", {"x.py": ""})
    os.symlink(tmp_path / "x.py", tmp_path / "link.py")
    os.symlink(tmp_path, tmp_path / "dirlink")
    with pytest.raises(ConfigError) as info:
        load(config)
    assert str(info.value).count("\n") == 0 and "scenarios.b.script" in str(info.value)


def test_the_bootstrap_runs_a_script_as_python_would(tmp_path):
    target = tmp_path / "t.py"
    target.write_text("import sys; print(__name__, sys.argv[1:], sys.path[0]); sys.exit(4)\n")
    done = subprocess.run(
        script.command(str(target), ["a"]), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 4
    assert done.stdout.split() == ["__main__", "['a']", str(tmp_path)]
    assert script.command("/bin/true", ["x"]) == ["/bin/true", "x"]
    assert script.command(str(target), [])[0] == sys.executable


def test_a_spawned_worker_finds_the_scripts_main_module(tmp_path):
    # spawn (and 3.14's default forkserver) re-import __main__ by path in the child
    target = tmp_path / "pool.py"
    target.write_text(
        "import multiprocessing as mp\n"
        "def square(x):\n    return x * x\n"
        "if __name__ == '__main__':\n"
        "    with mp.get_context('spawn').Pool(1) as pool:\n"
        "        print(pool.map(square, [3]))\n"
    )
    done = subprocess.run(
        script.command(str(target), []), capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout.strip()) == (0, "[9]"), done.stderr


def test_the_script_answers_the_signal_the_watchdog_sends():
    from repro.runner import harness

    assert script.DUMP_SIGNAL == harness.DUMP_SIGNAL
    assert f"signal.Signals({int(harness.DUMP_SIGNAL)})" in script.BOOTSTRAP


def test_a_symlink_leading_outside_is_refused_unless_allowed_and_then_host_lane_only(tmp_path):
    project = tmp_path / "project"
    outside = tmp_path / "elsewhere" / "x.py"
    outside.parent.mkdir()
    outside.write_text("print(open('/etc/hostname').read())\n")
    project.mkdir()
    config = _plant(project, "  my_bug: {script: link.py}\n", {})
    os.symlink(outside, project / "link.py")
    with pytest.raises(ConfigError, match=r"scenarios\.my_bug\.script: expected a path inside"):
        load(config)
    for lane in (("run", "--no-doctor"), ("docker-run", "--variant", "cpu-torch2.13", "--dry-run")):
        done = run_cli(*lane, "--config", str(config), cwd=tmp_path, timeout=60)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "scenarios.my_bug.script: expected a path inside" in done.stderr
    config.write_text(HEADER + "  my_bug: {script: link.py, allow_outside: true}\n")
    [case] = load(config).cases()
    assert case.param_dict["script"] == str(project / "link.py")
    done = run_cli("docker-run", "--variant", "cpu-torch2.13", "--dry-run", "--config", str(config),
                   cwd=tmp_path, timeout=60)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.strip()]
    assert "scenarios.my_bug.allow_outside: expected a script inside" in line


@pytest.mark.parametrize("runner", ["fresh", "zygote"])
def test_forty_arguments_of_4000_characters_reach_the_script(tmp_path, runner):
    args = [f"{i:02d}" + "x" * 3998 for i in range(40)]  # 160 KB: over one env string's 128 KiB
    config = _plant(
        tmp_path,
        f"  big_args: {{script: repro/count.py, timeout_s: 60, args: {json.dumps(args)}}}\n",
        {
            "repro/count.py": "import sys\n"
            "print('ARGS', len(sys.argv) - 1, sum(map(len, sys.argv[1:])), sys.argv[40][:2])\n"
        },
    )
    done = run_cli(
        "run", "--no-doctor", "--config", str(config), "--isolation", runner,
        cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = only_run_dir(tmp_path / "results")
    _case, props = cases_by_name(run_dir / "junit.xml")["big_args"]
    assert props["repro.outcome"] == "passed"
    assert "ARGS 40 160000 39" in _log(run_dir, props)
