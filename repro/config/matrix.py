"""Load and validate ``matrix.yaml``: variants, scenario selection, timeouts, runner labels.

Every problem is collected before anything is raised, so the user sees them all at once; each
names the file, the key path and what was expected (``matrix.yaml: variants[2].torch: expected a
quoted version string like "2.8.0", got 2.8 (a YAML number)``). Unknown keys are errors.
Variant ids are canonical (``<runtime>-torch<major.minor>``, e.g. ``cu128-torch2.8``) and are
selected by glob (``cu12*-torch2.8``); a selector that matches nothing is an error with a hint.
``expect:`` lists known incompatibilities (cases expected to fail, with a reason and a link) that
the report shows as "expected" instead of red.

Never imports torch.
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from repro import scenarios
from repro.errors import ConfigError

DEFAULT_FILE = "matrix.yaml"
SCHEMA_VERSION = 1
ACCELERATORS = ("cuda", "rocm", "cpu")
RUNTIME_RE = re.compile(r"^(cu\d{3}|rocm\d+(\.\d+){1,2}|cpu)$")
TORCH_RE = re.compile(r"^\d+\.\d+(\.\d+)?([.+-][0-9A-Za-z.+-]*)?$")
PYTHON_RE = re.compile(r"^3\.\d+t?$")
ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
SHM_RE = re.compile(r"^\d+[kmgKMG]?[bB]?$")
DEFAULT_INDEX_URL = "https://download.pytorch.org/whl/{runtime}"

_TOP_KEYS = {"version", "defaults", "variants", "scenarios", "runners", "expect"}
_DEFAULT_KEYS = {"python", "index_url", "shm_size", "results_dir", "timeout_scale"}
_VARIANT_KEYS = {
    "id",
    "runtime",
    "accelerator",
    "torch",
    "index_url",
    "base_image",
    "python",
    "extra_packages",
    "env",
    "shm_size",
}
_SCENARIO_KEYS = {"enabled", "module", "params", "timeout_s"}
_EXPECT_KEYS = {"case", "scenario", "variant", "host", "outcome", "signature", "reason", "link"}
#: What an ``expect:`` entry may predict; ``any-problem`` is any of the other four.
EXPECT_OUTCOMES = ("failed", "hung", "crashed", "error", "any-problem")


@dataclass(frozen=True)
class Variant:
    """One image/column of the matrix: torch pin x runtime x base image x Python.

    ``shm_size`` is a Docker size string (``"8g"``); ``env`` is passed into the container.
    """

    id: str
    runtime: str
    accelerator: str
    torch: str
    index_url: str
    base_image: str
    python: str
    extra_packages: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    shm_size: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "runtime": self.runtime,
            "accelerator": self.accelerator,
            "torch": self.torch,
            "index_url": self.index_url,
            "base_image": self.base_image,
            "python": self.python,
            "extra_packages": list(self.extra_packages),
            "env": dict(self.env),
            "shm_size": self.shm_size,
        }


@dataclass(frozen=True)
class ScenarioConfig:
    """A scenario as selected in matrix.yaml: axis overrides and timeout (seconds)."""

    name: str
    module: str | None
    params: Mapping[str, tuple[Any, ...]]
    timeout_s: float | None
    enabled: bool = True

    def cases(self, timeout_scale: float = 1.0) -> list[scenarios.Case]:
        cases = scenarios.expand(self.name, self.module, self.params, self.timeout_s)
        if timeout_scale != 1.0:
            cases = [dataclasses.replace(c, timeout_s=c.timeout_s * timeout_scale) for c in cases]
        return cases


@functools.lru_cache(maxsize=4096)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(
        "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern) + r"\Z",
        re.DOTALL,
    )


def glob_match(pattern: str, text: str) -> bool:
    """``*`` and ``?`` wildcards only: ``[`` and ``]`` are literal, as case ids contain them."""
    return _glob_regex(pattern).match(text) is not None


@dataclass(frozen=True)
class Expectation:
    """One ``expect:`` entry: cases matching every glob are expected to end with ``outcome``.

    A known incompatibility or a reproduction that is red by design. Globs (``case`` on the case
    id, ``scenario``, ``variant`` on the variant id, ``host`` on the host key, ``signature``) use
    ``*`` and ``?``; brackets are literal (``ddp[backend=*,fault=rank_raises]``). ``index`` is the
    entry's position in the list, for messages (``expect[2]``).
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
        return f"expect[{self.index}]" + (f" ({what})" if what else "")

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "case": self.case,
            "scenario": self.scenario,
            "variant": self.variant,
            "host": self.host,
            "outcome": self.outcome,
            "signature": self.signature,
            "reason": self.reason,
            "link": self.link,
        }


