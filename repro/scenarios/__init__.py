"""Scenario registry: turns scenario modules and their parameter grids into cases.

A scenario module (``repro/scenarios/<name>.py``, discovered by :func:`builtin`, or any
importable module named in matrix.yaml) defines, at module level and WITHOUT importing torch
(the runner imports it), the names of :class:`Scenario`: that Protocol is the one list of the
contract (three required, eight optional), and :func:`contract_problem` checks each of them.
:func:`load` turns every breach (an import that fails, a bad ``PARAMS`` or ``TIMEOUT_S``) into
a one-line ConfigError naming the module. ``from repro.scenarios import Context, CaseFailed,
CaseSkipped`` gives a scenario author the case API (re-exported from ``repro.case_api``, the ground floor).

This module never imports torch.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import math
import pkgutil
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from repro import bounds
from repro.case_api import CaseFailed, CaseSkipped, Context  # the case API, for scenario authors
from repro.errors import ConfigError
from repro.model import Fingerprint

__all__ = [
    "Case",
    "CaseFailed",
    "CaseSkipped",
    "Context",
    "Scenario",
    "builtin",
    "by_default",
    "expand",
    "load",
    "skip_reason",
]

#: A scenario name (the key under ``scenarios:``) and a module path a user may name.
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
#: Longest default case timeout a module may declare (seconds; matrix.yaml's bound too).
MAX_TIMEOUT_S = bounds.MAX_TIMEOUT_S
#: Most cases one scenario may expand into (the product of its axes, before ``valid``).
MAX_CASES = 10_000


class Scenario(Protocol):
    """The contract of a scenario module: every name it may define, at module level.

    Required:

    - ``PARAMS``: the default parameter grid, axis name -> non-empty list, in display order.
    - ``TIMEOUT_S``: default hard timeout of one case, seconds (finite, positive).
    - ``run(ctx, params)``: the case body, executed in an isolated child process by
      ``repro.runner.harness``; it may import torch. A reproduced bug is ``ctx.fail`` or an
      ``AssertionError``, an absent requirement ``ctx.skip``.

    Optional (absent: the default given):

    - ``valid(params) -> bool``: drop combinations that make no sense (all kept).
    - ``requires(params) -> list[str]``: requirement tokens, see :func:`skip_reason` (none).
    - ``QUIET_DEFAULTS``: axis -> value left out of case ids, e.g. ``{"fault": "none"}`` ({}).
    - ``FRESH``: True, False or a function of the params: run in a new interpreter, never
      forked from the zygote (False).
    - ``EXCLUSIVE``: the same form: run alone under ``-j N`` (False).
    - ``OPT_IN``: True: a built-in run only where matrix.yaml names it, not by ``"*"`` (False).
    - ``CATALOGUE``: False: a module of this package that is not a built-in scenario (True).
    - ``EXPECT``: its reproductions red by design, a list of matrix.yaml ``expect:`` entries
      without ``scenario`` (checked when matrix.yaml is loaded; the file's entries win) ([]).

    A typing Protocol (for editors and type checkers), not checked with ``isinstance``: a
    module need not define the optional names; :func:`contract_problem` checks what it does.
    """

    PARAMS: dict[str, list[Any]]
    TIMEOUT_S: float
    QUIET_DEFAULTS: dict[str, Any]
    FRESH: bool | Callable[[dict[str, Any]], bool]
    EXCLUSIVE: bool | Callable[[dict[str, Any]], bool]
    OPT_IN: bool
    CATALOGUE: bool
    EXPECT: list[dict[str, str]]

    def run(self, ctx: Context, params: dict[str, Any]) -> None: ...  # noqa: F821 (TYPE_CHECKING)
    def valid(self, params: dict[str, Any]) -> bool: ...
    def requires(self, params: dict[str, Any]) -> list[str]: ...


#: The names of :class:`Scenario` a module must define; the others are optional.
REQUIRED = ("PARAMS", "TIMEOUT_S", "run")


def contract_names() -> tuple[str, ...]:
    """Every name of the contract, as :class:`Scenario` declares it (its annotations, then its
    methods)."""
    methods = [n for n, v in vars(Scenario).items() if callable(v) and not n.startswith("_")]
    return (*Scenario.__annotations__, *methods)


@functools.cache
def builtin() -> tuple[str, ...]:
    """Names of the scenarios that ship with repro-matrix, alphabetical: every public module of
    this package (``repro/scenarios/<name>.py``, no leading ``_``) except one declaring
    ``CATALOGUE = False`` (``script``, the body of ``script:`` entries). Discovered, listed
    nowhere else (issue 20, item 2): adding a scenario is adding its module. Importing them is
    cheap (the contract: no torch at import)."""
    names = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_") or info.ispkg:
            continue
        if getattr(importlib.import_module(module_name(info.name)), "CATALOGUE", True) is False:
            continue
        names.append(info.name)
    return tuple(sorted(names))


def by_default() -> tuple[str, ...]:
    """The built-in scenarios a ``"*"`` entry of matrix.yaml's ``scenarios:`` stands for: every
    one of :func:`builtin` but those declaring ``OPT_IN = True`` (run only when named: ``noop``,
    ``cuda_fault``)."""
    return tuple(
        name
        for name in builtin()
        if getattr(importlib.import_module(module_name(name)), "OPT_IN", False) is not True
    )


@dataclass(frozen=True)
class Case:
    """One parametrization of a scenario: the unit the runner isolates.

    ``params`` keeps the grid's key order so ids are stable; ``timeout_s`` is in seconds.
    """

    scenario: str
    module: str
    params: tuple[tuple[str, Any], ...]
    timeout_s: float
    requires: tuple[str, ...] = field(default=())
    quiet: tuple[str, ...] = field(default=())

    @property
    def case_id(self) -> str:
        """Canonical id, e.g. ``dataloader[device=cpu,start_method=fork,workers=2]``.

        Parameters named in ``quiet`` (at their quiet default) are left out."""
        shown = [(key, value) for key, value in self.params if key not in self.quiet]
        if not shown:
            return self.scenario
        inner = ",".join(f"{key}={format_value(value)}" for key, value in shown)
        return f"{self.scenario}[{inner}]"

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)


def format_value(value: Any) -> str:
    """Render a parameter value for a case id: booleans as 0/1, the rest with ``str``."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def module_name(scenario: str, module: str | None = None) -> str:
    """The import path of a scenario: ``module`` when given, else ``repro.scenarios.<name>``."""
    return module or f"repro.scenarios.{scenario}"


def load(scenario: str, module: str | None = None) -> Scenario:
    """Import a scenario module and check it keeps the :class:`Scenario` contract.

    Raises ConfigError (one line naming the module) when it cannot be imported, raises while
    importing, or declares a bad ``PARAMS`` (not a dict of non-empty lists), ``TIMEOUT_S`` (not
    a finite positive number), ``QUIET_DEFAULTS`` or a non-callable ``run``/``valid``/``requires``.
    """
    name = module_name(scenario, module)
    try:
        mod = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or name
        raise ConfigError(
            f"scenario module {name}: cannot import: no module named {missing!r}"
        ) from None
    except (Exception, SystemExit) as exc:  # a user's module may raise anything on import
        text = " ".join(str(exc).split())[:200]
        raise ConfigError(
            f"scenario module {name}: raised {type(exc).__name__} on import"
            + (f": {text}" if text else "")
        ) from None
    problem = contract_problem(mod)
    if problem:
        raise ConfigError(f"scenario module {name}: {problem}")
    return cast(Scenario, mod)


def case_flag(case: Case, name: str) -> bool:
    """A scenario's per-case declaration (``FRESH``, ``EXCLUSIVE``): the module attribute when
    it is a bool, or its value for the case's params when it is a function (checked by
    :func:`contract_problem`). False when the scenario does not declare it."""
    flag = getattr(load(case.scenario, case.module), name, False)
    return bool(flag(case.param_dict)) if callable(flag) else bool(flag)


def contract_problem(mod: object) -> str | None:
    """What in ``mod`` breaks the :class:`Scenario` contract, or None."""
    params = getattr(mod, "PARAMS", None)
    if not isinstance(params, dict) or not params:
        return f"PARAMS: expected a non-empty dict of axis name to a list of values, got {type(params).__name__}"
    for axis, values in params.items():
        if not isinstance(axis, str) or not NAME_RE.match(axis):
            return f"PARAMS: axis {axis!r}: expected a name of letters, digits and _"
        if not isinstance(values, (list, tuple)) or not values:
            return f"PARAMS[{axis!r}]: expected a non-empty list of values, got {values!r:.60}"
    timeout = getattr(mod, "TIMEOUT_S", None)
    if not bounds.CASE_SECONDS.ok(timeout):
        return (
            f"TIMEOUT_S: expected {bounds.CASE_SECONDS.expected}, got {bounds.shown(timeout):.60}"
        )
    for flag in ("FRESH", "EXCLUSIVE"):
        value = getattr(mod, flag, False)
        if not (isinstance(value, bool) or callable(value)):
            return f"{flag}: expected True, False or a function of the case's params, got {value!r:.60}"
    for flag, default in (("OPT_IN", False), ("CATALOGUE", True)):
        value = getattr(mod, flag, default)
        if not isinstance(value, bool):
            return f"{flag}: expected True or False, got {value!r:.60}"
    if not isinstance(getattr(mod, "QUIET_DEFAULTS", {}), dict):
        return "QUIET_DEFAULTS: expected a dict of axis name to value"
    expect = getattr(mod, "EXPECT", [])
    if not isinstance(expect, list) or not all(isinstance(e, dict) for e in expect):
        return "EXPECT: expected a list of expect: entries (mappings), as in matrix.yaml"
    for attr, required in (("run", True), ("valid", False), ("requires", False)):
        value = getattr(mod, attr, None)
        if (value is None and required) or (value is not None and not callable(value)):
            return f"{attr}: expected a function"
    return None


def expand(
    scenario: str,
    module: str | None = None,
    params: Mapping[str, Sequence[Any]] | None = None,
    timeout_s: float | None = None,
) -> list[Case]:
    """All cases of one scenario: the module's grid with ``params`` overriding its axes.

    ``params`` may only name axes the module declares (checked by ``repro.config.load``).
    Raises ConfigError when the module breaks its contract, its ``valid``/``requires`` raise, or
    the grid holds more than :data:`MAX_CASES` combinations.
    """
    mod = load(scenario, module)
    name = module_name(scenario, module)
    grid = {key: list(values) for key, values in mod.PARAMS.items()}
    for key, values in (params or {}).items():
        grid[key] = list(values)
    keys = list(grid)
    if math.prod(len(grid[key]) for key in keys) > MAX_CASES:
        raise ConfigError(
            f"scenario module {name}: its axes expand into more than {MAX_CASES} cases"
        )
    valid = getattr(mod, "valid", lambda _p: True)
    requires = getattr(mod, "requires", lambda _p: [])
    quiet_defaults = getattr(mod, "QUIET_DEFAULTS", {})
    cases = []
    for combo in itertools.product(*(grid[key] for key in keys)):
        values = dict(zip(keys, combo, strict=True))
        try:
            keep = valid(values)
            needs = tuple(requires(values)) if keep else ()
        except Exception as exc:  # a user's module: its bug is bad input, named, not a traceback
            raise ConfigError(
                f"scenario module {name}: valid()/requires() raised {type(exc).__name__} for {values!r:.100}"
            ) from None
        if not keep:
            continue
        cases.append(
            Case(
                scenario=scenario,
                module=name,
                params=tuple(values.items()),
                timeout_s=float(timeout_s if timeout_s is not None else mod.TIMEOUT_S),
                requires=needs,
                quiet=tuple(k for k, v in quiet_defaults.items() if values.get(k) == v),
            )
        )
    return cases


def skip_reason(requires: Sequence[str], fingerprint: Fingerprint) -> str | None:
    """Why a case cannot run on this host, or None when every requirement holds.

    Tokens: ``accelerator`` (torch sees a CUDA or ROCm device), ``gpus>=N`` (at least N such
    devices), ``start_method:NAME`` (the multiprocessing start method exists on this platform).
    Facts come from ``repro.host.fingerprint`` (collected in a child process, so the runner never
    initialises CUDA). Raises ValueError for an unknown token.

    A host whose CUDA does not initialise although devices are counted (the probe's
    ``runtime.cuda_init_error``: Error 802/803/804, busy GPUs) is never a reason to skip: its
    accelerator tokens return None here and ``repro.host.cuda_init.case_error`` makes the case
    ``error``/``infra.cuda_init`` (a broken GPU host must be red, not absent).
    """
    runtime = fingerprint.runtime
    count = runtime.accelerator_count
    torch_version = runtime.torch
    broken = bool(runtime.cuda_init_error)
    for token in requires:
        if broken and (token == "accelerator" or token.startswith("gpus>=")):
            continue
        if token == "accelerator":
            if count < 1:
                build = f"torch {torch_version}" if torch_version else "no torch"
                return f"no CUDA/ROCm device visible to torch ({build}, accelerator_count=0)"
        elif token.startswith("gpus>="):
            need = int(token.split(">=", 1)[1])
            if count < need:
                return f"needs {need} GPUs, torch sees {count}"
        elif token.startswith("start_method:"):
            method = token.split(":", 1)[1]
            methods = runtime.start_methods
            if methods and method not in methods:
                return (
                    f"start method {method!r} not available on this platform ({', '.join(methods)})"
                )
        else:
            raise ValueError(f"unknown requirement token {token!r}")
    return None
