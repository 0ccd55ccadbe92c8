"""Issue 29 items 3 and 4 on real results: the start-method summary in matrix.md, matrix.html and
matrix.json (from the H100 field run, whose dataloader cases predate the steady windows, and
from a real CPU run of this checkout: golden), and one count for one run in every output."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from conftest import REPO

from repro import config as matrix_mod
from repro.report import start_methods
from repro.report.merge import build_report, totals_line
from repro.report.outputs import write_outputs

FIELD = REPO / "tests" / "fixtures" / "field-runs"
H100 = FIELD / "h100-cu130-torch2.11"
CPU = FIELD / "cpu-2core-torch2.13"
H100_HOST = "NVIDIA H100 80GB HBM3 · driver 580.159.04 · Ubuntu 24.04.3 LTS"


def _report(inputs: Path, out: Path):
    config = matrix_mod.load(REPO / "matrix.yaml")
    report = build_report([inputs], config=config, coverage=False)
    write_outputs(report, out)
    return report


def _md_section(md: str) -> str:
    return md.split("## Start methods (DataLoader)", 1)[1].split("\n## ", 1)[0]


def test_the_h100_run_answers_the_start_method_question_from_its_old_metrics(tmp_path):
    report = _report(H100, tmp_path)
    [summary] = report.start_methods
    assert (summary.host, summary.variant, summary.device) == (H100_HOST, "cu130-torch2.11", "cuda")
    assert summary.legacy  # no steady windows: its it_per_s is not shown as steady it/s
    rows = {(row.method, row.workers): row for row in summary.rows}
    assert list(rows) == [
        ("in-process", 0),
        ("fork", 2),
        ("fork", 4),
        ("spawn", 2),
        ("spawn", 4),
        ("forkserver", 2),
        ("forkserver", 4),
    ]
    spawn = rows[("spawn", 2)]
    # the four spawn,workers=2 cases (persistent 0/1 x accel_init 0/1): 4.015 3.188 3.392 3.523 s
    assert spawn.cases == 4 and spawn.first_batch_s.n == 4
    assert spawn.first_batch_s.median == pytest.approx((3.392 + 3.523) / 2, abs=1e-3)
    assert spawn.first_batch_vs_fork.value > 20  # spawn's start-up against fork's ~0.12 s
    assert all(row.steady_it_per_s is None for row in summary.rows)
    # Later epochs: 3.4 s without persistent workers, under 0.01 s with them.
    assert spawn.later_s.median > 3 and spawn.later_persistent_s.median < 0.01
    assert spawn.recovers and rows[("forkserver", 4)].recovers
    assert rows[("fork", 2)].recovers is None  # the question is about spawn and forkserver

    md = (tmp_path / "matrix.md").read_text()
    section = _md_section(md)
    assert "These results predate the steady-state windows" in section
    spawn_line = "| " + " | ".join(start_methods.row_texts(spawn)) + " |"
    assert spawn_line in section and "| yes (" in spawn_line
    html = (tmp_path / "matrix.html").read_text()
    assert "Start methods (DataLoader)" in html
    assert "<td>" + "</td><td>".join(start_methods.row_texts(spawn)) + "</td>" in html.replace(
        "&#39;", "'"
    )
    data = json.loads((tmp_path / "matrix.json").read_text())
    [entry] = data["start_methods"]
    assert entry["steady_state"] is False and entry["note"] == start_methods.LEGACY_NOTE
    spawn_json = next(r for r in entry["rows"] if (r["start_method"], r["workers"]) == ("spawn", 2))
    assert spawn_json["persistent_recovers"] is True and spawn_json["steady_it_per_s"] is None


def _cell_label_md(md: str) -> str:
    row = next(line for line in md.splitlines() if line.startswith("| **"))
    return row.split(" | ", 1)[1].rstrip(" |").split(" ", 1)[1].split(" · 🔎")[0]


def _numbers(text: str) -> dict[str, int]:
    """{label: n} of a totals line or a cell label (``passed: 50`` and ``50 passed`` alike)."""
    out = {}
    for label, n in re.findall(r"([a-z ]+): (\d+)", text):
        out[label.strip()] = int(n)
    for n, label in re.findall(r"(\d+) ([a-z ()]+?)(?: ·|$)", text):
        out.setdefault(label.strip(), int(n))
    return out


def test_one_count_in_the_report_terminal_md_html_and_json_of_the_h100_run(tmp_path, capsys):
    """Issue 29 item 4: the H100 matrix.md said "passed: 50 · skipped: 6 · doctor checks: 7"
    over a cell "55 passed · 8 skipped"; every output now counts the doctor checks apart."""
    from repro.cli.main import main

    args = ["report", str(H100), "-o", str(tmp_path), "--config", str(REPO / "matrix.yaml")]
    assert main([*args, "--no-coverage"]) == 0
    printed = capsys.readouterr().out.splitlines()[-1]
    line = "problems: 0 · expected reproductions: 5 · passed: 50 · skipped: 6 · doctor checks: 7"
    assert printed == line
    md = (tmp_path / "matrix.md").read_text()
    assert f"**{line}**" in md
    cell = _cell_label_md(md)
    assert cell == "5 expected · 50 passed · 6 skipped · 7 doctor checks"  # was 55 and 8
    html = (tmp_path / "matrix.html").read_text()
    assert line in html and f'<span class="counts">{cell}</span>' in html
    data = json.loads((tmp_path / "matrix.json").read_text())
    totals = data["totals"]
    [counts] = [c["counts"] for c in data["cells"]]
    assert totals == counts
    numbers = _numbers(line)
    assert (totals["problems"], totals["expected"], totals["doctor_checks"]) == (
        numbers["problems"],
        numbers["expected reproductions"],
        numbers["doctor checks"],
    )
    # json's outcomes count the scenario cases as they ended: the 5 expected reds are failed
    assert (totals["passed"], totals["skipped"], totals["failed"]) == (50, 6, 5)
    assert totals["tests"] == 61  # the 61 GPU cases of the issue


def test_the_start_method_summary_of_a_real_cpu_run_is_golden(tmp_path):
    """Golden: the section from a real CPU run of this checkout (fixture), in matrix.md, and the
    same rows in matrix.html. REPRO_UPDATE_GOLDEN=1 rewrites the golden file."""
    report = _report(CPU, tmp_path)
    [summary] = report.start_methods
    assert not summary.legacy and summary.device == "cpu"
    methods = [(row.method, row.workers) for row in summary.rows]
    assert methods == [("in-process", 0), ("fork", 2), ("spawn", 2), ("forkserver", 2)]
    for row in summary.rows:
        assert row.steady_it_per_s.n == 5 * row.cases  # five windows per case
        assert row.steady_it_per_s.spread is not None and row.first_batch_s is not None
    rows = {row.method: row for row in summary.rows}
    assert rows["spawn"].first_batch_vs_fork.value > 5  # a new interpreter per worker
    assert rows["spawn"].recovers and rows["forkserver"].recovers
    section = _md_section((tmp_path / "matrix.md").read_text()).strip() + "\n"
    golden = CPU / "start-methods.md"
    if os.environ.get("REPRO_UPDATE_GOLDEN"):
        golden.write_text(section)
    assert section == golden.read_text(), "rerun with REPRO_UPDATE_GOLDEN=1 if intended"
    html = (tmp_path / "matrix.html").read_text().replace("&#39;", "'")
    for row in summary.rows:
        assert "<td>" + "</td><td>".join(start_methods.row_texts(row)) + "</td>" in html


def test_the_summary_validates_against_the_matrix_schema(tmp_path):
    import jsonschema

    from repro import data as shipped

    shutil.copytree(H100, tmp_path / "in")
    report = _report(tmp_path / "in", tmp_path)
    schema = json.loads((shipped.ROOT / "matrix.schema.json").read_text())
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(report.matrix))
    assert not errors, [e.message for e in errors[:3]]
    assert totals_line(report).startswith("problems: 0 · expected reproductions: 5")
