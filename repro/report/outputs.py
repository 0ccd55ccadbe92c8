"""Write the report's three files: ``matrix.json`` (canonical), ``matrix.md`` and ``matrix.html``.

All three are written to temporary files first (``matrix.json`` streamed, so its text is never
held in memory whole: json's indenting encoder would otherwise keep millions of chunks, ~1.5 KB
per case), then each is replaced, so a failed render never leaves a half-written or mixed set
behind (nothing the user already has is lost). Temporary files of a writer that was killed are
swept by the next report (``repro.junit.writer.sweep_stale_temps``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from typing import IO

from repro.junit.writer import sweep_stale_temps, write_temp
from repro.report.html import render_html
from repro.report.markdown import render_markdown
from repro.report.model import Report

OUTPUT_NAMES = ("matrix.json", "matrix.md", "matrix.html")


_JSON_OPTIONS = {"indent": 2, "sort_keys": True, "ensure_ascii": False, "allow_nan": False}


def render_json(report: Report) -> str:
    """``matrix.json``: ``report.matrix`` with sorted keys, 2-space indent, UTF-8 text.

    Raises ValueError if a number in it is NaN or infinite (the reader never records one).
    """
    return json.dumps(report.matrix, **_JSON_OPTIONS) + "\n"


def dump_json(report: Report, handle: IO[bytes]) -> None:
    """Write :func:`render_json`'s text to the binary ``handle`` chunk by chunk (bounded
    memory). Raises ValueError as :func:`render_json` does."""
    text = io.TextIOWrapper(handle, encoding="utf-8", newline="\n")
    try:
        json.dump(report.matrix, text, **_JSON_OPTIONS)
        text.write("\n")
        text.flush()
    finally:
        text.detach()  # the caller closes (and fsyncs) the binary handle


def write_outputs(report: Report, out_dir: Path) -> list[Path]:
    """Write matrix.json, matrix.md and matrix.html into ``out_dir`` (created), atomically.

    Returns the three paths in that order. Raises OSError when ``out_dir`` is not writable.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / name for name in OUTPUT_NAMES]
    for path in paths:
        sweep_stale_temps(path)
    temps: list[str] = []
    try:
        temps.append(write_temp(paths[0], lambda handle: dump_json(report, handle)))
        texts = (
            (paths[1], lambda: render_markdown(report)),
            (paths[2], lambda: render_html(report, out_dir)),
        )
        for path, render in texts:
            data = render().encode("utf-8")
            temps.append(write_temp(path, lambda handle, data=data: handle.write(data)))
            del data
        for tmp, path in zip(temps, paths, strict=True):
            os.replace(tmp, path)
    except BaseException:
        for tmp in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise
    return paths
