"""``repro check``: before ``pip install torch==...``, ask whether that build exists and would run
on this host (or on the host of a ``fingerprint.json``). Parsing and printing only: the answer
comes from :mod:`repro.compat.check`, the host from :mod:`repro.host.fingerprint`.

Exit status: 0 nothing known to fail (``unknown`` included), 1 the build would fail here or does
not exist, 2 bad input (ConfigError).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from repro.cli import options
from repro.compat import check as check_mod
from repro.compat import pip_command
from repro.compat.results import FAIL
from repro.errors import EXIT_CASES_FAILED, EXIT_OK, ConfigError
from repro.host import fingerprint as fingerprint_mod
from repro.host.model import Fingerprint


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``check`` subcommand (handler :func:`run`)."""
    parser = subparsers.add_parser(
        "check",
        help="would this torch build exist and run on this host? (from the shipped facts)",
        description=(
            'Examples: repro check "pip install torch==2.7.0+cu121"; '
            "repro check --torch 2.13.0 --runtime cu130 --fingerprint results/x/fingerprint.json. "
            "Exit status: 0 nothing known to fail, 1 the build does not exist or would fail "
            "here, 2 bad input."
        ),
    )
    options.add(parser, "command", "torch", "runtime", "fingerprint", "json")
    parser.set_defaults(handler=run)


def _request(args: argparse.Namespace) -> pip_command.BuildRequest:
    if args.command and (args.torch or args.runtime):
        raise ConfigError("check: give a pip command or --torch/--runtime, not both")
    if args.command:
        return pip_command.parse(args.command)
    if args.runtime and not args.torch:
        raise ConfigError("check: --runtime needs --torch VERSION")
    if not args.torch:
        raise ConfigError('check: give a pip command ("pip install torch==2.7.0+cu121") or --torch')
    return pip_command.from_options(args.torch, args.runtime)


def read_fingerprint(path: Path) -> Fingerprint:
    """A ``fingerprint.json`` (``repro host`` / a run directory's copy).

    Raises:
        ConfigError: unreadable file, not JSON, or not a JSON object.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the fingerprint: {exc.strerror or exc}") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not a fingerprint.json (invalid JSON: {exc})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a fingerprint.json (expected a JSON object)")
    return Fingerprint.from_json(data)


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


def run(args: argparse.Namespace) -> int:
    """Print the answer; 1 when it is ``fail``, else 0. Raises ConfigError for bad input."""
    request = _request(args)
    fp = read_fingerprint(Path(args.fingerprint)) if args.fingerprint else fingerprint_mod.collect()
    props = fingerprint_mod.to_properties(fp)
    result = check_mod.check(request, props)
    host = props.get("host.key") or "this host"
    if args.fingerprint:
        host += f" (fingerprint {args.fingerprint})"
    if args.json:
        options.print_json({"host": host, **result.to_json()})
    else:
        _print(result, host)
    return EXIT_CASES_FAILED if result.outcome == FAIL else EXIT_OK
