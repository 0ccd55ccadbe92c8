"""Merge input records into the matrix: cells keyed by (host, variant, lane), and what people
act on.

One record per input file (``repro.junit.reader``), keyed by (host key, variant id) from trusted
metadata: the ``run.json`` sidecar next to the XML first, else the testsuite properties
``host.key`` / ``variant.id`` that ``repro.junit.writer`` writes, else (foreign files) the
directory name as the variant and ``"unknown host"``. Files with the same key land in the same
cell; nothing is merged by suite equality (see ../shared/junit-notes.md); of our own runs the
newest result per (host, variant, case id) counts: an older run keeps every case no newer run
has, a partial (interrupted) run adds its cases and hides nothing (``_supersede_older_runs``).

On top of the observed outcomes: the prediction of each (host, variant) pair from published facts
(``repro.compat.predictions``) and every disagreement with the observation; cases that
``matrix.yaml`` ``expect:`` marks as known failures ("expected", or "unexpectedly passing");
variants, runtimes and torch pins of the matrix file with no result (coverage warnings); and,
given earlier matrices, what changed (newly red, newly green, red N runs in a row). The shape of
``matrix.json`` is ``repro/data/matrix.schema.json``. This module never reads files itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from repro import compat
from repro import properties as property_names
from repro.config import Expectation, Matrix
from repro.config.expect import Expectations
from repro.junit.reader import Budget, FileReader, find_files
from repro.outcomes import (
    DOCTOR_SCENARIO,
    EXPECT_EXPECTED,
    EXPECT_OTHER,
    EXPECT_SKIPPED,
    EXPECT_XPASS,
    Outcome,
    Totals,
)
from repro.report import start_methods
from repro.report.model import (
    GENERATOR,
    GREEN_STATES,
    MAX_SUPERSEDED_BY,
    RED_STATES,
    SCHEMA_VERSION,
    STATE_INVALID,
    STATE_OK,
    STATE_SUPERSEDED,
    CaseRecord,
    Cell,
    InputRecord,
    PredictionView,
    Report,
    Trend,
    column_id,
    count_cases,
)
from repro.signatures import table
from repro.variant_id import VariantId, torch_minor

#: Above this many (host, variant) pairs only the pairs with a result are predicted: the
#: prediction list of matrix.json grows with hosts x variants, not with the input.
MAX_PREDICTED_PAIRS = 20_000


def _iso(now: datetime | None) -> str:
    now = now or datetime.now(timezone.utc)
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    return now.astimezone(timezone.utc).isoformat(timespec="seconds")


#: Scenarios whose one case is about how a RUN ended, not about a case of it: the Slurm lane's
#: scheduler cell (``repro.slurm.cells.SCENARIO``: a task killed at its time limit,
#: cancelled...) and the container that did not start (``repro.containers.start_failure
#: .SCENARIO``: driver too old, no GPU runtime). Any newer run of the same host, variant and lane
#: replaces it, whatever cases that run has. (Spelled here: report may import neither package;
#: tests/test_container_start.py and tests/test_slurm_lane.py tie the names.)
RUN_SCOPED_SCENARIOS = frozenset({"slurm", "container"})


def _lane(record: InputRecord) -> str:
    """The lane an input's results came from (``variant.lane``; "" where none is written)."""
    return property_names.lane_of(record.variant_properties)


