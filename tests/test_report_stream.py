"""matrix.json read as a stream (issue 25, item 4): ``repro compare`` and ``repro report
--history`` build only what they keep, with the same verdicts as reading the whole file; hostile
shapes are one-line errors; the report's temporary files of a killed writer are swept."""

from __future__ import annotations

import fcntl
import io
import json
import os
import random
import time
from pathlib import Path

import pytest
from test_compare import baseline, candidate, case, write_results

from repro.errors import ConfigError
from repro.junit.writer import STALE_TEMP_AGE_S, sweep_stale_temps
from repro.measurement import Measurement
from repro.outcomes import Outcome
from repro.report import compare as compare_mod
from repro.report import json_tokens, sides, stream
from repro.report.merge import build_report
from repro.report.outputs import render_json, write_outputs


def _matrix(tmp_path: Path, name: str, results) -> Path:
    out = tmp_path / f"{name}-out"
    write_outputs(build_report([write_results(tmp_path / name, results)]), out)
    return out / "matrix.json"


def _with_a_repeated_cell(path: Path) -> Path:
    """The matrix with its first cell repeated (a foreign producer's duplicate key): one case
    worse, one new, one with another throughput sample."""
    data = json.loads(path.read_text())
    cell = json.loads(json.dumps(data["cells"][0]))
    for item in cell["cases"]:
        if item["outcome"] == "passed" and not item.get("metrics"):
            item["outcome"], item["signature"], item["message"] = "error", "oom", "killed"
            break
    cell["cases"].append({**cell["cases"][0], "case": "extra[x=1]"})
    for item in cell["cases"]:
        if item.get("metrics", {}).get("it_per_s"):
            item["metrics"]["it_per_s"] *= 3
    data["cells"].append(cell)
    copy = path.with_name("repeated.json")
    copy.write_text(json.dumps(data, indent=2))
    return copy


def test_a_streamed_side_compares_exactly_as_the_whole_file(tmp_path):
    base = _matrix(tmp_path, "base", baseline())
    cand = _matrix(tmp_path, "cand", candidate())
    results = []
    for left, right in ((base, cand), (cand, base), (_with_a_repeated_cell(base), cand)):
        whole = compare_mod.compare(json.loads(left.read_text()), json.loads(right.read_text()))
        streamed = compare_mod.compare(sides.read_side(left), sides.read_side(right))
        assert streamed == whole
        results.append(whole)
    assert results[0]["summary"]["regressions"] == 1 and results[0]["throughput_drops"]
    assert results[2] != results[0]  # the repeated cell changed what is compared


def test_history_states_are_the_cells_without_their_cases(tmp_path):
    path = _with_a_repeated_cell(_matrix(tmp_path, "base", baseline()))
    data = json.loads(path.read_text())
    states = stream.read_states(path)
    assert states["generated_at"] == data["generated_at"]
    assert states["schema_version"] == data["schema_version"]
    fields = ("host", "variant", "state", "effective_state")
    assert states["cells"] == [{k: c[k] for k in fields if k in c} for c in data["cells"]]


def _write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "matrix.json"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


