"""Typed errors that reach the user as one clear line and an exit code, never a traceback."""

from __future__ import annotations

EXIT_OK = 0
EXIT_CASES_FAILED = 1
EXIT_CONFIG = 2
EXIT_FATAL = 3


class ReproError(Exception):
    """Base class: ``str(err)`` is the one line shown to the user; ``exit_code`` the status."""

    exit_code = EXIT_FATAL

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


class ConfigError(ReproError):
    """Bad user input (matrix.yaml, a selector, a CLI value). Exit status 2.

    The message names the file, the key path and what was expected, e.g.
    ``matrix.yaml: variants[2].torch: expected a version string like "2.8.0", got 2.8``.
    """

    exit_code = EXIT_CONFIG


class FatalError(ReproError):
    """The tool cannot go on (results directory unwritable, interpreter without torch). Exit 3."""

    exit_code = EXIT_FATAL
