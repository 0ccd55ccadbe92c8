"""The bisect as processes: an environment per version (``repro.envs``, cached by content key),
``repro run`` of the chosen cases there N times, the evidence of every step, the outcome.

Order: the good end, the bad end (their difference is the regression, ``repro.bisect.judge``),
then the steps ``repro.bisect.search`` picks. Every repeat is a fresh ``repro run`` with its
own results directory, so the evidence (JUnit, logs, stacks of a hang) stays on disk. A step's
``repro run`` that outlives every case timeout plus a margin is killed with its process group
and the step skipped (``infra.step_timeout``): a hang of a case is the runner's watchdog's to
judge, a hang of the runner is infrastructure.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro import properties as property_names
from repro.bisect import judge, search
from repro.bisect.judge import CaseEnd, Regression
from repro.bisect.search import Verdict
from repro.envs import InstallFailed, ensure_env
from repro.envs.lane import LANE
from repro.envs.spec import EnvSpec
from repro.errors import ConfigError
from repro.runner.job import ALLOW_MISMATCH_FLAG

Say = Callable[[str], None]
#: Added to the sum of the selected cases' timeouts for one ``repro run`` of a step (seconds):
#: the runner's start, the fingerprint, the zygote's imports.
STEP_MARGIN_S = 120.0
DEFAULT_REPEATS = 2


@dataclass
class Plan:
    """What will run: the package, the versions from good (0) to bad (n-1), the base
    environment (``pinned`` empty: each step adds ``package==version`` and ``with_``), the
    ``repro run`` arguments, the repeats and the results directory. ``no_accelerator``: why
    this host has no GPU of ``variant``'s kind (its cuda/rocm cases then skip in every step,
    ``repro run --no-expect-accelerator``), else None."""

    package: str
    versions: list[str]
    base: EnvSpec
    with_: tuple[str, ...]
    config: str
    patterns: tuple[str, ...]
    variant: str | None
    repeats: int
    results: Path
    step_timeout_s: float
    timeout_scale: float | None = None
    env_cache: Path | None = None
    no_accelerator: str | None = None

    def pins(self, version: str) -> tuple[str, ...]:
        return (f"{self.package}=={version}", *self.with_)


@dataclass
class Repeat:
    """One ``repro run`` of a step: its verdict, why, its results directory and case ends."""

    verdict: Verdict
    reason: str
    run_dir: str
    cases: list[CaseEnd] = field(default_factory=list)


@dataclass
class Step:
    """One version tested: its index, role (``good end``, ``bad end``, ``step N``), verdict,
    why, every repeat, and the environment's key, installed version and git commit."""

    index: int
    version: str
    role: str
    verdict: Verdict
    reason: str
    repeats: list[Repeat] = field(default_factory=list)
    env_key: str | None = None
    installed: str | None = None
    git_version: str | None = None
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "version": self.version,
            "role": self.role,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "env_key": self.env_key,
            "installed": self.installed,
            "git_version": self.git_version,
            "seconds": round(self.seconds, 1),
            "repeats": [
                {
                    "verdict": r.verdict.value,
                    "reason": r.reason,
                    "run_dir": r.run_dir,
                    "cases": [c.__dict__ for c in r.cases],
                }
                for r in self.repeats
            ],
        }


@dataclass
class Result:
    """The whole bisect: the plan, every step in the order run, the regression, the search's
    outcome (None when it stopped at the ends, with ``stopped`` saying why), the host key and
    the wall time (seconds)."""

    plan: Plan
    steps: list[Step] = field(default_factory=list)
    regressions: list[Regression] = field(default_factory=list)
    outcome: search.Outcome | None = None
    stopped: str | None = None
    host_key: str | None = None
    wall_s: float = 0.0

    def step_at(self, index: int) -> Step | None:
        return next((s for s in self.steps if s.index == index), None)

    @property
    def search_steps(self) -> int:
        """Steps between the ends (the two end checks not counted)."""
        return sum(1 for s in self.steps if s.role.startswith("step"))


def step_timeout(case_timeouts: Sequence[float]) -> float:
    """Seconds one ``repro run`` of a step may take: every case's timeout plus the margin."""
    return float(sum(case_timeouts)) + STEP_MARGIN_S


