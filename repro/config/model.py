"""The typed model of matrix.yaml: variants, scenario selections, expectations, the matrix.

Built only by :mod:`repro.config.load`, which validates every field first, so the values here
are always well-formed (finite positive timeouts, canonical ids, bounded sizes). Never imports
torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro import scenarios
from repro.config.select import glob_match, select_variants
from repro.config.slurm import SlurmSettings
from repro.config.tiers import Tier
from repro.errors import ConfigError
from repro.model.variant import Variant
from repro.scenarios import script as script_scenario
from repro.suggest import did_you_mean

#: What an ``expect:`` entry may predict; ``any-problem`` is any of the other four.
EXPECT_OUTCOMES = ("failed", "hung", "crashed", "error", "any-problem")
#: What an ``expect:`` entry's ``strict`` key takes (its message when it is something else).
STRICT_EXPECTED = "true or false (true: a covered case that passes is a problem, exit 1)"


@dataclass(frozen=True)
class ScriptEntry:
    """A user's own repro script (``scenarios: NAME: {script: ...}``, ``repro.config.scripts``).

    ``path`` is the absolute path of an existing regular file (a ``.py`` file, or an executable),
    ``args`` its arguments, ``config_dir`` matrix.yaml's folder (the script reads it through
    ``$REPRO_CONFIG_DIR``; it runs in a private writable folder), all validated. ``outside``:
    the script lies outside ``config_dir`` (allowed by ``allow_outside: true``, host lane only).
    ``fail_on``: ``("signature", NAME)`` / ``("pattern", REGEX)`` pairs that turn a passing run
    whose output shows them into a failure (issue 21, item 4).
    """

    path: str
    args: tuple[str, ...]
    config_dir: str
    outside: bool = False
    fail_on: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ScenarioConfig:
    """A scenario as selected in matrix.yaml: axis overrides and timeout (seconds).

    ``script`` is set for a bring-your-own-repro entry: one case, id ``name``, run by
    ``repro.scenarios.script``."""

    name: str
    module: str | None
    params: Mapping[str, tuple[Any, ...]]
    timeout_s: float | None
    enabled: bool = True
    script: ScriptEntry | None = None

    def cases(self, timeout_scale: float = 1.0) -> list[scenarios.Case]:
        """Its cases (the module's grid with ``params`` applied), timeouts times ``timeout_scale``.

        Raises ConfigError when the scenario module breaks its contract."""
        if self.script is not None:
            entry = self.script
            timeout = self.timeout_s if self.timeout_s is not None else script_scenario.TIMEOUT_S
            cases = [
                script_scenario.case(
                    self.name, entry.path, entry.args, entry.config_dir, timeout, entry.fail_on
                )
            ]
        else:
            cases = scenarios.expand(self.name, self.module, self.params, self.timeout_s)
        if timeout_scale != 1.0:
            cases = [dataclasses.replace(c, timeout_s=c.timeout_s * timeout_scale) for c in cases]
        return cases


@dataclass(frozen=True)
class Expectation:
    """One ``expect:`` entry: cases matching every glob are expected to end with ``outcome``.

    A known incompatibility or a reproduction that is red by design. Globs (``case`` on the case
    id, ``scenario``, ``variant`` on the variant id, ``host`` on the host key, ``signature``) use
    ``*`` and ``?``; brackets are literal (``ddp[backend=*,fault=rank_raises]``). ``index`` is the
    entry's position in the list, for messages (``expect[2]``). ``strict`` (as pytest's
    ``xfail(strict=True)``): a covered case that passes is a problem (exit 1), not a note.
    Matched against results by ``repro.config.expect`` only.
    """

    index: int
    reason: str
    outcome: str = "any-problem"
    case: str = "*"
    scenario: str = "*"
    variant: str = "*"
    host: str = "*"
    signature: str | None = None
    link: str | None = None
    #: Where the entry was written when not in the ``expect:`` list (``scenarios.my_bug.expect``).
    source: str | None = None
    strict: bool = False

    def matches(self, *, scenario: str, case: str, variant: str, host: str) -> bool:
        """Whether a case of this cell is covered by the entry (whatever its outcome)."""
        return (
            glob_match(self.case, case)
            and glob_match(self.scenario, scenario)
            and glob_match(self.variant, variant)
            and glob_match(self.host, host)
        )

    def expects(self, outcome: str, signature: str | None) -> bool:
        """Whether ``outcome`` (and its signature) is the failure this entry predicts."""
        if outcome not in EXPECT_OUTCOMES[:4]:
            return False
        if self.outcome != "any-problem" and outcome != self.outcome:
            return False
        return self.signature is None or glob_match(self.signature, signature or "")

    @property
    def label(self) -> str:
        """``expect[2] (case 'ddp[...]')``: the entry as messages name it."""
        what = ", ".join(
            f"{k} {v!r}"
            for k, v in (
                ("case", self.case),
                ("scenario", self.scenario),
                ("variant", self.variant),
                ("host", self.host),
            )
            if v != "*"
        )
        return (self.source or f"expect[{self.index}]") + (f" ({what})" if what else "")

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields, in the order matrix.json has always used."""
        keys = (
            "index",
            "case",
            "scenario",
            "variant",
            "host",
            "outcome",
            "signature",
            "reason",
            "link",
            "strict",
        )
        return {key: getattr(self, key) for key in keys}


