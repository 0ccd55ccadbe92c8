"""Load and validate ``matrix.yaml`` into a :class:`~repro.config.model.Matrix`.

Every problem is collected before anything is raised, so the user sees them all at once; each
names the file, the key path and what was expected (``matrix.yaml: variants[2].torch: expected a
quoted version string like "2.8.0", got 2.8 (a YAML number)``). Unknown keys are errors. Every
number is range-checked by its :class:`repro.bounds.Bound` (NaN, inf, huge or negative values
are errors, booleans are not numbers, a 400-digit integer is too large, never an OverflowError);
strings that reach case ids, environments or the container are printable and bounded;
case ids are unique across the matrix. The file itself is read by :mod:`repro.config.read`
(regular files, size, encoding, duplicate keys, depth and alias bounds). Never imports torch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repro import bounds, scenarios
from repro.config import expect_entries
from repro.config.ids import canonical_id
from repro.config.limits import shm_leaves_room
from repro.config.model import (
    Expectation,
    Matrix,
    ScenarioConfig,
    Variant,
)
from repro.config.read import HugeNumber, load_yaml
from repro.config.runners import parse_runners
from repro.config.scripts import inline_expectations, is_script_entry, parse_script_entry
from repro.config.select import DEFAULT_FILE
from repro.config.sizes import SIZE_EXPECTED, size_bytes, size_ok
from repro.config.slurm import parse_slurm
from repro.config.tiers import parse_tiers
from repro.errors import ConfigError
from repro.model.variant import accelerator_of
from repro.suggest import did_you_mean

SCHEMA_VERSION = 1
ACCELERATORS = ("cuda", "rocm", "cpu")
RUNTIME_RE = re.compile(r"^(cu\d{3}|rocm\d+(\.\d+){1,2}|cpu)$")
TORCH_RE = re.compile(r"^\d+\.\d+(\.\d+)?([.+-][0-9A-Za-z.+-]*)?$")
PYTHON_RE = re.compile(r"^3\.\d+t?$")
#: A Docker image reference ([registry[:port]/]path[:tag][@digest]), from the grammar of
#: distribution/reference (regexp.go): no shell metacharacters, no control bytes.
_IMAGE_PATH = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE_HOST = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
IMAGE_RE = re.compile(
    rf"^(?:{_IMAGE_HOST}(?:\.{_IMAGE_HOST})*(?::[0-9]+)?/)?{_IMAGE_PATH}(?:/{_IMAGE_PATH})*"
    r"(?::\w[\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$"
)
ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEFAULT_INDEX_URL = "https://download.pytorch.org/whl/{runtime}"
#: Longest case id (characters): it becomes a JUnit name and a log file name.
MAX_CASE_ID = 200
#: Longest string value anywhere a string reaches a case id, an environment or a command.
MAX_STRING = 1000
#: Variant ``env:`` names that would change how the image's Python or loader runs, or forge
#: the runner's own protocol (issue 9: LD_PRELOAD/PYTHONPATH/REPRO_* reached the container).
ENV_DENY_EXACT = frozenset({"LD_PRELOAD", "LD_LIBRARY_PATH", "HOME"})
ENV_DENY_PREFIXES = ("PYTHON", "REPRO_")

_TOP_KEYS = {
    "version",
    "defaults",
    "variants",
    "scenarios",
    "runners",
    "expect",
    "tiers",
    "signatures",
    "slurm",
}
_SIZE_KEYS = ("shm_size", "mem_limit")
_DEFAULT_KEYS = {"python", "index_url", "results_dir", "timeout_scale", "pids_limit", *_SIZE_KEYS}
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
    "pids_limit",
    *_SIZE_KEYS,
}
_SCENARIO_KEYS = {"enabled", "module", "params", "timeout_s"}


class _Problems:
    """Collects validation errors as ``FILE: KEY.PATH: expected ...`` lines."""

    def __init__(self, path: Path):
        self.path = path
        self.lines: list[str] = []

    def add(self, key: str, expected: str, got: Any = ...) -> None:
        suffix = "" if got is ... else f", got {describe(got)}"
        self.lines.append(f"{self.path}: {key}: expected {expected}{suffix}")

    def raw(self, key: str, text: str) -> None:
        """A problem whose text is already a sentence (e.g. a scenario module's ConfigError)."""
        self.lines.append(f"{self.path}: {key}: {text}")

    def unknown_keys(self, key: str, mapping: Mapping[Any, Any], allowed: set[str]) -> None:
        for name in mapping:
            if name not in allowed:
                where = f"{key}.{_shown(name)}" if key else _shown(name)
                hint = did_you_mean(str(name), allowed)
                self.lines.append(
                    f"{self.path}: {where}: unknown key ({hint + ' ' if hint else ''}expected one of: {', '.join(sorted(allowed))})"
                )


def _shown(value: Any) -> str:
    """A key for a message: itself when printable and short, else its repr (cut)."""
    text = str(value)
    if text.isprintable() and len(text) <= 80:
        return text
    return repr(text[:80])


def describe(value: Any) -> str:
    """A YAML value as an error message shows it (typed, escaped, at most ~80 characters)."""
    if isinstance(value, bool):
        return f"{value!r} (a YAML boolean)"
    if isinstance(value, (int, float)):
        return f"{bounds.shown(value)} (a YAML number)"
    if isinstance(value, HugeNumber):
        return repr(value)
    if value is None:
        return "nothing (null)"
    if isinstance(value, str):
        return repr(value[:80]) + ("..." if len(value) > 80 else "")
    return f"a {type(value).__name__}"


def _number(value: Any, key: str, problems: _Problems, bound: bounds.Bound) -> Any:
    """``value`` when ``bound`` accepts it, else None and a problem ``KEY: expected ...``."""
    if not bound.ok(value):
        problems.add(key, bound.expected, value)
        return None
    return value


def _size(value: Any, key: str, problems: _Problems) -> str | None:
    if not size_ok(value):
        problems.add(key, SIZE_EXPECTED, value)
        return None
    return value


def _text(value: Any, limit: int = MAX_STRING) -> bool:
    return isinstance(value, str) and value.isprintable() and len(value) <= limit


def env_name_denied(name: str) -> bool:
    """Whether a variant may not set ``name`` (see :data:`ENV_DENY_EXACT`/``_PREFIXES``)."""
    return name in ENV_DENY_EXACT or name.startswith(ENV_DENY_PREFIXES)


def load(path: str | Path = DEFAULT_FILE) -> Matrix:
    """Read and validate a matrix file.

    Raises:
        ConfigError: the file is missing, not a regular file, too large, not UTF-8, not YAML,
            or has any invalid field. The message holds one line per problem (all of them).
    """
    path = Path(path)
    return parse(load_yaml(path), path)


def parse(data: Any, path: Path) -> Matrix:
    """Validate already-parsed YAML ``data`` (see :func:`load`)."""
    problems = _Problems(path)
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: (top level): expected a mapping with keys {', '.join(sorted(_TOP_KEYS))}, got {describe(data)}"
        )
    problems.unknown_keys("", data, _TOP_KEYS)
    version = data.get("version")
    if type(version) is not int or version != SCHEMA_VERSION:  # True == 1 in Python
        problems.add("version", f"{SCHEMA_VERSION}", version)

    defaults = _parse_defaults(data.get("defaults", {}), problems)
    variants = _parse_variants(data.get("variants", []), defaults, problems)
    scenario_configs = _parse_scenarios(data.get("scenarios", {}), problems)
    runners, runner_gpus = parse_runners(data.get("runners", {}), problems)
    expectations = expect_entries.parse_list(data.get("expect", []), problems)
    next_index = max((e.index for e in expectations), default=-1) + 1
    expectations += inline_expectations(data.get("scenarios"), next_index, problems)
    next_index = max((e.index for e in expectations), default=-1) + 1
    expectations += _module_expectations(scenario_configs, next_index, problems)
    enabled = {s.name for s in scenario_configs if s.enabled}
    tiers = parse_tiers(data.get("tiers", {}), enabled, problems)
    signatures = _parse_signatures(data.get("signatures"), path, problems)
    slurm = parse_slurm(data.get("slurm"), problems)

    if problems.lines:
        raise ConfigError("\n".join(problems.lines))
    matrix = Matrix(
        path,
        defaults,
        tuple(variants),
        tuple(scenario_configs),
        runners,
        tuple(expectations),
        tiers,
        runner_gpus=runner_gpus,
        signatures=signatures,
        slurm=slurm,
    )
    _check_case_ids(matrix, problems)
    if problems.lines:
        raise ConfigError("\n".join(problems.lines))
    return matrix