def run_command(plan: Plan, python: str, env_key: str, version: str, run_dir: Path) -> list[str]:
    """``<env python> -m repro run`` for one repeat of one step (no doctor: the host's health
    is not what a step tests)."""
    command = [python, "-m", "repro", "run", "--config", plan.config, "--run-dir", str(run_dir)]
    command += ["--no-doctor"]
    for pattern in plan.patterns:
        command += ["-k", pattern]
    if plan.variant:
        # each step installs another version than the variant's pin on purpose: the label
        # names the columns' lane, not the build (the step's version is its own property)
        command += ["--as-variant", plan.variant, ALLOW_MISMATCH_FLAG]
    if plan.no_accelerator:
        command += ["--no-expect-accelerator"]
    if plan.timeout_scale:
        command += ["--timeout-scale", f"{plan.timeout_scale:g}"]
    for prop in (
        property_names.assignment(property_names.LANE, LANE),
        property_names.assignment(property_names.ENV_KEY, env_key),
        property_names.assignment(property_names.BISECT_VERSION, version),
    ):
        command += ["--property", prop]
    return command


def read_cases(run_dir: Path) -> tuple[list[CaseEnd] | None, str | None]:
    """The case ends of a finished run (None when it wrote no JUnit) and its host key."""
    from repro.junit.reader import Budget, FileReader, InputFile

    xml = run_dir / "junit.xml"
    if not xml.is_file():
        return None, None
    record = FileReader(InputFile(xml, run_dir), Budget()).read()
    cases = []
    for c in record.cases:
        case = CaseEnd(
            c.case,
            c.outcome.value,
            c.signature,
            (c.message or "").splitlines()[0][:200] if c.message else "",
        )
        if case.unclassified and (found := judge.exception_of(c.excerpt or "")):
            # the exception line says more than "probe.py exited with status 1"
            case = dataclasses.replace(case, exception=found[0], message=found[1][:200])
        cases.append(case)
    return cases, record.host or None


def _run_repeat(command: list[str], log: Path, timeout_s: float) -> str | None:
    """Run one repeat with its output in ``log``; the ``infra.*`` reason when it had to be
    killed, else None (its exit status is the cases' business: 1 means red cases)."""
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return f"infra.step_timeout: repro run still going after {timeout_s:.0f} s; killed"
        except BaseException:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
    return None


