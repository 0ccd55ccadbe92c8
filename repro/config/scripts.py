r"""Parse a bring-your-own-repro entry of matrix.yaml (issue 14, item 4)::

    scenarios:
      my_bug:
        script: repro/my_bug.py        # relative to matrix.yaml's folder, and inside it
        args: ["--steps", "3"]         # strings
        timeout_s: 60
        expect: {outcome: failed, signature: cuda_illegal_instruction, reason: "..."}
        allow_outside: false           # true: the script may live outside the folder (host lane)
        fail_on: [cuda_reinit_in_forked_subprocess, {pattern: 'tensor\(nan\)'}]

Confinement (issue 25): the script, symlinks resolved, must lie inside matrix.yaml's folder,
because the container lane mounts only that folder (read-only, at
``repro.containers.spec.CONTAINER_CONFIG_DIR``) and loads the same file there. A relative path
starts from the folder; an absolute one inside it is accepted too (issue 29: users write
``/home/me/cfg/ok.py``), and inside the container it is mapped to the mount: the container lane
passes the host's folder in ``$REPRO_CONFIG_ORIGIN`` (:data:`CONFIG_ORIGIN_ENV`). ``../x.py``, an
absolute path outside, or a symlink whose target is outside is exit 2 at load on both lanes,
unless the entry says ``allow_outside: true``; such an entry runs on the host lane only, and the
container lane refuses it before starting anything (:func:`check_container_lane`).

The entry becomes a :class:`~repro.config.model.ScenarioConfig` with a
:class:`~repro.config.model.ScriptEntry` (one case, id = the entry's name, run by
``repro.scenarios.script``); an inline ``expect:`` becomes a normal
:class:`~repro.config.model.Expectation` for that case. Problems are added to the loader's
collector (``problems.add(key, expected, got)``), never raised here. Never imports torch.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

from repro import bounds
from repro.config.expect_entries import INLINE_EXPECT_KEYS, parse_entry
from repro.config.model import (
    Expectation,
    ScenarioConfig,
    ScriptEntry,
)
from repro.errors import ConfigError
from repro.scenarios import script as script_scenario

#: Set by the container lane (``repro.containers.spec``) to the host's matrix.yaml folder (as the
#: command line named it, then resolved, ``os.pathsep`` between): an absolute ``script:`` path
#: below it is read below the folder the file was loaded from (the mount).
CONFIG_ORIGIN_ENV = "REPRO_CONFIG_ORIGIN"
#: Keys of a ``script:`` scenario entry.
SCRIPT_KEYS = {"script", "args", "timeout_s", "enabled", "expect", "allow_outside", "fail_on"}
#: Keys of its inline ``expect:`` (the case is the entry itself).
#: Most arguments, and longest argument (characters).
MAX_ARGS = 256
MAX_ARG_CHARS = 4000
#: Most bytes of all arguments together (UTF-8, one NUL each): Linux's ARG_MAX is a quarter of
#: the stack limit (2 MiB under the usual 8 MiB, execve(2)), shared with the environment, and no
#: single string may pass MAX_ARG_STRLEN (128 KiB), which MAX_ARG_CHARS x 4 bytes stays under.
MAX_ARGS_BYTES = 512 * 1024


def is_script_entry(settings: Any) -> bool:
    """Whether a ``scenarios:`` value is a bring-your-own-repro entry (a mapping with ``script``)."""
    return isinstance(settings, dict) and "script" in settings


def parse_script_entry(
    name: str, settings: dict, where: str, problems: Any
) -> ScenarioConfig | None:
    """A validated ``script:`` entry called ``name`` (``where`` = ``scenarios.NAME``), or None
    after adding its problems to ``problems`` (the loader's collector; ``problems.path`` is
    matrix.yaml, whose folder relative script paths start from)."""
    problems.unknown_keys(where, settings, SCRIPT_KEYS)
    allow_outside = settings.get("allow_outside", False)
    if not isinstance(allow_outside, bool):
        problems.add(f"{where}.allow_outside", "true or false", allow_outside)
        return None
    path = _script_path(settings.get("script"), f"{where}.script", problems, allow_outside)
    args = _args(settings.get("args", []), f"{where}.args", problems)
    timeout = settings.get("timeout_s", script_scenario.TIMEOUT_S)
    if not bounds.CASE_SECONDS.ok(timeout):
        problems.add(f"{where}.timeout_s", bounds.CASE_SECONDS.expected, timeout)
    enabled = settings.get("enabled", True)
    if not isinstance(enabled, bool):
        problems.add(f"{where}.enabled", "true or false", enabled)
    fail_on = _fail_on(settings.get("fail_on", []), f"{where}.fail_on", problems)
    if path is None or args is None or not bounds.CASE_SECONDS.ok(timeout):
        return None
    if not isinstance(enabled, bool) or fail_on is None:
        return None
    folder = Path(problems.path).resolve().parent
    entry = ScriptEntry(str(path), tuple(args), str(folder), not _inside(path, folder), fail_on)
    module = script_scenario.__name__
    return ScenarioConfig(name, module, {}, float(timeout), enabled, script=entry)


def inline_expectations(raw_scenarios: Any, first_index: int, problems: Any) -> list[Expectation]:
    """The ``expect:`` of every ``script:`` entry as Expectations for its case, numbered from
    ``first_index`` (after the ``expect:`` list: the report keys entries by index)."""
    out: list[Expectation] = []
    if not isinstance(raw_scenarios, dict):
        return out
    for name, settings in raw_scenarios.items():
        if not is_script_entry(settings) or "expect" not in settings:
            continue
        where = f"scenarios.{name}.expect"
        rule = _expectation(str(name), settings["expect"], where, first_index + len(out), problems)
        if rule is not None:
            out.append(rule)
    return out


def check_container_lane(cases: Any, config_file: str | os.PathLike) -> None:
    """Raise ConfigError (one line naming matrix.yaml and the entry) when a selected ``script:``
    case lies outside ``config_file``'s folder: the container mounts only that folder, so an
    ``allow_outside`` entry runs on the host lane only. ``cases``: ``repro.scenarios.Case``."""
    folder = Path(config_file).resolve().parent
    for case in cases:
        if case.module != script_scenario.__name__:
            continue
        script = str(case.param_dict.get("script", ""))
        if script and not _inside(Path(script).resolve(), folder):
            raise ConfigError(
                f"{config_file}: scenarios.{case.scenario}.allow_outside: expected a script "
                f"inside {folder} on the container lane (only that folder is mounted; "
                f"{script} is outside): move it there or run this entry on the host lane"
            )


def config_origin(config_file: str | os.PathLike) -> str:
    """The value of :data:`CONFIG_ORIGIN_ENV` for a container that mounts ``config_file``'s
    folder: that folder as given (made absolute) and resolved, ``os.pathsep`` between."""
    given = Path(os.path.abspath(config_file)).parent
    return os.pathsep.join(dict.fromkeys([str(given), str(given.resolve())]))


def _mounted(path: Path, folder: Path) -> Path:
    """An absolute ``script:`` path as this process sees it: below ``folder`` when it names a
    file below the host folder the container lane mounted there (:data:`CONFIG_ORIGIN_ENV`),
    else unchanged."""
    for origin in filter(None, os.environ.get(CONFIG_ORIGIN_ENV, "").split(os.pathsep)):
        if os.path.isabs(origin) and path.is_relative_to(origin):
            return folder / path.relative_to(origin)
    return path


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` (resolved) is ``folder`` or below it (``folder`` resolved)."""
    return path.resolve().is_relative_to(folder)


