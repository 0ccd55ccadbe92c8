"""Scenario registry: turns scenario modules and their parameter grids into cases.

A scenario module (``repro/scenarios/<name>.py`` or any importable module named in
matrix.yaml) defines, at module level and WITHOUT importing torch (the runner imports it):

- ``PARAMS``: ``dict[str, list]`` - the default parameter grid, in display order.
- ``TIMEOUT_S``: ``float`` - default hard timeout of one case in seconds.
- ``QUIET_DEFAULTS`` (optional): ``dict[str, Any]`` - axis values left out of case ids
  (e.g. ``{"fault": "none"}``: a planted-fault axis only tests widen).
- ``valid(params) -> bool`` (optional): drop combinations that make no sense.
- ``requires(params) -> list[str]`` (optional): requirement tokens, see :func:`skip_reason`.
- ``run(ctx, params) -> None``: the case body, executed in an isolated child process by
  ``repro.runner.harness``; it may import torch. It signals a reproduced bug with ``ctx.fail`` or an
  ``AssertionError``, an absent requirement with ``ctx.skip``.

This module never imports torch.
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

#: Scenarios that ship with repro-matrix, in catalogue order.
BUILTIN = (
    "cuda_basic",
    "arch",
    "cudnn",
    "model",
    "losses",
    "data_validation",
    "amp",
    "dataloader",
    "fork_safety",
    "shm",
    "cuda_ipc",
    "ddp",
    "noop",
    "cuda_fault",
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


def load(scenario: str, module: str | None = None) -> ModuleType:
    """Import a scenario module. Raises ImportError; AttributeError when PARAMS/run are missing."""
    mod = importlib.import_module(module_name(scenario, module))
    for attr in ("PARAMS", "TIMEOUT_S", "run"):
        if not hasattr(mod, attr):
            raise AttributeError(f"scenario module {mod.__name__} does not define {attr}")
    return mod


def expand(
    scenario: str,
    module: str | None = None,
    params: Mapping[str, Sequence[Any]] | None = None,
    timeout_s: float | None = None,
) -> list[Case]:
    """All cases of one scenario: the module's grid with ``params`` overriding its axes.

    ``params`` may only name axes the module declares (checked by ``repro.config.matrix``).
    """
    mod = load(scenario, module)
    grid = dict(mod.PARAMS)
    for key, values in (params or {}).items():
        grid[key] = list(values)
    keys = list(grid)
    valid = getattr(mod, "valid", lambda _p: True)
    requires = getattr(mod, "requires", lambda _p: [])
    quiet_defaults = getattr(mod, "QUIET_DEFAULTS", {})
    cases = []
    for combo in itertools.product(*(grid[key] for key in keys)):
        values = dict(zip(keys, combo, strict=True))
        if not valid(values):
            continue
        cases.append(
            Case(
                scenario=scenario,
                module=module_name(scenario, module),
                params=tuple(values.items()),
                timeout_s=float(timeout_s if timeout_s is not None else mod.TIMEOUT_S),
                requires=tuple(requires(values)),
                quiet=tuple(k for k, v in quiet_defaults.items() if values.get(k) == v),
            )
        )
    return cases


def skip_reason(requires: Sequence[str], fingerprint: Mapping[str, Any]) -> str | None:
    """Why a case cannot run on this host, or None when every requirement holds.

    Tokens: ``accelerator`` (torch sees a CUDA or ROCm device), ``gpus>=N`` (at least N such
    devices), ``start_method:NAME`` (the multiprocessing start method exists on this platform).
    Facts come from ``repro.host.fingerprint`` (collected in a child process, so the runner never
    initialises CUDA). Raises ValueError for an unknown token.
    """
    runtime = fingerprint.get("runtime") or {}
    count = int(runtime.get("accelerator_count") or 0)
    torch_version = runtime.get("torch")
    for token in requires:
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
            methods = runtime.get("start_methods") or []
            if methods and method not in methods:
                return (
                    f"start method {method!r} not available on this platform ({', '.join(methods)})"
                )
        else:
            raise ValueError(f"unknown requirement token {token!r}")
    return None