HEAD = '{"schema_version": 1, "generated_at": "x", '
HOSTILE = {
    "not JSON": ('{"cells": [', "not JSON"),
    "not UTF-8": (HEAD.encode() + b'"cells": [{"cases": [], "host": "\xff"}]}', "not JSON"),
    "top-level list": ("[1, 2]", "expected an object with a 'cells' list"),
    "cells an object": (HEAD + '"cells": {"item": {"cases": []}}}', "one 'cells' list"),
    "cells twice": (HEAD + '"cells": [], "cells": [{"cases": []}]}', "one 'cells' list"),
    "cases twice": (HEAD + '"cells": [{"cases": [], "cases": []}]}', "one 'cases' list"),
    "cases a string": (HEAD + '"cells": [{"cases": "x"}]}', "cells[0]: expected an object"),
    "no cases": (HEAD + '"cells": [{"host": "h"}]}', "cells[0]: expected an object"),
    "case a number": (HEAD + '"cells": [{"cases": [1]}]}', "cells[0].cases[0]: expected"),
    "other schema": ('{"schema_version": 9, "cells": []}', "schema_version 9 is not supported"),
    "deep case": (
        HEAD + '"cells": [{"cases": [{"x": ' + "[" * 100_000 + "]" * 100_000 + "}]}]}",
        "nested deeper than 64",
    ),
    "deep elsewhere": (HEAD + '"x": ' + "[" * 100_000 + "]" * 100_000 + "}", "deeper than 64"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_matrix_is_one_line_config_error(tmp_path, name):
    text, fragment = HOSTILE[name]
    path = _write(tmp_path, text)
    for read in (sides.read_side, stream.read_states):
        with pytest.raises(ConfigError) as raised:
            read(path)
        message = str(raised.value)
        assert message.startswith(f"{path}: ") and fragment in message, message
        assert len(message.splitlines()) == 1


def test_keys_with_dots_never_pass_for_cells_or_cases(tmp_path):
    """A path parser that joins keys with dots would take ``"cells.item"`` for a cell."""
    path = _write(
        tmp_path,
        HEAD + '"cells": [{"host": "h", "variant": "v", "cases": [], '
        '"cases.item": {"scenario": "s", "case": "c", "outcome": "failed"}}], '
        '"cells.item": {"host": "forged", "cases": [{"outcome": "failed"}]}}',
    )
    side = sides.read_side(path)
    assert side.index == {("h", "v"): {}}
    assert [c["host"] for c in stream.read_states(path)["cells"]] == ["h"]


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_a_fifo_or_device_is_refused_at_once(tmp_path, kind):
    path = Path("/dev/zero")
    if kind == "fifo":
        path = tmp_path / "matrix.json"
        os.mkfifo(path)
    with pytest.raises(ConfigError, match="not a regular file"):
        sides.read_side(path)


def test_the_case_and_cell_caps_hold(tmp_path, monkeypatch):
    path = _matrix(tmp_path, "base", baseline())
    monkeypatch.setattr(stream, "MAX_MATRIX_CASES", 3)
    with pytest.raises(ConfigError, match="over 3 cases"):
        sides.read_side(path)
    assert stream.read_states(path)["cells"]  # cases are not kept there: no case cap
    monkeypatch.setattr(stream, "MAX_MATRIX_CELLS", 0)
    with pytest.raises(ConfigError, match="over 0 cells"):
        stream.read_states(path)


def test_only_rate_metrics_are_kept_for_comparison(tmp_path):
    results = [case("dataloader[w=2]", Outcome.PASSED, it_per_s=10.0)]
    side = sides.read_side(_matrix(tmp_path, "base", results))
    [cases] = side.index.values()
    [kept] = cases.values()
    # first_batch_s is never compared; a figure without .n was measured once (no spread)
    assert kept.metrics == {"it_per_s": [Measurement(10.0, None, 1)]}


def test_written_matrix_json_is_the_rendered_text(tmp_path):
    report = build_report([write_results(tmp_path / "base", baseline())])
    write_outputs(report, tmp_path / "out")
    assert (tmp_path / "out" / "matrix.json").read_text(encoding="utf-8") == render_json(report)


def _temp(folder: Path, name: str, age_s: float) -> Path:
    path = folder / name
    path.write_bytes(b"x" * 1000)
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def test_stale_temporary_files_of_a_killed_writer_are_swept(tmp_path):
    """Issue 25: a killed ``repro report`` left an 18.9 MB ``.matrix.json.*.tmp`` forever."""
    out = tmp_path / "out"
    out.mkdir()
    old = STALE_TEMP_AGE_S + 60
    dead = _temp(out, ".matrix.json.0123456789ab.tmp", old)
    young = _temp(out, ".matrix.json.ba9876543210.tmp", 1)
    locked = _temp(out, ".matrix.json.aaaaaaaaaaaa.tmp", old)
    other = _temp(out, ".matrix.json.notours.tmp", old)
    with open(locked, "rb") as holder:  # a live writer holds its lock
        fcntl.flock(holder, fcntl.LOCK_EX)
        assert sweep_stale_temps(out / "matrix.json") == [dead]
        write_outputs(build_report([write_results(tmp_path / "base", baseline())]), out)
        assert locked.exists()
    assert not dead.exists() and young.exists() and other.exists()
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [young.name, locked.name, other.name, "matrix.json", "matrix.md", "matrix.html"]
    )
    os.utime(young, (time.time() - old, time.time() - old))
    write_outputs(build_report([write_results(tmp_path / "base", baseline())]), out)
    assert not young.exists() and not locked.exists() and other.exists()


def test_the_previous_matrix_is_archived_by_a_streamed_copy_once(tmp_path):
    """``archive_previous`` copies chunk by chunk; a copy already kept is recognised, and a FIFO
    or other bytes under the name push the copy to the next free name."""
    from repro.report.history import archive_previous

    out = _matrix(tmp_path, "base", baseline()).parent
    history = tmp_path / "history"
    first = archive_previous(out, history)
    assert first is not None and first.read_bytes() == (out / "matrix.json").read_bytes()
    assert archive_previous(out, history) is None  # already kept: not copied again
    first.unlink()
    os.mkfifo(first)  # a FIFO under the name: never read, never the same
    (history / f"{first.stem}-1.json").write_text("other bytes")
    second = archive_previous(out, history)
    assert second == history / f"{first.stem}-2.json"
    assert second.read_bytes() == (out / "matrix.json").read_bytes()


# -- issue 32, item 4: tokens bounded before yajl ------------------------------------------------


def test_a_huge_string_is_cut_and_the_matrix_still_compares(tmp_path):
    """One 3 MB message (yajl re-lexes a token split across its reads from its start: quadratic
    in its length) reaches the parser as its first 64 KiB; everything else is read as written."""
    data = json.loads(_matrix(tmp_path, "base", baseline()).read_text())
    red = next(c for cell in data["cells"] for c in cell["cases"] if c["outcome"] != "passed")
    red["message"] = 'é\\"' + "x" * (3 << 20)
    path = _write(tmp_path, json.dumps(data, ensure_ascii=False))
    seen = []
    stream.read_cells(path, lambda case, _cell, _at: seen.append(case), lambda *_: None)
    (cut,) = [c for c in seen if c["case"] == red["case"]]
    assert red["message"].startswith(cut["message"]) and cut["message"].startswith('é\\"x')
    assert len(cut["message"].encode()) <= json_tokens.MAX_STRING_BYTES
    assert [c["case"] for c in seen] == [c["case"] for cell in data["cells"] for c in cell["cases"]]
    side = sides.read_side(path)
    assert side.index.keys() == sides.read_side(path).index.keys()


def test_repros_own_matrix_passes_the_token_filter_byte_for_byte(tmp_path):
    path = _matrix(tmp_path, "base", baseline())
    golden = Path(__file__).parent / "fixtures" / "junit" / "golden" / "expected" / "matrix.json"
    for text in (path.read_bytes(), golden.read_bytes()):
        for chunk in (7, 64, 1 << 20):
            filtered = io.BufferedReader(json_tokens.TokenBounds(io.BytesIO(text), chunk)).read()
            assert filtered == text


def test_a_number_longer_than_the_cap_is_a_one_line_error(tmp_path):
    path = _write(tmp_path, HEAD + '"cells": [{"cases": [], "x": ' + "1" * 100_000 + "}]}")
    for read in (sides.read_side, stream.read_states):
        with pytest.raises(ConfigError, match=r"not a matrix.json: a number or literal of over"):
            read(path)


def _json_value(r: random.Random, depth: int = 0):
    kind = r.randint(0, 5 if depth < 3 else 2)
    if kind == 0:
        return "".join(r.choice('ab"\\\né€😀\x01/u') for _ in range(r.randint(0, 40)))
    if kind == 1:
        return r.randint(-(10**6), 10**6)
    if kind == 2:
        return r.choice([True, False, None, 1.5e-3])
    if kind == 3:
        return [_json_value(r, depth + 1) for _ in range(r.randint(0, 4))]
    return [(_json_value(r, 3), _json_value(r, depth + 1)) for _ in range(r.randint(0, 4))]


def _dump(value) -> object:
    """A ``_json_value`` as json.dumps takes it: key-value pair lists become objects."""
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        return {str(k): _dump(v) for k, v in value}
    return [_dump(v) for v in value] if isinstance(value, list) else value


def _strings(value) -> list:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, (list, tuple)):  # object_pairs_hook=list: objects are (key, value)s
        return [s for v in value for s in _strings(v)]
    return []


