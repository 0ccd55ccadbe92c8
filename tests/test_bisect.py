"""repro bisect: the pure search and judgement, the version listing of a real local index, and
real bisects (uv environments, `repro run` of a `script:` case) over a small package this test
builds: 10 versions whose behaviour changes at 1.6, with a planted install failure and a
planted flaky version."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from conftest import REPO, cli_env, host_has_nvidia_gpu, run_cli

from repro.bisect import judge, search, versions
from repro.bisect.judge import CaseEnd, Regression
from repro.bisect.search import Verdict
from repro.envs.spec import Source
from repro.errors import ConfigError

G, B, S, F, OT = Verdict.GOOD, Verdict.BAD, Verdict.SKIPPED, Verdict.FLAKY, Verdict.OTHER
PACKAGE = "reprobisectdemo"
VERSIONS = [f"1.{minor}" for minor in range(10)]
FIRST_BAD = "1.6"


# ---- the pure search ----------------------------------------------------------------------


def _bisect(n: int, truth, undecided=frozenset()) -> tuple[search.Outcome, list[int]]:
    """Drive the search with ``truth(i) -> bool bad`` and undecided indices; (outcome, steps)."""
    verdicts = {0: G, n - 1: B}
    steps = []
    while (i := search.next_step(n, verdicts)) is not None:
        steps.append(i)
        verdicts[i] = S if i in undecided else (B if truth(i) else G)
    return search.outcome(n, verdicts), steps


@pytest.mark.parametrize("n", [2, 3, 8, 9, 10, 17, 33])
def test_search_finds_every_change_point_within_log2_steps(n):
    for first_bad in range(1, n):
        found, steps = _bisect(n, lambda i, fb=first_bad: i >= fb)
        assert found.found and (found.last_good, found.first_bad) == (first_bad - 1, first_bad)
        assert len(steps) <= search.max_steps(n) == (math.ceil(math.log2(n - 1)) if n > 2 else 0)
        assert len(set(steps)) == len(steps)


def test_skipped_step_costs_one_more_step_and_never_a_verdict():
    n = 10
    for skipped in range(1, n - 1):
        for first_bad in range(1, n):
            found, steps = _bisect(n, lambda i, fb=first_bad: i >= fb, {skipped})
            assert len(steps) <= search.max_steps(n) + 1
            if found.found:
                assert (found.last_good, found.first_bad) == (first_bad - 1, first_bad)
            else:  # the skipped version is right at the change: never a wrong first bad
                assert found.suspects == (skipped,) and skipped in (first_bad - 1, first_bad)
                assert first_bad in (*found.suspects, found.first_bad)
                assert found.last_good < first_bad <= found.first_bad


def test_outcome_names_suspects_and_conflicts():
    verdicts = {0: G, 1: B, 2: G, 3: F, 4: OT, 5: B}
    result = search.outcome(6, verdicts)
    assert (result.last_good, result.first_bad, result.found) == (2, 5, False)
    assert result.suspects == (3, 4)
    assert result.conflicts == ((1, 2),)
    assert search.next_step(6, verdicts) is None
    with pytest.raises(ValueError):
        search.bounds(1, {})


# ---- the judgement --------------------------------------------------------------------------


def _end(outcome, signature=None, case="probe"):
    return CaseEnd(case, outcome, signature, "")


REG = [Regression("probe", _end("passed"), _end("failed", "nan_detected"))]


def test_repeat_verdicts_by_signature():
    assert judge.judge_repeat([_end("failed", "nan_detected")], REG)[0] is B
    assert judge.judge_repeat([_end("passed")], REG)[0] is G
    # another failure is reported, not a verdict
    verdict, why = judge.judge_repeat([_end("crashed", "SIGSEGV")], REG)
    assert verdict is OT and "SIGSEGV" in why
    # infrastructure and absent cases skip
    assert judge.judge_repeat([_end("error", "infra.cuda_init")], REG)[0] is S
    assert judge.judge_repeat([_end("skipped", "requirement")], REG)[0] is S
    assert judge.judge_repeat([_end("passed", case="other")], REG)[0] is S
    assert judge.judge_repeat(None, REG)[0] is S
    # a hang is a signature like any other
    hang = [Regression("probe", _end("passed"), _end("hung", "hang.dataloader_wait"))]
    assert judge.judge_repeat([_end("hung", "hang.dataloader_wait")], hang)[0] is B
    assert judge.judge_repeat([_end("hung", "hang_timeout")], hang)[0] is OT


_UNPICKLING = """# repro case resume_checkpoint
UserWarning: Failed to initialize NumPy: No module named 'numpy'
Traceback (most recent call last):
  File "/tmp/probe.py", line 15, in <module>
    loaded = torch.load(path)
             ^^^^^^^^^^^^^^^^
