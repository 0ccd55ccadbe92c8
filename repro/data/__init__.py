"""The index of data files shipped inside the package: every file the code reads from
``repro/data/`` is named here, so packaging (pyproject's package-data) and tests check one list.

- ``compat-facts.yaml``: published compatibility facts, a copy of ``../shared/compat/compat-facts.yaml``
  (refreshed by hand; ``tests/test_compat.py`` fails when the two differ).
- ``compat-facts-history.yaml``: the same kinds of facts for torch 1.0-2.3 and CUDA 8-11.7, the
  conda channel, PyPI's Python and platforms per release; merged into the facts above (it only adds keys).
- ``compat-extra.yaml``: facts repro.compat needs that the shared file lacks (published torch
  patch releases, PyPI wheels, CUDA forward compatibility in images), each with its source.
- ``signatures.yaml``: the signature table, one row per failure name repro can emit
  (``repro.signatures.table`` loads and validates it).
- ``matrix.schema.json``: JSON Schema of ``matrix.json`` (``repro.report``).
- ``matrix.html.j2``: the Jinja2 template of ``matrix.html``.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent
COMPAT_FACTS = ROOT / "compat-facts.yaml"
COMPAT_HISTORY = ROOT / "compat-facts-history.yaml"
COMPAT_EXTRA = ROOT / "compat-extra.yaml"
MATRIX_SCHEMA = ROOT / "matrix.schema.json"
HTML_TEMPLATE = ROOT / "matrix.html.j2"
SIGNATURES = ROOT / "signatures.yaml"

#: Every shipped data file; a test checks each exists and is listed in pyproject's package-data.
ALL = (COMPAT_FACTS, COMPAT_HISTORY, COMPAT_EXTRA, MATRIX_SCHEMA, HTML_TEMPLATE, SIGNATURES)
