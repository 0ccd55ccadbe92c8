"""Write the report's three files: ``matrix.json`` (canonical), ``matrix.md`` and ``matrix.html``.

All three are rendered in memory first, then each is replaced atomically, so a failed render
never leaves a half-written or mixed set behind (nothing the user already has is lost).
"""

from __future__ import annotations

import json
from pathlib import Path

from repro.junit.writer import write_atomic
from repro.report.html import render_html
from repro.report.markdown import render_markdown
from repro.report.model import Report

OUTPUT_NAMES = ("matrix.json", "matrix.md", "matrix.html")


def render_json(report: Report) -> str:
    """``matrix.json``: ``report.matrix`` with sorted keys, 2-space indent, UTF-8 text.

    Raises ValueError if a number in it is NaN or infinite (the reader never records one).
    """
    return (
        json.dumps(report.matrix, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
        + "\n"
    )


def write_outputs(report: Report, out_dir: Path) -> list[Path]:
    """Write matrix.json, matrix.md and matrix.html into ``out_dir`` (created), atomically.

    Returns the three paths in that order. Raises OSError when ``out_dir`` is not writable.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rendered = [
        (out_dir / "matrix.json", render_json(report)),
        (out_dir / "matrix.md", render_markdown(report)),
        (out_dir / "matrix.html", render_html(report, out_dir)),
    ]
    for path, text in rendered:
        write_atomic(path, text.encode("utf-8"))
    return [path for path, _ in rendered]
