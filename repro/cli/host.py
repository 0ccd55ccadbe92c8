"""``repro env`` and ``repro doctor``: this machine's fingerprint and health pre-flight.

Argument parsing and printing only: the fingerprint is :mod:`repro.host.fingerprint`, the
checks :mod:`repro.host.doctor`. Bad input raises :class:`repro.errors.ConfigError` (exit 2);
``repro doctor`` exits 1 when a check fails. Errors reach the user through ``repro.cli.main``'s
one boundary.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from typing import Any

from repro.errors import EXIT_CASES_FAILED, EXIT_OK, ConfigError
from repro.host import deep, doctor, fingerprint


def register(subparsers: Any) -> None:
    """Add the ``env`` and ``doctor`` subcommands to ``subparsers`` (an ``add_subparsers()``
    result), with ``handler`` set to :func:`run_env` and :func:`run_doctor`."""
    env = subparsers.add_parser(
        "env",
        help="print the host and runtime fingerprint (GPUs, driver, torch build, WSL2, container)",
    )
    env.add_argument("--json", action="store_true", help="print the fingerprint as JSON")
    env.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter whose torch is probed (default: this one)",
    )
    env.set_defaults(handler=run_env)

    check = subparsers.add_parser(
        "doctor",
        help="health pre-flight: nvidia-smi, NVML, ROCm SMI, /dev/shm, driver vs runtime",
        description="Health pre-flight: nvidia-smi, NVML, ROCm SMI, /dev/shm, driver vs runtime. "
        "Exit 1 when a check fails.",
    )
    check.add_argument("--json", action="store_true", help="print the findings as JSON")
    check.add_argument(
        "--python",
        default=sys.executable,
        metavar="PATH",
        help="interpreter whose torch build is checked against the driver (default: this one)",
    )
    check.add_argument(
        "--deep",
        action="store_true",
        help="also exercise the accelerator: every NVML query, a CUDA op after fork (the zygote's "
        "premise), CUDA/cuDNN/NCCL smoke, a /dev/shm write, Fabric Manager (seconds to minutes)",
    )
    check.set_defaults(handler=run_doctor)


def run_env(args: argparse.Namespace) -> int:
    """``repro env [--json] [--python PATH]``: print the fingerprint (JSON: ``fingerprint.json``'s
    layout). A missing or broken interpreter is reported in the fingerprint, not raised."""
    fp = fingerprint.collect(python=args.python)
    if args.json:
        print(json.dumps(fp.to_json(), indent=2, sort_keys=True))
    else:
        print(fingerprint.format_text(fp))
    return EXIT_OK


def interpreter(python: str) -> str:
    """``--python`` checked: an existing executable file or a command on PATH (resolved).
    Raises ConfigError naming the option otherwise."""
    if os.sep in python or (os.altsep and os.altsep in python):
        if not os.path.isfile(python):
            raise ConfigError(f"--python {python}: no such file")
        if not os.access(python, os.X_OK):
            raise ConfigError(f"--python {python}: not executable")
        return python
    resolved = shutil.which(python)
    if resolved is None:
        raise ConfigError(f"--python {python}: not found on PATH")
    return resolved


def run_doctor(args: argparse.Namespace) -> int:
    """``repro doctor [--json] [--python PATH] [--deep]``: exit 0 when no check fails, 1 when any
    does; ConfigError (exit 2) for a bad ``--python``. ``--deep``: :mod:`repro.host.deep`."""
    python = interpreter(args.python)
    fp = fingerprint.collect(python=python)
    findings = deep.run_deep_checks(fp, python=python) if args.deep else doctor.run_checks(fp)
    if args.json:
        out = {
            "host_key": fingerprint.host_key(fp),
            "python": python,
            "runtime": fingerprint.runtime_tag(fp),
            "failed": doctor.failed(findings),
            "findings": [f.to_json() for f in findings],
        }
        print(json.dumps(out, indent=2))
    else:
        print(f"host   {fingerprint.host_key(fp)}")
        print(f"python {python} (torch {fp.runtime.torch or '-'} [{fingerprint.runtime_tag(fp)}])")
        print(doctor.format_table(findings))
    return EXIT_CASES_FAILED if doctor.failed(findings) else EXIT_OK