def _parse_signatures(raw: Any, path: Path, problems: _Problems) -> tuple[Path, ...]:
    """``signatures: FILE`` (or a list of files), relative to the matrix file: users' own rows
    of the signature table, same schema as repro/data/signatures.yaml, validated here (issue 21)."""
    if raw is None:
        return ()
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not all(isinstance(i, str) and i.strip() for i in items):
        problems.add("signatures", "a file name (or a list of them) of signature rows", raw)
        return ()
    files = tuple(path.parent / item for item in items)
    from repro.signatures import table  # the table's own loader names file, row and field

    try:
        table.with_user_rows(files)
    except ConfigError as exc:
        problems.raw("signatures", str(exc).replace("\n", "; "))
    return files


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
    if not _text(out["index_url"]):
        problems.add("defaults.index_url", "a URL string (may contain {runtime})", out["index_url"])
    for key in _SIZE_KEYS:
        if key in out and _size(out[key], f"defaults.{key}", problems) is None:
            out.pop(key)
    if (
        "pids_limit" in out
        and _number(out["pids_limit"], "defaults.pids_limit", problems, bounds.PIDS_LIMIT) is None
    ):
        out.pop("pids_limit")
    if not _text(out["results_dir"]) or not out["results_dir"]:
        problems.add("defaults.results_dir", "a directory path", out["results_dir"])
    if "timeout_scale" in out and (
        _number(out["timeout_scale"], "defaults.timeout_scale", problems, bounds.TIMEOUT_SCALE)
        is None
    ):
        out.pop("timeout_scale")
    return out


