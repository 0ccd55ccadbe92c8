"""GitHub Actions annotations for a report: one ``::error`` workflow command per red cell, so
the run's summary page lists every reproduced bug with its signature (``repro report
--github-annotations``, used by .github/workflows/gpu-matrix.yml).

Format and escaping: "Workflow commands for GitHub Actions", ``::error title=T::MESSAGE``
(https://docs.github.com/en/actions/reference/workflow-commands-for-github-actions#setting-an-error-message);
the runner reads them from a step's output. Nothing here reads or writes files.
"""

from __future__ import annotations

from repro.report.labels import RED_STATES, cell_label
from repro.report.model import Report

#: GitHub shows at most 10 error annotations per step; the rest are summed up in one more line.
MAX_ANNOTATIONS = 10


def _data(text: str) -> str:
    """A command's message, escaped as the runner expects (``%``, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    """A command's property value (``title=``): the message escapes plus ``:`` and ``,``."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(report: Report, limit: int = MAX_ANNOTATIONS) -> list[str]:
    """``::error title=<host> · <variant>::<state>: <signatures> (<n> red cases ...)`` for each
    red cell (failed, error, crashed, hung after ``expect:``), in the report's cell order; past
    ``limit`` (10, GitHub's per-step cap) one last line counts the rest. ``[]`` when none is red.
    """
    lines = []
    red = [cell for cell in report.cells if cell_label(cell)[0] in RED_STATES]
    for cell in red[:limit]:
        state, counts = cell_label(cell)
        problems = [c for c in cell.sorted_cases() if c.outcome.value in RED_STATES]
        signatures = list(dict.fromkeys(c.signature or "unknown" for c in problems))
        first = problems[0].case if problems else ""
        message = f"{state}: {', '.join(signatures) or 'no signature'} ({counts}; first: {first})"
        lines.append(f"::error title={_property(f'{cell.host} · {cell.column}')}::{_data(message)}")
    if len(red) > limit:
        lines.append(
            f"::error title=repro-matrix::{len(red) - limit} more red cells (see matrix.md)"
        )
    return lines