def _supersede_older_runs(records: list[InputRecord]) -> dict[int, list[CaseRecord]]:
    """Merge our runs per (host, variant, lane, case id): the newest result of each case wins.

    Runs are ordered by run.json ``started``, then a run that closes another (``closes``: a
    scheduler cell, newer than the run it ends even when both carry the same second), then
    path; a case an older run of the same lane
    shares with a newer one is superseded, every other case of the older run stays. So ``repro
    run -k losses`` then ``repro run -k fork_safety`` shows both, and a partial run
    (interrupted, see ``InputRecord.partial``) adds the cases it finished without hiding the
    ones it never ran. Runs of different lanes (``variant.lane``: the host's own interpreter, a
    venv, an image) never supersede each other: they are different installs of the variant's
    pin, so the cell holds both (issue 33: the Slurm lane runs the host and venv lanes of one
    variant side by side, and the newer one hid the other). A case of
    :data:`RUN_SCOPED_SCENARIOS` is superseded by ANY newer run of its lane.
    Each record gets ``superseded_cases``/``superseded_by``; one with every case superseded is
    ``superseded``. Doctor checks (``repro.outcomes.DOCTOR_SCENARIO``) are merged the same way
    but not counted there: every run checks its host again, so a newer run's checks replacing an
    older run's is no news. Foreign files (no run.json) and invalid ones always add up.

    Returns ``{id(record): cases that count}`` for the records whose cases were cut.
    """
    groups: dict[tuple[str, str, str], list[InputRecord]] = {}
    for record in records:
        if record.run_started is None or record.state != STATE_OK:
            continue
        groups.setdefault((record.host, record.variant, _lane(record)), []).append(record)
    kept: dict[int, list[CaseRecord]] = {}
    for group in groups.values():
        group.sort(key=lambda r: (r.run_started or "", r.closes is not None, r.path), reverse=True)
        newest: dict[tuple[str, str], str] = {}  # (scenario, case) -> path of its newest run
        for position, record in enumerate(group):
            cases, by, doctor_by = [], Counter[str](), Counter[str]()
            for case in record.cases:
                newer = newest.get((case.scenario, case.case))
                if newer is None and case.scenario in RUN_SCOPED_SCENARIOS and position:
                    newer = group[position - 1].path
                if newer is None:
                    cases.append(case)
                else:
                    (doctor_by if case.scenario == DOCTOR_SCENARIO else by)[newer] += 1
            for case in cases:
                newest.setdefault((case.scenario, case.case), record.path)
            if len(cases) == len(record.cases):
                continue
            kept[id(record)] = cases
            record.superseded_cases = sum(by.values())
            record.superseded_by = sorted(by)[:MAX_SUPERSEDED_BY]
            if not cases:
                newer_runs = sorted(by | doctor_by)
                names = ", ".join(newer_runs[:MAX_SUPERSEDED_BY])
                more = len(newer_runs) - MAX_SUPERSEDED_BY
                record.state = STATE_SUPERSEDED
                record.reason = f"every case superseded by the newer run(s) {names}" + (
                    f" and {more} more" if more > 0 else ""
                )
    return kept


#: Case-id fragments of cases that use the accelerator (what a GPU variant's prediction is about).
_ACCELERATOR_MARKERS = ("device=cuda", "device=rocm", "backend=nccl")


def _apply_expectations(cells: list[Cell], expectations: Sequence[Expectation]) -> dict[int, int]:
    """Give each case the verdict of the first ``expect:`` entry that covers it
    (``repro.config.expect``, the matcher ``repro run`` uses too); cases matched per entry index."""
    judge = Expectations(expectations)
    if not expectations:
        return judge.hits
    for cell in cells:
        cell_judge = judge.cell(cell.variant, cell.host)
        for case in cell.cases:
            case.expect = cell_judge.verdict(case.scenario, case.case, case.outcome, case.signature)
    return judge.hits


def _observed(cell: Cell | None, accelerator: str | None) -> tuple[str | None, bool]:
    """What the prediction is compared with: ``(fail | pass | None, environmental)`` (see
    PredictionView); ``environmental``: some failure has an environment signature (driver, arch,
    runtime, device, container, WSL2: ``repro.signatures.table.is_environment``)."""
    if cell is None:
        return None, False
    cases = cell.cases
    if accelerator in ("cuda", "rocm"):
        on_device = [c for c in cases if any(m in c.case for m in _ACCELERATOR_MARKERS)]
        cases = on_device or cases
    passed = failed = environmental = False
    for case in cases:
        if case.expect_status == EXPECT_EXPECTED:
            continue
        if case.outcome.is_problem:
            failed = True
            environmental = environmental or table.is_environment(case.signature)
        passed = passed or case.outcome is Outcome.PASSED
    if failed:
        return compat.FAIL, environmental
    return (compat.PASS if passed else None), False


def _predictions(
    hosts: list[dict[str, Any]],
    variants: list[dict[str, Any]],
    index: Mapping[tuple[str, str], Cell],
    facts: compat.Facts,
) -> dict[tuple[str, str], PredictionView]:
    out = {}
    every_pair = len(hosts) * len(variants) <= MAX_PREDICTED_PAIRS
    for variant in variants:
        accelerator = compat.accelerator(variant["properties"], variant["id"])
        for host in hosts:
            if not every_pair and (host["key"], variant["id"]) not in index:
                continue
            prediction = compat.predict(
                host["properties"], variant["properties"], variant["id"], facts
            )
            observed, environmental = _observed(
                index.get((host["key"], variant["id"])), accelerator
            )
            disagreement = compat.disagreement(prediction.outcome, observed)
            if observed == compat.FAIL and not environmental:
                # A failure of the user's own code (or one no row names) says nothing about
                # whether the environment can work (issue 21, item 7).
                disagreement = None
            out[(host["key"], variant["id"])] = PredictionView(prediction, observed, disagreement)
    return out