def _script_path(value: Any, key: str, problems: Any, allow_outside: bool) -> Path | None:
    if not isinstance(value, str) or not value.strip() or not value.isprintable():
        problems.add(key, "a path to your repro script, relative to matrix.yaml's folder", value)
        return None
    folder = Path(problems.path).resolve().parent
    path = _mounted(Path(value), folder) if os.path.isabs(value) else (folder / value).absolute()
    if not allow_outside:
        where = None
        if not _inside(path, folder):
            where = "is outside it" if os.path.isabs(value) else f"resolves to {path.resolve()}"
        if where is not None:
            problems.add(
                key,
                f"a path inside matrix.yaml's folder {folder} ({value!r} {where}; the container "
                "lane mounts only that folder; allow_outside: true runs it on the host lane only)",
            )
            return None
    try:
        mode = os.stat(path).st_mode  # follows a symlink: its target must be a regular file
    except OSError as exc:
        problems.add(key, f"an existing file ({path}: {exc.strerror or exc})")
        return None
    if not stat.S_ISREG(mode):
        problems.add(key, f"a regular file ({path} is not one)")
        return None
    if path.suffix != ".py" and not os.access(path, os.X_OK):
        problems.add(
            key, f"a .py script or an executable file ({path} is not executable: chmod +x it)"
        )
        return None
    return path


