"""Running the vendors' SMI tools (``nvidia-smi``, ``rocm-smi``, ``amd-smi``) safely.

A driver query can hang inside the kernel on a wedged GPU, so every tool runs through
:func:`run_command` (``repro.proctree.run_bounded``: hard timeout, whole process group killed).
The runner is injectable (``subprocess.run``'s signature) so tests replay captured replies.
:class:`DriverQuery` is the one shape in which a driver answers "these GPUs" or "why not",
shared by the NVIDIA and AMD readers, ``repro doctor`` and ``repro.host.hostkind``.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from repro import proctree

#: Seconds an SMI tool may take before it counts as hung.
DEFAULT_TIMEOUT_S = 30.0

#: ``subprocess.run``-compatible: ``run(argv, capture_output=True, text=True, timeout=..., stdin=...)``.
Runner = Callable[..., subprocess.CompletedProcess]

#: A line of a tool's output that says why it failed (nvidia-smi, rocm-smi, amd-smi wording).
FAILING_LINE = re.compile(
    r"fail|error|couldn't|mismatch|not found|no devices|unable", re.IGNORECASE
)


def run_command(
    argv: Sequence[str],
    *,
    timeout: float | None = None,
    capture_output: bool = True,
    text: bool = True,
    stdin: Any = subprocess.DEVNULL,
) -> subprocess.CompletedProcess:
    """``subprocess.run``'s signature (so tests can inject ``subprocess.run`` or a fake) over
    :func:`repro.proctree.run_bounded`: a tool that hangs in the kernel is killed with its
    process group after ``timeout`` seconds and ``subprocess.TimeoutExpired`` raised;
    ``FileNotFoundError`` when the tool does not exist. Output is always captured as text."""
    del capture_output, text, stdin  # always captured as text, stdin closed
    return proctree.run_bounded(argv, timeout_s=timeout)


@dataclass(frozen=True)
class Answer:
    """What one tool said: ``proc`` None with ``error`` set when it could not be run."""

    argv: tuple[str, ...]
    proc: subprocess.CompletedProcess | None = None
    error: str | None = None
    timed_out: bool = False

    @property
    def tool(self) -> str:
        return os.path.basename(self.argv[0])


def ask(candidates: Sequence[Sequence[str]], run: Runner, timeout_s: float) -> Answer | None:
    """Run the first candidate command that exists, for at most ``timeout_s`` seconds; None when
    none of them does (every one raised ``FileNotFoundError``)."""
    for argv in candidates:
        try:
            proc = run(
                list(argv),
                capture_output=True,
                text=True,
                timeout=timeout_s,
                stdin=subprocess.DEVNULL,
            )
        except FileNotFoundError:
            continue
        except subprocess.TimeoutExpired:
            return Answer(tuple(argv), error=f"no answer within {timeout_s:g} s", timed_out=True)
        except OSError as exc:
            return Answer(tuple(argv), error=f"cannot run {argv[0]}: {exc.strerror or exc}")
        return Answer(tuple(argv), proc)
    return None


def output_lines(stdout: str | None, stderr: str | None) -> list[str]:
    """Non-empty stripped lines of stdout then stderr."""
    text = f"{stdout or ''}\n{stderr or ''}"
    return [line.strip() for line in text.splitlines() if line.strip()]


def failure_line(stdout: str | None, stderr: str | None, returncode: int) -> str:
    """The line of a failed tool's output that says why (first line matching
    :data:`FAILING_LINE`, else the last line, else ``exit status N, no output``)."""
    lines = output_lines(stdout, stderr)
    failing = [line for line in lines if FAILING_LINE.search(line)]
    return (failing or lines[-1:] or [f"exit status {returncode}, no output"])[0]


@dataclass(frozen=True)
class DriverQuery:
    """Result of asking a GPU driver for its devices: ``ok`` with ``gpus`` (names or gfx
    targets) and ``driver`` (version text), or ``error`` (one line saying why not).

    ``tool`` names the source: ``nvml``, ``nvidia-smi``, ``kfd-topology``, ``rocm-smi``."""

    tool: str
    ok: bool
    gpus: tuple[str, ...] = ()
    driver: str | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "ok": self.ok,
            "gpus": list(self.gpus),
            "driver": self.driver,
            "error": self.error,
        }
