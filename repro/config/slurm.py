"""matrix.yaml ``slurm:``: where and how the Slurm lane (``repro slurm``) puts the matrix on a
cluster, validated like every other key (file, key path, what was expected; unknown keys are
errors) into a typed :class:`SlurmSettings`.

::

    slurm:
      partition: gpu                 # sbatch --partition
      account: my-project            # sbatch --account
      time_limit: "02:00:00"         # sbatch --time per task: MM, MM:SS, HH:MM:SS, D-HH[:MM[:SS]]
      gpus_per_task: 1               # GPUs of a cuda/rocm variant's task (and the host lane's)
      gpu_request: gres              # gres: --gres=gpu:N (default) | gpus: --gpus=N
      cpus_per_task: 8               # sbatch --cpus-per-task
      mem: 64G                       # sbatch --mem (per node)
      constraint: "a100|h100"        # sbatch --constraint for every task
      nodes: [gpu01, gpu02]          # one task set per node (--nodelist=NODE)
      groups: {a100: a100, h100: "h100&nvlink"}   # one task set per node group (its constraint)
      lanes: [host, venv]            # host: the nodes' own python (once per node/group);
                                     # venv: a uv environment per variant; container: its image
      python: /shared/venvs/repro/bin/python      # the interpreter on the nodes that runs repro
                                     # (and whose torch the host lane tests); default python3
      container_runtime: pyxis       # pyxis (srun --container-image) | apptainer
      image_repo: registry.example.com/team/repro-matrix   # images <repo>:<variant-id>
      results_dir: /shared/results   # a directory every node and the login node see

Every field can be overridden on the command line (``repro slurm --partition ...``, the flags
in ``repro/cli/options.py``); :meth:`SlurmSettings.with_overrides` applies them. Never imports
torch.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from repro import bounds

#: How a task asks for its GPUs: ``--gres=gpu:N`` or ``--gpus=N`` (sbatch(1)).
GPU_REQUESTS = ("gres", "gpus")
#: Where a task's cases run (DESIGN "lane"): the nodes' interpreter, a uv environment, an image.
LANES = ("host", "venv", "container")
#: Container runtimes of Slurm sites (neither is installable on Debian 12: slurm-notes.md).
CONTAINER_RUNTIMES = ("pyxis", "apptainer")
DEFAULT_LANES = ("venv",)
DEFAULT_PYTHON = "python3"

KEYS = (
    "partition",
    "account",
    "time_limit",
    "gpus_per_task",
    "gpu_request",
    "cpus_per_task",
    "mem",
    "constraint",
    "nodes",
    "groups",
    "lanes",
    "python",
    "container_runtime",
    "image_repo",
    "results_dir",
)

#: sbatch --time: "minutes", "minutes:seconds", "hours:minutes:seconds", "days-hours",
#: "days-hours:minutes" and "days-hours:minutes:seconds" (sbatch(1), -t).
TIME_RE = re.compile(r"^(?:\d{1,7}(?::\d{1,2}){0,2}|\d{1,5}-\d{1,2}(?::\d{1,2}){0,2})$")
#: sbatch --mem: a number with an optional K/M/G/T suffix (sbatch(1), --mem).
MEM_RE = re.compile(r"^\d{1,9}[KMGT]?$")
#: A Slurm name (partition, account, node): letters, digits and ._- (no shell characters).
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
#: A node feature expression (sbatch --constraint): features joined by & | , * and brackets.
CONSTRAINT_RE = re.compile(r"^[A-Za-z0-9_.\-&|,*\[\]()]{1,400}$")
#: A path: printable, no quote, no newline, no ``$`` or backquote (it lands in a batch script).
PATH_RE = re.compile(r"^[^\s'\"`$\\;&|<>]{1,1000}$")
#: A docker image repository (``repro build --image-repo``): registry/path, no tag.
REPO_RE = re.compile(r"^[a-z0-9][a-z0-9._/:-]{0,250}$")


class Problems(Protocol):
    """``repro.config.load``'s problem collector."""

    def add(self, key: str, expected: str, got: Any = ...) -> None: ...


@dataclass(frozen=True)
class SlurmTarget:
    """Where one job array runs: a node (``nodelist``), a node group (``constraint``), or
    anywhere in the partition (both None). ``name`` labels its run directories and job name.
    Slurm gives every task of an array the same resource request, so each target is one
    array."""

    name: str
    nodelist: str | None = None
    constraint: str | None = None


@dataclass(frozen=True)
class SlurmSettings:
    """The validated ``slurm:`` section (all optional). ``time_limit`` is sbatch's ``--time``
    text; ``mem`` sbatch's ``--mem`` text; ``gpus_per_task`` 0 means no GPU request;
    ``groups`` are ``(name, constraint)`` pairs in file order; ``results_dir`` None means
    ``defaults.results_dir``."""

    partition: str | None = None
    account: str | None = None
    time_limit: str | None = None
    gpus_per_task: int = 0
    gpu_request: str = "gres"
    cpus_per_task: int | None = None
    mem: str | None = None
    constraint: str | None = None
    nodes: tuple[str, ...] = ()
    groups: tuple[tuple[str, str], ...] = ()
    lanes: tuple[str, ...] = DEFAULT_LANES
    python: str = DEFAULT_PYTHON
    container_runtime: str = "pyxis"
    image_repo: str | None = None
    results_dir: str | None = None

    def targets(self) -> tuple[SlurmTarget, ...]:
        """One target per node, then one per group; a single target ``any`` (the partition,
        with ``constraint``) when neither is given. A group's constraint replaces the
        section's ``constraint``; a node keeps it."""
        out = [SlurmTarget(node, nodelist=node, constraint=self.constraint) for node in self.nodes]
        out += [SlurmTarget(name, constraint=expr) for name, expr in self.groups]
        return tuple(out) or (SlurmTarget("any", constraint=self.constraint),)

    def with_overrides(self, values: Mapping[str, Any]) -> SlurmSettings:
        """These settings with every non-None value of ``values`` (field name -> value, from
        the command line; already validated by :func:`check_field`) in place."""
        given = {k: v for k, v in values.items() if v is not None}
        unknown = set(given) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise TypeError(f"not a slurm setting: {sorted(unknown)}")
        return dataclasses.replace(self, **given)