def _args(value: Any, key: str, problems: Any) -> list[str] | None:
    if not isinstance(value, list) or len(value) > MAX_ARGS:
        problems.add(key, f"a list of at most {MAX_ARGS} strings", value)
        return None
    total = 0
    for index, arg in enumerate(value):
        # No NUL (execve cannot pass it); numbers must be quoted so "1e3" stays "1e3".
        if not isinstance(arg, str) or "\0" in arg or len(arg) > MAX_ARG_CHARS:
            limit = f" of at most {MAX_ARG_CHARS} characters" if isinstance(arg, str) else ""
            problems.add(f"{key}[{index}]", f"a string{limit} (quote numbers and booleans)", arg)
            return None
        total += len(arg.encode("utf-8", "surrogatepass")) + 1
    if total > MAX_ARGS_BYTES:
        problems.add(key, f"arguments of at most {MAX_ARGS_BYTES} bytes in all (got {total})")
        return None
    return list(value)


def _fail_on(value: Any, key: str, problems: Any) -> tuple[tuple[str, str], ...] | None:
    """``fail_on:``: signature names (rows of the table) and ``{pattern: REGEX}`` mappings."""
    from repro.signatures import table  # the table's loader; loading matrix.yaml stays torch-free

    if not isinstance(value, list):
        problems.add(key, "a list of signature names and {pattern: REGEX} mappings", value)
        return None
    out: list[tuple[str, str]] = []
    for index, item in enumerate(value):
        where = f"{key}[{index}]"
        if isinstance(item, str) and table.known(item):
            out.append(("signature", item))
        elif (
            isinstance(item, dict) and set(item) == {"pattern"} and isinstance(item["pattern"], str)
        ):
            try:
                re.compile(item["pattern"])
            except re.error as exc:
                problems.add(f"{where}.pattern", f"a Python regular expression ({exc})", item)
                return None
            out.append(("pattern", item["pattern"]))
        else:
            problems.add(where, "a signature name of the table or {pattern: REGEX}", item)
            return None
    return tuple(out)


def _expectation(name: str, raw: Any, where: str, index: int, problems: Any) -> Expectation | None:
    """A ``script:`` entry's ``expect:`` mapping, about its own case (the one validator:
    :func:`repro.config.expect_entries.parse_entry`)."""
    if not isinstance(raw, dict):
        problems.add(where, "a mapping with outcome, signature, reason, link, strict", raw)
        return None
    return parse_entry(
        raw,
        where,
        index,
        problems,
        keys=INLINE_EXPECT_KEYS,
        reason_says="what the script shows",
        defaults={
            "case": name,
            "scenario": name,
            "reason": f"the repro script of {name} reproduces the bug",
        },
        source=where,
    )
