"""The validators of the flag table (:mod:`repro.cli.options`): text -> value, or
``argparse.ArgumentTypeError`` (exit 2, naming the flag). Moved out of the table's module
unchanged (issue 31: modules past 900 lines); ``repro.cli.options`` re-exports them.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
from collections.abc import Callable
from datetime import date

from repro import bounds
from repro.errors import ConfigError


def interpreter_path(text: str) -> str:
    """``--python PATH``: an existing executable file, or a command on PATH (resolved)."""
    if os.sep in text or (os.altsep and os.altsep in text):
        if not os.path.isfile(text):
            raise argparse.ArgumentTypeError(f"{text}: no such file (expected an interpreter)")
        if not os.access(text, os.X_OK):
            raise argparse.ArgumentTypeError(f"{text}: not executable")
        return text
    resolved = shutil.which(text)
    if resolved is None:
        raise argparse.ArgumentTypeError(f"{text}: not found on PATH (expected an interpreter)")
    return resolved


_PY_VERSION = re.compile(r"3\.\d{1,2}\Z")


def python_version(text: str) -> str:
    """``--image-python X.Y``: a CPython 3 minor version such as ``3.11`` (not a path)."""
    if not _PY_VERSION.match(text):
        hint = " (the interpreter under test is --python PATH)" if os.sep in text else ""
        raise argparse.ArgumentTypeError(
            f"expected a Python version X.Y such as 3.11, got {text!r}{hint}"
        )
    return text


def requirement(text: str) -> str:
    """``bisect --with REQ``: one PEP 508 requirement (``torch==2.13.0``, ``numpy<2``), parsed
    with ``packaging.requirements``; an option (``--index-url=...``), a path or anything else
    that is not a requirement is refused (issue 32: it reached uv as an option)."""
    from packaging.requirements import InvalidRequirement, Requirement

    value = text.strip()
    try:
        if value.startswith("-"):
            raise InvalidRequirement("an option, not a requirement")
        Requirement(value)
    except InvalidRequirement as exc:
        why = str(exc).splitlines()[0][:120]
        raise argparse.ArgumentTypeError(
            f"expected a PEP 508 requirement such as torch==2.13.0, got {text[:80]!r} ({why})"
        ) from None
    return value


def iso_day(text: str) -> date:
    """``--as-of YYYY-MM-DD``: a calendar day."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a day YYYY-MM-DD, got {text[:40]!r}") from None


def bounded(bound: bounds.Bound) -> Callable[[str], int | float]:
    """A validator for a number of kind ``bound`` (:mod:`repro.bounds`, the one range codec):
    decimal digits for a whole number (at most 30, so no 5000-digit ``int()``), else a float;
    ``expected <bound.expected>, got ...`` otherwise."""

    def parse(text: str) -> int | float:
        try:
            if bound.integer:
                return bounds.decimal(text, bound, "value")
            value = float(text)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix("value: ")) from None
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {bound.expected}, got {text[:40]!r}"
            ) from None
        if not bound.ok(value):
            raise argparse.ArgumentTypeError(
                f"expected {bound.expected}, got {bounds.shown(value)}"
            )
        return value

    parse.__name__ = bound.expected  # argparse names the type in some messages
    return parse


def variant_id(text: str) -> str:
    """``run --as-variant ID``: one exact id (no glob wildcards, no whitespace); matrix.yaml
    must define it (checked when the file is loaded, with "did you mean")."""
    if not text or any(c in text for c in "*?") or any(c.isspace() for c in text):
        raise argparse.ArgumentTypeError(
            f"expected one variant id such as cu128-torch2.8 (not a glob), got {text!r}"
        )
    return text


def slurm_value(name: str) -> Callable[[str], str]:
    """A validator for the ``slurm:`` field ``name`` given as text (``--partition gpu``): the
    check matrix.yaml's loader applies (:func:`repro.config.slurm.check_field`)."""
    from repro.config import slurm as slurm_config

    def parse(text: str) -> str:
        expected = slurm_config.check_field(name, text)
        if expected:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text[:80]!r}")
        return text

    parse.__name__ = name
    return parse


def node_list(text: str) -> tuple[str, ...]:
    """``--nodelist gpu01,gpu02``: distinct Slurm node names, comma-separated."""
    from repro.config import slurm as slurm_config

    names = tuple(n.strip() for n in text.split(","))
    if not all(slurm_config.NAME_RE.match(n) for n in names) or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(
            f"expected distinct node names separated by commas (gpu01,gpu02), got {text[:80]!r}"
        )
    return names


def variant_glob(text: str) -> str:
    """``--variant GLOB``: a non-empty id or glob."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a variant id or glob, got an empty string")
    return text
