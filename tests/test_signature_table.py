"""Every signature name the code can emit has a row in repro/data/signatures.yaml (issues 8, 21).

The names are found by walking the AST of every module under repro/, so a new literal anywhere
(a scenario's ``ctx.fail(..., signature="x")``, a verdict tuple in the runner, a doctor check)
is caught without anyone updating a list here.
"""

from __future__ import annotations

import ast
import signal
from pathlib import Path

import pytest

from repro.host import doctor
from repro.signatures import table
from repro.signatures.engine import signal_signature

REPRO = Path(__file__).resolve().parent.parent / "repro"
TABLE = REPRO / "signatures" / "table.py"
#: Marker for ``INFRA_PREFIX + check`` (one name per doctor check).
INFRA_FAMILY = "infra.<check>"
_PREFIX_NAMES = {"INFRA_PREFIX"}


def _literals(node: ast.AST | None) -> set[str]:
    """String literals an expression can evaluate to (through ``a if c else b`` and ``a or b``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value} if node.value else set()
    if isinstance(node, ast.IfExp):
        return _literals(node.body) | _literals(node.orelse)
    if isinstance(node, ast.BoolOp):
        return set().union(*(_literals(value) for value in node.values))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = node.left
        if (isinstance(left, ast.Name) and left.id in _PREFIX_NAMES) or (
            isinstance(left, ast.Attribute) and left.attr in _PREFIX_NAMES
        ):
            return {INFRA_FAMILY}
        if isinstance(left, ast.Constant) and left.value == table.INFRA_PREFIX:
            return {INFRA_FAMILY}
    return set()


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _is_outcome(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "Outcome"
    )


def emitted_names(source: str, filename: str = "<source>") -> dict[str, list[str]]:
    """Signature names a module's source can emit -> where (``file:line``).

    What counts: a ``signature=``/``predicts=`` keyword; the second argument of ``.fail(...)``,
    ``CaseFailed(...)`` and JUnit ``Failure(...)``/``Error(...)``; the fifth of ``Finding(...)``;
    a value assigned to a name containing "signature" (not the ``PROP_*`` property names); the
    value of a ``"signature"`` dict key; the second item of a tuple starting with ``Outcome.X``
    (a verdict); ``SIGNATURE_BY_NAME["x"]``; any literal starting with ``hang.`` or equal to
    ``hang_timeout``; ``INFRA_PREFIX + check`` (:data:`INFRA_FAMILY`).
    A name held in a variable is followed to the literals assigned to that variable; an item
    of a dict held in a variable (``signature=SIGNATURES[state]``) to every value of that dict.
    """
    tree = ast.parse(source, filename)
    assigned: dict[str, set[str]] = {}
    dict_values: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, set()).update(_literals(node.value))
                    if isinstance(node.value, ast.Dict):
                        found_values = set().union(*map(_literals, node.value.values))
                        dict_values.setdefault(target.id, set()).update(found_values)

    def values(node: ast.AST | None) -> set[str]:
        if isinstance(node, ast.Name):
            return assigned.get(node.id, set())
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            return dict_values.get(node.value.id, set())
        return _literals(node)

    found: dict[str, list[str]] = {}

    def add(names: set[str], node: ast.AST) -> None:
        for name in names:
            found.setdefault(name, []).append(f"{filename}:{getattr(node, 'lineno', '?')}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg in ("signature", "predicts"):
                    add(values(keyword.value), node)
            callee, args = _callee(node), node.args
            if callee in ("fail", "CaseFailed", "Failure", "Error") and len(args) >= 2:
                add(values(args[1]), node)
            if callee == "Finding" and len(args) >= 5:
                add(values(args[4]), node)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                name = getattr(target, "id", getattr(target, "attr", ""))
                if "signature" in name.lower() and not name.startswith("PROP_"):
                    add(_literals(node.value), node)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "signature":
                    add(values(value), node)
        elif isinstance(node, ast.Tuple) and len(node.elts) >= 2 and _is_outcome(node.elts[0]):
            add(values(node.elts[1]), node)
        elif isinstance(node, ast.Subscript) and "SIGNATURE_BY_NAME" in (
            getattr(node.value, "id", ""),
            getattr(node.value, "attr", ""),
        ):
            add(_literals(node.slice), node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if (text.startswith(table.HANG_PREFIX) and len(text) > len("hang.")) or (
                text == table.HANG
            ):
                add({text}, node)
    return found


def _expand(names: dict[str, list[str]]) -> dict[str, list[str]]:
    """:data:`INFRA_FAMILY` -> one ``infra.<check>`` per doctor check."""
    out = {name: where for name, where in names.items() if name != INFRA_FAMILY}
    for check in doctor.CHECKS if INFRA_FAMILY in names else ():
        out.setdefault(table.INFRA_PREFIX + check, []).extend(names[INFRA_FAMILY])
    return out


def _scan_repro() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(REPRO.rglob("*.py")):
        if path == TABLE:
            continue  # the table defines the names; everything else emits them
        rel = str(path.relative_to(REPRO.parent))
        for name, where in emitted_names(path.read_text(encoding="utf-8"), rel).items():
            found.setdefault(name, []).extend(where)
    return _expand(found)


def _missing(names: dict[str, list[str]]) -> list[str]:
    return sorted(
        f"{name} (emitted at {', '.join(where[:3])})"
        for name, where in names.items()
        if not table.known(name) or not table.row(name).source.strip()
    )


EMITTED = _scan_repro()


def test_every_name_the_code_can_emit_has_a_row_with_a_source():
    assert _missing(EMITTED) == []


def test_the_scan_finds_the_names_of_every_kind_of_emitter():
    # Guards the scanner itself: if it stopped seeing one kind of emitter, the test above would
    # pass vacuously.
    expected = {
        "accelerator_unavailable",  # ctx.fail keyword in the harness
        "exit_code_masked",  # scenario
        "nan_detected",
        "no_kernel_image",  # via a variable (arch.py)
        "amp_bce_unsafe",  # a conditional expression (amp.py)
        "timeout_slow_progress",  # a verdict tuple in the executor
        "driver_too_old",  # SIGNATURE_BY_NAME[...] / Finding predicts
        "dataloader_shm_exhausted",
        "unknown",  # the report's default
        "infra.slurm_timeout",  # a dict's value by its key (repro/slurm/cells.py SIGNATURES)
        "infra.slurm_task_failed",  # a keyword through a module constant
        *(table.INFRA_PREFIX + check for check in doctor.CHECKS),
    }
    assert expected <= EMITTED.keys()


def test_every_signal_has_a_row():
    for signum in range(1, 65):
        name = signal_signature(signum)
        assert table.known(name), (signum, name)
        assert table.row(name).source.strip()


NEGATIVE_SOURCE = """
from repro.outcomes import Outcome
from repro.runner.case_api import CaseFailed

