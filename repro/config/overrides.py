"""The override cascade for a variant's build fields: command line > environment > matrix.yaml.

Base image, wheel index URL, wheelhouse and Python may be replaced from the command line
(``--base-image``...) or the environment (``REPRO_BASE_IMAGE``...), so one matrix.yaml serves a
laptop, an air-gapped runner and CI. The command line wins over the environment, which wins over
the file; an empty environment value counts as unset. Each value remembers where it came from,
for the "effective settings" printout. An override is checked exactly as the same matrix.yaml key
(``repro.config.load``: an image reference, a Python version like ``3.12``, printable text), so a
``;`` in ``$REPRO_PYTHON`` or an ESC byte in ``$REPRO_BASE_IMAGE`` is exit 2 naming the variable.
Never imports torch or the Docker SDK.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from repro.config.load import IMAGE_RE, PYTHON_RE, describe
from repro.config.load import _text as is_text
from repro.config.model import Variant
from repro.errors import ConfigError

#: override name -> environment variable
OVERRIDE_ENV = {
    "base_image": "REPRO_BASE_IMAGE",
    "index_url": "REPRO_INDEX_URL",
    "wheelhouse": "REPRO_WHEELHOUSE",
    "python": "REPRO_PYTHON",
}
#: override name -> (pattern or None, what is expected): the checks of the same matrix.yaml key.
_CHECKS = {
    "base_image": (IMAGE_RE, "an image reference like python:3.12-slim"),
    "index_url": (None, "a URL string (may contain {runtime})"),
    "wheelhouse": (None, "a folder of wheels (a path)"),
    "python": (PYTHON_RE, 'a Python version like "3.12"'),
}
#: A venv-lane Python (uv's ``--python``) given as a version: ``3.12``, ``3.12.4``, ``3.13t``.
#: Anything else must be an existing interpreter's path (issue 32: ``'3.11; touch x/'`` and a
#: path that does not exist reached uv and ended as "could not be tested", exit 1).
ENV_PYTHON_RE = re.compile(r"^3\.\d{1,2}(?:\.\d{1,3})?t?$")
#: override name -> its command-line flag (repro/cli/options.py; the image's Python is
#: ``--image-python``, ``--python`` being the interpreter under test)
OVERRIDE_FLAG = {
    "base_image": "--base-image",
    "index_url": "--index-url",
    "wheelhouse": "--wheelhouse",
    "python": "--image-python",
}
#: Overrides that replace a Variant field (``wheelhouse`` is not one: it replaces the index).
VARIANT_FIELDS = ("base_image", "index_url", "python")


@dataclass(frozen=True)
class Overrides:
    """Values that replace the matrix's (name -> value) and where each came from
    (name -> ``--base-image`` or ``$REPRO_BASE_IMAGE``, see :data:`OVERRIDE_FLAG`)."""

    values: Mapping[str, str]
    sources: Mapping[str, str]

    @classmethod
    def collect(
        cls,
        cli: Mapping[str, str | None],
        environ: Mapping[str, str] | None = None,
        python_path: bool = False,
        flags: Mapping[str, str] | None = None,
    ) -> Overrides:
        """The cascade: non-empty ``cli`` values, else non-empty ``environ`` (default
        ``os.environ``) values of :data:`OVERRIDE_ENV`; anything else stays the matrix's.
        ``python_path``: ``python`` may also be an interpreter's path (the venv lane: uv's
        ``--python`` takes either), not only a version. ``flags``: the command's own spelling of an
        override where it differs from :data:`OVERRIDE_FLAG` (venv-run's ``--env-python``).
        Raises ConfigError as :func:`check`."""
        environ = os.environ if environ is None else environ
        values, sources = {}, {}
        for name, env_name in OVERRIDE_ENV.items():
            if cli.get(name):
                values[name], sources[name] = (
                    str(cli[name]),
                    {**OVERRIDE_FLAG, **(flags or {})}[name],
                )
            elif environ.get(env_name):
                values[name], sources[name] = environ[env_name], f"${env_name}"
            if name in values:
                check(name, values[name], sources[name], python_path)
        return cls(values, sources)

    def apply(self, variant: Variant) -> Variant:
        """``variant`` with the overridden fields replaced (``{runtime}`` in an index URL is
        filled in with the variant's runtime)."""
        changes = {k: self.values[k] for k in VARIANT_FIELDS if k in self.values}
        if "index_url" in changes:
            changes["index_url"] = changes["index_url"].replace("{runtime}", variant.runtime)
        return dataclasses.replace(variant, **changes)

    def source(self, name: str) -> str:
        """Where the effective value of ``name`` came from: the option, ``$VAR`` or matrix.yaml."""
        return self.sources.get(name, "matrix.yaml")


def check(name: str, value: str, source: str, python_path: bool = False) -> None:
    """Raise ConfigError (``SOURCE: expected ..., got ...``) unless ``value`` passes the check of
    the matrix.yaml key ``name``: printable text of at most ``repro.config.load.MAX_STRING``
    characters, and for ``base_image`` and ``python`` their patterns (with ``python_path``, a
    ``python`` containing ``/`` is an interpreter's path instead)."""
    pattern, expected = _CHECKS[name]
    if name == "python" and python_path:
        expected = 'a Python version like "3.12" or "3.12.4", or an existing interpreter\'s path'
        pattern = ENV_PYTHON_RE
        if is_text(value) and "/" in value:
            if not (os.path.isfile(value) and os.access(value, os.X_OK)):
                raise ConfigError(
                    f"{source}: {describe(value)} is not an executable file (expected {expected})"
                )
            return
    if not is_text(value) or (pattern is not None and not pattern.match(value)):
        raise ConfigError(f"{source}: expected {expected}, got {describe(value)}")
