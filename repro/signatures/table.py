"""The signature table: every failure name repro can emit, loaded from data (issue 21, item 1).

The rows are ``repro/data/signatures.yaml`` (``repro.data.SIGNATURES``); its header documents the
schema. This module loads and validates them once (an error names the file, the row and the field:
:class:`~repro.errors.ConfigError`, exit 2) and answers lookups; it holds no rows itself.

- **Output rows** (kinds :data:`KINDS`, in the file's order): regular expressions applied to one
  line of output, matched by :mod:`repro.signatures.engine`. A line may carry a host condition
  (:mod:`repro.signatures.hostfacts`): "Unexpected error from cudaGetDeviceCount()" is
  ``wsl_gpu_unavailable`` on WSL2 but ``cuda_init_failed`` on a native host (family 7).
- **Named rows** (kinds :data:`NAMED_KINDS`): names code gives a case without reading its output:
  the watchdog (``hang_timeout``, ``hang.*`` with the stack patterns and wait channels that
  sub-type a hang, ``timeout_slow_progress``), the exit status (``sig*``, the ``signal_*``
  family), scenarios, the doctor (``infra.<check>``, a row per check), the runner.

Users add rows of the same schema (matrix.yaml ``signatures: FILE``, ``repro classify
--signatures FILE``): :func:`with_user_rows` merges them after the shipped rows, so a user row
names only lines no shipped row takes, and may not reuse a shipped name. :func:`activate` makes
such a table the one :func:`active` returns (the engine's default) for this process.

Look names up with :func:`row` / :func:`known`; tests/test_signature_table.py fails when code can
emit a name without a row.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from repro import data as shipped_data
from repro.errors import ConfigError
from repro.signatures.hostfacts import CONDITIONS

#: The shipped table.
SIGNATURES_FILE = shipped_data.SIGNATURES

# -- Names code gives (constants, not rows: each has its row in the data file) -----------------

#: Signature the runner gives a case its watchdog killed when no stack fingerprint matches.
HANG = "hang_timeout"
#: Signature of a failure no row matched.
UNKNOWN = "unknown"
#: Signature of a case whose events file broke the protocol (repro.runner's events reader).
EVENTS_PROTOCOL = "events_protocol"
#: Prefix of the doctor's failed checks: ``infra.nvidia_smi``.
INFRA_PREFIX = "infra."
#: Prefix of the hang sub-types the watchdog reads from stack dumps: ``hang.nccl``.
HANG_PREFIX = "hang."
#: Prefix of signals without a row of their own: ``signal_sigusr1``, ``signal_99``.
SIGNAL_PREFIX = "signal_"

# Kinds of output rows, in the order the engine considers them (see repro.signatures.engine).
ENVIRONMENT = "environment"
ROOT = "root"
SECONDARY = "secondary"
WRAPPER = "wrapper"
WARNING = "warning"
EVIDENCE = "evidence"
KINDS = (ENVIRONMENT, ROOT, SECONDARY, WRAPPER, WARNING, EVIDENCE)

# Kinds of named rows: who gives the name.
WATCHDOG = "watchdog"
EXIT_STATUS = "exit_status"
SCENARIO = "scenario"
DOCTOR = "doctor"
RUNNER = "runner"
NAMED_KINDS = (WATCHDOG, EXIT_STATUS, SCENARIO, DOCTOR, RUNNER)

#: Families of the environment: the host, its driver, the wheel's arch list or runtime, the
#: device, the container runtime, WSL2. Only these can contradict a prediction (issue 21, item 7:
#: a failure in a user's own code says nothing about whether the environment can work).
ENVIRONMENT_FAMILIES = ("driver", "arch", "runtime", "device", "container", "wsl2")
#: Every family a row may name.
FAMILIES = (
    *ENVIRONMENT_FAMILIES,
    "cuda",
    "process",
    "distributed",
    "compile",
    "numerics",
    "crash",
    "library",
    "rocm",
    "hang",
    "infra",
    "runner",
    "code",
)

_NAME = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)?|signal_\*")
_ROW_KEYS = {
    "name",
    "kind",
    "family",
    "lines",
    "stacks",
    "wait_channels",
    "signals",
    "when",
    "sources",
    "workaround",
    "cuda_errors",
}
_LINE_KEYS = {"pattern", "when"}
_CUDA_ERROR_KEYS = {"code", "name", "message", "meaning", "fix", "sources"}


@dataclass(frozen=True)
class Line:
    """One line pattern of a row: ``pattern`` (Python ``re`` source), ``when`` (host condition,
    None: every host; see :mod:`repro.signatures.hostfacts`)."""

    pattern: str
    when: str | None = None


@dataclass(frozen=True)
class CudaError:
    """One CUDA initialisation failure a row names (issue 31: the one table of CUDA causes, read by
    ``repro.host.cuda_init`` for the doctor and for every accelerator case alike).

    Attributes:
        code: the ``cudaError_t`` number (``802``), or None: any error number the row's lines
            take (the WSL2 GPU bridge fails with several).
        name: the ``cudaError_t`` name (``cudaErrorSystemNotReady``), ``""`` when ``code`` is None.
        message: what ``cudaGetErrorString`` says for it (``system not yet initialized``), which
            names the error in a text that prints no number; ``""`` when ``code`` is None.
        meaning: what it means on a host of the row's kind, one clause.
        fix: what to do, one clause.
        source: the public reports it rests on, ``"; "``-joined (the row's when it names none).
    """

    code: int | None
    name: str
    message: str
    meaning: str
    fix: str
    source: str


@dataclass(frozen=True)
class Signature:
    """One row of the table.

    Attributes:
        name: category name, e.g. ``"cudnn_execution_failed"``; ``"signal_*"`` for the family row.
        pattern: every line pattern joined with ``|``, compiled; ``None`` for a named row.
        source: the public issues / origin reports it came from, ``"; "``-joined, e.g.
            ``"O1; pytorch/pytorch#32881"``.
        kind: one of :data:`KINDS` (output rows) or :data:`NAMED_KINDS` (named rows).
        workaround: the known workaround in one sentence, ``""`` if the reports give none.
        when: the hosts the row applies on (``None``: all), see
            :meth:`repro.signatures.hostfacts.HostFacts.applies`.
        family: one of :data:`FAMILIES`.
        lines: the line patterns, each with its own host condition.
        stacks: (watchdog rows) compiled alternatives searched in a stack dump; ``None`` if none.
        wait_channels: (watchdog rows) ``/proc/PID/wchan`` substrings that name the row.
        signals: signal numbers whose exit status names the row.
        cuda_errors: the CUDA initialisation failures the row names, with meaning and fix per
            error number (:class:`CudaError`); ``()`` for rows about anything else.
        origin: the file the row was read from.
    """

    name: str
    pattern: re.Pattern[str] | None
    source: str
    kind: str
    workaround: str
    when: str | None = None
    family: str = "code"
    lines: tuple[Line, ...] = ()
    stacks: re.Pattern[str] | None = None
    wait_channels: tuple[str, ...] = ()
    signals: tuple[int, ...] = ()
    cuda_errors: tuple[CudaError, ...] = ()
    origin: str = ""

    @property
    def environment(self) -> bool:
        """Whether the row names an environment failure (:data:`ENVIRONMENT_FAMILIES`)."""
        return self.family in ENVIRONMENT_FAMILIES


class Table:
    """An ordered, validated set of rows (the shipped ones, plus users' rows after them).

    Attributes:
        rows: every row, output rows first in precedence order, then named rows.
        patterns: the output rows, in precedence order (a line two rows match goes to the
            first).
        by_name: rows by name (the ``signal_*`` family under that literal name).
        signals: signal number -> row name (rows with ``signals``).
        hangs: watchdog rows with stack patterns or wait channels, in file order.
    """

    def __init__(self, rows: Sequence[Signature]):
        self.patterns = tuple(r for r in rows if r.kind in KINDS)
        self.named = tuple(r for r in rows if r.kind not in KINDS)
        self.rows = self.patterns + self.named
        self.by_name = {r.name: r for r in self.rows}
        self.signals = {n: r.name for r in self.rows for n in r.signals}
        self.hangs = tuple(r for r in self.named if r.stacks is not None or r.wait_channels)

    def row(self, name: str) -> Signature:
        """The row for a signature name a case can carry (see module :func:`row`)."""
        found = self.by_name.get(name)
        if found is not None and found.name != SIGNAL_PREFIX + "*":
            return found
        if _SIGNAL_FAMILY.fullmatch(name) and SIGNAL_PREFIX + "*" in self.by_name:
            return self.by_name[SIGNAL_PREFIX + "*"]
        raise KeyError(f"{name!r} is not a signature of {SIGNATURES_FILE} or a user's table")

    def known(self, name: str) -> bool:
        """Whether :meth:`row` has a row for ``name``."""
        try:
            self.row(name)
        except KeyError:
            return False
        return True


_SIGNAL_FAMILY = re.compile(re.escape(SIGNAL_PREFIX) + r"(?:sig[a-z0-9]+|\d+)")


# -- Loading and validation ---------------------------------------------------------------------


class _Problems:
    def __init__(self, origin: str):
        self.origin = origin
        self.lines: list[str] = []

    def add(self, where: str, expected: str, got: Any) -> None:
        shown = repr(got) if not isinstance(got, str) or len(got) < 80 else repr(got[:77] + "...")
        self.lines.append(f"{self.origin}: {where}: expected {expected}, got {shown}")


def _compile(text: str, where: str, problems: _Problems) -> re.Pattern[str] | None:
    try:
        return re.compile(text)
    except re.error as exc:
        problems.add(where, f"a Python regular expression ({exc})", text)
        return None


def _strings(value: Any, where: str, problems: _Problems, *, empty: bool = False) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        problems.add(where, "a list of non-empty strings", value)
        return []
    if not value and not empty:
        problems.add(where, "at least one entry", value)
    return value


def _parse_row(raw: Any, index: int, problems: _Problems) -> Signature | None:
    where = f"signatures[{index}]"
    if not isinstance(raw, Mapping):
        problems.add(where, "a mapping with name, kind, family, sources", raw)
        return None
    name = raw.get("name")
    if isinstance(name, str):
        where = f"signatures[{index}] ({name})"
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        problems.add(f"{where}.name", "a name like 'nccl_timeout' or 'hang.nccl'", name)
        return None
    before = len(problems.lines)
    for key in sorted(set(raw) - _ROW_KEYS, key=str):
        problems.add(
            f"{where}.{key}", f"no such field (fields: {', '.join(sorted(_ROW_KEYS))})", key
        )
    kind, family, when = raw.get("kind"), raw.get("family"), raw.get("when")
    if kind not in KINDS + NAMED_KINDS:
        problems.add(f"{where}.kind", f"one of {', '.join(KINDS + NAMED_KINDS)}", kind)
    if family not in FAMILIES:
        problems.add(f"{where}.family", f"one of {', '.join(FAMILIES)}", family)
    if when is not None and when not in CONDITIONS:
        problems.add(f"{where}.when", f"one of {', '.join(CONDITIONS)} (or absent)", when)
    sources = _strings(raw.get("sources"), f"{where}.sources", problems)
    workaround = raw.get("workaround", "")
    if not isinstance(workaround, str) or "\n" in workaround.strip():
        problems.add(
            f"{where}.workaround", "one sentence (a string without line breaks)", workaround
        )
        workaround = ""
    lines: list[Line] = []
    if "lines" in raw:
        if kind not in KINDS:
            problems.add(f"{where}.lines", f"no lines for a {kind} row (names given by code)", kind)
        items = raw["lines"] if isinstance(raw["lines"], list) else None
        if not items:
            problems.add(f"{where}.lines", "a non-empty list of patterns", raw["lines"])
        for at, item in enumerate(items or ()):
            spot = f"{where}.lines[{at}]"
            if isinstance(item, Mapping):
                for key in sorted(set(item) - _LINE_KEYS, key=str):
                    problems.add(f"{spot}.{key}", "pattern or when", key)
                text, cond = item.get("pattern"), item.get("when")
                if cond is not None and cond not in CONDITIONS:
                    problems.add(f"{spot}.when", f"one of {', '.join(CONDITIONS)}", cond)
            else:
                text, cond = item, None
            if not isinstance(text, str) or not text:
                problems.add(spot, "a regular expression (a non-empty string)", text)
                continue
            if _compile(text, spot, problems) is not None:
                lines.append(Line(text, cond))
    elif kind in KINDS:
        problems.add(f"{where}.lines", f"the line patterns of a {kind} row", None)
    stacks = None
    if "stacks" in raw:
        if kind != WATCHDOG:
            problems.add(f"{where}.stacks", "stack patterns only on watchdog rows", kind)
        texts = _strings(raw["stacks"], f"{where}.stacks", problems)
        if all(_compile(t, f"{where}.stacks", problems) for t in texts) and texts:
            stacks = re.compile("|".join(texts))
    channels = tuple(
        _strings(raw.get("wait_channels", []), f"{where}.wait_channels", problems, empty=True)
    )
    if channels and kind != WATCHDOG:
        problems.add(f"{where}.wait_channels", "wait channels only on watchdog rows", kind)
    numbers: list[int] = []
    for sig in _strings(raw.get("signals", []), f"{where}.signals", problems, empty=True):
        try:
            numbers.append(int(signal.Signals[sig]))
        except KeyError:
            problems.add(f"{where}.signals", "signal names like SIGSEGV", sig)
    cuda_errors = _cuda_errors(raw.get("cuda_errors", []), where, sources, problems)
    if len(problems.lines) > before:
        return None
    pattern = re.compile("|".join(line.pattern for line in lines)) if lines else None
    return Signature(
        name=name,
        pattern=pattern,
        source="; ".join(s.strip() for s in sources),
        kind=kind,
        workaround=workaround.strip(),
        when=when,
        family=family,
        lines=tuple(lines),
        stacks=stacks,
        wait_channels=channels,
        signals=tuple(numbers),
        cuda_errors=cuda_errors,
        origin=problems.origin,
    )


def _cuda_errors(
    value: Any, where: str, row_sources: list[str], problems: _Problems
) -> tuple[CudaError, ...]:
    """A row's ``cuda_errors`` list: each a mapping with ``meaning`` and ``fix`` (one clause
    each), an optional ``code`` (a non-negative whole number, with its ``cudaError...`` ``name``
    and ``cudaGetErrorString`` ``message``) and optional ``sources`` (default: the row's). At most
    one entry per code per row."""
    if not isinstance(value, list):
        problems.add(f"{where}.cuda_errors", "a list of mappings (code, name, meaning, fix)", value)
        return ()
    found: list[CudaError] = []
    for at, item in enumerate(value):
        spot = f"{where}.cuda_errors[{at}]"
        if not isinstance(item, Mapping):
            problems.add(spot, "a mapping with meaning and fix (and code, name)", item)
            continue
        for key in sorted(set(item) - _CUDA_ERROR_KEYS, key=str):
            problems.add(f"{spot}.{key}", f"one of {', '.join(sorted(_CUDA_ERROR_KEYS))}", key)
        code, name, message = item.get("code"), item.get("name", ""), item.get("message", "")
        if code is not None and (isinstance(code, bool) or not isinstance(code, int) or code < 0):
            problems.add(f"{spot}.code", "a cudaError_t number (a whole number >= 0)", code)
            continue
        if code is not None and not (isinstance(name, str) and name.startswith("cudaError")):
            problems.add(f"{spot}.name", "the cudaError_t name, like cudaErrorSystemNotReady", name)
            continue
        if code is not None and not (isinstance(message, str) and message.strip()):
            problems.add(f"{spot}.message", "cudaGetErrorString's text for the code", message)
            continue
        if any(e.code == code for e in found):
            problems.add(f"{spot}.code", "one entry per error number in a row", code)
            continue
        texts = {k: item.get(k) for k in ("meaning", "fix")}
        bad = [k for k, v in texts.items() if not isinstance(v, str) or not v.strip() or "\n" in v]
        for key in bad:
            problems.add(
                f"{spot}.{key}", "one clause (a non-empty string without line breaks)", texts[key]
            )
        sources = (
            _strings(item["sources"], f"{spot}.sources", problems)
            if "sources" in item
            else row_sources
        )
        if bad:
            continue
        found.append(
            CudaError(
                code=code,
                name=str(name or ""),
                message=str(message or "").strip(),
                meaning=texts["meaning"].strip(),
                fix=texts["fix"].strip(),
                source="; ".join(s.strip() for s in sources),
            )
        )
    return tuple(found)


def parse(data: Any, origin: str) -> tuple[Signature, ...]:
    """Validate already-parsed YAML ``data`` (``{version: 1, signatures: [row, ...]}``) read from
    ``origin`` (a path, for messages). Raises ConfigError listing every problem, one line each,
    as ``FILE: signatures[3] (name).field: expected ..., got ...``."""
    problems = _Problems(origin)
    if not isinstance(data, Mapping) or not isinstance(data.get("signatures"), list):
        raise ConfigError(
            f"{origin}: (top level): expected a mapping with 'version: 1' and a 'signatures' list, "
            f"got {type(data).__name__}"
        )
    if data.get("version") != 1:
        problems.add("version", "1", data.get("version"))
    for key in sorted(set(data) - {"version", "signatures"}, key=str):
        problems.add(key, "no such key (keys: version, signatures)", key)
    rows, seen = [], set()
    for index, raw in enumerate(data["signatures"]):
        parsed = _parse_row(raw, index, problems)
        if parsed is None:
            continue
        if parsed.name in seen:
            problems.add(
                f"signatures[{index}] ({parsed.name}).name", "a name no other row has", parsed.name
            )
        seen.add(parsed.name)
        rows.append(parsed)
    if problems.lines:
        raise ConfigError("\n".join(problems.lines))
    return tuple(rows)


def load(path: str | Path) -> tuple[Signature, ...]:
    """Read and validate a signature file. Raises ConfigError (exit 2) when it cannot be read,
    is not YAML, or any row is invalid (see :func:`parse`)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the signature table: {exc}") from None
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}".replace("\n", " ")) from None
    return parse(data, str(path))


def with_user_rows(paths: Iterable[str | Path], base: Table | None = None) -> Table:
    """``base`` (default: the shipped table) plus the rows of each user file, after it.

    Raises ConfigError when a file is invalid or a user row reuses a name ``base`` or an earlier
    file already has (a user table adds families; it does not redefine shipped ones).
    """
    base = base or SHIPPED
    rows = list(base.rows)
    names = {r.name: r.origin for r in rows}
    for path in paths:
        for extra in load(path):
            if extra.name in names:
                raise ConfigError(
                    f"{path}: signatures ({extra.name}).name: expected a name not already in "
                    f"{names[extra.name]}, got {extra.name!r}"
                )
            names[extra.name] = str(path)
            rows.append(extra)
    return Table([r for r in rows if r.kind in KINDS] + [r for r in rows if r.kind not in KINDS])


SHIPPED = Table(load(SIGNATURES_FILE))
_active = SHIPPED


def active() -> Table:
    """The table classification uses by default: the shipped one, or what :func:`activate` set."""
    return _active


def activate(table: Table | None) -> None:
    """Make ``table`` (shipped plus a matrix file's ``signatures:`` rows) the default for this
    process; ``None`` restores the shipped table."""
    global _active
    _active = table or SHIPPED


#: The shipped output rows, in precedence order (a line two rows match goes to the first).
SIGNATURES: tuple[Signature, ...] = SHIPPED.patterns
#: The shipped rows of names given by code rather than read from output.
NAMED: tuple[Signature, ...] = SHIPPED.named
#: Every shipped row, output rows first.
ROWS: tuple[Signature, ...] = SHIPPED.rows
#: Shipped rows by name (the ``signal_*`` family under that literal name; use :func:`row`).
SIGNATURE_BY_NAME: dict[str, Signature] = SHIPPED.by_name
#: Signature of a case killed by a signal (rows' ``signals``; field reports, "Exit status
#: conventions"); other signals are ``signal_<name>`` (the ``signal_*`` row).
SIGNAL_SIGNATURES: dict[int, str] = SHIPPED.signals


def row(name: str) -> Signature:
    """The row for a signature name a case can carry, in the :func:`active` table.

    Exact names first; ``signal_sigusr1`` / ``signal_99`` (what ``engine.signal_signature`` gives
    a signal without a row of its own) resolve to the ``signal_*`` family row. ``infra.<check>``
    and ``hang.<sub-type>`` are not families: each check and sub-type has its own row, so a new
    doctor check or hang fingerprint needs a row in repro/data/signatures.yaml. Raises KeyError
    for any other name.
    """
    return _active.row(name)


def known(name: str) -> bool:
    """Whether :func:`row` has a row for ``name`` (see there for the families)."""
    return _active.known(name)


def is_environment(name: str | None) -> bool:
    """Whether a case's signature names an environment failure (driver, arch, runtime, device,
    container, WSL2: :data:`ENVIRONMENT_FAMILIES`); False for unknown names and user code."""
    if not name:
        return False
    try:
        return row(name).environment
    except KeyError:
        return False
