"""The ``repro`` command line: builds the parser from the command modules and holds THE one
error boundary.

Contract for a command module (``repro/cli/<name>.py``): ``register(subparsers)`` adds its
subcommand(s) with ``subparsers.add_parser(...)`` and ``parser.set_defaults(handler=FUNC)``,
where ``FUNC(args: argparse.Namespace) -> int`` returns the exit status (0 ok, 1 red cases or
a regression) and raises :class:`repro.errors.ConfigError` (2) or
:class:`repro.errors.FatalError` (3) for everything else; it never catches them itself and
never calls ``sys.exit``. :func:`main` dispatches ``args.handler(args)`` and turns every error
into one line on stderr and its exit status (the table is :data:`repro.errors.EXIT_CODES`).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import sys
import threading
from typing import Any, NoReturn

import argcomplete

import repro
from repro.cli import bisect as bisect_cmd
from repro.cli import check as check_cmd
from repro.cli import classify as classify_cmd
from repro.cli import completion as completion_cmd
from repro.cli import docker
from repro.cli import host as host_cmd
from repro.cli import plan as plan_cmd
from repro.cli import report as report_cmd
from repro.cli import run as run_cmd
from repro.cli import slurm as slurm_cmd
from repro.cli import venv as venv_cmd
from repro.errors import (
    EXIT_CODES,
    EXIT_CONFIG,
    EXIT_INTERRUPTED,
    EXIT_OK,
    FatalError,
    ReproError,
    unexpected,
)
from repro.suggest import did_you_mean

PROG = "repro"
#: Set to 1 to get the traceback of an unexpected exception instead of its one line.
DEBUG_ENV = "REPRO_DEBUG"


#: An error line longer than this (characters) is cut in the middle: a message that quotes a
#: 1 MB command line must not print it whole (issue 25).
MAX_ERROR_LINE_CHARS = 2000


def _cut(line: str) -> str:
    """``line``, or its two ends with the count of characters cut between them when it is
    longer than :data:`MAX_ERROR_LINE_CHARS`."""
    if len(line) <= MAX_ERROR_LINE_CHARS:
        return line
    half = MAX_ERROR_LINE_CHARS // 2
    return f"{line[:half]} … ({len(line) - 2 * half} characters cut) … {line[-half:]}"


class Parser(argparse.ArgumentParser):
    """argparse with a one-line usage error (``repro run: error: ...``) and exit status 2,
    like every other bad input, and "did you mean" for a mistyped command or choice;
    subparsers inherit it."""

    def error(self, message: str) -> NoReturn:
        message = _cut(" ".join(message.splitlines()))
        self.exit(EXIT_CONFIG, f"{self.prog}: error: {message}; see {self.prog} --help\n")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is not None and value not in action.choices:
            known = [str(c) for c in action.choices]
            hint = did_you_mean(str(value), known)
            raise argparse.ArgumentError(
                action,
                f"invalid choice: {value!r} ({hint + ' ' if hint else ''}"
                f"choose from {', '.join(known)})",
            )

    def unrecognized(self, extras: list[str]) -> NoReturn:
        """Error for arguments no option of this parser takes, naming the closest flags."""
        flags = [
            flag
            for action in self._actions
            if action.help != argparse.SUPPRESS
            for flag in action.option_strings
        ]
        hints = []
        for extra in extras:
            if extra.startswith("-"):
                hint = did_you_mean(extra.split("=", 1)[0], flags)
                if hint:
                    hints.append(f"{extra}: {hint}")
        self.error(f"unrecognized arguments: {' '.join(extras)}" + "".join(f"; {h}" for h in hints))


def _epilog() -> str:
    codes = "\n".join(f"  {code:<4} {meaning}" for code, meaning in EXIT_CODES)
    return (
        "Typical host run: repro run; repro report results -o results --config matrix.yaml "
        "--fail-on-problems   (see README.md)\n\n"
        f"exit status:\n{codes}\n\n"
        f"Errors are one line on stderr; {DEBUG_ENV}=1 shows the traceback of an unexpected one."
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``repro`` parser: every subcommand sets ``handler`` (see the module docstring)."""
    parser = Parser(
        prog=PROG,
        description="Reproduce machine-dependent PyTorch failures in isolated processes and merge the results into a compatibility matrix.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"repro-matrix {repro.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parser.subcommands = sub.choices  # name -> parser, for "did you mean" on flags
    # One register() per command module; the commands still defined below keep theirs here.
    plan_cmd.register(sub)
    check_cmd.register(sub)
    host_cmd.register(sub)
    run_cmd.register(sub)
    report_cmd.register(sub)
    classify_cmd.register(sub)
    docker.register(sub)
    venv_cmd.register(sub)
    slurm_cmd.register(sub)
    bisect_cmd.register(sub)
    completion_cmd.register(sub)
    for name, command in sub.choices.items():
        command.set_defaults(subcommand=name)
    return parser


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse ``argv`` (argcomplete answers a TAB here and exits); an unknown flag is a usage
    error of its subcommand with the closest known flags (exit 2)."""
    parser = build_parser()
    argcomplete.autocomplete(parser)
    args, extras = parser.parse_known_args(argv)
    if extras:
        parser.subcommands.get(getattr(args, "subcommand", ""), parser).unrecognized(extras)
    return args


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv``, run the command's handler, and map every outcome to an exit status.

    The one error boundary: ReproError -> its line(s) and ``exit_code``; Ctrl-C -> 130;
    a closed stdout pipe (``repro run --list | head``) -> 0; any other exception (an OSError
    such as ENOSPC/EROFS/EACCES mid-run, or a bug) -> one line and 3, with the traceback only
    when ``REPRO_DEBUG=1``.
    """
    code = _main(argv)
    if argv is None:  # this process is the command (not a caller's in-process test)
        _leave_lingering_threads(code)
    return code


def _leave_lingering_threads(code: int) -> None:
    """End the process with ``code`` now when a non-daemon thread is still alive after the
    command finished: a user's scenario module that starts one at import would otherwise make
    the interpreter wait for it at exit (``repro plan`` waited 40 s, issue 25). The command's own
    work is done; the atexit callbacks still run (the zygotes' ``_close_all``, multiprocessing
    finalisers, logging), the streams are flushed, only the wait for those threads is skipped.
    Returns when there is no such thread."""
    lingering = [
        t
        for t in threading.enumerate()
        if t is not threading.main_thread() and not t.daemon and t.is_alive()
    ]
    if not lingering:
        return
    names = ", ".join(t.name for t in lingering[:5])
    try:
        with contextlib.suppress(OSError, ValueError):
            print(
                f"{PROG}: note: not waiting for {len(lingering)} thread(s) an imported module "
                f"started ({names})",
                file=sys.stderr,
            )
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _main(argv: list[str] | None) -> int:
    args = parse(argv)
    try:
        code = args.handler(args)
        _flush_stdout()  # a full disk under `> out.json` fails here, inside the boundary
        return code
    except ReproError as exc:
        return _fail(exc)
    except KeyboardInterrupt as exc:  # repro.errors.Interrupted says what was kept
        _silence_stdout()
        print(f"{PROG}: {str(exc) or 'interrupted'}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader left, not an error
        _silence_stdout()
        return EXIT_OK
    except Exception as exc:
        if os.environ.get(DEBUG_ENV) == "1":
            raise
        return _fail(unexpected(exc))


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise FatalError(f"cannot write standard output: {unexpected(exc)}") from None


def _fail(exc: ReproError) -> int:
    _silence_stdout()
    hint = f"; {exc.hint}" if exc.hint else ""
    lines = str(exc).splitlines() or [type(exc).__name__]
    for line in lines:
        print(f"{PROG}: error: {_cut(line)}{hint}", file=sys.stderr)
    return exc.exit_code


def _silence_stdout() -> None:
    """Drop what is left in stdout's buffer when it cannot be written (a closed pipe, a full
    disk), so the interpreter's exit does not fail on it a second time."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