class Bisect:
    """Runs a :class:`Plan`; :meth:`run` returns the :class:`Result`. ``say`` gets one line per
    event (environment made or reused, each step's verdict)."""

    def __init__(self, plan: Plan, say: Say):
        self.plan = plan
        self.say = say
        self.result = Result(plan)

    def run_version(self, index: int, role: str, regs: Sequence[Regression] | None) -> Step:
        """Make the environment for ``versions[index]`` and run its repeats. ``regs`` None (an
        end): the repeats are not judged, only recorded."""
        plan = self.plan
        version = plan.versions[index]
        started = time.monotonic()
        spec = plan.base.with_pinned(*plan.pins(version))
        try:
            env = ensure_env(spec, root=plan.env_cache, say=self.say)
        except InstallFailed as exc:
            return Step(
                index, version, role, Verdict.SKIPPED, str(exc), seconds=time.monotonic() - started
            )
        name = plan.pins(version)[0].split("==")[0]
        from packaging.utils import canonicalize_name

        step = Step(
            index, version, role, Verdict.SKIPPED, "", env_key=env.key,
            installed=env.versions.get(canonicalize_name(name)),
            git_version=env.git_versions.get(canonicalize_name(name)),
        )  # fmt: skip
        for number in range(1, plan.repeats + 1):
            run_dir = plan.results / f"{index:03d}-{version}-r{number}"
            run_dir.mkdir(parents=True, exist_ok=False)
            command = run_command(plan, env.python, env.key, version, run_dir)
            killed = _run_repeat(command, plan.results / f"{run_dir.name}.log", plan.step_timeout_s)
            cases, host = read_cases(run_dir)
            self.result.host_key = self.result.host_key or host
            if killed:
                verdict, reason = Verdict.SKIPPED, killed
            elif regs is None:
                verdict, reason = (
                    (Verdict.SKIPPED, "no case ran") if not cases else (Verdict.OTHER, "")
                )
            else:
                verdict, reason = judge.judge_repeat(cases, regs)
            step.repeats.append(Repeat(verdict, reason, str(run_dir), list(cases or [])))
        if regs is not None:
            step.verdict, step.reason = judge.judge_step(
                [(r.verdict, r.reason) for r in step.repeats]
            )
        step.seconds = time.monotonic() - started
        return step

    def _end(self, index: int, role: str) -> tuple[Step, dict[str, CaseEnd] | None]:
        """Run an end; its cases when every repeat ran and agreed, else None (``stopped`` set)."""
        step = self.run_version(index, role, None)
        self.result.steps.append(step)
        if step.reason and not step.repeats:
            self.result.stopped = f"the {role} ({step.version}) could not be tested: {step.reason}"
            return step, None
        marks = [{c.case: c.mark for c in r.cases} for r in step.repeats]
        if any(r.verdict is Verdict.SKIPPED for r in step.repeats):
            why = next(r.reason for r in step.repeats if r.verdict is Verdict.SKIPPED)
            self.result.stopped = f"the {role} ({step.version}): {why}"
            return step, None
        if any(m != marks[0] for m in marks[1:]):
            self.result.stopped = (
                f"the {role} ({step.version}) is flaky: its {len(marks)} repeats ended differently"
            )
            step.verdict, step.reason = Verdict.FLAKY, self.result.stopped
            return step, None
        ended = judge.by_case(step.repeats[0].cases)
        infra = [c for c in ended.values() if (c.signature or "").startswith(judge.INFRA_PREFIX)]
        if infra:
            self.result.stopped = f"the {role} ({step.version}): infrastructure: " + "; ".join(
                c.describe() for c in infra
            )
            return step, None
        return step, ended

    def run(self) -> Result:
        plan, result = self.plan, self.result
        started = time.monotonic()
        n = len(plan.versions)
        good_step, good = self._end(0, "good end")
        bad_step, bad = self._end(n - 1, "bad end") if good is not None else (None, None)
        if good is not None and bad is not None and bad_step is not None:
            result.regressions = judge.regressions(list(good.values()), list(bad.values()))
            result.stopped = judge.ends_problem(good, bad, result.regressions)
        if result.stopped is None and bad_step is not None:
            for step, expected in ((good_step, Verdict.GOOD), (bad_step, Verdict.BAD)):
                for repeat in step.repeats:
                    repeat.verdict, repeat.reason = judge.judge_repeat(
                        repeat.cases, result.regressions
                    )
                step.verdict, step.reason = judge.judge_step(
                    [(r.verdict, r.reason) for r in step.repeats]
                )
                if step.verdict is not expected:  # cannot happen for consistent ends
                    result.stopped = f"the {step.role} judged {step.verdict.value}: {step.reason}"
        for step in result.steps:
            self.say(_line(step))
        if result.stopped is None:
            verdicts = {0: Verdict.GOOD, n - 1: Verdict.BAD}
            number = 0
            while (index := search.next_step(n, verdicts)) is not None:
                number += 1
                step = self.run_version(index, f"step {number}", result.regressions)
                verdicts[index] = step.verdict
                result.steps.append(step)
                self.say(_line(step))
            result.outcome = search.outcome(n, verdicts)
        else:
            self.say(f"stopped: {result.stopped}")
        result.wall_s = time.monotonic() - started
        return result


def _line(step: Step) -> str:
    runs = f"{len(step.repeats)} run(s), " if step.repeats else ""
    verdict = step.verdict.value if step.reason or step.repeats else "?"
    return f"{step.role}: {step.version} -> {verdict} ({runs}{step.seconds:.1f} s) {step.reason}".rstrip()


def write_result(result: Result, data: dict[str, Any], markdown: str) -> None:
    """``bisect.json`` and ``bisect.md`` in the results directory."""
    (result.plan.results / "bisect.json").write_text(json.dumps(data, indent=2) + "\n")
    (result.plan.results / "bisect.md").write_text(markdown)


def host_python() -> str:
    """This interpreter's ``major.minor``, the environments' Python when nothing names one."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def check_repeats(repeats: int) -> int:
    if not 1 <= repeats <= 10:
        raise ConfigError(f"--repeat: expected a whole number from 1 to 10, got {repeats}")
    return repeats
