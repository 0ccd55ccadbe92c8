"""Talking to Slurm through its command-line clients: submit, cancel, and what became of a task.

pyslurm is no option (no wheel on PyPI; its X.Y must equal the cluster's Slurm, and there is no
22.05 release: ../shared/slurm-notes.md), so this module runs ``sbatch``, ``squeue``,
``scontrol``, ``sacct`` and ``scancel`` with a hard timeout each (a client blocks for many
seconds when the controller is down) and parses their documented output.

Where a task's state comes from, first source that knows it wins:

1. ``sacct -X --parsable2`` when the cluster has accounting storage (slurmdbd): every job,
   however old (``CANCELLED by 0`` is read as ``CANCELLED``). Without slurmdbd sacct prints
   "Slurm accounting storage is disabled" and exits 1 (even for ``--help``).
2. ``scontrol -o show job <array job>``: one line per task (pending tasks as one range), with
   JobState, Reason, ExitCode, NodeList, Start/EndTime, Restarts, for ``MinJobAge`` seconds
   (default 300) after the job ended; then "Invalid job id specified".
3. The job-completion log when ``JobCompType=jobcomp/filetxt`` (``scontrol show config``'s
   ``JobCompLoc``) is readable here: one ``Key=Value`` line per ended job with ``ArrayJobId``
   and ``ArrayTaskId`` (``sacct -c`` cannot read those: "Unknown type ArrayJobId"). The last
   line of a task wins (a requeued task ends more than once).
4. ``squeue -h -t all``: pending and running tasks, and ended ones within MinJobAge.

Measured on this project's throwaway cluster (Slurm 22.05.8): a task killed at its time limit
reads ``JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15`` 60-90 s after a 1-minute limit;
``scancel`` gives ``CANCELLED ExitCode=0:15``; an exit 3 gives ``FAILED NonZeroExitCode
ExitCode=3:0``. Never imports torch.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from repro.errors import FatalError

#: Seconds a client command may take (a dead controller makes them block).
CLIENT_TIMEOUT_S = 30.0
Runner = Callable[[list[str], float], subprocess.CompletedProcess]

#: Job states after which a task runs no more (squeue(1) JOB STATE CODES).
FINAL_STATES = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "TIMEOUT",
        "REVOKED",
        "SPECIAL_EXIT",
    }
)
SACCT, SCONTROL, JOBCOMP, SQUEUE = "sacct", "scontrol", "jobcomp", "squeue"


def run_command(argv: list[str], timeout: float = CLIENT_TIMEOUT_S) -> subprocess.CompletedProcess:
    """Run a Slurm client (text output captured, stdin closed). A missing binary raises
    FatalError naming it; a timeout comes back as exit 124 with the reason on stderr."""
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        raise FatalError(
            f"{argv[0]}: not found: this machine has no Slurm client commands",
            hint="run repro slurm on a login node of the cluster (slurm-client)",
        ) from None
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(
            argv, 124, "", f"{argv[0]} did not answer within {timeout:g} s (controller down?)"
        )


@dataclass(frozen=True)
class TaskState:
    """What the scheduler says about one job or array task.

    ``array_job_id``/``task_id``: the array job and the task's index (``task_id`` None for a
    job that is no array task); ``job_id`` the task's own job id when known; ``state`` the
    base state (``TIMEOUT``, ``CANCELLED``...); ``reason`` Slurm's Reason (``TimeLimit``);
    ``exit_code`` ``status:signal`` (``0:15``); ``node`` the node list; ``start``/``end`` UTC
    ISO times (``2026-11-27T03:46:17Z``) or None; ``restarts`` how often it was requeued;
    ``source`` which command said so.
    """

    array_job_id: str
    task_id: int | None
    state: str
    source: str
    job_id: str = ""
    reason: str = ""
    exit_code: str = ""
    node: str = ""
    start: str | None = None
    end: str | None = None
    restarts: int = 0

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES

    @property
    def name(self) -> str:
        """``12_3`` for an array task, ``12`` otherwise."""
        return self.array_job_id if self.task_id is None else f"{self.array_job_id}_{self.task_id}"


Key = tuple[str, "int | None"]

# ---- parsers (pure) ------------------------------------------------------------------------

_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=")


def key_values(line: str) -> dict[str, str]:
    """``scontrol -o`` / jobcomp ``Key=Value Key=Value`` text as a dict; a value runs to the
    next `` Key=`` (so values with spaces survive)."""
    matches = list(_KEY.finditer(line))
    out = {}
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
        out[match.group(1)] = line[match.end() : end].strip()
    return out


def _utc(text: str | None) -> str | None:
    """Slurm's local ``2026-11-27T03:46:17`` as UTC ``...Z``; None for Unknown/None/N/A."""
    if not text or not re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$", text):
        return None
    local = time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(local))