def _str_field(
    raw: dict, key: str, where: str, problems: _Problems, pattern: re.Pattern | None, expected: str
) -> str | None:
    value = raw.get(key)
    if not _text(value) or not value or (pattern is not None and not pattern.match(value)):
        problems.add(f"{where}.{key}", expected, value)
        return None
    return value


def _parse_env(raw: Any, where: str, problems: _Problems) -> dict[str, str]:
    if not isinstance(raw, dict):
        problems.add(f"{where}.env", "a mapping of NAME: string", raw)
        return {}
    out = {}
    for name, value in raw.items():
        key = f"{where}.env.{_shown(name)}"
        if not isinstance(name, str) or not ENV_NAME_RE.match(name):
            problems.add(key, "an environment variable name (letters, digits, _)", name)
        elif env_name_denied(name):
            problems.add(
                key,
                "a name outside the deny-list (LD_PRELOAD, LD_LIBRARY_PATH, PYTHON*, REPRO_*, HOME): "
                "it would change how the image's loader or Python runs, or forge the runner's protocol",
            )
        elif not (_text(value) or bounds.PARAM_NUMBER.ok(value)):
            problems.add(key, f"a printable string (or {bounds.PARAM_NUMBER.expected})", value)
        else:
            out[name] = str(value)
    return out


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
            IMAGE_RE,
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
        if not _text(index_url):
            problems.add(f"{where}.index_url", "a URL string", index_url)
            index_url = None
        extra = item.get("extra_packages", [])
        if not isinstance(extra, list) or not all(_text(p) for p in extra):
            problems.add(f"{where}.extra_packages", "a list of requirement strings", extra)
            extra = []
        env = _parse_env(item.get("env", {}), where, problems)
        sizes = {}
        for key in _SIZE_KEYS:
            value = item.get(key, defaults.get(key))
            sizes[key] = value if key not in item else _size(value, f"{where}.{key}", problems)
        mem_limit = sizes["mem_limit"]
        shm = sizes["shm_size"]
        if mem_limit and shm and not shm_leaves_room(size_bytes(shm), size_bytes(mem_limit)):
            problems.add(
                f"{where}.mem_limit",
                f"a size above shm_size {shm} (/dev/shm pages count against the container's "
                "memory limit; leave mem_limit out for shm_size + 8g)",
                mem_limit,
            )
        pids = item.get("pids_limit", defaults.get("pids_limit"))
        if "pids_limit" in item:
            pids = _number(pids, f"{where}.pids_limit", problems, bounds.PIDS_LIMIT)
        if not (runtime and torch and base_image and index_url):
            continue
        variant_id = item.get("id", canonical_id(runtime, torch))
        if not isinstance(variant_id, str) or not ID_RE.match(variant_id) or len(variant_id) > 100:
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
                env=tuple(sorted(env.items())),
                shm_size=sizes["shm_size"],
                mem_limit=mem_limit,
                pids_limit=int(pids) if pids else None,
            )
        )
    return variants