def _coverage(config: Matrix, cells: list[Cell], variants: list[dict[str, Any]]) -> list[str]:
    """One warning per variant id, runtime and torch pin of the matrix file with no result."""
    props = {v["id"]: v["properties"] for v in variants}
    with_results = {cell.variant for cell in cells if cell.cases}
    out = [
        f"{config.path}: coverage: variant {v.id} has no result"
        for v in config.variants
        if v.id not in with_results
    ]
    runtimes = {compat.runtime_tag(props.get(vid, {}), vid) for vid in with_results}
    for runtime in dict.fromkeys(v.runtime for v in config.variants):
        if runtime not in runtimes:
            ids = ", ".join(v.id for v in config.variants if v.runtime == runtime)
            out.append(f"{config.path}: coverage: runtime {runtime} has no result ({ids})")
    pins: set[str] = set()
    for vid in with_results:
        found = [
            props.get(vid, {}).get(name, "").split("+")[0].strip()
            for name in (property_names.VARIANT_TORCH, property_names.RUNTIME_TORCH)
        ]
        found = [pin for pin in found if pin]
        # Without a torch property the id's "torch2.8" stands for every 2.8.x pin.
        parsed = VariantId.parse(vid)
        pins.update(found or ([f"~{parsed.torch}"] if parsed else []))
    for pin in dict.fromkeys(v.torch for v in config.variants):
        major_minor = torch_minor(pin)
        if pin.split("+")[0] not in pins and f"~{major_minor}" not in pins:
            ids = ", ".join(v.id for v in config.variants if v.torch == pin)
            out.append(f"{config.path}: coverage: torch {pin} has no result ({ids})")
    return out


def _trends(
    cells: list[Cell], history: Sequence[Mapping[str, Any]]
) -> dict[tuple[str, str], Trend]:
    """Each cell against earlier matrices (oldest first). A report without the cell neither
    breaks nor extends its red streak: fleets upload partial results."""
    past: list[dict[tuple[Any, Any], Any]] = []
    for matrix in reversed(history):
        cells_json = matrix.get("cells") if isinstance(matrix, Mapping) else None
        past.append(
            {
                (c.get("host"), c.get("column") or c.get("variant")): c.get("effective_state")
                or c.get("state")
                for c in cells_json or []
                if isinstance(c, Mapping)
            }
        )
    trends = {}
    for cell in cells:
        key = (cell.host, cell.column)
        now = cell.effective_state
        earlier = [states[key] for states in past if key in states]
        previous = earlier[0] if earlier else None
        change = None
        if previous is not None and now in RED_STATES and previous not in RED_STATES:
            change = "newly red"
        elif previous is not None and now in GREEN_STATES and previous in RED_STATES:
            change = "newly green"
        red_runs = 0
        if now in RED_STATES:
            red_runs = 1
            for state in earlier:
                if state not in RED_STATES:
                    break
                red_runs += 1
        trends[key] = Trend(previous, change, red_runs)
    return trends