@dataclass(frozen=True)
class Matrix:
    """The validated contents of matrix.yaml. ``path`` is where it was read from."""

    path: Path
    defaults: Mapping[str, Any]
    variants: tuple[Variant, ...]
    scenarios: tuple[ScenarioConfig, ...]
    runners: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    expectations: tuple[Expectation, ...] = ()

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
        raise ConfigError(f"{self.path}: no variant with id {variant_id!r} (known: {known})")

    def select_variants(self, selectors: Sequence[str] | None) -> list[Variant]:
        """Variants whose id matches any glob in ``selectors`` (all when empty), file order.

        Raises ConfigError naming each selector that matches nothing, with the known ids.
        """
        if not selectors:
            return list(self.variants)
        unmatched = [
            s for s in selectors if not any(fnmatch.fnmatchcase(v.id, s) for v in self.variants)
        ]
        if unmatched:
            known = ", ".join(v.id for v in self.variants)
            raise ConfigError(
                f"{self.path}: variant selector {', '.join(repr(s) for s in unmatched)} matches no variant id",
                hint=f"ids are <runtime>-torch<major.minor>; known: {known}",
            )
        return [v for v in self.variants if any(fnmatch.fnmatchcase(v.id, s) for s in selectors)]

    def cases(self) -> list[scenarios.Case]:
        """Every case of every enabled scenario, in file order."""
        out: list[scenarios.Case] = []
        for scenario in self.scenarios:
            if scenario.enabled:
                out.extend(scenario.cases(self.timeout_scale))
        return out


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    """The ``--config PATH`` option every command that reads matrix.yaml takes."""
    parser.add_argument(
        "--config",
        default=DEFAULT_FILE,
        metavar="PATH",
        help="matrix file (default: %(default)s)",
    )


def add_case_selector_argument(parser: argparse.ArgumentParser) -> None:
    """The repeatable ``-k PATTERN`` option whose values :func:`select_cases` applies."""
    parser.add_argument(
        "-k",
        dest="patterns",
        action="append",
        metavar="PATTERN",
        help="run only cases whose id contains PATTERN or matches the glob (repeatable)",
    )


def select_cases(
    cases: Sequence[scenarios.Case], patterns: Sequence[str] | None
) -> list[scenarios.Case]:
    """Cases whose id matches any pattern: a glob (``dataloader[*fork*``) or, without glob
    characters, a substring (``fork_safety``). Raises ConfigError when a pattern matches nothing."""
    if not patterns:
        return list(cases)

    def matches(case: scenarios.Case, pattern: str) -> bool:
        if any(ch in pattern for ch in "*?"):
            return fnmatch.fnmatchcase(case.case_id, pattern)
        return pattern in case.case_id

    unmatched = [p for p in patterns if not any(matches(c, p) for c in cases)]
    if unmatched:
        raise ConfigError(
            f"case selector {', '.join(repr(p) for p in unmatched)} matches no case",
            hint="`repro run --list` shows the case ids; globs use * and ? (quote them for the shell)",
        )
    return [c for c in cases if any(matches(c, p) for p in patterns)]


def canonical_id(runtime: str, torch: str) -> str:
    """``cu128`` + ``2.8.0`` -> ``cu128-torch2.8``."""
    major_minor = ".".join(re.split(r"[.+-]", torch)[:2])
    return f"{runtime}-torch{major_minor}"


def accelerator_of(runtime: str) -> str:
    """``cu128`` -> cuda, ``rocm6.4`` -> rocm, ``cpu`` -> cpu."""
    if runtime.startswith("cu"):
        return "cuda"
    if runtime.startswith("rocm"):
        return "rocm"
    return "cpu"