@pytest.mark.parametrize("seed", range(300))
def test_cut_strings_are_valid_json_prefixes_at_any_chunk_boundary(monkeypatch, seed):
    """Escapes, surrogate pairs and UTF-8 sequences cut by the cap or by a chunk boundary: the
    output is JSON that reads the same everywhere but for each long string, which becomes a
    prefix of itself (never a broken escape, half a character or half a surrogate pair)."""
    r = random.Random(seed)
    cap, chunk, ascii_only = r.randint(0, 40), r.randint(1, 60), r.random() < 0.5
    monkeypatch.setattr(json_tokens, "MAX_STRING_BYTES", cap)
    value = _dump(_json_value(r))
    text = json.dumps(value, ensure_ascii=ascii_only).encode()
    out = io.BufferedReader(json_tokens.TokenBounds(io.BytesIO(text), chunk)).read()
    pairs = json.loads(out, object_pairs_hook=list)
    original = json.loads(text, object_pairs_hook=list)
    for before, after in zip(_strings(original), _strings(pairs), strict=True):
        assert before.startswith(after)
        size = len(json.dumps(after, ensure_ascii=ascii_only).encode()) - 2
        full = len(json.dumps(before, ensure_ascii=ascii_only).encode()) - 2
        assert after == before if full <= cap else size <= cap
