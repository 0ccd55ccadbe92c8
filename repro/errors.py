"""Typed errors that reach the user as one clear line and an exit code, never a traceback.

Every error class carries its exit status and, where one fits, a hint; the one error boundary
(``repro.cli.main.main``) prints ``repro: error: <message>; <hint>`` and exits with
``exit_code``. :data:`EXIT_CODES` is the table ``repro --help`` prints.
"""

from __future__ import annotations

import errno

EXIT_OK = 0
EXIT_CASES_FAILED = 1
EXIT_CONFIG = 2
EXIT_FATAL = 3
#: 128 + SIGINT, the shell's convention for a command ended by Ctrl-C.
EXIT_INTERRUPTED = 130


class ReproError(Exception):
    """Base class: ``str(err)`` is the one line shown to the user; ``exit_code`` the status.

    ``hint`` (per instance, else the class's ``default_hint``) says what to do about it.
    """

    exit_code = EXIT_FATAL
    meaning = "cannot go on"
    default_hint: str | None = None

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint or self.default_hint


class ConfigError(ReproError):
    """Bad user input (matrix.yaml, a selector, a CLI value, an input file). Exit status 2.

    The message names the file, the key path and what was expected, e.g.
    ``matrix.yaml: variants[2].torch: expected a version string like "2.8.0", got 2.8``.
    """

    exit_code = EXIT_CONFIG
    meaning = "bad input: matrix.yaml, an option value, an input file (the message names it)"


class FatalError(ReproError):
    """The tool cannot go on (results directory unwritable, disk full, interpreter without
    torch, Docker daemon unreachable, a host that cannot run the variant). Exit 3."""

    exit_code = EXIT_FATAL
    meaning = (
        "cannot go on: disk full or read-only, no torch, no Docker daemon, host cannot run "
        "the variant (nothing already written is lost)"
    )


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run after some cases: ``str(err)`` is the one line shown (``interrupted
    after N of M cases; partial results in PATH``); exit status :data:`EXIT_INTERRUPTED`.
    A KeyboardInterrupt, so code that cleans up on Ctrl-C still sees one."""


def unexpected(exc: BaseException) -> FatalError:
    """The one-line :class:`FatalError` for an exception no code turned into a ReproError.

    An ``OSError`` (``ENOSPC``, ``EROFS``, ``EACCES``... reaching the boundary mid-run) names
    the file and the system's reason; anything else names its type (a bug: ``REPRO_DEBUG=1``
    shows the traceback).
    """
    if isinstance(exc, OSError):
        why = exc.strerror or str(exc) or type(exc).__name__
        if exc.errno in errno.errorcode:
            why += f" ({errno.errorcode[exc.errno]})"
        where = exc.filename if exc.filename is not None else "I/O error"
        return FatalError(f"{where}: {why}")
    text = " ".join(str(exc).split())[:300]
    return FatalError(
        f"unexpected {type(exc).__name__}" + (f": {text}" if text else ""),
        hint="set REPRO_DEBUG=1 for the traceback and report it",
    )


#: (exit status, meaning) in the order ``repro --help`` lists them.
#: README.md's "Exit status" table is this table (a test compares them).
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (
        EXIT_OK,
        "ok: every red case was an expected reproduction (a scenario's EXPECT or matrix.yaml's "
        "expect:), nothing regressed",
    ),
    (
        EXIT_CASES_FAILED,
        "problems: an unexpected red case, a strict expect: entry's case that passed or a failed "
        "doctor check (run, docker-run, venv-run, doctor: after every result is written; report "
        "--fail-on-problems: after the matrix is written); a regression (compare)",
    ),
    (ConfigError.exit_code, ConfigError.meaning),
    (FatalError.exit_code, FatalError.meaning),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C); every finished case is kept"),
)
