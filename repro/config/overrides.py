"""The override cascade for a variant's build fields: command line > environment > matrix.yaml.

Base image, wheel index URL, wheelhouse and Python may be replaced from the command line
(``--base-image``...) or the environment (``REPRO_BASE_IMAGE``...), so one matrix.yaml serves a
laptop, an air-gapped runner and CI. The command line wins over the environment, which wins over
the file; an empty environment value counts as unset. Each value remembers where it came from,
for the "effective settings" printout. Never imports torch or the Docker SDK.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass

from repro.config.model import Variant

#: override name -> environment variable
OVERRIDE_ENV = {
    "base_image": "REPRO_BASE_IMAGE",
    "index_url": "REPRO_INDEX_URL",
    "wheelhouse": "REPRO_WHEELHOUSE",
    "python": "REPRO_PYTHON",
}
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
        cls, cli: Mapping[str, str | None], environ: Mapping[str, str] | None = None
    ) -> Overrides:
        """The cascade: non-empty ``cli`` values, else non-empty ``environ`` (default
        ``os.environ``) values of :data:`OVERRIDE_ENV`; anything else stays the matrix's."""
        environ = os.environ if environ is None else environ
        values, sources = {}, {}
        for name, env_name in OVERRIDE_ENV.items():
            if cli.get(name):
                values[name], sources[name] = str(cli[name]), OVERRIDE_FLAG[name]
            elif environ.get(env_name):
                values[name], sources[name] = environ[env_name], f"${env_name}"
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