class _Problems:
    """Collects validation errors as ``FILE: KEY.PATH: expected ...`` lines."""

    def __init__(self, path: Path):
        self.path = path
        self.lines: list[str] = []

    def add(
        self,
        key: str,
        expected: str,
        got: Any = ...,
    ) -> None:
        suffix = "" if got is ... else f", got {_describe(got)}"
        self.lines.append(f"{self.path}: {key}: expected {expected}{suffix}")

    def unknown_keys(self, key: str, mapping: Mapping[str, Any], allowed: set[str]) -> None:
        for name in mapping:
            if name not in allowed:
                where = f"{key}.{name}" if key else str(name)
                self.lines.append(
                    f"{self.path}: {where}: unknown key (expected one of: {', '.join(sorted(allowed))})"
                )


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"{value!r} (a YAML boolean)"
    if isinstance(value, (int, float)):
        return f"{value!r} (a YAML number)"
    if value is None:
        return "nothing (null)"
    if isinstance(value, str):
        return repr(value)
    return f"a {type(value).__name__}"


def load(path: str | Path = DEFAULT_FILE) -> Matrix:
    """Read and validate a matrix file.

    Raises:
        ConfigError: the file is missing, is not YAML, or has any invalid field. The message
            holds one line per problem (all problems, not just the first).
    """
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: file not found", hint="run from the project root or pass --config PATH"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}: not valid YAML{where}: {problem}") from None
    return parse(data, path)


def parse(data: Any, path: Path) -> Matrix:
    """Validate already-parsed YAML ``data`` (see :func:`load`)."""
    problems = _Problems(path)
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: (top level): expected a mapping with keys {', '.join(sorted(_TOP_KEYS))}, got {_describe(data)}"
        )
    problems.unknown_keys("", data, _TOP_KEYS)
    if data.get("version") != SCHEMA_VERSION:
        problems.add("version", f"{SCHEMA_VERSION}", data.get("version"))

    defaults = _parse_defaults(data.get("defaults", {}), problems)
    variants = _parse_variants(data.get("variants", []), defaults, problems)
    scenario_configs = _parse_scenarios(data.get("scenarios", {}), problems)
    runners = _parse_runners(data.get("runners", {}), problems)
    expectations = _parse_expect(data.get("expect", []), problems)

    if problems.lines:
        raise ConfigError("\n".join(problems.lines))
    return Matrix(
        path, defaults, tuple(variants), tuple(scenario_configs), runners, tuple(expectations)
    )


def _parse_defaults(raw: Any, problems: _Problems) -> dict[str, Any]:
    if not isinstance(raw, dict):
        problems.add("defaults", "a mapping", raw)
        return {}
    problems.unknown_keys("defaults", raw, _DEFAULT_KEYS)
    out = dict(raw)
    out.setdefault("python", "3.12")
    out.setdefault("index_url", DEFAULT_INDEX_URL)
    out.setdefault("results_dir", "results")
    if not isinstance(out["python"], str) or not PYTHON_RE.match(out["python"]):
        problems.add("defaults.python", 'a quoted Python version like "3.12"', out["python"])
    if not isinstance(out["index_url"], str):
        problems.add("defaults.index_url", "a URL string (may contain {runtime})", out["index_url"])
    if "shm_size" in out and not (
        isinstance(out["shm_size"], str) and SHM_RE.match(out["shm_size"])
    ):
        problems.add("defaults.shm_size", 'a Docker size like "8g"', out["shm_size"])
    if not isinstance(out["results_dir"], str):
        problems.add("defaults.results_dir", "a directory path", out["results_dir"])
    scale = out.get("timeout_scale", 1.0)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or scale <= 0:
        problems.add("defaults.timeout_scale", "a positive number", scale)
    return out


def _str_field(
    raw: dict, key: str, where: str, problems: _Problems, pattern: re.Pattern | None, expected: str
) -> str | None:
    value = raw.get(key)
    if not isinstance(value, str) or (pattern is not None and not pattern.match(value)):
        problems.add(f"{where}.{key}", expected, value)
        return None
    return value