@dataclass(frozen=True)
class Matrix:
    """The validated contents of matrix.yaml. ``path`` is where it was read from."""

    path: Path
    defaults: Mapping[str, Any]
    variants: tuple[Variant, ...]
    scenarios: tuple[ScenarioConfig, ...]
    runners: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    expectations: tuple[Expectation, ...] = ()
    tiers: Mapping[str, Tier] = field(default_factory=dict)
    #: ``runners.<kind>.gpus``: GPUs one runner of that kind should have (repro.config.runners).
    runner_gpus: Mapping[str, int] = field(default_factory=dict)
    #: ``signatures:``: users' signature-row files (repro.signatures.table.with_user_rows).
    signatures: tuple[Path, ...] = ()
    #: ``slurm:``: the Slurm lane's settings (repro.config.slurm), None when absent.
    slurm: SlurmSettings | None = None

    def tier(self, name: str) -> Tier:
        """The CI tier called ``name``. Raises ConfigError naming the known tiers."""
        if name in self.tiers:
            return self.tiers[name]
        known = ", ".join(self.tiers) or "none: add a tiers: section"
        raise ConfigError(f"{self.path}: tiers: no tier {name!r} (known: {known})")

    @property
    def results_dir(self) -> str:
        return str(self.defaults.get("results_dir", "results"))

    @property
    def timeout_scale(self) -> float:
        return float(self.defaults.get("timeout_scale", 1.0))

    def variant(self, variant_id: str) -> Variant:
        """The variant with this exact id. Raises ConfigError with the known ids as hint."""
        for variant in self.variants:
            if variant.id == variant_id:
                return variant
        known = ", ".join(v.id for v in self.variants)
        hint = did_you_mean(variant_id, [v.id for v in self.variants])
        raise ConfigError(
            f"{self.path}: no variant with id {variant_id!r} ({hint + ' ' if hint else ''}known: {known})"
        )

    def select_variants(self, selectors: Sequence[str] | None) -> list[Variant]:
        """Variants whose id matches any glob (see :func:`repro.config.select.select_variants`)."""
        return select_variants(self.variants, selectors, str(self.path))

    def cases(self) -> list[scenarios.Case]:
        """Every case of every enabled scenario, in file order."""
        out: list[scenarios.Case] = []
        for scenario in self.scenarios:
            if scenario.enabled:
                out.extend(scenario.cases(self.timeout_scale))
        return out