def build_report(
    inputs: list[Path],
    now: datetime | None = None,
    *,
    config: Matrix | None = None,
    expectations: Sequence[Expectation] | None = None,
    history: Sequence[Mapping[str, Any]] | None = None,
    predict: bool = True,
    facts: compat.Facts | None = None,
    coverage: bool = True,
) -> Report:
    """Read every JUnit file under ``inputs`` and merge them into cells keyed by (host, variant,
    lane): one column per variant, or one per lane where a variant ran in more than one
    (:func:`repro.report.model.column_id`).

    ``now`` fixes ``generated_at`` (for golden tests). ``config`` (a loaded matrix.yaml) adds
    coverage warnings and its ``expect:`` entries unless ``expectations`` is given. ``history``
    holds earlier matrix.json dicts, oldest first (see :func:`load_history`), for newly red /
    newly green / red streaks. ``predict`` compares each (host, variant) with ``repro.compat.predictions``
    (``facts`` defaults to the shipped ones). Raises ConfigError if an input path does not
    exist; unreadable or invalid files become ``problems`` and the merge goes on.
    """
    files = find_files([Path(p) for p in inputs])
    budget = Budget()
    records: list[InputRecord] = []
    problems: list[tuple[str, str]] = []
    log_files: dict[str, Path] = {}
    for source in files:
        reader = FileReader(source, budget)
        record = reader.read()
        records.append(record)
        log_files.update(reader.log_files)
        if record.state == STATE_INVALID:
            problems.append((record.path, record.reason or "invalid"))
        if record.changed:
            problems.append((record.path, record.changed))
        problems.extend((record.path, warning) for warning in reader.warnings)

    kept = _supersede_older_runs(records)
    cells: dict[tuple[str, str], Cell] = {}
    host_props: dict[str, dict[str, str]] = {}
    variant_props: dict[str, dict[str, str]] = {}
    lanes: dict[str, set[str]] = {}
    for record in records:
        if record.state != STATE_SUPERSEDED:
            lanes.setdefault(record.variant, set()).add(_lane(record))
    for record in records:
        if record.state == STATE_SUPERSEDED:
            continue
        lane = _lane(record)
        column = column_id(record.variant, lane, lanes[record.variant])
        cell = cells.setdefault(
            (record.host, column), Cell(record.host, record.variant, lane, column)
        )
        cell.files.append(record.path)
        cell.cases.extend(kept.get(id(record), record.cases))
        if record.state == STATE_INVALID:
            cell.invalid_files += 1
        if record.changed:
            cell.changed_files.append(record.path)
        hp = host_props.setdefault(record.host, {})
        for name, value in record.host_properties.items():
            hp.setdefault(name, value)
        vp = variant_props.setdefault(column, {})
        for name, value in record.variant_properties.items():
            # First wins, but a value beats an empty one (a CPU-only host's empty arch list).
            if not vp.get(name):
                vp[name] = value

    ordered_cells = [cells[key] for key in sorted(cells)]
    hosts = [
        {"key": key, "properties": dict(sorted(host_props[key].items()))}
        for key in sorted(host_props)
    ]
    variants = [
        {"id": key, "properties": dict(sorted(variant_props[key].items()))}
        for key in sorted(variant_props)
    ]

    if expectations is None:
        expectations = config.expectations if config is not None else ()
    expectations = tuple(expectations)
    hits = _apply_expectations(ordered_cells, expectations)
    totals = count_cases([case for cell in ordered_cells for case in cell.cases])
    warnings: list[str] = []
    if config is not None and coverage:
        warnings += _coverage(config, ordered_cells, variants)
    source = f"{config.path}: " if config is not None else ""
    warnings += [
        f"{source}{rule.label} matched no case in these results"
        for rule in expectations
        if not hits[rule.index]
    ]
    predictions = (
        _predictions(hosts, variants, cells, facts or compat.default_facts()) if predict else {}
    )
    if predict and len(hosts) * len(variants) > MAX_PREDICTED_PAIRS:
        warnings.append(
            f"{len(hosts)} hosts x {len(variants)} variants: only the {len(cells)} pairs with "
            f"results were predicted (cap {MAX_PREDICTED_PAIRS} pairs)"
        )
    trends = _trends(ordered_cells, history) if history is not None else {}
    methods = start_methods.summaries(ordered_cells)

    cells_json = []
    for cell in ordered_cells:
        item = cell.to_json()
        trend = trends.get((cell.host, cell.column))
        if trend is not None:
            item["trend"] = trend.to_json()
        cells_json.append(item)
    generated_at = _iso(now)
    matrix = {
        "schema_version": SCHEMA_VERSION,
        "generator": GENERATOR,
        "generated_at": generated_at,
        "inputs": [record.to_json() for record in records],
        "hosts": hosts,
        "variants": variants,
        "cells": cells_json,
        "problems": [{"path": path, "reason": reason} for path, reason in problems],
        "warnings": list(warnings),
        "totals": totals.to_json(),
        "expectations": [_expectation_json(rule, ordered_cells) for rule in expectations],
        "predictions": [
            view.to_json(host, variant) for (host, variant), view in sorted(predictions.items())
        ],
        "history": {"runs": len(history)} if history is not None else None,
        "start_methods": [summary.to_json() for summary in methods],
    }
    return Report(
        generated_at=generated_at,
        inputs=records,
        cells=ordered_cells,
        hosts=hosts,
        variants=variants,
        problems=problems,
        totals=matrix["totals"],
        matrix=matrix,
        log_files=log_files,
        warnings=warnings,
        predictions=predictions,
        expectations=expectations,
        expectation_hits=hits,
        trends=trends,
        history_runs=len(history) if history is not None else None,
        start_methods=methods,
    )


def _expectation_json(rule: Expectation, cells: list[Cell]) -> dict[str, Any]:
    statuses: Counter[str] = Counter(
        case.expect.status
        for cell in cells
        for case in cell.cases
        if case.expect is not None and case.expect.rule == rule.index
    )
    return {
        **rule.as_dict(),
        "matched": sum(statuses.values()),
        "expected": statuses[EXPECT_EXPECTED],
        "unexpectedly_passing": statuses[EXPECT_XPASS],
        "other_outcome": statuses[EXPECT_OTHER],
        "skipped": statuses[EXPECT_SKIPPED],
    }


def report_totals(report: Report) -> Totals:
    """Every case of the report counted once (``repro.outcomes.Totals``): problems apart from
    expected reproductions, doctor checks apart from scenario cases."""
    return count_cases([case for cell in report.cells for case in cell.cases])


def totals_line(report: Report) -> str:
    """The report's totals line, in the same words as ``repro run``'s
    (``repro.outcomes.Totals.line``): ``problems: 0 · expected reproductions: 8 · passed: 41 ·
    skipped: 62``."""
    return report_totals(report).line()
