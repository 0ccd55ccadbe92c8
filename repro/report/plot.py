"""DataLoader throughput: the samples per (device, variant, start method), and an inline SVG.

The ``dataloader`` scenario records ``metric.steady_it_per_s`` per case (``metric.it_per_s`` in
results from before the steady windows, :data:`RATE_METRICS`); this module groups those values
by the case id's ``device`` and ``start_method`` (``workers=0`` is its own "in-process" series)
and draws one bar chart per device (median bar, min-max whisker, sample count in the tooltip).
Values come from untrusted files but were bounded by the reader (``repro.junit.reader.MAX_METRIC``),
so no median or axis computed here can overflow. Never reads files.
"""

from __future__ import annotations

import html
import math
import re
import statistics
from collections.abc import Mapping

from repro.report.model import Report

_CASE_PARAMS_RE = re.compile(r"^[^\[\]]*\[(.*)\]$")
_METHOD_ORDER = ("in-process", "fork", "spawn", "forkserver")
_METHOD_COLOURS = ("#0969da", "#1a7f37", "#bc4c00", "#8250df", "#bf3989", "#57606a")


def case_params(case_id: str) -> dict[str, str]:
    """``dataloader[device=cpu,start_method=fork]`` -> {"device": "cpu", "start_method": "fork"}."""
    match = _CASE_PARAMS_RE.match(case_id)
    if not match:
        return {}
    out = {}
    for part in match.group(1).split(","):
        key, sep, value = part.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


#: Series name for DataLoader cases with ``workers=0`` (batches loaded in the main process).
IN_PROCESS = "in-process"


#: The DataLoader rate plotted: the steady windows' median, else (results from before them)
#: the old first-epoch figure.
RATE_METRICS = ("steady_it_per_s", "it_per_s")


def throughput(
    report: Report, metric: str | None = None
) -> dict[str, dict[str, dict[str, list[float]]]]:
    """DataLoader rates: device -> variant -> start method -> samples (all hosts). ``metric``:
    that metric only; None: the first of :data:`RATE_METRICS` each case has."""
    data: dict[str, dict[str, dict[str, list[float]]]] = {}
    names = (metric,) if metric else RATE_METRICS
    for cell in report.cells:
        for case in cell.cases:
            value = next((case.metrics[n] for n in names if case.metrics.get(n) is not None), None)
            if (
                value is None
                or not math.isfinite(value)
                or value < 0
                or not (case.scenario == "dataloader" or case.case.startswith("dataloader["))
            ):
                continue
            params = case_params(case.case)
            method = params.get("start_method")
            if not method:
                continue
            if params.get("workers") == "0":
                method = IN_PROCESS  # no workers: the start method does not apply
            device = params.get("device", "")
            data.setdefault(device, {}).setdefault(cell.column, {}).setdefault(method, []).append(
                value
            )
    return data


def start_methods(data: Mapping[str, Mapping[str, Mapping[str, list[float]]]]) -> list[str]:
    """The series names present in ``data``: known start methods in their order, then the rest."""
    seen = {m for variants in data.values() for methods in variants.values() for m in methods}
    return [m for m in _METHOD_ORDER if m in seen] + sorted(seen - set(_METHOD_ORDER))


def _nice(value: float) -> float:
    """A round axis maximum >= value (1, 2, 2.5, 5 x 10^n)."""
    if not math.isfinite(value) or value <= 0:
        return 1.0
    scale = 10.0 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * scale >= value:
            return step * scale
    return 10 * scale


def throughput_svg(report: Report, metric: str | None = None) -> str:
    """Inline SVG bar charts (one per device) of the median rate (:func:`throughput`) per
    variant and start method, min-max whiskers, sample counts in the tooltips; "" when no case
    recorded one."""
    data = throughput(report, metric)
    metric = metric or "it/s"
    if not data:
        return ""
    methods = start_methods(data)
    colour = {m: _METHOD_COLOURS[i % len(_METHOD_COLOURS)] for i, m in enumerate(methods)}
    esc = html.escape
    charts = []
    for device in sorted(data):
        variants = sorted(data[device])
        top = _nice(max(max(v) for per in data[device].values() for v in per.values() if v))
        bar, gap, left, plot_h, head, foot = 14, 12, 56, 180, 48, 110
        group = bar * len(methods) + gap
        legend_w = 100
        width = max(left + group * len(variants) + 20, left + legend_w * len(methods) + 20, 420)
        height = head + plot_h + foot
        label = f"DataLoader {metric}, device {device or '-'}"
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(label)}">',
            f'<text x="{left}" y="16" class="title">DataLoader {esc(metric)} · device={esc(device or "-")}</text>',
        ]
        for i, method in enumerate(methods):  # legend on its own row under the title
            x = left + i * legend_w
            parts.append(
                f'<rect x="{x}" y="25" width="10" height="10" fill="{colour[method]}"/>'
                f'<text x="{x + 14}" y="34">{esc(method)}</text>'
            )
        for tick in (0, 0.25, 0.5, 0.75, 1.0):
            y = head + plot_h - tick * plot_h
            parts.append(
                f'<line x1="{left}" x2="{width - 20}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{tick * top:.4g}</text>'
            )
        for gi, variant in enumerate(variants):
            x0 = left + gi * group + gap / 2
            for mi, method in enumerate(methods):
                values = data[device][variant].get(method)
                if not values:
                    continue
                median = statistics.median(values)
                x = x0 + mi * bar
                h = median / top * plot_h
                y = head + plot_h - h
                tip = (
                    f"{variant} · {method} · device={device or '-'}: median {median:.4g} {metric} "
                    f"(n={len(values)}, min {min(values):.4g}, max {max(values):.4g})"
                )
                parts.append(
                    f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar - 2}" height="{max(h, 0.5):.1f}" '
                    f'fill="{colour[method]}"><title>{esc(tip)}</title></rect>'
                )
                if len(values) > 1:
                    lo = head + plot_h - min(values) / top * plot_h
                    hi = head + plot_h - max(values) / top * plot_h
                    cx = x + (bar - 2) / 2
                    parts.append(
                        f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{lo:.1f}" y2="{hi:.1f}" class="whisker"/>'
                    )
            lx = x0 + group / 2 - gap / 2
            ly = head + plot_h + 10
            parts.append(
                f'<text x="{lx:.1f}" y="{ly}" transform="rotate(-45 {lx:.1f} {ly})" text-anchor="end">{esc(variant)}</text>'
            )
        parts.append("</svg>")
        charts.append("".join(parts))
    return "\n".join(charts)
