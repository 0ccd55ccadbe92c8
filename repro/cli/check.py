"""``repro check``: before running an install line (pip, uv, conda, a wheel URL, requirements
lines), ask whether it installs and whether what it installs runs on this host, on the host of a
``fingerprint.json``, or for another ``--python``/``--platform``. Parsing and printing only: the
line is read by :mod:`repro.compat.install_line`, the answer comes from
:mod:`repro.compat.install_check` (``--torch``/``--runtime``: :mod:`repro.compat.check`), the
host from :mod:`repro.host.fingerprint`.

Exit status: 0 installs and runs (``unknown`` included: nothing known to fail), 1 it will not
(each reason printed), 2 bad input: text that is no install command, a bad fingerprint (ConfigError).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from repro import properties
from repro.cli import options
from repro.compat import check as check_mod
from repro.compat import install_check, install_line, pip_command
from repro.compat.results import FAIL
from repro.errors import EXIT_CASES_FAILED, EXIT_OK, ConfigError
from repro.host import fingerprint as fingerprint_mod
from repro.model import Fingerprint, host_key


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``check`` subcommand (handler :func:`run`)."""
    parser = subparsers.add_parser(
        "check",
        help="would this install line install and run on this host? (from the shipped facts)",
        description=(
            'Examples: repro check "pip install torch==2.7.0+cu121"; '
            'repro check "conda install pytorch==1.9.0 cudatoolkit=11.3 -c pytorch" '
            "--python-version 3.8 --platform windows; "
            'repro check "pip install torch" --machine aarch64 --as-of 2025-08-08; '
            "repro check --torch 2.13.0 --runtime cu130 --fingerprint results/x/fingerprint.json. "
            "Exit status: 0 installs and runs (or nothing known to fail), 1 it will not "
            "(each reason named), 2 not an install command or bad input."
        ),
    )
    options.add(parser, "command", "check_python", "platform", "machine", "python_bits", "as_of")
    options.add(parser, "torch", "runtime")
    options.add(parser, "fingerprint", "json")
    parser.set_defaults(handler=run)


def _request(args: argparse.Namespace) -> pip_command.BuildRequest:
    if args.runtime and not args.torch:
        raise ConfigError("check: --runtime needs --torch VERSION")
    if not args.torch:
        raise ConfigError(
            'check: give an install line ("pip install torch==2.7.0+cu121") or --torch'
        )
    return pip_command.from_options(args.torch, args.runtime)


def read_fingerprint(path: Path) -> Fingerprint:
    """A ``fingerprint.json`` (``repro host`` / a run directory's copy), read through the capped
    reader (``repro.host.fingerprint.read_file``: a regular file of at most 16 MiB; a FIFO or
    ``/dev/zero`` is refused at once).

    Raises:
        ConfigError: unreadable file, not a regular file, too large, not JSON, or not a
            fingerprint object.
    """
    return fingerprint_mod.read_file(path, "--fingerprint")


def _print(result: check_mod.CheckResult, host: str) -> None:
    request = result.request
    where = f" (from {request.runtime_from})" if request.runtime_from else ""
    build = f"torch {request.torch}" + (f"+{result.runtime}" if result.runtime else "")
    print(f"repro check: {build}{where} on {host}")
    for reason in result.prediction.reasons:
        print(f"  {reason.line()}")
    if result.nearest:
        print("  nearest published: " + ", ".join(f"torch {b}" for b in result.nearest))
    if result.instead:
        print("  this host runs: " + ", ".join(f"torch {b}" for b in result.instead))
    verdict = result.outcome + (
        " (rests on unverified facts)" if result.prediction.unverified else ""
    )
    print(f"verdict: {verdict}")


def _read_requirements(name: str) -> str | None:
    """A ``-r`` file's text (relative to the current directory), or None when unreadable."""
    try:
        return Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _python(text: str | None) -> str | None:
    if text is None:
        return None
    parts = text.strip().split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise ConfigError(f"check: --python-version {text!r}: expected a version like 3.10")
    return f"{int(parts[0])}.{int(parts[1])}"


def _print_line(result: install_check.LineResult, host: str, day: str | None = None) -> None:
    where = f"Python {result.host.python or '?'}, {result.host.wheel_platform}"
    where += f", as of {day}" if day else ""
    print(f"repro check: {result.line.text}")
    print(f"  on {host} ({where})")
    for reason in result.prediction.reasons:
        print(f"  {reason.line()}")
    if result.fix:
        print(f"  the line that works: {result.fix}")
    if result.nearest:
        print("  nearest that would install: " + ", ".join(f"torch {b}" for b in result.nearest))
    if result.instead:
        print("  this host runs: " + ", ".join(f"torch {b}" for b in result.instead))
    unverified = " (rests on unverified facts)" if result.prediction.unverified else ""
    print(f"answer: {result.summary}{unverified}")
    print(f"verdict: {result.outcome}")


def run(args: argparse.Namespace) -> int:
    """Print the answer; 1 when it is ``fail``, else 0. Raises ConfigError for bad input."""
    if args.command and (args.torch or args.runtime):
        raise ConfigError("check: give an install line or --torch/--runtime, not both")
    if not args.command and (args.machine or args.as_of or args.python_bits):
        raise ConfigError(
            "check: --machine, --python-bits and --as-of judge an install line, not --torch"
        )
    python = _python(args.check_python)
    line = install_line.parse(args.command, _read_requirements) if args.command else None
    request = None if line else _request(args)
    fp = read_fingerprint(Path(args.fingerprint)) if args.fingerprint else fingerprint_mod.collect()
    if python:
        fp = dataclasses.replace(fp, host=dataclasses.replace(fp.host, python=python))
    props = properties.of_fingerprint(fp)
    host = host_key(fp)
    if args.fingerprint:
        host += f" (fingerprint {args.fingerprint})"
    if line is not None:
        answer = install_check.check_line(
            line,
            props,
            python,
            args.platform,
            machine=args.machine,
            as_of=args.as_of,
            bits=args.python_bits,
        )
        day = args.as_of.isoformat() if args.as_of else None
        if args.json:
            options.print_json({"host": host, **answer.to_json(), "as_of": day})
        else:
            _print_line(answer, host, day)
        return EXIT_CASES_FAILED if answer.outcome == FAIL else EXIT_OK
    assert request is not None
    result = check_mod.check(request, props)
    if args.json:
        options.print_json({"host": host, **result.to_json()})
    else:
        _print(result, host)
    return EXIT_CASES_FAILED if result.outcome == FAIL else EXIT_OK