def _parse_variants(raw: Any, defaults: dict[str, Any], problems: _Problems) -> list[Variant]:
    if not isinstance(raw, list):
        problems.add("variants", "a list of variants", raw)
        return []
    variants: list[Variant] = []
    seen: dict[str, str] = {}
    for index, item in enumerate(raw):
        where = f"variants[{index}]"
        if not isinstance(item, dict):
            problems.add(where, "a mapping with runtime, torch, base_image", item)
            continue
        problems.unknown_keys(where, item, _VARIANT_KEYS)
        runtime = _str_field(
            item, "runtime", where, problems, RUNTIME_RE, "a runtime tag like cu128, rocm6.4 or cpu"
        )
        torch = _str_field(
            item, "torch", where, problems, TORCH_RE, 'a quoted version string like "2.8.0"'
        )
        base_image = _str_field(
            item,
            "base_image",
            where,
            problems,
            None,
            "an image reference like nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04",
        )
        python = item.get("python", defaults.get("python"))
        # An inherited bad default is reported once, at defaults.python, not per variant.
        if "python" in item and (not isinstance(python, str) or not PYTHON_RE.match(python)):
            problems.add(f"{where}.python", 'a quoted Python version like "3.12"', python)
        accelerator = item.get("accelerator", accelerator_of(runtime) if runtime else None)
        if runtime is None and "accelerator" not in item:
            pass  # already reported: the runtime it would be derived from is invalid
        elif accelerator not in ACCELERATORS:
            problems.add(f"{where}.accelerator", f"one of {', '.join(ACCELERATORS)}", accelerator)
        elif runtime and accelerator != accelerator_of(runtime):
            problems.add(
                f"{where}.accelerator",
                f"{accelerator_of(runtime)} for runtime {runtime}",
                accelerator,
            )
        index_url = item.get("index_url", defaults.get("index_url", DEFAULT_INDEX_URL))
        if not isinstance(index_url, str):
            problems.add(f"{where}.index_url", "a URL string", index_url)
        extra = item.get("extra_packages", [])
        if not isinstance(extra, list) or not all(isinstance(p, str) for p in extra):
            problems.add(f"{where}.extra_packages", "a list of requirement strings", extra)
            extra = []
        env = item.get("env", {})
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, (str, int, float)) and not isinstance(v, bool)
            for k, v in env.items()
        ):
            problems.add(f"{where}.env", "a mapping of NAME: string", env)
            env = {}
        shm = item.get("shm_size", defaults.get("shm_size"))
        if shm is not None and not (isinstance(shm, str) and SHM_RE.match(shm)):
            problems.add(f"{where}.shm_size", 'a Docker size like "8g"', shm)
        if not (runtime and torch and base_image and isinstance(index_url, str)):
            continue
        variant_id = item.get("id", canonical_id(runtime, torch))
        if not isinstance(variant_id, str) or not ID_RE.match(variant_id):
            problems.add(f"{where}.id", "lower-case letters, digits, '.', '_' or '-'", variant_id)
            continue
        if variant_id in seen:
            problems.add(
                f"{where}.id",
                f"a unique id ({variant_id!r} is also {seen[variant_id]}; set `id` to tell them apart)",
            )
            continue
        seen[variant_id] = where
        variants.append(
            Variant(
                id=variant_id,
                runtime=runtime,
                accelerator=str(accelerator),
                torch=torch,
                index_url=index_url.replace("{runtime}", runtime),
                base_image=base_image,
                python=str(python),
                extra_packages=tuple(extra),
                env=tuple(sorted((k, str(v)) for k, v in env.items())),
                shm_size=shm,
            )
        )
    return variants


