"""The one property codec (``repro.properties``) and the typed model it reads and writes
(issue 31, items 1 and 2): what is written reads back, and no other module spells a name or
takes a fingerprint as a dict."""

from __future__ import annotations

import ast
import re

from conftest import REPO, spelled_outside
from test_fingerprint import H100_FP, wsl2_rtx3060_fp

from repro import gpu_properties, properties
from repro.model import (
    CONTAINER,
    GPUS_UNKNOWN,
    HOST,
    Fingerprint,
    Machine,
    Variant,
    accelerator_of,
    host_key,
)

CODEC = REPO / "repro" / "properties.py"


def test_the_host_facts_read_back_as_written():
    for data in (H100_FP, wsl2_rtx3060_fp()):
        fp = Fingerprint.from_json(data)
        props = properties.of_fingerprint(fp)
        back = properties.read_host(props)
        assert host_key(back) == host_key(fp) == props[properties.HOST_KEY]
        assert back.driver == fp.driver
        assert [(g.index, g.name, g.compute_capability, g.memory_bytes) for g in back.gpus] == [
            (g.index, g.name, g.compute_capability, g.memory_bytes) for g in fp.used_gpus
        ]
        assert back.host.wsl2 is bool(fp.host.wsl2)
        assert back.runtime.torch == fp.runtime.torch
        assert back.runtime.arch_list == fp.runtime.arch_list
        assert back.unreadable == ()


def test_another_producers_suite_has_unknown_gpus_not_none():
    back = properties.read_host({"host.os": "Ubuntu 24.04 LTS"})
    assert back.gpus == () and [u.what for u in back.unreadable] == [GPUS_UNKNOWN]
    assert back.host.wsl2 is None  # nothing said: neither WSL2 nor native
    none = properties.read_host({gpu_properties.COUNT: "0"})
    assert none.unreadable == ()  # the producer said: no GPU


def test_the_variant_and_its_lane_read_back_as_written():
    variant = Variant(
        id="cu128-torch2.8",
        runtime="cu128",
        accelerator="cuda",
        torch="2.8.0",
        base_image="nvidia/cuda:12.8.1-runtime-ubuntu22.04",
        shm_size="8g",
    ).in_lane(CONTAINER)
    props = properties.of_variant(variant)
    assert props[properties.LANE] == "container"
    assert properties.lane_of(props) == "container"
    back = properties.read_variant(props)
    assert (back.id, back.runtime, back.accelerator, back.torch, back.base_image, back.lane) == (
        "cu128-torch2.8",
        "cu128",
        "cuda",
        "2.8.0",
        "nvidia/cuda:12.8.1-runtime-ubuntu22.04",
        "container",
    )
    # A canonical id fills in what another producer left out; an unknown runtime stays unknown.
    bare = properties.read_variant({}, "rocm6.4-torch2.9")
    assert (bare.runtime, bare.torch, bare.accelerator, bare.lane) == ("rocm6.4", "2.9", "rocm", "")
    assert properties.read_variant({}, "my-own-build").accelerator == ""


def test_a_suite_is_the_host_the_variant_the_run_and_the_containers_facts():
    fp = Fingerprint.from_json(H100_FP)
    inside = Fingerprint(host=Machine(os="Debian 12"), runtime=fp.runtime)
    variant = Variant.of_build("2.13.0+cpu", "cpu").in_lane(HOST)
    suite = properties.suite(inside.keyed_by(fp), variant, "run-1", "0.1")
    assert suite[properties.RUN_ID] == "run-1" and suite[properties.VERSION] == "0.1"
    assert suite[properties.HOST_KEY] == host_key(fp)
    assert suite[properties.VARIANT_ID] == "cpu-torch2.13"
    assert suite["container.os"] == "Debian 12"


def test_the_accelerator_rule_is_one_rule():
    runtimes = ("cu128", "cu130", "rocm6.4", "cpu", "xpu", "", None)
    assert [accelerator_of(r) for r in runtimes] == [
        "cuda",
        "cuda",
        "rocm",
        "cpu",
        "cpu",
        "cpu",
        "cpu",
    ]


def test_container_settings_are_a_closed_list():
    assert properties.container_setting("shm_size") == "container.shm_size"
    try:
        properties.container_setting("shm")
    except ValueError as exc:
        assert "unknown container setting" in str(exc)
    else:
        raise AssertionError("a misspelt setting must raise")


def test_no_module_spells_a_host_runtime_variant_or_container_property_name():
    # A quoted name (or an f-string's start) of the four namespaces, anywhere but the codec and
    # the per-GPU codec it builds on.
    pattern = r"""["'](host|runtime|variant|container)\.[A-Za-z_{]"""
    spelled = spelled_outside(pattern, CODEC)
    gpu_codec = "repro/gpu_properties.py"
    assert [where for where in spelled if not where.startswith(gpu_codec)] == []


def test_no_module_spells_a_repro_property_name():
    names = re.findall(r'= f"\{_REPRO\}([a-z_]+)"', CODEC.read_text())
    assert "outcome" in names and "flaky" in names and "run_id" in names
    # The codec spells each one once, as ``f"{_REPRO}name"``; a quoted ``"repro.name"`` is a copy.
    alternatives = "|".join(names)
    quoted = r"""["']repro\.(""" + alternatives + r""")["'.]"""
    pattern = quoted + r"|\{_REPRO\}(" + alternatives + r')"'
    assert spelled_outside(pattern, CODEC) == []


def _fingerprint_params(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, name, annotation) of every parameter or class field that takes the host facts
    as a mapping: annotated with Fingerprint beside Mapping/dict, or named like a fingerprint
    (``fp``, ``fingerprint``, ``*_fp``) and annotated Mapping/dict."""
    found = []

    def judge(name: str, annotation: ast.expr | None, line: int) -> None:
        if annotation is None:
            return
        text = ast.unparse(annotation)
        loose = re.search(r"\b(Mapping|dict|Dict)\b", text)
        named = name in ("fp", "fingerprint") or name.endswith(("_fp", "_fingerprint"))
        if loose and ("Fingerprint" in text or named):
            found.append((line, name, text))

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                judge(arg.arg, arg.annotation, arg.lineno)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    judge(item.target.id, item.annotation, item.lineno)
    return found


def test_no_function_takes_the_fingerprint_as_a_dict_or_the_object():
    files = sorted((REPO / "repro").rglob("*.py"))
    assert len(files) > 100
    offenders = [
        f"{path.relative_to(REPO)}:{line} {name}: {annotation}"
        for path in files
        for line, name, annotation in _fingerprint_params(ast.parse(path.read_text()))
    ]
    assert offenders == []


def test_the_parameter_guard_catches_what_it_forbids():
    planted = ast.parse(
        "def a(fp: Fingerprint | Mapping[str, Any]): ...\n"
        "def b(host_fp: dict[str, Any]): ...\n"
        "class C:\n    fingerprint: dict[str, Any]\n"
        "def ok(fp: Fingerprint, probe: Mapping[str, Any]): ...\n"
    )
    assert [name for _, name, _ in _fingerprint_params(planted)] == ["fp", "host_fp", "fingerprint"]