def _indices(text: str) -> list[int | None]:
    """An array task id field: ``3`` -> [3]; ``2-5`` / ``[2-5%4]`` / ``1,4-5`` -> each index;
    empty or ``N/A`` -> [None] (no array task)."""
    text = text.strip().strip("[]").split("%")[0]
    if not text or text in ("N/A", "(null)"):
        return [None]
    out: list[int | None] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            out += list(range(int(low), int(high or low) + 1))
    return out or [None]


def _base_state(text: str) -> str:
    """``CANCELLED by 0`` / ``CANCELLED+`` -> ``CANCELLED``."""
    return text.split()[0].rstrip("+") if text.split() else ""


def _int(text: str) -> int:
    return int(text) if text.isdigit() else 0


def parse_scontrol(text: str, source: str = SCONTROL) -> dict[Key, TaskState]:
    """``scontrol -o show job`` lines (or jobcomp/filetxt lines, ``source=jobcomp``): one
    state per task; a later line for the same task replaces an earlier one."""
    out: dict[Key, TaskState] = {}
    for line in text.splitlines():
        kv = key_values(line)
        job_id = kv.get("JobId", "")
        if not job_id:
            continue
        array_id = kv.get("ArrayJobId") or job_id
        for index in _indices(kv.get("ArrayTaskId", "")):
            state = TaskState(
                array_job_id=array_id,
                task_id=index,
                state=_base_state(kv.get("JobState", "")),
                source=source,
                job_id=job_id,
                reason=kv.get("Reason", ""),
                exit_code=kv.get("ExitCode", ""),
                node=kv.get("NodeList", "").replace("(null)", ""),
                start=_utc(kv.get("StartTime")),
                end=_utc(kv.get("EndTime"))
                if _base_state(kv.get("JobState", "")) in FINAL_STATES
                else None,
                restarts=_int(kv.get("Restarts", "")),
            )
            out[(array_id, index)] = state
    return out


SACCT_FIELDS = ("JobID", "JobIDRaw", "State", "ExitCode", "NodeList", "Start", "End", "Reason")


def parse_sacct(text: str) -> dict[Key, TaskState]:
    """``sacct -X --parsable2 --noheader -o JobID,JobIDRaw,State,ExitCode,NodeList,Start,End,
    Reason`` lines (``12_3|15|TIMEOUT|0:15|node1|...``; pending tasks ``12_[4-7]``)."""
    out: dict[Key, TaskState] = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) < len(SACCT_FIELDS):
            continue
        job, raw, state, exit_code, node, start, end, reason = parts[: len(SACCT_FIELDS)]
        array_id, _, tail = job.partition("_")
        if not array_id.isdigit():
            continue
        for index in _indices(tail) if tail else [None]:
            base = _base_state(state)
            out[(array_id, index)] = TaskState(
                array_job_id=array_id,
                task_id=index,
                state=base,
                source=SACCT,
                job_id=raw if index is not None and "[" not in tail else "",
                reason=reason,
                exit_code=exit_code,
                node=node if node not in ("None assigned", "(null)") else "",
                start=_utc(start),
                end=_utc(end) if base in FINAL_STATES else None,
            )
    return out


def parse_squeue(text: str) -> dict[Key, TaskState]:
    """``squeue -h -t all -o '%i|%T|%r|%N'`` lines (``12_3|RUNNING|None|node1``,
    ``12_[4-7]|PENDING|Resources|``)."""
    out: dict[Key, TaskState] = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) < 4:
            continue
        job, state, reason, node = parts[:4]
        array_id, _, tail = job.partition("_")
        if not array_id.isdigit():
            continue
        for index in _indices(tail) if tail else [None]:
            out[(array_id, index)] = TaskState(
                array_job_id=array_id, task_id=index, state=_base_state(state), source=SQUEUE,
                reason=reason, node=node,
            )  # fmt: skip
    return out


def parse_config(text: str) -> dict[str, str]:
    """``scontrol show config``'s ``Name = Value`` lines as a dict."""
    out = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() and " " not in name.strip():
            out[name.strip()] = value.strip()
    return out


def parse_job_id(stdout: str) -> str:
    """``sbatch --parsable``'s answer: ``jobid[;cluster]`` (sbatch(1)). Raises ValueError."""
    first = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    job_id = first.split(";")[0].strip()
    if not job_id.isdigit():
        raise ValueError(f"expected a job id, got {stdout.strip()[:200]!r}")
    return job_id


# ---- the scheduler ---------------------------------------------------------------------------


