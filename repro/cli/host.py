"""``repro env`` and ``repro doctor``: this machine's fingerprint and health pre-flight.

Argument parsing and printing only: the fingerprint is :mod:`repro.host.fingerprint`, the
checks :mod:`repro.host.doctor`. Bad input raises :class:`repro.errors.ConfigError` (exit 2);
``repro doctor`` exits 1 when a check fails. Errors reach the user through ``repro.cli.main``'s
one boundary.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from repro.cli import options
from repro.errors import EXIT_CASES_FAILED, EXIT_OK, ConfigError
from repro.host import deep, doctor, fingerprint


def register(subparsers: Any) -> None:
    """Add the ``env`` and ``doctor`` subcommands to ``subparsers`` (an ``add_subparsers()``
    result), with ``handler`` set to :func:`run_env` and :func:`run_doctor`; options from
    :mod:`.options`."""
    env = subparsers.add_parser(
        "env",
        help="print the host and runtime fingerprint (GPUs, driver, torch build, WSL2, container)",
    )
    options.add(env, "json", "python")
    env.set_defaults(handler=run_env)

    check = subparsers.add_parser(
        "doctor",
        help="health pre-flight: nvidia-smi, NVML, ROCm SMI, /dev/shm, driver vs runtime",
        description="Health pre-flight: nvidia-smi, NVML, ROCm SMI, /dev/shm, driver vs runtime. "
        "Exit 1 when a check fails.",
    )
    options.add(check, "json", "python", "deep", "fixture")
    slurm = check.add_argument_group("Slurm node check (docs/slurm.md)")
    options.add(slurm, "slurm_check", "drain", "log")
    check.set_defaults(handler=run_doctor)


def run_env(args: argparse.Namespace) -> int:
    """``repro env [--json] [--python PATH]``: print the fingerprint (JSON: ``fingerprint.json``'s
    layout). A missing or broken interpreter is reported in the fingerprint, not raised."""
    fp = fingerprint.collect(python=args.python)
    if args.json:
        options.print_json(fp.to_json())
    else:
        print(fingerprint.format_text(fp))
    return EXIT_OK


def interpreter(python: str) -> str:
    """``--python`` checked (:func:`repro.cli.options.interpreter_path`): an existing executable
    file or a command on PATH (resolved). Raises ConfigError naming the option otherwise."""
    try:
        return options.interpreter_path(python)
    except argparse.ArgumentTypeError as exc:
        raise ConfigError(f"--python {exc}") from None


def _root(args: argparse.Namespace) -> str:
    """The file system the checks read devices from: ``/``, or a captured host fixture's
    ``root/`` (``--fixture DIR``, hidden: tests plant a failing check with it)."""
    return os.path.join(args.fixture, "root") if getattr(args, "fixture", None) else "/"


def run_doctor(args: argparse.Namespace) -> int:
    """``repro doctor [--json] [--python PATH] [--deep]``: exit 0 when no check fails, 1 when any
    does; ConfigError (exit 2) for a bad ``--python``. ``--deep``: :mod:`repro.host.deep`.
    ``--slurm``: :func:`run_node_check`."""
    if args.slurm_check:
        return run_node_check(args)
    if args.drain or args.log:
        raise ConfigError("--drain and --log belong to the node check: add --slurm")
    python = interpreter(args.python)
    fp = fingerprint.collect(python=python)
    findings = (
        deep.run_deep_checks(fp, python=python)
        if args.deep
        else doctor.run_checks(fp, root=_root(args))
    )
    if args.json:
        out = {
            "host_key": fingerprint.host_key(fp),
            "python": python,
            "runtime": fingerprint.runtime_tag(fp),
            "failed": doctor.failed(findings),
            "findings": [f.to_json() for f in findings],
        }
        options.print_json(out)
    else:
        print(f"host   {fingerprint.host_key(fp)}")
        print(f"python {python} (torch {fp.runtime.torch or '-'} [{fingerprint.runtime_tag(fp)}])")
        print(doctor.format_table(findings))
    return EXIT_CASES_FAILED if doctor.failed(findings) else EXIT_OK


def run_node_check(args: argparse.Namespace) -> int:
    """``repro doctor --slurm [--drain] [--log FILE]``: one line, exit 0 (healthy, or the
    checks could not run: fail open) or 1 (a check failed); see :mod:`repro.slurm.nodecheck`.
    Writes nothing but the line, the log and (``--drain``) the node's state."""
    from pathlib import Path

    from repro.slurm import nodecheck

    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"  # the probe's child writes no __pycache__
    sys.dont_write_bytecode = True
    if args.deep:
        raise ConfigError("--deep is not a node check (minutes on a GPU box): drop it with --slurm")
    try:
        python = interpreter(args.python)
        fp = fingerprint.collect(python=python, timeout_s=nodecheck.PROBE_TIMEOUT_S)
        findings = doctor.run_checks(fp, root=_root(args))
        result = nodecheck.verdict(findings, fingerprint.host_key(fp))
    except Exception as exc:  # fail open: never drain a node for the checker's own fault
        result = nodecheck.unknown(" ".join(str(exc).split())[:300] or type(exc).__name__)
    line = result.line
    if args.drain:
        line += f" [node {nodecheck.node_name()}: {nodecheck.apply(result, nodecheck.node_name())}]"
    print(line)
    if args.log:
        nodecheck.append_log(Path(args.log), line)
    return result.exit_status
