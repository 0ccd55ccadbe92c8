"""The project against the real NVML binding (the installed ``nvidia-ml-py``), not a belief of it.

Every ``pynvml`` function ``repro/`` calls must exist in the binding and accept the arguments the
code passes (found by reading the code's syntax tree); every test double of pynvml in ``tests/``
must take the parameters the real function takes. The Fabric Manager query runs through the real
binding down to a stand-in for ``libnvidia-ml`` (``pynvml.nvmlLib``), so how the struct is
passed (``ctypes.byref``, read back after the call) is checked by the binding's own code.
"""

from __future__ import annotations

import ast
import ctypes
import inspect
import re
from pathlib import Path

import pynvml
import pytest
import test_fingerprint
import test_gpu_hosts
import test_gpu_readers
import test_gpu_selection

from repro.host import nvidia_modes

REPRO = Path(__file__).resolve().parent.parent / "repro"
NVML_NAME = re.compile(r"nvml[A-Z]\w+")
#: Helpers that take a pynvml function's name as a string, then its arguments.
NAME_TAKING_HELPERS = {"_ask"}


def _positional(node: ast.Call) -> list[ast.expr] | None:
    """The call's positional arguments; None when one is ``*args`` (arity unknown)."""
    return None if any(isinstance(a, ast.Starred) for a in node.args) else list(node.args)


def project_nvml_calls() -> dict[str, set[int]]:
    """``{pynvml function: {number of positional arguments the code passes}}`` from every
    ``nvml.nvmlX(...)`` call, every ``helper(..., nvml.nvmlX, args...)`` that passes the function
    on, and every ``_ask(..., nvml, "nvmlX", args...)`` in ``repro/``."""
    found: dict[str, set[int]] = {}
    for path in REPRO.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or (args := _positional(node)) is None:
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and NVML_NAME.fullmatch(func.attr):
                found.setdefault(func.attr, set()).add(len(args))
            helper = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            for i, arg in enumerate(args):
                if isinstance(arg, ast.Attribute) and NVML_NAME.fullmatch(arg.attr):
                    found.setdefault(arg.attr, set()).add(len(args) - i - 1)
                named = isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                if named and helper in NAME_TAKING_HELPERS and NVML_NAME.fullmatch(arg.value):
                    found.setdefault(arg.value, set()).add(len(args) - i - 1)
    for function, _struct in nvidia_modes.FABRIC_QUERIES:  # called as call(handle, byref(info))
        found.setdefault(function, set()).add(2)
    return found


CALLS = project_nvml_calls()


def test_the_scan_finds_the_fingerprints_queries():
    # A scanner that finds nothing would let every check below pass vacuously.
    assert {
        "nvmlInit",
        "nvmlShutdown",
        "nvmlSystemGetDriverVersion",
        "nvmlDeviceGetHandleByIndex",
        "nvmlDeviceGetCudaComputeCapability",
        "nvmlDeviceGetComputeMode",
        "nvmlDeviceGetMigMode",
        "nvmlDeviceGetMigDeviceHandleByIndex",
        "nvmlDeviceGetGpuFabricInfoV",
    } <= set(CALLS)
    assert CALLS["nvmlDeviceGetMigDeviceHandleByIndex"] == {2}
    assert CALLS["nvmlInit"] == {0}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_called_function_exists_with_that_arity(name):
    real = getattr(pynvml, name, None)
    assert real is not None, f"pynvml {pynvml.__file__} has no {name}"
    signature = inspect.signature(real)
    for arity in CALLS[name]:
        try:
            signature.bind(*range(arity))
        except TypeError as exc:
            pytest.fail(
                f"repro calls {name} with {arity} argument(s); pynvml has {signature}: {exc}"
            )


def test_the_fabric_structs_exist_in_the_binding():
    for function, struct in nvidia_modes.FABRIC_QUERIES:
        assert hasattr(pynvml, function), function
        assert "state" in dict(getattr(pynvml, struct)._fields_), struct


DOUBLES = [
    test_gpu_hosts.FixtureNVML,
    test_fingerprint.FakeNVML,
    test_gpu_readers.OneGpuNVML,
    test_gpu_readers.NoNVML,
    test_gpu_selection.ModesNVML,
]


def _required(signature: inspect.Signature) -> int:
    return sum(
        1
        for p in signature.parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    )