def _param_value_ok(value: Any) -> bool:
    """A case parameter: a finite number, a boolean, null or a short printable string (it goes
    into the case id, a JUnit name and a log file name)."""
    if value is None or isinstance(value, bool):
        return True
    return bounds.PARAM_NUMBER.ok(value) or _text(value, 100)


def _parse_params(raw: Any, where: str, axes: Mapping[str, Any], problems: _Problems) -> dict:
    params: dict[str, tuple[Any, ...]] = {}
    if not isinstance(raw, dict):
        problems.add(f"{where}.params", "a mapping of axis name to a list of values", raw)
        return params
    for axis, values in raw.items():
        key = f"{where}.params.{_shown(axis)}"
        if axis not in axes:
            problems.add(key, f"one of the scenario's axes ({', '.join(axes)})")
        elif not isinstance(values, list) or not values:
            problems.add(key, "a non-empty list of values", values)
        else:
            bad = [i for i, v in enumerate(values) if not _param_value_ok(v)]
            if bad:
                problems.add(
                    f"{key}[{bad[0]}]",
                    "a printable string of at most 100 characters, "
                    f"{bounds.PARAM_NUMBER.expected}, true/false or null",
                    values[bad[0]],
                )
            else:
                params[axis] = tuple(values)
    return params


#: The ``scenarios:`` key that stands for every other built-in scenario run by default
#: (``repro.scenarios.by_default``), at its place in the order.
EVERY_BUILTIN = "*"