def _text(value: Any, pattern: re.Pattern) -> bool:
    return isinstance(value, str) and bool(pattern.match(value))


#: field -> (check, what an error says was expected), for the scalar fields.
_SCALARS: dict[str, tuple[Any, str]] = {
    "partition": (lambda v: _text(v, NAME_RE), "a partition name (letters, digits, . _ -)"),
    "account": (lambda v: _text(v, NAME_RE), "an account name (letters, digits, . _ -)"),
    "time_limit": (
        lambda v: _text(v, TIME_RE),
        'a quoted sbatch time limit: "MM", "MM:SS", "HH:MM:SS" or "D-HH:MM:SS"',
    ),
    "gpus_per_task": (lambda v: bounds.GPUS_PER_TASK.ok(v), bounds.GPUS_PER_TASK.expected),
    "gpu_request": (lambda v: v in GPU_REQUESTS, f"one of {', '.join(GPU_REQUESTS)}"),
    "cpus_per_task": (lambda v: bounds.CPUS_PER_TASK.ok(v), bounds.CPUS_PER_TASK.expected),
    "mem": (lambda v: _text(v, MEM_RE), "a memory size like 64G (sbatch --mem: K, M, G or T)"),
    "constraint": (
        lambda v: _text(v, CONSTRAINT_RE),
        "a node feature expression like a100 or a100|h100",
    ),
    "python": (lambda v: _text(v, PATH_RE), "an interpreter path or command on the nodes"),
    "container_runtime": (
        lambda v: v in CONTAINER_RUNTIMES,
        f"one of {', '.join(CONTAINER_RUNTIMES)}",
    ),
    "image_repo": (
        lambda v: _text(v, REPO_RE),
        "an image repository like registry.example.com/team/repro-matrix (no tag)",
    ),
    "results_dir": (
        lambda v: _text(v, PATH_RE),
        "a directory path on a filesystem every node shares (no spaces or shell characters)",
    ),
}


def check_field(name: str, value: Any) -> str | None:
    """What was expected when ``value`` is not valid for the scalar field ``name`` (the same
    check for matrix.yaml and the command line), else None."""
    check, expected = _SCALARS[name]
    return None if check(value) else expected


def parse_slurm(raw: Any, problems: Problems) -> SlurmSettings | None:
    """The ``slurm:`` section as :class:`SlurmSettings` (None when absent); every problem goes
    to ``problems`` as ``slurm.KEY: expected ...``."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        problems.add("slurm", f"a mapping with keys among {', '.join(KEYS)}", raw)
        return None
    from repro.suggest import did_you_mean

    fields: dict[str, Any] = {}
    for key in raw:
        if key not in KEYS:
            hint = did_you_mean(str(key), KEYS)
            problems.add(
                f"slurm.{str(key)[:80]}",
                f"one of the keys {', '.join(KEYS)}" + (f" ({hint})" if hint else ""),
            )
    for name in _SCALARS:
        if name in raw:
            expected = check_field(name, raw[name])
            if expected:
                problems.add(f"slurm.{name}", expected, raw[name])
            else:
                fields[name] = raw[name]
    if "nodes" in raw:
        nodes = raw["nodes"]
        if (
            not isinstance(nodes, list)
            or not nodes
            or not all(_text(n, NAME_RE) for n in nodes)
            or len(set(nodes)) != len(nodes)
        ):
            problems.add("slurm.nodes", "a non-empty list of distinct node names", nodes)
        else:
            fields["nodes"] = tuple(nodes)
    if "groups" in raw:
        groups = raw["groups"]
        if (
            not isinstance(groups, dict)
            or not groups
            or not all(_text(k, NAME_RE) and _text(v, CONSTRAINT_RE) for k, v in groups.items())
        ):
            problems.add(
                "slurm.groups",
                "a mapping of group name to node feature constraint, e.g. {a100: a100}",
                groups,
            )
        else:
            fields["groups"] = tuple(groups.items())
    if "lanes" in raw:
        lanes = raw["lanes"]
        if (
            not isinstance(lanes, list)
            or not lanes
            or not all(lane in LANES for lane in lanes)
            or len(set(lanes)) != len(lanes)
        ):
            problems.add(
                "slurm.lanes", f"a non-empty list of distinct lanes among {', '.join(LANES)}", lanes
            )
        else:
            fields["lanes"] = tuple(lanes)
    overlap = {n for n in fields.get("nodes", ())} & {g for g, _ in fields.get("groups", ())}
    if overlap:
        problems.add(
            "slurm.groups", f"group names that are not also node names ({sorted(overlap)[0]})"
        )
    if "container" in fields.get("lanes", ()) and "image_repo" not in fields:
        problems.add(
            "slurm.image_repo",
            "the repository the nodes pull the variants' images from (lanes has container)",
        )
    return SlurmSettings(**fields)