@pytest.mark.parametrize("double", DOUBLES, ids=lambda d: d.__name__)
def test_every_pynvml_double_takes_the_real_parameters(double):
    methods = [n for n in vars(double) if NVML_NAME.fullmatch(n)]
    assert methods
    for name in methods:
        real = getattr(pynvml, name, None)
        assert real is not None, f"{double.__name__}.{name}: no such function in pynvml"
        fake = inspect.signature(getattr(double, name)).replace(
            parameters=list(inspect.signature(getattr(double, name)).parameters.values())[1:]
        )  # without self
        wanted = inspect.signature(real)
        assert _required(fake) == _required(wanted), f"{double.__name__}.{name}{fake} vs {wanted}"
        for arity in CALLS.get(name, ()):
            fake.bind(*range(arity))


# ---------------------------------------------------------------------------------------------
# the fabric query through the real binding


class DriverLibrary:
    """``libnvidia-ml`` as pynvml sees it (``pynvml.nvmlLib``): the symbols one driver exports,
    each a Python function taking what pynvml hands to the C function. A symbol it lacks is an
    ``AttributeError``, which pynvml turns into ``NVMLError_FunctionNotFound`` (pynvml.py,
    ``_nvmlGetFunctionPointer``)."""

    def __init__(self, **symbols):
        self.symbols = symbols

    def __getattr__(self, name):
        try:
            return self.symbols[name]
        except KeyError:
            raise AttributeError(name) from None


def fills(struct_type, state: int, ret: int = pynvml.NVML_SUCCESS):
    """A C fabric query that writes ``state`` through the pointer it is given (``byref``)."""

    def query(device, info):
        target = info._obj  # a ctypes.byref() argument; a struct passed by value has no _obj
        assert isinstance(target, struct_type), type(target)
        if struct_type is pynvml.c_nvmlGpuFabricInfoV_t:
            assert target.version == pynvml.nvmlGpuFabricInfo_v2  # set by the struct's __init__
        if ret == pynvml.NVML_SUCCESS:
            target.state = state
        return ret

    return query


@pytest.fixture
def driver(monkeypatch):
    def install(**symbols):
        monkeypatch.setattr(pynvml, "nvmlLib", DriverLibrary(**symbols))
        monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer_cache", {})

    return install


def test_fabric_state_through_the_versioned_query(driver):
    driver(nvmlDeviceGetGpuFabricInfoV=fills(pynvml.c_nvmlGpuFabricInfoV_t, 1))
    unreadable: list = []
    handle = ctypes.c_void_p(0x1234)
    assert nvidia_modes.fabric_state(pynvml, handle, "nvml.device.0.fabric", unreadable) == 1
    assert unreadable == []


def test_an_r535_driver_without_the_versioned_symbol_is_asked_the_old_query(driver):
    driver(nvmlDeviceGetGpuFabricInfo=fills(pynvml.c_nvmlGpuFabricInfo_t, 3))
    unreadable: list = []
    assert nvidia_modes.fabric_state(pynvml, None, "nvml.device.0.fabric", unreadable) == 3
    assert unreadable == []


def test_no_fabric_is_not_known_and_other_errors_are_unreadable(driver):
    no_fabric = fills(pynvml.c_nvmlGpuFabricInfoV_t, 0, pynvml.NVML_ERROR_NOT_SUPPORTED)
    driver(nvmlDeviceGetGpuFabricInfoV=no_fabric)
    unreadable: list = []
    assert nvidia_modes.fabric_state(pynvml, None, "nvml.device.0.fabric", unreadable) is None
    assert unreadable == []
    lost = fills(pynvml.c_nvmlGpuFabricInfoV_t, 0, pynvml.NVML_ERROR_GPU_IS_LOST)
    driver(nvmlDeviceGetGpuFabricInfoV=lost)
    assert nvidia_modes.fabric_state(pynvml, None, "nvml.device.0.fabric", unreadable) is None
    assert unreadable == [{"what": "nvml.device.0.fabric", "why": "GPU is lost"}]


def test_read_modes_reports_the_fabric_in_nvidia_smi_words(driver):
    driver(nvmlDeviceGetGpuFabricInfoV=fills(pynvml.c_nvmlGpuFabricInfoV_t, 1))
    unreadable: list = []
    modes = nvidia_modes.read_modes(pynvml, None, "nvml.device.0", unreadable)
    assert modes["fabric_state"] == "Not Started"
    # This stand-in driver exports nothing else: each other query is a recorded gap, no crash.
    assert {u["why"] for u in unreadable} == {"Function Not Found"}