def _parse_scenarios(raw: Any, problems: _Problems) -> list[ScenarioConfig]:
    """``scenarios:``: built-in names (settings optional), ``module:`` and ``script:`` entries,
    in the file's order. A ``"*"`` entry (:data:`EVERY_BUILTIN`, no settings) adds, where it
    stands, every built-in scenario of ``repro.scenarios.by_default`` the file does not name,
    alphabetically: a scenario module added to the package then runs with no edit here."""
    if not isinstance(raw, dict):
        problems.add("scenarios", "a mapping of scenario name to settings", raw)
        return []
    out: list[ScenarioConfig] = []
    for name, settings in raw.items():
        where = f"scenarios.{_shown(name)}"
        if name == EVERY_BUILTIN:
            if settings not in (None, {}):
                problems.add(
                    where,
                    "nothing: it stands for every other built-in scenario at its defaults"
                    " (name one to set its timeout_s or params)",
                    settings,
                )
                continue
            named = set(raw)
            for other in scenarios.by_default():
                if other in named:
                    continue
                try:
                    scenarios.load(other)
                except ConfigError as exc:
                    problems.raw(where, str(exc))
                    continue
                out.append(ScenarioConfig(other, None, {}, None, True))
            continue
        if not isinstance(name, str) or not scenarios.NAME_RE.match(name):
            problems.add(where, "a scenario name (letters, digits, _)")
            continue
        if settings is None:
            settings = {}
        if is_script_entry(settings):  # bring your own repro: repro.config.scripts
            config = parse_script_entry(name, settings, where, problems)
            out.extend([config] if config else [])
            continue
        if not isinstance(settings, dict):
            problems.add(
                where, "a mapping (or nothing) with enabled, module, params, timeout_s", settings
            )
            continue
        problems.unknown_keys(where, settings, _SCENARIO_KEYS)
        module = settings.get("module")
        if module is not None and not (_text(module, 200) and scenarios.MODULE_RE.match(module)):
            problems.add(f"{where}.module", "an importable module path", module)
            continue
        if module is None and name not in scenarios.builtin():
            hint = did_you_mean(str(name), scenarios.builtin())
            problems.add(
                where,
                f"a built-in scenario ({', '.join(scenarios.builtin())}) or a `module:` path"
                + (f"; {hint}" if hint else ""),
            )
            continue
        try:
            mod = scenarios.load(name, module)
        except ConfigError as exc:
            problems.raw(f"{where}.module" if module else where, str(exc))
            continue
        timeout = settings.get("timeout_s")
        if timeout is not None:
            timeout = _number(timeout, f"{where}.timeout_s", problems, bounds.CASE_SECONDS)
        enabled = settings.get("enabled", True)
        if not isinstance(enabled, bool):
            problems.add(f"{where}.enabled", "true or false", enabled)
            enabled = True
        params = _parse_params(settings.get("params", {}) or {}, where, mod.PARAMS, problems)
        out.append(
            ScenarioConfig(name, module, params, float(timeout) if timeout else None, enabled)
        )
    return out


def _check_case_ids(matrix: Matrix, problems: _Problems) -> None:
    """Every case id printable, at most MAX_CASE_ID characters and unique across the matrix."""
    seen: dict[str, str] = {}
    for config in matrix.scenarios:
        where = f"scenarios.{config.name}"
        try:
            cases = config.cases(matrix.timeout_scale)
        except ConfigError as exc:
            problems.raw(where, str(exc))
            continue
        for case in cases:
            case_id = case.case_id
            if not case_id.isprintable() or len(case_id) > MAX_CASE_ID:
                problems.add(
                    f"{where}.params",
                    f"values giving printable case ids of at most {MAX_CASE_ID} characters",
                    case_id,
                )
                break
            if case_id in seen:
                problems.add(
                    f"{where}.params",
                    f"unique case ids ({case_id!r} is also a case of {seen[case_id]}; a repeated value?)",
                )
                break
            seen[case_id] = where


def _module_expectations(
    configs: list[ScenarioConfig], first_index: int, problems: _Problems
) -> list[Expectation]:
    """The ``EXPECT`` of every scenario module in ``configs`` (``script:`` entries have their
    own ``expect:``), after matrix.yaml's entries, which therefore win where both match: the
    file's ``expect:`` overrides a module's (the report applies the first matching entry)."""
    out: list[Expectation] = []
    for config in configs:
        if config.script is not None:
            continue
        try:
            raw = getattr(scenarios.load(config.name, config.module), "EXPECT", None)
        except ConfigError:  # already reported by _parse_scenarios
            continue
        name = f"{scenarios.module_name(config.name, config.module)}.EXPECT"
        out += expect_entries.parse_list(raw, problems, name, first_index + len(out), config.name)
    return out
