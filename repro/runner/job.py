"""The ``repro run`` job as a short sequence of named steps:

load config -> select cases -> fingerprint -> pick variant -> make run dir -> doctor ->
run all -> summarise.

Each step is a function of what the previous ones produced; :func:`run_job` strings them
together. The command line resolves its options once into a :class:`ResolvedRun`
(``repro.cli.resolve``) and prints; nothing here parses arguments. Errors are ConfigError
(bad input, exit 2) and FatalError (cannot go on, exit 3). Never imports torch.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import repro
from repro import bounds, properties
from repro import config as matrix_mod
from repro.config import runners
from repro.config.expect import Expectations
from repro.errors import ConfigError, FatalError
from repro.model import CONTAINER, FROM_MATRIX, HOST, Fingerprint, Variant, host_key
from repro.outcomes import OUTCOME_ORDER, CaseResult, Totals, totals_of
from repro.runner import context, executor
from repro.runner.caselog import DEFAULT_CAP_BYTES
from repro.runner.run_all import Reporter, new_run_dir, run_all
from repro.scenarios import Case
from repro.signatures import table

#: Where a step tells the user what it is doing (one line, no newline).
Say = Callable[[str], None]
#: The ``repro run`` flag that records results under a ``--as-variant`` whose torch pin is not the
#: interpreter's (``ResolvedRun.allow_variant_mismatch``); named in the refusal.
ALLOW_MISMATCH_FLAG = "--allow-variant-mismatch"


@dataclass(frozen=True)
class ResolvedRun:
    """What ``repro run`` was asked to do, resolved once (``repro.cli.resolve.run``) and passed
    down whole: every step of the job reads this one object.

    The fields carry the flag table's names (``repro.cli.options``): ``config`` matrix.yaml;
    ``patterns`` the ``-k`` selectors; ``as_variant`` the variant id to record under (None: the
    interpreter's build); ``results_dir`` the results root (None: matrix.yaml's
    ``defaults.results_dir``, applied by :func:`make_run_dir`); ``run_dir`` a given empty run
    directory; ``python`` the interpreter under test; ``timeout_scale`` multiplier of every case
    timeout (None = matrix.yaml's); ``fingerprint`` the host's fingerprint.json (inside an
    image); ``properties`` ``NAME=VALUE`` strings; ``isolation`` ``fresh | zygote | auto``;
    ``rerun_failures`` reruns of each red case (issue 11); ``rounds`` rounds of each case that
    records a rate (``repro.runner.repeat``, issue 29); ``jobs`` cases at once (None:
    :func:`default_jobs`); ``allow_variant_mismatch`` records results as ``as_variant`` even when
    the interpreter's torch build is not its pin; ``expect_accelerator`` False makes a
    ``--as-variant`` run's cuda/rocm cases skip when torch sees no device instead of failing
    ``accelerator_unavailable`` (the venv lane on a host with no GPU of the variant's kind).
    Derived: ``doctor`` (not ``--no-doctor``), ``log_cap_bytes`` each case log's cap in bytes
    (``--log-cap-mib``).
    """

    config: str | Path = matrix_mod.DEFAULT_FILE
    patterns: Sequence[str] | None = None
    as_variant: str | None = None
    results_dir: str | None = None
    run_dir: str | None = None
    python: str = ""
    timeout_scale: float | None = None
    fingerprint: str | None = None
    doctor: bool = True
    properties: Sequence[str] = ()
    log_cap_bytes: int = DEFAULT_CAP_BYTES
    isolation: str = "auto"  # context.ISOLATIONS: fresh | zygote | auto
    rerun_failures: int = 0
    rounds: int = 1
    jobs: int | None = None  # None: default_jobs()
    allow_variant_mismatch: bool = False
    expect_accelerator: bool = True


@dataclass
class RunSummary:
    """What a finished run produced: its id and directory, and every result (doctor first)."""

    run_id: str
    run_dir: Path
    results: list[CaseResult] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """``{outcome value: number of results}`` in the report's outcome order."""
        return {o.value: sum(1 for r in self.results if r.outcome is o) for o in OUTCOME_ORDER}

    def totals(self) -> Totals:
        """The results counted by the one rule of every totals line (verdicts applied)."""
        return totals_of(self.results)

    @property
    def red(self) -> bool:
        """Whether the run is red (exit status 1): an unexpected problem outcome, a strict
        ``expect:`` entry's case that passed, or a failed doctor check. A reproduction the
        scenario's ``EXPECT`` or matrix.yaml's ``expect:`` predicts is not red (issue 29)."""
        return self.totals().problem_count > 0


# ---- step: load config, select cases ----------------------------------------------------


def select_cases(options: ResolvedRun) -> tuple[matrix_mod.Matrix, list[Case]]:
    """Load matrix.yaml, select the cases, apply ``--timeout-scale`` and check every timeout.

    Raises ConfigError for a bad file, an ``--as-variant`` id the file does not define (with
    "did you mean", before anything is probed), a selector matching nothing, a scale that is not
    a finite positive number, or a case timeout that is not (NaN would disable the watchdog).
    """
    config = matrix_mod.load(options.config)
    if options.as_variant:
        config.variant(options.as_variant)  # ConfigError naming the known ids (--list too)
    if config.signatures:  # the team's own rows classify this run's cases too
        table.activate(table.with_user_rows(config.signatures))
    cases = matrix_mod.select_cases(config.cases(), options.patterns)
    scale = options.timeout_scale
    if scale is not None:
        bounds.TIMEOUT_SCALE.check(scale, "--timeout-scale")
        cases = [dataclasses.replace(c, timeout_s=c.timeout_s * scale) for c in cases]
    for case in cases:
        executor.check_timeout(case)
    return config, cases


# ---- step: fingerprint -------------------------------------------------------------------


def fingerprint_host(options: ResolvedRun) -> Fingerprint:
    """The fingerprint of the interpreter under test, keyed by the real host when a
    ``--fingerprint`` file (collected outside the container) is given
    (:meth:`repro.model.Fingerprint.keyed_by`)."""
    from repro.host import fingerprint

    fp = fingerprint.collect(python=options.python)
    if options.fingerprint:
        fp = fp.keyed_by(fingerprint.read_file(options.fingerprint, "--fingerprint"))
    return fp


# ---- step: pick variant ------------------------------------------------------------------


def pick_variant(
    config: matrix_mod.Matrix, options: ResolvedRun, fp: Fingerprint
) -> tuple[Variant, str | None]:
    """The variant the results are recorded as: ``--as-variant`` from matrix.yaml (inside its
    image), else derived from the interpreter's torch build (:func:`host_variant`); and why
    its pin is not the interpreter's (None when it is).

    Raises ConfigError when ``--as-variant``'s torch pin or runtime is not the interpreter's
    (``repro.config.variant_mismatch``) unless ``allow_variant_mismatch``; then the reason
    comes back second (said and recorded by :func:`run_job`).
    """
    if not options.as_variant:
        return host_variant(fp), None
    variant = config.variant(options.as_variant)
    why = matrix_mod.variant_mismatch(variant.torch, variant.runtime, fp.runtime)
    if why and not options.allow_variant_mismatch:
        raise ConfigError(
            f"--as-variant {variant.id}: {why}",
            hint=f"run it in that variant's image or venv, or pass {ALLOW_MISMATCH_FLAG} "
            "to record the results under it anyway",
        )
    return variant, why


def checked_variant(
    config: matrix_mod.Matrix,
    options: ResolvedRun,
    fp: Fingerprint,
    say: Say,
    then: str = "recorded under it anyway",
) -> tuple[Variant, str | None]:
    """:func:`pick_variant`, its mismatch said as ``WARNING: variant ID: WHY; THEN`` when
    ``allow_variant_mismatch`` lets it through (``then``: what happens next). Raises as
    pick_variant."""
    variant, mismatch = pick_variant(config, options, fp)
    if mismatch:
        say(f"WARNING: variant {variant.id}: {mismatch}; {then}")
    return variant, mismatch


def host_variant(fp: Fingerprint) -> Variant:
    """The variant a host-lane run belongs to, derived from the interpreter's torch build
    (:meth:`repro.model.Variant.of_build`). Raises FatalError when the interpreter has no
    usable torch."""
    torch_version = fp.runtime.torch
    if not torch_version:
        why = next((u.why for u in fp.unreadable if u.what == "torch"), "torch not importable")
        raise FatalError(
            f"the interpreter under test has no usable torch ({why})",
            hint="install the torch build to test, e.g. pip install torch==2.13.0",
        )
    return Variant.of_build(torch_version, fp.runtime.tag)


# ---- step: make run dir --------------------------------------------------------------------


def make_run_dir(
    config: matrix_mod.Matrix, options: ResolvedRun, variant: Variant
) -> tuple[str, Path]:
    """``(run id, directory)``: the given empty ``--run-dir``, or a new one under the results
    root. A run never writes into (or overwrites) another run's directory."""
    if options.run_dir:
        run_dir = Path(options.run_dir)
        if not run_dir.is_dir():
            raise ConfigError(f"--run-dir {run_dir}: not a directory")
        if any(run_dir.iterdir()):
            raise ConfigError(
                f"--run-dir {run_dir}: not empty; a run writes into a fresh directory"
            )
        return run_dir.name, run_dir
    results_root = Path(options.results_dir or config.results_dir)
    try:
        return new_run_dir(results_root, variant.id)
    except OSError as exc:
        raise FatalError(
            f"cannot create a run directory under {results_root}: {exc.strerror or exc}"
        ) from None


def parse_properties(items: Sequence[str]) -> dict[str, str]:
    """``NAME=VALUE`` strings as a dict; ConfigError for one without ``=`` or a name."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--property: expected NAME=VALUE, got {item!r}")
        out[name.strip()] = value
    return out


def run_context(
    options: ResolvedRun,
    fp: Fingerprint,
    variant: Variant,
    run_id: str,
    run_dir: Path,
    extra_properties: dict[str, str],
) -> context.RunContext:
    """Write ``fingerprint.json`` and build the run's context: testsuite properties
    (:func:`repro.properties.suite`: fingerprint, ``variant.*`` with ``variant.lane``,
    ``repro.*``, ``container.*``; then ``--property``) and the ``run.json`` sidecar's first
    state. The lane is ``container`` for a run keyed by a ``--fingerprint`` (inside an image),
    else ``host``; the venv lane says so itself with ``--property variant.lane=venv``
    (``repro.envs.lane``)."""
    key = host_key(fp)
    (run_dir / "fingerprint.json").write_text(
        json.dumps(fp.to_json(), indent=2, sort_keys=True) + "\n"
    )
    lane = CONTAINER if fp.container is not None else HOST
    suite_properties = properties.suite(fp, variant.in_lane(lane), run_id, repro.__version__)
    suite_properties.update(extra_properties)
    run_info = {
        "schema": 1,
        "run_id": run_id,
        "variant": variant.key(),
        "host_key": key,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "finished": None,
        "repro_version": repro.__version__,
    }
    return context.RunContext(
        run_dir=run_dir,
        fingerprint=fp,
        suite_properties=suite_properties,
        run_info=run_info,
        python=options.python,
        expect_accelerator=options.expect_accelerator
        and variant.source == FROM_MATRIX
        and variant.on_accelerator,
        env=dict(variant.env),
        log_cap_bytes=options.log_cap_bytes,
        isolation=options.isolation,
        timeout_scale=options.timeout_scale or 1.0,
    )


# ---- step: how many cases at once -----------------------------------------------------------


def usable_cores() -> int:
    """CPU cores this process may use: its affinity mask, capped by a cgroup v2 CPU quota
    (``/sys/fs/cgroup/cpu.max``, what ``docker run --cpus`` sets). At least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max" and int(period) > 0:
            cores = min(cores, max(1, int(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cores)


def default_jobs(variant: Variant, fp: Fingerprint) -> int:
    """``-j`` when not given: 1 on a GPU lane (an accelerator variant, or GPUs in the
    fingerprint: cases would share a device), else the usable cores (one torch thread per
    case, :func:`case_threads`)."""
    if variant.on_accelerator or fp.gpus:
        return 1
    return usable_cores()


def case_threads(jobs: int) -> int | None:
    """torch intra-op threads per case under ``-j jobs``: the usable cores shared out, or None
    (torch's default, every core) when cases run one at a time."""
    return None if jobs <= 1 else max(1, usable_cores() // jobs)


# ---- step: doctor ------------------------------------------------------------------------


def doctor_preflight(
    fp: Fingerprint, run_dir: Path, say: Say, expected_gpus: int | None = None
) -> list[CaseResult]:
    """The health pre-flight's findings as the run's ``doctor`` testsuite; warnings and
    failures are also said. ``expected_gpus``: matrix.yaml's ``runners.<kind>.gpus``."""
    from repro.host import doctor

    findings = doctor.run_checks(fp, expected_gpus=expected_gpus)
    for finding in findings:
        if finding.status in (doctor.WARN, doctor.FAIL):
            say(f"doctor: {finding.check} {finding.status}: {finding.detail}")
    return doctor.to_results(findings, doctor.write_log(run_dir, findings))


# ---- the job -----------------------------------------------------------------------------


def run_job(options: ResolvedRun, say: Say, reporter: Reporter | None = None) -> RunSummary:
    """Every step of ``repro run`` in order; returns the summary (the CLI prints it)."""
    config, cases = select_cases(options)
    extra_properties = parse_properties(options.properties)
    say(f"fingerprinting {options.python} ...")
    fp = fingerprint_host(options)
    variant, mismatch = checked_variant(config, options, fp, say)
    run_id, run_dir = make_run_dir(config, options, variant)
    ctx = run_context(options, fp, variant, run_id, run_dir, extra_properties)
    if mismatch:
        ctx.suite_properties[properties.VARIANT_MISMATCH] = mismatch
    key = host_key(fp)
    # The report's verdicts, applied as each case ends (matrix.yaml wins over a module's EXPECT).
    ctx.expectations = Expectations(config.expectations).cell(variant.id, key)
    jobs = options.jobs or default_jobs(variant, fp)
    ctx.case_threads = case_threads(jobs)
    ctx.suite_properties[properties.JOBS] = str(jobs)
    if ctx.case_threads:
        ctx.suite_properties[properties.CASE_THREADS] = str(ctx.case_threads)
    threads = f", {ctx.case_threads} torch thread(s) each" if ctx.case_threads else ""
    say(
        f"run {run_id}: {len(cases)} cases, {jobs} at once{threads}, variant {variant.id} "
        f"(torch {variant.torch}), host {key}"
    )
    say(f"results -> {run_dir}")
    gpus = runners.expected_gpus(config.runner_gpus, variant.accelerator, bool(fp.host.wsl2))
    preflight = doctor_preflight(fp, run_dir, say, gpus) if options.doctor else []
    results = run_all(
        ctx,
        cases,
        reporter,
        preflight=preflight,
        rerun_failures=options.rerun_failures,
        jobs=jobs,
        rounds=options.rounds,
    )
    return RunSummary(run_id, run_dir, results)