@dataclass
class Scheduler:
    """The cluster this machine's Slurm clients talk to (``SLURM_CONF`` or the system's).
    ``run`` runs one client command (injectable: tests replay captured output)."""

    run: Runner = run_command
    _config: dict[str, str] | None = field(default=None, repr=False)

    def _call(self, argv: list[str]) -> subprocess.CompletedProcess:
        return self.run(argv, CLIENT_TIMEOUT_S)

    def submit(self, argv: list[str]) -> str:
        """Run ``sbatch --parsable ...``; the job id. Raises FatalError with sbatch's own
        message when it refuses (bad partition, account, time limit...)."""
        done = self._call(argv)
        if done.returncode != 0:
            message = " ".join((done.stderr or done.stdout).split())[:500]
            raise FatalError(f"sbatch refused {argv[-1]}: {message or f'exit {done.returncode}'}")
        try:
            return parse_job_id(done.stdout)
        except ValueError as exc:
            raise FatalError(f"sbatch {argv[-1]}: {exc}") from None

    def cancel(self, job_ids: Iterable[str]) -> None:
        """``scancel`` the jobs (best effort: nothing raised)."""
        ids = list(job_ids)
        if ids:
            self._call(["scancel", *ids])

    def config(self) -> dict[str, str]:
        """``scontrol show config`` (cached); {} when the controller does not answer."""
        if self._config is None:
            done = self._call(["scontrol", "show", "config"])
            self._config = parse_config(done.stdout) if done.returncode == 0 else {}
        return self._config

    @property
    def has_accounting(self) -> bool:
        """Whether sacct can answer: accounting storage is slurmdbd."""
        return "slurmdbd" in self.config().get("AccountingStorageType", "")

    def jobcomp_file(self) -> Path | None:
        """The job-completion log when it is a file this machine can read (jobcomp/filetxt)."""
        cfg = self.config()
        if cfg.get("JobCompType") != "jobcomp/filetxt":
            return None
        path = Path(cfg.get("JobCompLoc", ""))
        return path if path.is_absolute() and path.is_file() else None

    def live(self, job_ids: list[str]) -> dict[Key, TaskState]:
        """``squeue -h -t all`` for these jobs (pending, running, and ended within MinJobAge)."""
        if not job_ids:
            return {}
        done = self._call(
            ["squeue", "-h", "-t", "all", "-j", ",".join(job_ids), "-o", "%i|%T|%r|%N"]
        )
        return parse_squeue(done.stdout) if done.returncode == 0 else {}

    def completion_log(self, job_ids: list[str]) -> dict[Key, TaskState]:
        """The job-completion log's lines of these jobs (read line by line: on a real cluster
        the file holds every job since it was rotated); {} when there is none readable."""
        log = self.jobcomp_file()
        if log is None:
            return {}
        needles = tuple(f"JobId={i} " for i in job_ids) + tuple(f"ArrayJobId={i} " for i in job_ids)
        wanted = set(job_ids)
        lines = []
        try:
            with open(log, encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    if any(n in line for n in needles):
                        kv = key_values(line)
                        if (kv.get("ArrayJobId") or kv.get("JobId")) in wanted:
                            lines.append(line)
        except OSError:
            return {}
        return parse_scontrol("".join(lines), source=JOBCOMP)

    def states(self, job_ids: list[str], completion_log: bool = True) -> dict[Key, TaskState]:
        """Every task of these jobs any source knows, keyed ``(array job id, task index)``
        (index None for a plain job): sacct, else scontrol, else the job-completion log
        (``completion_log``: a poll of one job leaves the big file alone), else squeue (see
        the module docstring). A source that fails is skipped."""
        found: dict[Key, TaskState] = {}

        def take(source: dict[Key, TaskState]) -> None:
            for key, state in source.items():
                if key[0] in job_ids and key not in found:
                    found[key] = state

        if self.has_accounting:
            done = self._call(
                ["sacct", "-X", "--parsable2", "--noheader", "-j", ",".join(job_ids),
                 "-o", ",".join(SACCT_FIELDS)]
            )  # fmt: skip
            if done.returncode == 0:
                take(parse_sacct(done.stdout))
        for job_id in job_ids:
            done = self._call(["scontrol", "-o", "show", "job", job_id])
            if done.returncode == 0:
                take(parse_scontrol(done.stdout))
        if completion_log:
            take(self.completion_log(job_ids))
        take(self.live(job_ids))
        return found

    def wait(
        self,
        job_id: str,
        poll_s: float = 2.0,
        timeout_s: float | None = None,
        say: Callable[[str], None] | None = None,
    ) -> TaskState | None:
        """Poll until job ``job_id`` (not an array) has ended; its final state (None when no
        source knows it any more). Raises FatalError after ``timeout_s``."""
        started = time.monotonic()
        last = ""
        while True:
            state = self.states([job_id], completion_log=False).get((job_id, None))
            if state is not None and state.final:
                return state
            shown = state.state if state else "unknown"
            if say is not None and shown != last:
                say(f"job {job_id}: {shown}")
                last = shown
            if state is None and not self.live([job_id]):
                return None
            if timeout_s is not None and time.monotonic() - started > timeout_s:
                raise FatalError(f"job {job_id} still {shown} after {timeout_s:g} s")
            time.sleep(poll_s)
