"""One codec for every number a user writes: matrix.yaml values and command-line options.

A :class:`Bound` is a kind of number and its range (``a positive number of seconds of at most
86400``, ``a whole number from 1 to 256``); :meth:`Bound.ok` decides and :attr:`Bound.expected`
is the sentence an error shows. Every check is exact: an integer is compared as an integer, so
``10**400`` (which ``float()`` and ``math.isfinite`` cannot take: OverflowError) is simply too
large; NaN and infinities are never in range; booleans are not numbers (``True == 1`` in
Python). ``repro.config.load`` reports a value out of range as ``FILE: KEY: expected ...``, the
command line as ``--flag: expected ...`` (:meth:`Bound.check`), both exit 2 with one line.

The table below is the only place a range is written down. Never imports torch.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from repro.errors import ConfigError


@dataclass(frozen=True)
class Bound:
    """A number kind: ``low``..``high`` (each end open or closed), integers only or not.

    ``expected`` is the noun phrase an error message puts after "expected".
    """

    expected: str
    low: float
    high: float
    integer: bool = False
    low_open: bool = False
    high_open: bool = False

    def ok(self, value: Any) -> bool:
        """Whether ``value`` is a number of this kind within range (never raises)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.integer and not isinstance(value, int):
            return False
        if isinstance(value, float) and not math.isfinite(value):
            return False
        above_low = value > self.low if self.low_open else value >= self.low
        below_high = value < self.high if self.high_open else value <= self.high
        return above_low and below_high

    def check(self, value: Any, name: str) -> Any:
        """``value`` itself when :meth:`ok`; else ConfigError ``NAME: expected ..., got VALUE``
        (``name``: the option or key, e.g. ``--timeout-scale``)."""
        if not self.ok(value):
            raise ConfigError(f"{name}: expected {self.expected}, got {shown(value)}")
        return value


def shown(value: Any) -> str:
    """A number as an error message shows it: short (``1e+400``-sized integers by their digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"an integer of {len(str(abs(value)))} digits"
    if isinstance(value, float) and float(f"{value:g}") == value:
        return f"{value:g}"  # 0, 2.5, 1e+300
    return repr(value)  # 123456789.0, nan, inf; strings quoted


def positive(noun: str, high: float) -> Bound:
    """A finite number in (0, ``high``]: ``a positive number of seconds of at most 86400``."""
    return Bound(f"{noun} of at most {high:g}", 0.0, high, low_open=True)


def count(noun: str, low: int, high: int) -> Bound:
    """A whole number in [``low``, ``high``]: ``a whole number of GPUs from 1 to 1024``."""
    return Bound(f"{noun} from {low} to {high}", low, high, integer=True)


#: Longest case timeout (seconds): one day. A scenario module's ``TIMEOUT_S`` too.
MAX_TIMEOUT_S = 86_400.0
#: Largest ``timeout_scale`` / ``--timeout-scale``.
MAX_TIMEOUT_SCALE = 100.0

#: A case's hard timeout (``scenarios.X.timeout_s``, a module's ``TIMEOUT_S``, a script's).
CASE_SECONDS = positive("a positive number of seconds", MAX_TIMEOUT_S)
#: ``defaults.timeout_scale`` and ``--timeout-scale``: multiplies every case timeout.
TIMEOUT_SCALE = positive("a positive number", MAX_TIMEOUT_SCALE)
#: A whole container's hard timeout (``repro docker-run --timeout``): a week at most.
CONTAINER_SECONDS = positive("a positive number of seconds", 7 * MAX_TIMEOUT_S)
#: A container's process limit (``pids_limit``).
PIDS_LIMIT = count("a whole number of processes", 16, 1_000_000)
#: ``runners.<kind>.gpus``: GPUs one runner of that kind has.
RUNNER_GPUS = count("a whole number of GPUs", 1, 1024)
#: ``slurm.gpus_per_task`` / ``repro slurm --gpus-per-task``: GPUs of one task (0: none).
GPUS_PER_TASK = count("a whole number of GPUs", 0, 1024)
#: ``slurm.cpus_per_task`` / ``repro slurm --cpus-per-task``: CPUs of one Slurm task.
CPUS_PER_TASK = count("a whole number of CPUs", 1, 4096)
#: ``repro run -j``: beyond 256 a host runs out of memory long before it gains speed.
JOBS = count("a whole number", 1, 256)
#: ``repro run --rerun-failures``: a hung case costs its whole timeout on every rerun.
RERUNS = count("a whole number", 0, 10)
#: ``repro run --rounds``: rounds of the measuring cases (each about 5 s on a 2-core host).
ROUNDS = count("a whole number", 1, 20)
#: ``repro compare --threshold`` (percent).
THRESHOLD_PCT = Bound("a percentage between 0 and 100", 0.0, 100.0, low_open=True, high_open=True)
#: A number used as a case parameter or an ``env:`` value: it must print the same everywhere.
PARAM_NUMBER = Bound(
    "a finite number of magnitude below 2**63", -(2.0**63), 2.0**63, low_open=True, high_open=True
)


#: ``repro docker-run --gpus 0,1``: a GPU index (``runners.<kind>.gpus`` allows 1024 GPUs).
GPU_INDEX = count("a GPU index", 0, 1023)
#: ``repro docker-run --user UID:GID``: Linux ``uid_t``/``gid_t``; 4294967295 is ``(uid_t)-1``,
#: "no change" to chown(2), never an id.
USER_ID = count("a user or group id", 0, 4_294_967_294)


def decimal(text: str, bound: Bound, name: str) -> int:
    """A command-line item written in decimal digits (``"3"`` of ``--gpus 3``) as an int that
    ``bound`` accepts; ConfigError ``NAME: expected ..., got ...`` otherwise. At most 30 digits
    are converted (Python's ``int()`` refuses more than 4300: ValueError)."""
    if re.fullmatch(r"[0-9]{1,30}", text) is None:
        many = text.isascii() and text.isdigit()
        got = f"an integer of {len(text)} digits" if many else repr(text[:40])
        raise ConfigError(f"{name}: expected {bound.expected}, got {got}")
    return bound.check(int(text), name)


def log_cap_mib(min_bytes: int) -> Bound:
    """``repro run --log-cap-mib``: from ``min_bytes`` (``repro.runner.caselog.MIN_CAP_BYTES``)
    to just under 1 TiB, in MiB."""
    low = min_bytes / (1 << 20)
    return Bound(f"a number of MiB from {low:g} to 1048575", low, 1048575.0)