def _parse_scenarios(raw: Any, problems: _Problems) -> list[ScenarioConfig]:
    if not isinstance(raw, dict):
        problems.add("scenarios", "a mapping of scenario name to settings", raw)
        return []
    out: list[ScenarioConfig] = []
    for name, settings in raw.items():
        where = f"scenarios.{name}"
        if settings is None:
            settings = {}
        if not isinstance(settings, dict):
            problems.add(
                where, "a mapping (or nothing) with enabled, module, params, timeout_s", settings
            )
            continue
        problems.unknown_keys(where, settings, _SCENARIO_KEYS)
        module = settings.get("module")
        if module is not None and not isinstance(module, str):
            problems.add(f"{where}.module", "an importable module path", module)
            continue
        if module is None and name not in scenarios.BUILTIN:
            problems.add(
                where, f"a built-in scenario ({', '.join(scenarios.BUILTIN)}) or a `module:` path"
            )
            continue
        try:
            mod = scenarios.load(name, module)
        except (ImportError, AttributeError) as exc:
            problems.add(
                f"{where}.module" if module else where, "an importable scenario module", f"{exc}"
            )
            continue
        timeout = settings.get("timeout_s")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0
        ):
            problems.add(f"{where}.timeout_s", "a positive number of seconds", timeout)
            timeout = None
        enabled = settings.get("enabled", True)
        if not isinstance(enabled, bool):
            problems.add(f"{where}.enabled", "true or false", enabled)
            enabled = True
        params_raw = settings.get("params", {}) or {}
        params: dict[str, tuple[Any, ...]] = {}
        if not isinstance(params_raw, dict):
            problems.add(
                f"{where}.params", "a mapping of axis name to a list of values", params_raw
            )
        else:
            for axis, values in params_raw.items():
                if axis not in mod.PARAMS:
                    problems.add(
                        f"{where}.params.{axis}",
                        f"one of the scenario's axes ({', '.join(mod.PARAMS)})",
                    )
                elif not isinstance(values, list) or not values:
                    problems.add(f"{where}.params.{axis}", "a non-empty list of values", values)
                else:
                    params[axis] = tuple(values)
        out.append(
            ScenarioConfig(name, module, params, float(timeout) if timeout else None, enabled)
        )
    return out


def _parse_runners(raw: Any, problems: _Problems) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, dict):
        problems.add("runners", "a mapping of host kind to a list of runner labels", raw)
        return {}
    out = {}
    for kind, labels in raw.items():
        if (
            not isinstance(labels, list)
            or not labels
            or not all(isinstance(x, str) for x in labels)
        ):
            problems.add(f"runners.{kind}", "a non-empty list of runner label strings", labels)
            continue
        out[str(kind)] = tuple(labels)
    return out


def _parse_expect(raw: Any, problems: _Problems) -> list[Expectation]:
    """``expect:``: a list of {case|scenario, variant?, host?, outcome?, signature?, reason, link?}."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.add(
            "expect",
            "a list of entries like {case: GLOB, outcome: failed, reason: TEXT, link: URL}",
            raw,
        )
        return []
    out: list[Expectation] = []
    for index, item in enumerate(raw):
        where = f"expect[{index}]"
        if not isinstance(item, dict):
            problems.add(where, "a mapping with case (or scenario), outcome, reason and link", item)
            continue
        problems.unknown_keys(where, item, _EXPECT_KEYS)
        ok = True
        globs: dict[str, str] = {}
        for key in ("case", "scenario", "variant", "host", "signature"):
            if key not in item:
                continue
            value = item[key]
            if not isinstance(value, str) or not value.strip():
                problems.add(
                    f"{where}.{key}",
                    "a non-empty glob string (* and ? are wildcards, brackets are literal)",
                    value,
                )
                ok = False
            else:
                globs[key] = value.strip()
        if "case" not in item and "scenario" not in item:
            problems.add(
                where,
                'a `case` glob (e.g. "ddp[backend=*,fault=rank_raises]") or a `scenario` glob',
            )
            ok = False
        outcome = item.get("outcome", "any-problem")
        if outcome not in EXPECT_OUTCOMES:
            problems.add(f"{where}.outcome", f"one of {', '.join(EXPECT_OUTCOMES)}", outcome)
            ok = False
        reason = item.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            problems.add(
                f"{where}.reason",
                "a non-empty string saying why the case fails (the known incompatibility)",
                reason,
            )
            ok = False
        link = item.get("link")
        if link is not None and not (
            isinstance(link, str) and re.match(r"^https?://\S+$", link.strip())
        ):
            problems.add(
                f"{where}.link", "an http(s) URL of the issue or document behind the reason", link
            )
            ok = False
        if ok:
            out.append(
                Expectation(
                    index=index,
                    reason=str(reason).strip(),
                    outcome=str(outcome),
                    case=globs.get("case", "*"),
                    scenario=globs.get("scenario", "*"),
                    variant=globs.get("variant", "*"),
                    host=globs.get("host", "*"),
                    signature=globs.get("signature"),
                    link=link.strip() if isinstance(link, str) else None,
                )
            )
    return out