def run(ctx):
    ctx.fail("x", signature="made_up_by_a_scenario")
    raise CaseFailed("y", "made_up_positional")

def verdict():
    name = "made_up_in_a_variable"
    ctx.fail("z", signature=name)
    return Outcome.ERROR, "made_up_verdict", "message"

HANGS = ("hang.made_up", "x")
result = {"outcome": "error", "signature": "made_up_in_a_dict"}
EVENTS_SIGNATURE = "made_up_constant"
"""


def test_a_name_missing_from_the_table_fails_the_check():
    found = _expand(emitted_names(NEGATIVE_SOURCE, "planted.py"))
    missing = _missing(found)
    assert [entry.split(" ")[0] for entry in missing] == [
        "hang.made_up",
        "made_up_by_a_scenario",
        "made_up_constant",
        "made_up_in_a_dict",
        "made_up_in_a_variable",
        "made_up_positional",
        "made_up_verdict",
    ]
    assert "planted.py:6" in missing[1]


def test_an_infra_check_without_a_row_fails_the_check(monkeypatch):
    monkeypatch.setattr(doctor, "CHECKS", (*doctor.CHECKS, "fabric_manager"))
    found = _expand(emitted_names("signature = INFRA_PREFIX + finding.check\n", "doctor.py"))
    assert _missing(found) == ["infra.fabric_manager (emitted at doctor.py:1)"]


# -- The table's own shape -------------------------------------------------------------------


def test_every_row_has_a_unique_name_a_source_and_a_kind():
    names = [sig.name for sig in table.ROWS]
    assert len(names) == len(set(names))
    for sig in table.ROWS:
        assert sig.source.strip(), sig.name
        assert sig.kind in table.KINDS + table.NAMED_KINDS, sig.name
        assert (sig.pattern is None) == (sig.kind in table.NAMED_KINDS), sig.name
        assert "\n" not in sig.workaround


@pytest.mark.parametrize(
    ("name", "row_name"),
    [
        ("signal_sigusr1", "signal_*"),
        ("signal_99", "signal_*"),
        ("segfault", "segfault"),
        ("sigkill", "sigkill"),
        ("infra.dev_shm", "infra.dev_shm"),
        ("hang.nccl", "hang.nccl"),
        ("events_protocol", "events_protocol"),
        ("unknown", "unknown"),
        ("cudnn_execution_failed", "cudnn_execution_failed"),
    ],
)
def test_row_resolves_names_and_families(name, row_name):
    assert table.known(name)
    assert table.row(name).name == row_name


@pytest.mark.parametrize(
    "name", ["signal_", "signal_*", "signal_SIGUSR1", "infra.bogus", "infra.", "hang.bogus", ""]
)
def test_names_outside_the_table_and_its_families_are_unknown(name):
    assert not table.known(name)
    with pytest.raises(KeyError):
        table.row(name)


def test_signal_rows_cover_the_named_signals():
    assert table.SIGNAL_SIGNATURES[int(signal.SIGSEGV)] == "segfault"
    for name in table.SIGNAL_SIGNATURES.values():
        assert table.row(name).name == name


# -- The watchdog's hang names come from the same rows (issue 21, item 1) ------------------------


def test_the_watchdog_names_every_hang_row_from_its_own_stack_patterns_and_sources():
    from repro.runner import watchdog

    hang_rows = [r for r in table.ROWS if r.kind == table.WATCHDOG and r.name.startswith("hang.")]
    assert {r.name for r in hang_rows} == {r.name for r in table.SHIPPED.hangs}
    samples = {
        "hang.wandb_fork_finalizer": 'File "wandb/sdk/lib/service/service_api.py", line 3 in x',
        "hang.nccl": 'File "torch/distributed/distributed_c10d.py", line 9 in barrier',
        "hang.hsa_wait": "#3 rocr::core::InterruptSignal::WaitRelaxed",
        "hang.fork_finalizer": (
            'File "concurrent/futures/_base.py", line 451 in result\n'
            'File "weakref.py", line 590 in __call__\n'
        ),
        "hang.dataloader_wait": 'File "dataloader.py", line 1133 in _try_get_data',
        # Issue 30: gdb frames (rwth-i6/returnn#1811, pytorch/pytorch#75147).
        "hang.cuda_sync": "#7  0x000014e44688a7d8 in cudaStreamSynchronize ()",
        "hang.fork_lock": "#0  __lll_lock_wait () at ../sysdeps/unix/sysv/linux/x86_64/lowlevellock.S:135",
    }
    for row in hang_rows:
        if row.wait_channels:
            assert watchdog.hang_subtype("", [f"x{row.wait_channels[0]}"]) == (row.name, row.source)
        else:
            assert watchdog.hang_subtype(samples[row.name], []) == (row.name, row.source)
    assert watchdog.hang_subtype("nothing known", ["do_wait"]) == (table.HANG, "")
    assert table.known(table.HANG)


# -- Every row of the data table, and no row anywhere else (issue 21, item 1) -------------------


def test_every_row_of_the_data_table_is_reachable():
    """An output row is read from logs (tests/test_signatures.py quotes an example of each); a
    named row is emitted by code (literally or through the table's constants), sub-types hangs
    from its own stacks or wait channels, or names a signal's exit status."""
    constants = {table.HANG, table.UNKNOWN, table.EVENTS_PROTOCOL}
    unreachable = [
        row.name
        for row in table.ROWS
        if row.kind not in table.KINDS
        and row.name not in EMITTED
        and row.name not in constants
        and not (row.stacks is not None or row.wait_channels or row.signals)
        and row.name != table.SIGNAL_PREFIX + "*"
    ]
    assert unreachable == []


def _row_texts(row: table.Signature) -> set[str]:
    texts = {line.pattern for line in row.lines}
    if row.stacks is not None:
        texts |= set(row.stacks.pattern.split("|"))
    return texts


def test_no_python_module_holds_signature_rows():
    """Rows live in repro/data/signatures.yaml only: no tuple in the code pairs a row's name with
    one of its patterns, as table.py, named.py, hostfacts.py and runner/watchdog.py's hang
    stack patterns once did (two copies that drifted)."""
    rows = {row.name: _row_texts(row) for row in table.ROWS}
    found = []
    for path in sorted(REPRO.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Tuple):
                continue
            strings = {
                n.value
                for n in ast.walk(node)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            }
            for name in strings & rows.keys():
                if any(text in pattern for pattern in strings for text in rows[name]):
                    found.append(f"{path.relative_to(REPRO.parent)}:{node.lineno}: {name}")
    assert found == []
