"""Every command-line option of ``repro``, declared once (the model: nox's ``nox/_options.py``).

:data:`OPTIONS` is the one table: each :class:`Option` has its flags, metavar, help, validator
(``type``), default, environment variable and deprecated spellings. A command module never calls
``parser.add_argument`` itself; it names the options it takes::

    def register(subparsers):
        parser = subparsers.add_parser("bisect", help="...")
        options.add(parser, "config", "variants", "patterns", "json")
        options.add(parser, "good", "bad")          # its own options, declared in OPTIONS below
        parser.set_defaults(handler=run)

so a flag name has one metavar, one help text and one meaning across commands
(tests/test_cli_options.py walks the parser tree and fails otherwise). A new command adds its
new options to :data:`OPTIONS` (one ``Option(...)`` each, alphabetical within its section) and
reuses the shared ones; a per-command ``default`` or ``required`` may be passed to :func:`add`,
never another help text or metavar.

Numbers are parsed by :func:`bounded` from the ranges of :mod:`repro.bounds` (the one range
codec, shared with matrix.yaml): a bad one is a usage error of its command at parse time
(``argument --timeout-scale: expected a positive number of at most 100, got 0``, exit 2).

Deprecated spellings (``--results``, ``--host-fingerprint``, ``--output``, ``--report``, ``run
--variant ID``, ``build --python X.Y``...) still parse into the same value and print one line on
stderr naming the new flag; they are hidden from ``--help`` and from completion.

JSON output: every command that prints data takes ``--json`` and prints one object through
:func:`print_json`, which adds ``schema_version`` (:data:`SCHEMA_VERSION`); the schema of
command ``C`` is ``repro/data/schemas/C.json`` (tests validate each output against it).
Never imports torch.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from repro import bounds
from repro.cli.validators import (  # noqa: F401 (the table's validators, re-exported)
    bounded,
    interpreter_path,
    iso_day,
    node_list,
    python_version,
    requirement,
    slurm_value,
    variant_glob,
    variant_id,
)
from repro.config.overrides import OVERRIDE_ENV
from repro.config.select import DEFAULT_FILE
from repro.containers import builder as builder_mod
from repro.containers.build_settings import DEFAULT_REPO
from repro.containers.spec import GPU_MODES
from repro.runner.caselog import MIN_CAP_BYTES
from repro.runner.job import ALLOW_MISMATCH_FLAG

#: The ``schema_version`` of every ``--json`` output; bump with a change of any of their shapes.
SCHEMA_VERSION = 1


# ---------------------------------------------------------------------------------------------
# the table


@dataclass(frozen=True)
class Option:
    """One command-line option (or positional, when ``flags`` is empty).

    ``dest``: the attribute on the parsed namespace; ``action``: an argparse action name;
    ``type``: the validator; ``env``: the environment variable that supplies the value when the
    flag is absent (``env_default``) or that the command reads itself (documented in the help);
    ``deprecated``: old spellings, parsed with a note on stderr; ``completer``: a callable for
    argcomplete (``prefix, parsed_args -> names``)."""

    dest: str
    flags: tuple[str, ...]
    help: str
    metavar: str | None = None
    action: str | None = None
    type: Callable[[str], Any] | None = None
    default: Any = None
    choices: tuple[str, ...] | None = None
    nargs: str | int | None = None
    env: str | None = None
    env_default: bool = False
    deprecated: tuple[str, ...] = ()
    completer: Callable[..., Any] | None = None

    def kwargs(self, **per_command: Any) -> dict[str, Any]:
        """The ``add_argument`` keyword arguments (``per_command``: ``default``/``required``)."""
        unknown = set(per_command) - {"default", "required"}
        if unknown:
            raise TypeError(f"{self.dest}: only default/required vary per command, not {unknown}")
        kw: dict[str, Any] = {"help": self.help}
        if self.flags:
            kw["dest"] = self.dest
        for name in ("metavar", "action", "type", "choices", "nargs"):
            value = getattr(self, name)
            if value is not None:
                kw[name] = value
        default = per_command.get("default", self.default)
        if self.env_default and self.env:
            default = os.environ.get(self.env) or default
        if self.action not in ("store_true", "store_false") or "default" in per_command:
            kw["default"] = default
        if "required" in per_command:
            kw["required"] = per_command["required"]
        return kw


def _variant_ids(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    from repro import config

    try:
        return [v.id for v in config.load(getattr(parsed_args, "config", DEFAULT_FILE)).variants]
    except Exception:  # completion never fails loudly
        return []


def _scenario_names(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    from repro import config

    try:
        matrix = config.load(getattr(parsed_args, "config", DEFAULT_FILE))
        return [s.name for s in matrix.scenarios]
    except Exception:
        return []


_OVERRIDE_SOURCE = "command line > $%s > matrix.yaml"


def _by_dest(options: tuple[Option, ...]) -> dict[str, Option]:
    """The table keyed by ``dest``; ValueError when two entries share one (a dict would keep
    the last silently: ``repro run --repeat`` once took ``repro bisect --repeat``'s meaning)."""
    table: dict[str, Option] = {}
    for option in options:
        if option.dest in table:
            raise ValueError(f"repro.cli.options: two entries named {option.dest!r}")
        table[option.dest] = option
    return table


OPTIONS: Mapping[str, Option] = _by_dest(
    (
        # -- shared: one meaning in every command ---------------------------------------------
        Option(
            "config",
            ("--config",),
            "matrix file: variants, scenarios and `expect:` entries (default: matrix.yaml "
            "where a command needs one; report and compare read it only when given)",
            metavar="PATH",
        ),
        Option(
            "variants",
            ("--variant",),
            "variant id or glob, e.g. 'cu12*-torch2.8' (repeatable; * and ?, brackets are "
            "literal); plan and host default to every variant, build, docker-run and "
            "wheelhouse need one",
            metavar="GLOB",
            action="append",
            type=variant_glob,
            completer=_variant_ids,
        ),
        Option(
            "patterns",
            ("-k",),
            "only cases whose id contains PATTERN, or matches it as a glob (* and ?; brackets "
            "are literal; repeatable): substrings or globs, not a pytest expression",
            metavar="PATTERN",
            action="append",
            completer=_scenario_names,
        ),
        Option(
            "json", ("--json",), "print one JSON object (with schema_version)", action="store_true"
        ),
        Option(
            "results_dir",
            ("--results-dir",),
            "results root: each run writes <DIR>/<run-id>/ (default: defaults.results_dir in the "
            "matrix file, else 'results')",
            metavar="DIR",
            deprecated=("--results",),
        ),
        Option(
            "output_dir",
            ("-o", "--output-dir"),
            "write matrix.json, matrix.md and matrix.html into DIR (report: default '.'; "
            "docker-run: merge every run under the results root afterwards, even after a timeout)",
            metavar="DIR",
            deprecated=("--output", "--report"),
        ),
        Option(
            "fingerprint",
            ("--fingerprint",),
            "fingerprint.json of the host this is about (from `repro env --json` or a run "
            "directory), instead of this machine's",
            metavar="FILE",
            deprecated=("--host-fingerprint",),
        ),
        Option(
            "python",
            ("--python",),
            "the interpreter under test: its torch build runs the cases or is probed (default: "
            "this one)",
            metavar="PATH",
            type=interpreter_path,
            default=sys.executable,
        ),
        Option(
            "timeout_scale",
            ("--timeout-scale",),
            "multiply every case timeout by X, a finite number above 0 (slow machines)",
            metavar="X",
            type=bounded(bounds.TIMEOUT_SCALE),
        ),
        Option("fixture", ("--fixture",), argparse.SUPPRESS, metavar="DIR"),
        # -- image overrides (build, docker-run, wheelhouse) ----------------------------------
        Option(
            "base_image",
            ("--base-image",),
            "base image instead of the variant's (a local image works offline; "
            + _OVERRIDE_SOURCE % OVERRIDE_ENV["base_image"]
            + ")",
            metavar="IMAGE",
            env=OVERRIDE_ENV["base_image"],
        ),
        Option(
            "index_url",
            ("--index-url",),
            "torch wheel index instead of the variant's ({runtime} is replaced; "
            + _OVERRIDE_SOURCE % OVERRIDE_ENV["index_url"]
            + ")",
            metavar="URL",
            env=OVERRIDE_ENV["index_url"],
        ),
        Option(
            "wheelhouse",
            ("--wheelhouse",),
            "install from the wheels in DIR only, no index and no network (see `repro "
            "wheelhouse`; " + _OVERRIDE_SOURCE % OVERRIDE_ENV["wheelhouse"] + ")",
            metavar="DIR",
            env=OVERRIDE_ENV["wheelhouse"],
        ),
        Option(
            "image_python",
            ("--image-python",),
            "the base image's Python version X.Y, checked by the build ("
            + _OVERRIDE_SOURCE % OVERRIDE_ENV["python"]
            + ")",
            metavar="X.Y",
            type=python_version,
            env=OVERRIDE_ENV["python"],
            deprecated=("--python",),
        ),
        Option(
            "source",
            ("--source",),
            "build from the repro-matrix checkout in DIR (default: the one this repro runs from)",
            metavar="DIR",
        ),
        Option(
            "image_repo",
            ("--image-repo",),
            f"image repository; tags are NAME:<variant-id> (default: $REPRO_IMAGE_REPO, else "
            f"{DEFAULT_REPO})",
            metavar="NAME",
            default=DEFAULT_REPO,
            env="REPRO_IMAGE_REPO",
            env_default=True,
        ),
        # -- run ------------------------------------------------------------------------------
        Option(
            "as_variant",
            ("--as-variant",),
            "record the results as this matrix.yaml variant (inside its image); default: derived "
            "from the interpreter's torch build",
            metavar="ID",
            type=variant_id,
            deprecated=("--variant",),
            completer=_variant_ids,
        ),
        Option(
            "allow_variant_mismatch",
            (ALLOW_MISMATCH_FLAG,),
            "with --as-variant: record the results under it even when its torch pin or runtime "
            "is not this interpreter's (otherwise refused, exit 2)",
            action="store_true",
        ),
        Option(
            "expect_accelerator",
            ("--no-expect-accelerator",),
            "with --as-variant: a cuda/rocm case whose torch sees no device is skipped, not "
            "failed as accelerator_unavailable (`repro venv-run` passes it on a host with no GPU "
            "of the variant's kind)",
            action="store_false",
        ),
        Option("list", ("--list",), "list the selected case ids and exit", action="store_true"),
        Option(
            "run_dir",
            ("--run-dir",),
            "write into this existing, empty directory (its name is the run id) instead of a new "
            "one under the results root; the container lane mounts only it",
            metavar="DIR",
        ),
        Option(
            "log_cap_mib",
            ("--log-cap-mib",),
            "cap of each case log in MiB; the middle is cut, the tail kept (default: %(default)g)",
            metavar="MIB",
            type=bounded(bounds.log_cap_mib(MIN_CAP_BYTES)),
        ),
        Option(
            "no_doctor",
            ("--no-doctor",),
            "skip the health pre-flight (otherwise its findings are the run's 'doctor' testsuite)",
            action="store_true",
        ),
        Option(
            "rerun_failures",
            ("--rerun-failures",),
            "rerun each red case up to N times in a fresh process; a case that then passes is "
            "recorded as flaky (repro.flaky=true), one red every time as deterministic "
            "(default: 0)",
            metavar="N",
            type=bounded(bounds.RERUNS),
            default=0,
        ),
        Option(
            "rounds",
            ("--rounds",),
            "measure each case that records a rate (dataloader's steady it/s) N times, in N "
            "rounds each in a new process, the later rounds after the other cases; its figures "
            "are then the median of the rounds with the spread between them, what repro compare "
            "weighs a drop against (as asv runs each benchmark in several processes) (default: 1)",
            metavar="N",
            type=bounded(bounds.ROUNDS),
            default=1,
        ),
        Option(
            "properties",
            ("--property",),
            "extra testsuite property, e.g. variant.image=sha256:... (repeatable)",
            metavar="NAME=VALUE",
            action="append",
            default=[],
        ),
        Option(
            "isolation",
            ("--isolation",),
            "fresh: a new interpreter per case; zygote: fork each case from a pre-imported one; "
            "auto: zygote unless the scenario declares FRESH (default: %(default)s)",
            choices=("fresh", "zygote", "auto"),
            default="auto",
        ),
        Option(
            "jobs",
            ("-j", "--jobs"),
            "run up to N cases at once; cases declaring EXCLUSIVE (timing, fixed ports, a whole "
            "device) run alone, junit.xml and progress stay in catalogue order (default: 1 on a "
            "GPU lane, else the usable CPU cores, each case then getting cores/N torch threads)",
            metavar="N",
            type=bounded(bounds.JOBS),
        ),
        # -- plan -----------------------------------------------------------------------------
        Option(
            "github",
            ("--github",),
            "print the GitHub Actions job matrix (one line of JSON: one job per variant x "
            "runner kind)",
            action="store_true",
        ),
        Option(
            "tier",
            ("--tier",),
            "with --github: the tier from matrix.yaml's tiers: (e.g. pr, nightly, full); "
            "default: everything",
            metavar="NAME",
        ),
        # -- build ----------------------------------------------------------------------------
        Option(
            "force",
            ("--force",),
            "build even when the image is up to date (docker's layer cache still applies)",
            action="store_true",
        ),
        Option(
            "no_cache", ("--no-cache",), "build without docker's layer cache", action="store_true"
        ),
        Option(
            "context_dir",
            ("--context-dir",),
            "only write the build context (and build-args.json) to DIR, for a manual "
            "`docker build`",
            metavar="DIR",
        ),
        Option(
            "builder",
            ("--builder",),
            "image builder: buildkit (the Docker CLI's buildx, or DOCKER_BUILDKIT=1 on a CLI "
            "before 23; one pip cache shared by every variant), classic (the SDK's deprecated "
            f"builder), auto: buildkit when usable (default: ${builder_mod.ENV_VAR}, else auto)",
            choices=builder_mod.BUILDERS,
            default=builder_mod.AUTO,
            env=builder_mod.ENV_VAR,
            env_default=True,
        ),
        # -- docker-run -----------------------------------------------------------------------
        Option(
            "shell",
            ("--shell",),
            "open a shell in the image with the same passthrough and mounts instead of running "
            "the cases",
            action="store_true",
        ),
        Option(
            "keep_container",
            ("--keep-container",),
            "do not remove the container afterwards",
            action="store_true",
        ),
        Option(
            "dry_run",
            ("--dry-run",),
            "print the effective settings and the command(s) it would run; start nothing",
            action="store_true",
        ),
        Option(
            "no_build", ("--no-build",), "use the existing image, never build", action="store_true"
        ),
        Option(
            "timeout",
            ("--timeout",),
            "hard timeout for the whole container in seconds (default: the sum of the case "
            "timeouts plus a margin)",
            metavar="S",
            type=bounded(bounds.CONTAINER_SECONDS),
        ),
        Option(
            "shm_size",
            ("--shm-size",),
            "/dev/shm size instead of the variant's shm_size ('64m' is Docker's default)",
            metavar="SIZE",
        ),
        Option(
            "ipc",
            ("--ipc",),
            "IPC namespace (host: the host's /dev/shm)",
            choices=("host", "private", "shareable"),
        ),
        Option(
            "network",
            ("--network",),
            "container network (default: none; loopback is enough for DDP)",
            metavar="MODE",
            default="none",
        ),
        Option(
            "gpus",
            ("--gpus",),
            "all, indices '0,1' or CDI names 'nvidia.com/gpu=0' (default: all)",
            metavar="LIST",
            default="all",
        ),
        Option(
            "gpu_mode",
            ("--gpu-mode",),
            "how NVIDIA GPUs are passed (default: auto)",
            choices=GPU_MODES,
            default="auto",
        ),
        Option(
            "user",
            ("--user",),
            "container user (default: your uid:gid, so results are yours; as root the image's "
            "unprivileged user, never 0:0)",
            metavar="UID:GID",
        ),
        # -- report / compare -----------------------------------------------------------------
        Option(
            "inputs",
            (),
            "results directories or JUnit XML files (directories are searched for *.xml)",
            metavar="DIR_OR_FILE",
            nargs="+",
        ),
        Option(
            "history",
            ("--history",),
            "keep the previous matrix.json in DIR and mark what changed since then",
            metavar="DIR",
        ),
        Option(
            "predict",
            ("--no-predict",),
            "do not predict cells from the compatibility facts",
            action="store_false",
        ),
        Option(
            "coverage",
            ("--no-coverage",),
            "with --config: do not warn about variants, runtimes and pins without results "
            "(a single-host run covers one variant)",
            action="store_false",
        ),
        Option(
            "github_annotations",
            ("--github-annotations",),
            "also print one GitHub Actions ::error line per red cell, with its signatures "
            "(a workflow step's annotations; not with --json)",
            action="store_true",
        ),
        Option("base", (), "baseline matrix.json or results directory", metavar="BASE"),
        Option("cand", (), "candidate matrix.json or results directory", metavar="CAND"),
        Option(
            "base_runs",
            ("--base-run",),
            "another run of the baseline build (matrix.json or results directory), pooled with "
            "BASE: its rates join BASE's and the spread between runs counts (repeatable; a case "
            "keeps its worst outcome of the runs)",
            metavar="PATH",
            action="append",
            default=[],
        ),
        Option(
            "cand_runs",
            ("--cand-run",),
            "another run of the candidate build, pooled with CAND (as --base-run)",
            metavar="PATH",
            action="append",
            default=[],
        ),
        Option(
            "markdown",
            ("--markdown",),
            "also write the Markdown to PATH (e.g. $GITHUB_STEP_SUMMARY)",
            metavar="PATH",
        ),
        Option(
            "threshold",
            ("--threshold",),
            "report a rate metric (metric.*_per_s) whose median drops by more than PCT percent "
            "and by more than the runs' own spread (a figure measured once: PCT alone) "
            "(default: %(default)g)",
            metavar="PCT",
            type=bounded(bounds.THRESHOLD_PCT),
        ),
        Option(
            "fail_on_problems",
            ("--fail-on-problems",),
            "exit 1 when the matrix has a problem: an unexpected red case, a strict expect: "
            "entry's case that passed, a failed doctor check, or an invalid input file (the "
            "outputs are written first; expected reproductions are not problems)",
            action="store_true",
        ),
        Option(
            "fail_on_throughput",
            ("--fail-on-throughput",),
            "exit 1 on a throughput drop too",
            action="store_true",
        ),
        # -- classify / check -----------------------------------------------------------------
        Option("logs", (), "log files ('-' for standard input)", metavar="LOG", nargs="+"),
        Option("wsl2", ("--wsl2",), "the log came from a WSL2 host", action="store_true"),
        Option(
            "native", ("--native",), "the log came from a native Linux host", action="store_true"
        ),
        Option(
            "command",
            (),
            "an install line (quoted): pip/uv pip/uv add/conda/mamba install, a wheel URL or "
            "file name, requirements lines; -r FILE is read relative to the current directory",
            metavar="INSTALL_LINE",
            nargs="?",
        ),
        Option(
            "check_python",
            ("--python-version",),
            "check for this Python instead of the host's (e.g. 3.10)",
            metavar="X.Y",
            deprecated=("--python",),
        ),
        Option(
            "platform",
            ("--platform",),
            "check for this platform instead of the host's",
            choices=("linux", "windows", "macos"),
        ),
        Option(
            "machine",
            ("--machine",),
            "check for this CPU architecture instead of the host's (uname -m): aarch64 gets "
            "PyPI's CPU-only aarch64 torch and download.pytorch.org's sbsa CUDA builds",
            choices=("x86_64", "aarch64"),
        ),
        Option(
            "python_bits",
            ("--python-bits",),
            "check for a 32- or 64-bit Python (pip's platform tag win32/linux_i686 vs "
            "win_amd64/linux_x86_64): PyTorch has no 32-bit builds; default 64",
            type=int,
            choices=(32, 64),
        ),
        Option(
            "as_of",
            ("--as-of",),
            "judge the line as run on this day: the indexes served the releases out by then "
            "(an old unpinned line, and its driver floor); default today's facts",
            metavar="YYYY-MM-DD",
            type=iso_day,
        ),
        Option(
            "signatures",
            ("--signatures",),
            "extra signature rows (same schema as repro/data/signatures.yaml); repeatable",
            metavar="FILE",
            action="append",
            default=[],
        ),
        Option(
            "deep",
            ("--deep",),
            "also exercise the accelerator: every NVML query, a CUDA op after fork (the zygote's "
            "premise), CUDA/cuDNN/NCCL smoke, a /dev/shm write, Fabric Manager (seconds to minutes)",
            action="store_true",
        ),
        Option(
            "slurm_check",
            ("--slurm",),
            "node-check mode for a Slurm HealthCheckProgram or Prolog: one line on stdout, exit "
            "1 when a check fails (a prolog then drains the node), nothing else written; fails "
            "open (UNKNOWN, exit 0) when the checks cannot run (docs/slurm.md)",
            action="store_true",
        ),
        Option(
            "drain",
            ("--drain",),
            "with --slurm: drain this node (scontrol update State=DRAIN) when a check fails, "
            "resume it when healthy if this check drained it (a HealthCheckProgram must act "
            "itself)",
            action="store_true",
        ),
        Option(
            "log",
            ("--log",),
            "with --slurm: also append the line, time-stamped, to FILE",
            metavar="FILE",
        ),
        Option("torch", ("--torch",), "torch version, e.g. 2.7.0", metavar="VERSION"),
        Option("runtime", ("--runtime",), "runtime tag, e.g. cu121, rocm6.4, cpu", metavar="TAG"),
        # -- venv-run / bisect -----------------------------------------------------------------
        Option(
            "env_python",
            ("--env-python",),
            "the environment's Python (a version or a path; uv downloads one the host lacks; "
            + _OVERRIDE_SOURCE % OVERRIDE_ENV["python"]
            + ")",
            metavar="X.Y_OR_PATH",
            env=OVERRIDE_ENV["python"],
            deprecated=("--python",),
        ),
        Option(
            "extra_index_urls",
            ("--extra-index-url",),
            "another index for the pinned package and its dependencies (repeatable)",
            metavar="URL",
            action="append",
            default=[],
        ),
        Option(
            "find_links",
            ("--find-links",),
            "a directory (or page) of wheels beside the index (repeatable)",
            metavar="DIR",
            action="append",
            default=[],
        ),
        Option(
            "env_cache",
            ("--env-cache",),
            "where environments are kept (default: $REPRO_ENV_CACHE, else "
            "~/.cache/repro-matrix/envs)",
            metavar="DIR",
        ),
        Option(
            "run_args",
            (),
            "more `repro run` options, e.g. -- --timeout-scale 2 -j 1",
            metavar="-- RUN_ARGS",
            nargs=argparse.REMAINDER,
        ),
        Option(
            "good",
            ("--good",),
            "a version that works, or a nightly's date (YYYYMMDD) on a nightly index",
            metavar="VERSION",
        ),
        Option(
            "bad",
            ("--bad",),
            "a version that fails, or a nightly's date (YYYYMMDD) on a nightly index",
            metavar="VERSION",
        ),
        Option(
            "package",
            ("--package",),
            "the package to bisect (default: %(default)s)",
            metavar="NAME",
            default="torch",
        ),
        Option(
            "with_",
            ("--with",),
            "another requirement in every environment, e.g. torch==2.13.0 when bisecting "
            "numpy (repeatable)",
            metavar="REQ",
            action="append",
            default=[],
            type=requirement,
        ),
        Option(
            "repeat",
            ("--repeat",),
            "runs per version; runs that disagree make the step flaky (default: %(default)s)",
            metavar="N",
            type=int,
            default=2,
        ),
        # -- slurm / slurm-status / slurm-collect ------------------------------------------------
        Option(
            "partition",
            ("--partition",),
            "Slurm partition of every task and of the report job (else matrix.yaml slurm.partition)",
            metavar="NAME",
            type=slurm_value("partition"),
        ),
        Option(
            "account",
            ("--account",),
            "Slurm account charged (else slurm.account)",
            metavar="NAME",
            type=slurm_value("account"),
        ),
        Option(
            "time_limit",
            ("--time-limit",),
            "time limit of each task, sbatch --time: MM, HH:MM:SS or D-HH:MM:SS (else "
            "slurm.time_limit; a task killed at it is a red cell, infra.slurm_timeout)",
            metavar="TIME",
            type=slurm_value("time_limit"),
        ),
        Option(
            "gpus_per_task",
            ("--gpus-per-task",),
            "GPUs each cuda/rocm variant's task and the host lane's task ask for (else "
            "slurm.gpus_per_task, default 0)",
            metavar="N",
            type=bounded(bounds.GPUS_PER_TASK),
        ),
        Option(
            "gpu_request",
            ("--gpu-request",),
            "how tasks ask for GPUs: gres (--gres=gpu:N) or gpus (--gpus=N) (else "
            "slurm.gpu_request, default gres)",
            choices=("gres", "gpus"),
        ),
        Option(
            "cpus_per_task",
            ("--cpus-per-task",),
            "CPUs of each task, sbatch --cpus-per-task (else slurm.cpus_per_task)",
            metavar="N",
            type=bounded(bounds.CPUS_PER_TASK),
        ),
        Option(
            "mem",
            ("--mem",),
            "memory of each task, sbatch --mem, e.g. 64G (else slurm.mem)",
            metavar="SIZE",
            type=slurm_value("mem"),
        ),
        Option(
            "constraint",
            ("--constraint",),
            "node features every task needs, sbatch --constraint, e.g. 'a100|h100' (else "
            "slurm.constraint)",
            metavar="EXPR",
            type=slurm_value("constraint"),
        ),
        Option(
            "nodelist",
            ("--nodelist",),
            "one set of tasks per node, comma-separated (else slurm.nodes)",
            metavar="NODE[,NODE...]",
            type=node_list,
        ),
        Option(
            "lanes",
            ("--lane",),
            "host: the nodes' own interpreter once per node or group; venv: a uv environment "
            "per variant; container: the variant's image (repeatable; else slurm.lanes, "
            "default venv)",
            choices=("host", "venv", "container"),
            action="append",
        ),
        Option(
            "node_python",
            ("--node-python",),
            "the interpreter on the nodes that runs repro (and whose torch the host lane "
            "tests), a path or a command (else slurm.python, default python3)",
            metavar="PATH",
            type=slurm_value("python"),
        ),
        Option(
            "container_runtime",
            ("--container-runtime",),
            "how the container lane starts images on the nodes (else slurm.container_runtime, "
            "default pyxis)",
            choices=("pyxis", "apptainer"),
        ),
        Option(
            "wait",
            ("--wait",),
            "after submitting, wait for the report job and print every task's state (exit 1 "
            "when the report job failed, 3 when it did not run to its end)",
            action="store_true",
        ),
        Option(
            "submission",
            (),
            "a submission directory (<results>/.slurm/<stamp>, printed by repro slurm); "
            "default: the newest under the results root",
            metavar="SUBMISSION",
            nargs="?",
        ),
        # -- wheelhouse / completion ----------------------------------------------------------
        Option("dest", (), "directory for the wheels", metavar="DIR"),
        Option(
            "shell_name",
            (),
            "the shell to print a completion script for",
            metavar="SHELL",
            choices=("bash", "zsh", "fish"),
        ),
    )
)


# ---------------------------------------------------------------------------------------------
# building parsers from the table


class _Deprecated(argparse.Action):
    """An old spelling: stores through the real action, after one note on stderr."""

    def __init__(self, option_strings: list[str], dest: str, *, real: argparse.Action, **kw: Any):
        kw.pop("nargs", None)
        super().__init__(option_strings, dest, nargs=real.nargs, **kw)
        self.real = real

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        new = "/".join(self.real.option_strings)
        print(f"repro: note: {option_string} is deprecated; use {new}", file=sys.stderr)
        self.real(parser, namespace, values, option_string)


def add(parser: Any, *names: str, **per_command: Any) -> list[argparse.Action]:
    """Add the options ``names`` (keys of :data:`OPTIONS`) to ``parser`` (a parser or an
    argument group), with their deprecated spellings hidden. ``per_command``: ``default`` or
    ``required``, applied to every named option (pass one name then). Returns the actions.

    Raises KeyError for a name missing from the table, argparse.ArgumentError for a flag the
    parser already has (two options with one spelling in one command)."""
    actions = []
    for name in names:
        option = OPTIONS[name]
        kw = option.kwargs(**per_command)
        if option.flags:
            action = parser.add_argument(*option.flags, **kw)
        else:
            action = parser.add_argument(option.dest, **kw)
        if option.completer is not None:
            action.completer = option.completer  # read by argcomplete
        actions.append(action)
        existing = set(getattr(parser, "_option_string_actions", {}))
        old = [flag for flag in option.deprecated if flag not in existing]
        if old:
            parser.add_argument(
                *old,
                action=_Deprecated,
                real=action,
                dest=option.dest,
                default=argparse.SUPPRESS,
                metavar=option.metavar,
                type=action.type,
                choices=action.choices,
                help=argparse.SUPPRESS,
            )
    return actions


def deprecated_positional(args: argparse.Namespace, attr: str, new: str) -> list[str]:
    """Values an old positional spelling gave (``repro build VARIANT``), with one note on
    stderr naming the new flag; ``[]`` when none was given."""
    values = getattr(args, attr, None) or []
    if isinstance(values, str):
        values = [values]
    if values:
        shown = " ".join(values)
        print(f"repro: note: a positional {shown} is deprecated; use {new}", file=sys.stderr)
    return list(values)


def print_json(payload: Mapping[str, Any]) -> None:
    """Print one ``--json`` object: ``schema_version`` first, then ``payload``'s keys sorted."""
    out = {"schema_version": SCHEMA_VERSION, **payload}
    # written as it is encoded (no second copy of a large compare result as one string)
    json.dump(out, sys.stdout, indent=2, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")