_pickle.UnpicklingError: Weights only load failed. \x1b[1mdo those steps only if you trust\x1b[0m.
\t(1) In PyTorch 2.6, we changed the default value of the `weights_only` argument
repro: check failed: probe.py exited with status 1
"""
_IMPORT = _UNPICKLING.replace("_pickle.UnpicklingError: Weights", "ImportError: numpy.core")


def test_unclassified_failures_are_told_apart_by_their_exception(tmp_path):
    from repro.bisect.run import read_cases
    from repro.junit.writer import write_junit
    from repro.outcomes import CaseResult, Outcome

    def ends(excerpt: str, name: str) -> list[CaseEnd]:
        result = CaseResult(
            "resume_checkpoint", "resume_checkpoint", Outcome.FAILED, 1.0,
            "probe.py exited with status 1", "unknown", detail=excerpt,
        )  # fmt: skip
        (tmp_path / name).mkdir()
        write_junit(tmp_path / name / "junit.xml", [result], {"host.key": "h"})
        return read_cases(tmp_path / name)[0]

    assert judge.exception_of("ValueError: x") is None  # no traceback
    (unpickling,) = ends(_UNPICKLING, "bad")
    assert unpickling.exception == "_pickle.UnpicklingError"
    assert unpickling.message.startswith("_pickle.UnpicklingError: Weights only load failed. do")
    assert "\x1b" not in unpickling.describe() and "unknown" in unpickling.describe()
    (importing,) = ends(_IMPORT, "other")
    assert importing.exception == "ImportError"
    good = _end("passed", case="resume_checkpoint")
    regs = judge.regressions([good], [unpickling])
    assert judge.judge_repeat([unpickling], regs)[0] is B
    # another unclassified failure does not reproduce the bad end: reported, not a verdict
    verdict, why = judge.judge_repeat([importing], regs)
    assert verdict is OT and "ImportError" in why
    # two ends that fail unclassified with different exceptions do differ
    assert [r.case for r in judge.regressions([importing], [unpickling])] == ["resume_checkpoint"]


def test_step_disagreement_is_flaky_and_infra_skips():
    assert judge.judge_step([(G, ""), (G, "")])[0] is G
    assert judge.judge_step([(B, ""), (G, "")]) == (F, "repeats disagree (1 bad, 1 good)")
    assert judge.judge_step([(B, ""), (OT, "x")])[0] is F
    assert judge.judge_step([(B, ""), (S, "infra: x")])[0] is S


def test_regressions_are_what_differs_between_the_ends():
    good = [_end("passed", case="a"), _end("failed", "nan_detected", "b"), _end("passed", case="c")]
    bad = [_end("failed", "x", "a"), _end("failed", "nan_detected", "b"), _end("passed", case="c")]
    regs = judge.regressions(good, bad)
    assert [r.case for r in regs] == ["a"]
    assert judge.ends_problem(judge.by_case(good), judge.by_case(good), []) is not None


# ---- a real local index -------------------------------------------------------------------

_MODULE = {
    "good": "def loss():\n    return 0.5\n",
    "bad": "def loss():\n    return float('nan')\n",
    # Fails on its first call in an environment, passes afterwards: a planted flaky version.
    "flaky": textwrap.dedent(
        """
        from pathlib import Path
        def loss():
            mark = Path(__file__).with_name("called")
            first = not mark.exists()
            mark.write_text("1")
            return float('nan') if first else 0.5
        """
    ),
}


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest},{len(data)}"


def build_wheel(dest: Path, version: str, behaviour: str, requires_python: str = ">=3.8") -> Path:
    """A real pure-Python wheel of ``reprobisectdemo`` (PEP 427 layout, RECORD with hashes)."""
    dist_info = f"{PACKAGE}-{version}.dist-info"
    files = {
        f"{PACKAGE}/__init__.py": f"__version__ = {version!r}\n{_MODULE[behaviour]}".encode(),
        f"{dist_info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: {version}\n"
            f"Requires-Python: {requires_python}\n"
        ).encode(),
        f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},{_record_hash(data)}\n" for name, data in files.items())
    record += f"{dist_info}/RECORD,,\n"
    path = dest / f"{PACKAGE}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr(f"{dist_info}/RECORD", record)
    return path


def make_index(root: Path, plant: dict[str, str] | None = None) -> Path:
    """``root/files/*.whl`` and a PEP 503 ``root/simple/``; versions from 1.6 on are bad.
    ``plant``: version -> ``install_failure`` (needs Python >= 4) or ``flaky``."""
    plant = plant or {}
    files = root / "files"
    files.mkdir(parents=True)
    links = []
    for version in VERSIONS:
        kind = plant.get(version)
        behaviour = "flaky" if kind == "flaky" else "bad" if version >= FIRST_BAD else "good"
        wheel = build_wheel(
            files, version, behaviour, ">=4" if kind == "install_failure" else ">=3.8"
        )
        links.append(f'<a href="../../files/{wheel.name}">{wheel.name}</a>')
    page = root / "simple" / PACKAGE
    page.mkdir(parents=True)
    (page / "index.html").write_text(
        "<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n"
    )
    return root


def test_versions_served_by_a_local_index_and_a_wheel_directory(tmp_path):
    root = make_index(tmp_path / "index")
    by_index = versions.served_versions(PACKAGE, Source(index_url=(root / "simple").as_uri()))
    by_dir = versions.served_versions(
        PACKAGE, Source(find_links=(str(root / "files"),), no_index=True)
    )
    assert [str(v) for v in by_index] == VERSIONS == [str(v) for v in by_dir]
    assert [str(v) for v in versions.between(by_index, "1.2", "1.5")] == [
        "1.2",
        "1.3",
        "1.4",
        "1.5",
    ]
    assert [str(v) for v in versions.between(by_index, "1.5", "1.3")] == ["1.5", "1.4", "1.3"]
    with pytest.raises(Exception, match="not served"):
        versions.between(by_index, "0.9", "1.5")


def test_torch_builds_collapse_to_one_per_version():
    served = [
        versions.Version(v) for v in ("2.13.0", "2.13.0+cpu", "2.14.0", "2.14.1", "2.15.0rc1")
    ]
    assert [str(v) for v in versions.between(served, "2.13.0+cpu", "2.14.1")] == [
        "2.13.0+cpu",
        "2.14.0",
        "2.14.1",
    ]
    assert versions.compare_url("torch", "a" * 40, "b" * 40).endswith("a" * 40 + "..." + "b" * 40)
    assert versions.compare_url("numpy", "a" * 40, "b" * 40) is None


def test_nightly_dates_name_the_dev_build_of_that_day():
    served = [
        versions.Version(v)
        for v in (
            "2.5.1",
            "2.6.0.dev20241110+cpu",
            "2.6.0.dev20241111+cpu",
            "2.6.0.dev20241112+cpu",
            "2.6.0.dev20241114+cpu",
            "2.6.0rc1",
        )
    ]
    chosen = versions.between(served, "20241110", "2024-11-14")
    assert [str(v) for v in chosen] == [
        "2.6.0.dev20241110+cpu",
        "2.6.0.dev20241111+cpu",
        "2.6.0.dev20241112+cpu",
        "2.6.0.dev20241114+cpu",
    ]
    # a day with no nightly: the message names the served days nearest to it
    with pytest.raises(ConfigError, match=r"--bad 20241113: no nightly .*20241112, 20241114"):
        versions.between(served, "20241110", "20241113")
    with pytest.raises(ConfigError, match="--good 20241340: not a date"):
        versions.between(served, "20241340", "20241114")
    # a calendar-versioned release that is served stays a release, not a date
    calver = [versions.Version(v) for v in ("20240101", "20240301", "20240601")]
    assert [str(v) for v in versions.between(calver, "20240101", "20240601")] == [
        "20240101",
        "20240301",
        "20240601",
    ]


# ---- real bisects ---------------------------------------------------------------------------

_PROBE = textwrap.dedent(
    """
    import sys
    import reprobisectdemo
    value = reprobisectdemo.loss()
    if value != value:
        print(f"FloatingPointError: loss = nan (reprobisectdemo {reprobisectdemo.__version__})")
        sys.exit(1)
    print("loss", value)
    """
)


def _project(tmp_path: Path) -> Path:
    (tmp_path / "probe.py").write_text(_PROBE)
    (tmp_path / "matrix.yaml").write_text(
        textwrap.dedent(
            f"""
            version: 1
            defaults: {{python: "{sys.version_info.major}.{sys.version_info.minor}", index_url: "https://example.invalid/{{runtime}}"}}
            variants:
              - {{runtime: cpu, torch: "2.13.0", base_image: "python:3.11-slim"}}
              - {{runtime: cu130, torch: "2.13.0", base_image: "python:3.11-slim"}}
            scenarios:
              demo_probe:
                script: probe.py
                timeout_s: 60
            """
        )
    )
    return tmp_path


def _run_bisect(tmp_path: Path, index: Path, *extra: str) -> dict:
    project = _project(tmp_path)
    done = run_cli(
        "bisect", "--package", PACKAGE, "--good", VERSIONS[0], "--bad", VERSIONS[-1],
        "-k", "demo_probe", "--variant", "cpu-torch2.13", "--config", str(project / "matrix.yaml"),
        "--index-url", (index / "simple").as_uri(), "--env-python", sys.executable,
        "--env-cache", str(tmp_path / "envs"), "--results-dir", str(tmp_path / "out"), "--json", *extra,
        cwd=project, timeout=900,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.mark.slow
def test_bisect_finds_the_change_and_skips_a_planted_install_failure(tmp_path):
    index = make_index(tmp_path / "index", {"1.4": "install_failure"})
    result = _run_bisect(tmp_path, index)
    assert result["found"] and (result["last_good"], result["first_bad"]) == ("1.5", "1.6")
    n = len(VERSIONS)
    assert result["search_steps"] <= math.ceil(math.log2(n)) + 1
    steps = {s["version"]: s for s in result["steps"]}
    # the search met the planted failure and skipped it with uv's reason, never judged it
    assert steps["1.4"]["verdict"] == "skipped" and "infra." in steps["1.4"]["reason"]
    assert steps["1.6"]["verdict"] == "bad" and "nan_detected" in steps["1.6"]["reason"]
    assert all(len(s["repeats"]) == 2 for s in result["steps"] if s["version"] != "1.4")
    assert result["regressions"][0]["bad"]["signature"] == "nan_detected"
    assert "1.5" in result["paragraph"] and "1.6" in result["paragraph"]
    assert (tmp_path / "out" / "bisect.md").is_file()


@pytest.mark.slow
def test_bisect_reports_a_planted_flaky_step_as_flaky(tmp_path):
    index = make_index(tmp_path / "index", {"1.6": "flaky"})
    result = _run_bisect(tmp_path, index)
    steps = {s["version"]: s for s in result["steps"]}
    assert steps["1.6"]["verdict"] == "flaky"
    assert [r["verdict"] for r in steps["1.6"]["repeats"]] == ["bad", "good"]
    # not decided: 1.6 stays a suspect beside the first version seen bad
    assert not result["found"] and result["suspects"] == ["1.6"] and result["first_bad"] == "1.7"


def test_dry_run_prints_the_plan(tmp_path):
    index = make_index(tmp_path / "index")
    project = _project(tmp_path)
    done = run_cli(
        "bisect", "--package", PACKAGE, "--good", "1.0", "--bad", "1.9", "-k", "demo_probe",
        "--variant", "cpu-torch2.13", "--config", str(project / "matrix.yaml"),
        "--index-url", (index / "simple").as_uri(), "--dry-run", cwd=project, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "10 versions served" in done.stdout and "at most 4 steps" in done.stdout
    assert not (tmp_path / "envs").exists()


def test_a_cuda_variant_on_a_host_without_nvidia_gpu_skips_its_gpu_cases_in_every_step(tmp_path):
    index = make_index(tmp_path / "index")
    project = _project(tmp_path)
    done = run_cli(
        "bisect", "--package", PACKAGE, "--good", "1.0", "--bad", "1.9", "-k", "demo_probe",
        "--variant", "cu130-torch2.13", "--config", str(project / "matrix.yaml"),
        "--index-url", (index / "simple").as_uri(), "--dry-run", cwd=project, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    gpu_host = host_has_nvidia_gpu()
    assert ("--no-expect-accelerator" in done.stdout) is (not gpu_host)
    assert ("steps skip its GPU cases" in done.stderr) is (not gpu_host)


def test_a_non_torch_package_is_listed_where_it_is_installed_from(tmp_path, monkeypatch):
    """The variant's index is torch's (``https://example.invalid/cpu`` here): another package's
    versions come from uv's default index, --find-links or the wheelhouse (issue 32)."""
    index = make_index(tmp_path / "index")
    project = _project(tmp_path)
    common = [
        "bisect", "--package", PACKAGE, "--good", "1.0", "--bad", "1.9", "-k", "demo_probe",
        "--variant", "cpu-torch2.13", "--config", str(project / "matrix.yaml"), "--dry-run",
    ]  # fmt: skip
    monkeypatch.setenv("UV_DEFAULT_INDEX", (index / "simple").as_uri())
    done = run_cli(*common, cwd=project, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "10 versions served" in done.stdout and "example.invalid" not in done.stdout
    monkeypatch.setenv("UV_DEFAULT_INDEX", (tmp_path / "empty").as_uri())
    linked = run_cli(*common, "--find-links", str(index / "files"), cwd=project, timeout=120)
    assert linked.returncode == 0, linked.stderr
    assert "10 versions served" in linked.stdout and "example.invalid" not in linked.stdout
    # torch itself still comes from the variant's index
    torch = run_cli(
        "bisect", "--good", "2.12.0", "--bad", "2.13.0", "-k", "demo_probe",
        "--variant", "cpu-torch2.13", "--config", str(project / "matrix.yaml"), "--dry-run",
        cwd=project, timeout=120,
    )  # fmt: skip
    assert torch.returncode == 3 and "example.invalid/cpu/torch/" in torch.stderr


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--with", "--index-url=file:///x"),
        ("--with", "-e ."),
        ("--with", "numpy 1.0"),
        ("--env-python", "3.11; touch x"),
        ("--env-python", "/nonexistent/bin/python; touch x"),
        ("--env-python", "./no/such/python"),
        ("--env-python", "3"),
    ],
)
@pytest.mark.slow
def test_bad_with_and_env_python_values_exit_2_naming_the_flag(tmp_path, flag, value):
    index = make_index(tmp_path / "index")
    project = _project(tmp_path)
    done = run_cli(
        "bisect", "--package", PACKAGE, "--good", "1.0", "--bad", "1.9", "-k", "demo_probe",
        "--variant", "cpu-torch2.13", "--config", str(project / "matrix.yaml"),
        "--index-url", (index / "simple").as_uri(), f"{flag}={value}", "--dry-run",
        cwd=project, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0], lines
    assert not (project / "x").exists()


def test_good_with_and_env_python_values_pass(tmp_path):
    index = make_index(tmp_path / "index")
    project = _project(tmp_path)
    ok = run_cli(
        "bisect", "--package", PACKAGE, "--good", "1.0", "--bad", "1.9", "-k", "demo_probe",
        "--variant", "cpu-torch2.13", "--config", str(project / "matrix.yaml"),
        "--index-url", (index / "simple").as_uri(), "--with", "numpy<3; python_version>'3'",
        "--env-python", "3.11.4", "--dry-run", cwd=project, timeout=120,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr


def test_dry_run_between_two_nightly_dates_of_a_local_nightly_index(tmp_path):
    wheels = tmp_path / "nightly"
    wheels.mkdir()
    for day in ("20250101", "20250102", "20250104", "20250105"):
        build_wheel(wheels, f"2.0.dev{day}", "good")
    build_wheel(wheels, "1.9", "good")  # a release beside the nightlies: not a step
    project = _project(tmp_path)
    done = run_cli(
        "bisect", "--package", PACKAGE, "--good", "2025-01-01", "--bad", "20250105",
        "-k", "demo_probe", "--variant", "cpu-torch2.13", "--config", str(project / "matrix.yaml"),
        "--wheelhouse", str(wheels), "--dry-run", cwd=project, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "4 versions served from 2.0.dev20250101 (good) to 2.0.dev20250105 (bad)" in done.stdout
    assert "2.0.dev20250104" in done.stdout and "1.9" not in done.stdout
    missing = run_cli(
        "bisect", "--package", PACKAGE, "--good", "20250101", "--bad", "20250103",
        "-k", "demo_probe", "--variant", "cpu-torch2.13", "--config", str(project / "matrix.yaml"),
        "--wheelhouse", str(wheels), "--dry-run", cwd=project, timeout=120,
    )  # fmt: skip
    assert missing.returncode == 2
    assert "--bad 20250103: no nightly of that day served" in missing.stderr


@pytest.mark.slow
def test_bisect_from_a_wheelhouse_runs_offline(tmp_path):
    """`--wheelhouse`: every environment comes from one directory (the test-built package and
    the project's requirements, downloaded beforehand), with the network cut by a dead proxy."""
    import subprocess

    from repro.envs.spec import project_spec_fields

    house = tmp_path / "house"
    requirements = project_spec_fields(REPO)["project_requirements"]
    fetched = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--dest",
         str(house), *requirements],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if fetched.returncode != 0:
        pytest.skip(f"cannot download the project's requirements: {fetched.stderr[-300:]}")
    make_index(tmp_path / "index")
    for wheel in (tmp_path / "index" / "files").glob("*.whl"):
        wheel.rename(house / wheel.name)
    project = _project(tmp_path)
    dead = "http://127.0.0.1:9"  # nothing listens on the discard port: any download fails
    env = dict(cli_env(), HTTP_PROXY=dead, HTTPS_PROXY=dead, http_proxy=dead, https_proxy=dead)
    env.pop("NO_PROXY", None), env.pop("no_proxy", None)
    done = subprocess.run(
        [sys.executable, "-m", "repro",
         "bisect", "--package", PACKAGE, "--good", "1.4", "--bad", "1.7", "--repeat", "1",
         "-k", "demo_probe", "--variant", "cpu-torch2.13", "--config", str(project / "matrix.yaml"),
         "--wheelhouse", str(house), "--env-python", sys.executable,
         "--env-cache", str(tmp_path / "envs"), "--results-dir", str(tmp_path / "out"), "--json"],
        cwd=project, env=env, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert (result["last_good"], result["first_bad"]) == ("1.5", "1.6")
    assert all(s["verdict"] in ("good", "bad") for s in result["steps"])
