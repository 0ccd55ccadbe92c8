"""Predict each (host, variant) cell of the matrix from published compatibility facts.

The facts are ``repro/data/compat-facts.yaml``, a copy of ../shared/compat/compat-facts.yaml
with its comments: a value whose line carries ``# unverified`` (or ``# windows unverified``,
``# nccl unverified`` ...: only that field) is loaded as *unverified*, and every reason that rests
on it says so. The rules are those of compat-facts.md section 0:

1. **driver vs CUDA runtime**: the NVIDIA driver must be at least the minor-version-compatibility
   minimum of the build's CUDA major (``cuda_min_driver.X.Y.family_min``). On WSL2 the driver
   number is the Windows driver, so the ``windows`` columns apply (``host.wsl2`` = ``true``).
2. **kernel image**: some ``sm_XY`` cubin of the build's arch list runs on the device per torch's
   own ``DEVICE_REQUIREMENT`` table (torch/cuda/__init__.py, copied in compat-facts.yaml as
   ``device_code_compat``), or a PTX entry ``compute_XY`` with ``XY <= capability`` can be
   JIT-compiled, which needs a driver at least the toolkit's own (``toolkit_driver``); otherwise
   "no kernel image is available for execution on the device". :func:`match_arch` is that rule
   (and the ROCm one of 4.), the only copy: the ``arch`` scenario calls it on the device too.
3. **driver branch vs GPU**: drivers 590+ no longer drive Maxwell, Pascal and Volta.
4. **ROCm**: the device's gfx target is in the wheel's ``PYTORCH_ROCM_ARCH`` (``gfx_lists``);
   targets outside the ROCm release's official list are noted.

Inputs are the matrix's properties: ``host.driver.nvidia``, ``host.wsl2``,
``host.gpu.N.{vendor,compute_capability,gfx_target}``, ``variant.{runtime,torch,accelerator}``.
What the run itself observed (``runtime.cuda``, ``runtime.hip``, ``runtime.arch_list``) beats the
table. A prediction is ``fail`` when any check fails, ``unknown`` when a check lacked data, else
``pass``.

Pure functions of their inputs; this module never imports torch and never touches the network
(case child processes import it: keep it cheap).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from repro import data as shipped_data

FACTS_FILE = shipped_data.COMPAT_FACTS

PASS = "pass"
FAIL = "fail"
UNKNOWN = "unknown"
NOTE = "note"
OUTCOMES = (PASS, FAIL, UNKNOWN)

#: Words that, written before "unverified" in a comment, limit the mark to that field.
_FIELD_WORDS = frozenset(
    {"windows", "linux", "nccl", "cudnn", "gfx", "arch", "ptx", "python", "runtime", "cuda"}
)
_VERSION_RE = re.compile(r"\d+(?:\.\d+)*")
_CUDA_TAG_RE = re.compile(r"^cu(\d+)(\d)$")
_ROCM_TAG_RE = re.compile(r"^rocm(\d+(?:\.\d+)*)$")
_ARCH_RE = re.compile(r"^(sm|compute)_(\d+)([a-z]?)$")  # suffix: a (arch), f (family)
_GPU_PROP_RE = re.compile(r"^host\.gpu\.(\d+)\.(\w+)$")


# --------------------------------------------------------------------------------------------
# Facts with their provenance


Path_ = tuple[Any, ...]


class Facts:
    """The loaded YAML plus, for every value, whether its line is marked unverified.

    ``get(*path)`` reads a value (None where absent); ``unverified(*path)`` tells whether that
    value is marked; ``name(*path)`` is the dotted name used in reasons
    (``cuda_min_driver.13.0.family_min.linux``).
    """

    def __init__(self, data: Any, lines: dict[Path_, int], marks: dict[int, frozenset[str] | None]):
        self.data = data
        self._lines = lines
        self._marks = marks

    @classmethod
    def load(cls, path: str | Path | None = None) -> Facts:
        """Read a facts file (default: the one shipped in the package)."""
        text = Path(path or FACTS_FILE).read_text(encoding="utf-8")
        return cls.from_text(text)

    @classmethod
    def from_text(cls, text: str) -> Facts:
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else {}
        finally:
            loader.dispose()
        lines: dict[Path_, int] = {}
        if node is not None:
            _record_lines(node, (), lines)
        return cls(data, lines, _unverified_marks(text))

    def get(self, *path: Any) -> Any:
        value = self.data
        for key in path:
            if isinstance(value, Mapping):
                value = value.get(key)
            elif isinstance(value, list) and isinstance(key, int) and 0 <= key < len(value):
                value = value[key]
            else:
                return None
            if value is None:
                return None
        return value

    def unverified(self, *path: Any) -> bool:
        line = self._lines.get(tuple(path))
        if line is None or line not in self._marks:
            return False
        scope = self._marks[line]
        if scope is None:
            return True
        last = next((key for key in reversed(path) if isinstance(key, str)), "")
        words = set(re.split(r"[^a-z]+", last.lower()))
        if words & scope:
            return True
        value = self.get(*path)
        return "ptx" in scope and isinstance(value, str) and value.startswith("compute_")

    @staticmethod
    def name(*path: Any) -> str:
        out = ""
        for key in path:
            out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
        return out


def _record_lines(node: yaml.Node, path: Path_, lines: dict[Path_, int]) -> None:
    """Line (0-based) of every value node, by path; iterative so depth is no concern."""
    stack: list[tuple[yaml.Node, Path_]] = [(node, path)]
    while stack:
        current, where = stack.pop()
        lines[where] = current.start_mark.line
        if isinstance(current, yaml.MappingNode):
            for key_node, value_node in current.value:
                if isinstance(key_node, yaml.ScalarNode):
                    stack.append((value_node, (*where, key_node.value)))
        elif isinstance(current, yaml.SequenceNode):
            for index, item in enumerate(current.value):
                stack.append((item, (*where, index)))


def _comment(line: str) -> str | None:
    """The comment text of one YAML line (after a ``#`` outside quotes), or None."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[index + 1 :].strip()
    return None


def _unverified_marks(text: str) -> dict[int, frozenset[str] | None]:
    """0-based line -> fields the ``unverified`` mark covers (None: the whole line)."""
    marks: dict[int, frozenset[str] | None] = {}
    for number, line in enumerate(text.splitlines()):
        comment = _comment(line)
        if comment is None or "unverified" not in comment.lower():
            continue
        segment = next(s for s in comment.lower().split(";") if "unverified" in s)
        prefix = segment.split("unverified", 1)[0]
        scope = frozenset(re.findall(r"[a-z]+", prefix)) & _FIELD_WORDS
        marks[number] = scope or None
    return marks


@functools.lru_cache(maxsize=1)
def default_facts() -> Facts:
    """The facts shipped with the package (loaded once)."""
    return Facts.load()


# --------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class Reason:
    """One check and its verdict (``pass``/``fail``/``unknown``/``note``).

    ``fact`` names what the verdict rests on: a dotted path into compat-facts.yaml, or
    ``observed runtime.arch_list`` for what the run itself recorded; ``unverified`` is true when
    that fact carries an ``# unverified`` mark.
    """

    check: str
    verdict: str
    text: str
    fact: str
    unverified: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "verdict": self.verdict,
            "text": self.text,
            "fact": self.fact,
            "unverified": self.unverified,
        }

    def line(self) -> str:
        mark = ", unverified" if self.unverified else ""
        return f"{self.verdict}: {self.text} [{self.fact}{mark}]"


@dataclass(frozen=True)
class Prediction:
    """The predicted outcome of one (host, variant) cell and every reason behind it."""

    outcome: str
    reasons: tuple[Reason, ...]

    @property
    def deciding(self) -> tuple[Reason, ...]:
        """The reasons whose verdict is the outcome (the failing checks of a ``fail``)."""
        return tuple(r for r in self.reasons if r.verdict == self.outcome)

    @property
    def unverified(self) -> bool:
        """A ``fail`` resting only on unverified facts, or a ``pass`` resting on any."""
        deciding = self.deciding
        if not deciding:
            return False
        if self.outcome == FAIL:
            return all(r.unverified for r in deciding)
        return any(r.unverified for r in deciding)

    def summary(self) -> str:
        """One line: the outcome and its first deciding reason."""
        first = self.deciding[0].text if self.deciding else ""
        mark = " (unverified)" if self.unverified else ""
        return f"{self.outcome}{mark}" + (f": {first}" if first else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "unverified": self.unverified,
            "reasons": [r.to_json() for r in self.reasons],
        }


def combine(reasons: Iterable[Reason]) -> Prediction:
    reasons = tuple(reasons)
    verdicts = {r.verdict for r in reasons}
    if FAIL in verdicts:
        outcome = FAIL
    elif UNKNOWN in verdicts or PASS not in verdicts:
        outcome = UNKNOWN
    else:
        outcome = PASS
    return Prediction(outcome, reasons)


def disagreement(predicted: str, observed: str | None) -> str | None:
    """``"predicted to fail but passed"`` / ``"predicted to pass but failed"`` or None.

    ``observed`` is ``pass``, ``fail`` or None (nothing comparable ran).
    """
    if observed is None or predicted == UNKNOWN:
        return None
    if predicted == FAIL and observed == PASS:
        return "predicted to fail but passed"
    if predicted == PASS and observed == FAIL:
        return "predicted to pass but failed"
    return None


# --------------------------------------------------------------------------------------------
# Reading the inputs


def version(text: Any) -> tuple[int, ...] | None:
    """``"580.65.06"`` -> (580, 65, 6); ``"2.8.0+cu128"`` -> (2, 8, 0); None if no number."""
    if text is None:
        return None
    match = _VERSION_RE.match(str(text).strip())
    return tuple(int(p) for p in match.group(0).split(".")) if match else None


def _major_minor(text: Any) -> str | None:
    parts = version(text)
    if not parts:
        return None
    return f"{parts[0]}.{parts[1] if len(parts) > 1 else 0}"


def runtime_tag(variant_props: Mapping[str, str], variant_id: str | None = None) -> str | None:
    """``variant.runtime``, else the part of a canonical id before ``-torch``."""
    tag = (variant_props.get("variant.runtime") or "").strip()
    if not tag and variant_id and "-torch" in variant_id:
        tag = variant_id.split("-torch", 1)[0]
    return tag or None


def _torch_key(variant_props: Mapping[str, str], variant_id: str | None) -> str | None:
    for name in ("variant.torch", "runtime.torch"):
        key = _major_minor(variant_props.get(name))
        if key:
            return key
    if variant_id and "-torch" in variant_id:
        return _major_minor(variant_id.split("-torch", 1)[1])
    return None


def accelerator(variant_props: Mapping[str, str], variant_id: str | None = None) -> str | None:
    """``cuda``, ``rocm`` or ``cpu`` for a variant (``variant.accelerator``, else its runtime)."""
    return _accelerator(variant_props, runtime_tag(variant_props, variant_id))


def _accelerator(variant_props: Mapping[str, str], tag: str | None) -> str | None:
    value = (variant_props.get("variant.accelerator") or "").strip()
    if value in ("cuda", "rocm", "cpu"):
        return value
    if tag:
        if tag.startswith("cu"):
            return "cuda"
        if tag.startswith("rocm"):
            return "rocm"
        if tag == "cpu":
            return "cpu"
    return None


@dataclass(frozen=True)
class Gpu:
    index: int
    vendor: str | None
    name: str | None
    capability: str | None
    gfx_target: str | None


def gpus_of(host_props: Mapping[str, str]) -> list[Gpu] | None:
    """The host's GPUs from ``host.gpu.N.*``; [] when ``host.gpu_count`` is 0; None: unknown."""
    fields: dict[int, dict[str, str]] = {}
    for name, value in host_props.items():
        match = _GPU_PROP_RE.match(name)
        if match:
            fields.setdefault(int(match.group(1)), {})[match.group(2)] = value
    if not fields:
        return [] if (host_props.get("host.gpu_count") or "").strip() == "0" else None
    gpus = []
    for index in sorted(fields):
        f = fields[index]
        vendor = (f.get("vendor") or "").lower() or None
        capability = f.get("compute_capability") or None
        gfx = normalise_gfx(f.get("gfx_target") or "") or None
        name = f.get("name")
        if vendor is None:
            if capability or (name or "").upper().startswith("NVIDIA"):
                vendor = "nvidia"
            elif gfx or (name or "").upper().startswith("AMD"):
                vendor = "amd"
        gpus.append(Gpu(index, vendor, name, capability, gfx))
    return gpus


def _code(capability: str) -> int | None:
    """``"12.0"`` -> 120, ``"8.9"`` -> 89."""
    parts = version(capability)
    if not parts or len(parts) < 2:
        return None
    return parts[0] * 10 + parts[1]


def _split_code(code: int) -> tuple[int, int]:
    return code // 10, code % 10


# --------------------------------------------------------------------------------------------
# Device code: can this device run this arch list (shared with the ``arch`` scenario)


@dataclass(frozen=True)
class ArchVerdict:
    """Outcome of :func:`match_arch`.

    Attributes:
        ok: the build has code this device can run.
        via: ``"cubin"`` (an ``sm_XY`` entry), ``"ptx"`` (a ``compute_XY`` entry, JIT at first
            use), ``"gfx"`` (ROCm target), or ``None`` when not ok.
        entry: the arch list entry that matched, or ``None``.
        reason: one sentence for logs and reports.
        fact: for a cubin verdict, the dotted facts path of the rule it rests on
            (``device_code_compat.80``); ``None`` for PTX, gfx, a suffixed cubin or a cubin
            torch's table does not list.
    """

    ok: bool
    via: str | None
    entry: str | None
    reason: str
    fact: str | None = None


def normalise_gfx(target: str) -> str:
    """``"gfx90a:sramecc+:xnack-"`` -> ``"gfx90a"`` (feature flags do not pick the code object)."""
    return target.strip().split(":", 1)[0].lower()


def gfx_from_override(override: str) -> str:
    """``HSA_OVERRIDE_GFX_VERSION`` value to gfx target: ``"10.3.0"`` -> ``"gfx1030"``.

    Raises:
        ValueError: ``override`` is not three dot-separated integers.
    """
    parts = override.strip().split(".")
    if len(parts) != 3:
        raise ValueError(f"HSA_OVERRIDE_GFX_VERSION must be MAJOR.MINOR.STEP, got {override!r}")
    major, minor, step = (int(part) for part in parts)
    return f"gfx{major}{minor:x}{step:x}"


def _runs_cubin(facts: Facts, device: int, code: int, suffix: str) -> tuple[bool, str | None]:
    """Whether an ``sm_<code><suffix>`` cubin runs on a device of capability code ``device``
    (``(8, 6)`` -> 86), and the facts path of the rule that says so."""
    if suffix == "f":  # family-specific (sm_100f): same major, same or later minor
        return device // 10 == code // 10 and device >= code, None
    if suffix:  # arch-specific (sm_90a): that exact capability only
        return device == code, None
    rule = facts.get("device_code_compat", str(code))
    if not isinstance(rule, Mapping):
        # Not in torch's table: same major, minor at least the code's (torch's fallback).
        return device // 10 == code // 10 and device >= code, None
    fact = Facts.name("device_code_compat", str(code))
    if "set" in rule:
        return str(device) in {str(x) for x in rule["set"] or []}, fact
    start = int(str(rule.get("interval", code)))
    excluded = {str(x) for x in rule.get("exclude") or []}
    runs = device // 10 == start // 10 and device >= start and str(device) not in excluded
    return runs, fact


def _runs_ptx(device: int, code: int, suffix: str) -> bool:
    """Whether a ``compute_<code><suffix>`` PTX entry can be JIT-compiled for ``device``:
    forwards only (any later capability, across majors), never backwards."""
    if suffix == "f":
        return device // 10 == code // 10 and device >= code
    if suffix:
        return device == code
    return device >= code


def match_arch(
    device: tuple[int, int] | str, arch_list: Sequence[str], facts: Facts | None = None
) -> ArchVerdict:
    """Can a build with ``arch_list`` (``torch.cuda.get_arch_list()``) run on ``device``?

    Args:
        device: a CUDA compute capability ``(major, minor)``, e.g. ``(8, 6)``, or a ROCm gfx
            target string, e.g. ``"gfx90a:sramecc+:xnack-"`` (feature flags are ignored).
        arch_list: the build's entries, e.g. ``["sm_80", "sm_90a", "compute_90"]`` or
            ``["gfx90a", "gfx1100"]``; blank entries are skipped, unparsable ones ignored. Empty
            for a CPU-only build (never ok).
        facts: the facts whose ``device_code_compat`` table decides cubins (default: the
            shipped ones, loaded once).

    CUDA: an ``sm_XY`` cubin runs per ``device_code_compat`` (torch's ``DEVICE_REQUIREMENT``:
    same major, minor >= X.Y, minus Jetson exclusions, or an explicit set; a code torch does not
    list: same major, minor >= Y); ``sm_XYa`` runs on X.Y only, ``sm_XYf`` on X.Y and later
    minors of X. A ``compute_XY`` PTX entry is JIT-compiled for any capability >= X.Y (same
    suffix rules). The first runnable cubin in list order wins, else the highest usable PTX.
    ROCm: the gfx target must be listed. Pure: no torch, no device.

    Returns:
        An :class:`ArchVerdict`; ``reason`` says "no kernel image" when nothing runs.

    Raises:
        ValueError / TypeError: a CUDA ``device`` that is not two integers.
    """
    entries = [entry.strip() for entry in arch_list if entry and entry.strip()]
    if isinstance(device, str):
        target = normalise_gfx(device)
        if not entries:
            return ArchVerdict(
                False,
                None,
                None,
                f"the build lists no gfx targets (CPU-only build?), device is {target}",
            )
        for entry in entries:
            if normalise_gfx(entry) == target:
                return ArchVerdict(True, "gfx", entry, f"{target} is in the build's gfx list")
        return ArchVerdict(
            False, None, None, f"{target} is not in the build's gfx list ({' '.join(entries)})"
        )

    major, minor = (int(part) for part in device)
    code = 10 * major + minor
    name = f"sm_{code}"
    if not entries:
        return ArchVerdict(
            False,
            None,
            None,
            f"the build lists no CUDA architectures (CPU-only build?), device is {name}",
        )
    facts = facts or default_facts()
    ptx: list[tuple[int, str]] = []
    for entry in entries:
        found = _ARCH_RE.match(entry)
        if not found:
            continue
        kind, number, suffix = found.group(1), int(found.group(2)), found.group(3)
        if kind == "compute":
            if _runs_ptx(code, number, suffix):
                ptx.append((number, entry))
            continue
        runs, fact = _runs_cubin(facts, code, number, suffix)
        if runs:
            return ArchVerdict(True, "cubin", entry, f"{name} runs the {entry} cubin", fact)
    if ptx:
        entry = max(ptx)[1]
        return ArchVerdict(
            True, "ptx", entry, f"{name} can JIT the {entry} PTX (first use compiles it)"
        )
    return ArchVerdict(
        False, None, None,
        f"no kernel image for {name}: no cubin runs on it and no PTX <= {major}.{minor} in {' '.join(entries)}",
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# The checks


def _variant_entry(facts: Facts, torch_key: str | None, tag: str | None) -> Path_ | None:
    """Path of ``torch_variants.<torch>.variants[i]`` for this runtime, or None."""
    if not torch_key or not tag:
        return None
    variants = facts.get("torch_variants", torch_key, "variants") or []
    for index, entry in enumerate(variants):
        if isinstance(entry, Mapping) and entry.get("runtime") == tag:
            return ("torch_variants", torch_key, "variants", index)
    return None


def _family_min(facts: Facts, cuda: str, platform: str) -> tuple[str | None, Path_]:
    path: Path_ = ("cuda_min_driver", cuda, "family_min", platform)
    value = facts.get(*path)
    if value is None:
        path = ("cuda_family_min_driver", cuda.split(".")[0], platform)
        value = facts.get(*path)
    return (str(value) if value is not None else None), path


def _toolkit_driver(facts: Facts, cuda: str, platform: str) -> tuple[str | None, Path_ | None]:
    """The lowest driver bundled with any release of CUDA X.Y: enough to JIT its PTX."""
    releases = facts.get("cuda_min_driver", cuda, "toolkit_driver") or {}
    best: tuple[tuple[int, ...], str, Path_] | None = None
    for release, drivers in releases.items():
        value = (drivers or {}).get(platform) if isinstance(drivers, Mapping) else None
        parsed = version(value)
        if parsed is not None and (best is None or parsed < best[0]):
            best = (
                parsed,
                str(value),
                ("cuda_min_driver", cuda, "toolkit_driver", release, platform),
            )
    return (best[1], best[2]) if best else (None, None)


@dataclass(frozen=True)
class _ArchList:
    entries: tuple[str, ...]
    fact: str
    unverified: frozenset[str]  # entries whose fact is unverified
    all_unverified: bool = False  # the list (or the variant's choice of it) is unverified


def _arch_list(
    facts: Facts,
    variant_props: Mapping[str, str],
    entry: Path_ | None,
    key: str,
    table: str,
    prefix: tuple[str, ...],
) -> _ArchList | None:
    """The build's arch list (``sm_*``/``compute_*`` or ``gfx*``): observed, else the table."""
    observed = [
        item.strip()
        for item in (variant_props.get("runtime.arch_list") or "").split(",")
        if item.strip()
    ]
    observed = [item for item in observed if item.startswith(prefix)]
    if observed:
        return _ArchList(tuple(observed), "observed runtime.arch_list", frozenset())
    if entry is None:
        return None
    list_name = facts.get(*entry, key)
    if not isinstance(list_name, str):
        return None
    entries = facts.get(table, list_name)
    if not isinstance(entries, list):
        return None
    unverified = frozenset(
        str(item) for i, item in enumerate(entries) if facts.unverified(table, list_name, i)
    )
    return _ArchList(
        tuple(str(item) for item in entries),
        f"{Facts.name(*entry, key)} = {Facts.name(table, list_name)}",
        unverified,
        facts.unverified(*entry, key) or facts.unverified(table, list_name),
    )


def _driver_check(
    facts: Facts, driver: str | None, cuda: str | None, cuda_fact: str, wsl2: bool
) -> Reason:
    platform = "windows" if wsl2 else "linux"
    if cuda is None:
        return Reason("driver", UNKNOWN, "the CUDA version of the build is unknown", cuda_fact)
    if version(driver) is None:
        return Reason(
            "driver", UNKNOWN, "the host's NVIDIA driver version is unknown", "host.driver.nvidia"
        )
    minimum, path = _family_min(facts, cuda, platform)
    fact = Facts.name(*path)
    unverified = facts.unverified(*path)
    if minimum is None:
        return Reason(
            "driver", UNKNOWN, f"no minimum driver for CUDA {cuda} ({platform}) in the facts", fact
        )
    where = f"{platform}{', WSL2 reports the Windows driver' if wsl2 else ''}"
    major = cuda.split(".")[0]
    if version(driver) < version(minimum):
        text = (
            f"driver {driver} is older than {minimum}, the minimum for CUDA {major}.x ({where}): "
            f"the CUDA {cuda} runtime fails with cudaErrorInsufficientDriver"
        )
        return Reason("driver", FAIL, text, fact, unverified)
    text = f"driver {driver} >= {minimum}, the minimum for CUDA {major}.x ({where})"
    return Reason("driver", PASS, text, fact, unverified)


def _gpu_support_check(facts: Facts, driver: str | None, gpu: Gpu, code: int) -> Reason | None:
    parsed = version(driver)
    if parsed is None:
        return None
    major, minor = _split_code(code)
    if parsed >= (590,) and (major in (5, 6) or code in (70, 72)):
        path = ("driver_branch_gpu_support", 0, "rule")
        text = (
            f"GPU {gpu.index} (capability {gpu.capability}) is not driven by driver {driver}: "
            "590+ dropped Maxwell, Pascal and Volta (R580 legacy branch needed)"
        )
        return Reason("gpu_support", FAIL, text, Facts.name(*path), facts.unverified(*path))
    if major == 12 and parsed < (570,):
        path = ("driver_branch_gpu_support", 1, "rule")
        text = f"GPU {gpu.index} (capability {gpu.capability}, Blackwell) needs driver R570+, host has {driver}"
        return Reason("gpu_support", FAIL, text, Facts.name(*path), facts.unverified(*path))
    return None


def _kernel_image_check(
    facts: Facts,
    gpu: Gpu,
    arch: _ArchList | None,
    driver: str | None,
    cuda: str | None,
    wsl2: bool,
) -> Reason:
    label = f"GPU {gpu.index}" + (f" ({gpu.name})" if gpu.name else "")
    code = _code(gpu.capability or "")
    if code is None:
        return Reason(
            "kernel_image",
            UNKNOWN,
            f"{label}: compute capability unknown",
            f"host.gpu.{gpu.index}.compute_capability",
        )
    if arch is None:
        return Reason(
            "kernel_image",
            UNKNOWN,
            "the build's arch list is unknown (not in the facts, no runtime.arch_list observed)",
            "torch_variants",
        )
    verdict = match_arch(_split_code(code), arch.entries, facts)
    if verdict.via == "cubin":
        rule_text = f"; {verdict.fact}" if verdict.fact else ""
        unverified = arch.all_unverified or verdict.entry in arch.unverified
        text = f"{label}, capability {gpu.capability}, runs the {verdict.entry} cubin"
        return Reason("kernel_image", PASS, text, arch.fact + rule_text, unverified)
    if not verdict.ok:
        listed = ", ".join(arch.entries) or "empty"
        text = (
            f"no kernel image for {label}, capability {gpu.capability}: no cubin in [{listed}] "
            f"runs on it and there is no PTX compute_XY with XY <= {code}"
        )
        return Reason("kernel_image", FAIL, text, arch.fact, arch.all_unverified)
    item = verdict.entry
    unverified = arch.all_unverified or item in arch.unverified
    platform = "windows" if wsl2 else "linux"
    needed, path = _toolkit_driver(facts, cuda, platform) if cuda else (None, None)
    if needed is None or version(driver) is None:
        text = (
            f"{label}, capability {gpu.capability}: no cubin, PTX {item} must be JIT-compiled; "
            f"whether driver {driver or '?'} can JIT the PTX of CUDA {cuda or '?'} is unknown"
        )
        return Reason("ptx_jit", UNKNOWN, text, arch.fact, unverified)
    fact = f"{arch.fact}; {Facts.name(*path)}"
    unverified = unverified or facts.unverified(*path)
    if version(driver) < version(needed):
        text = (
            f"{label}, capability {gpu.capability}: no cubin, and PTX {item} from CUDA {cuda} "
            f"needs driver >= {needed} to JIT (host has {driver}): cudaErrorUnsupportedPtxVersion"
        )
        return Reason("ptx_jit", FAIL, text, fact, unverified)
    text = (
        f"{label}, capability {gpu.capability}: no cubin, PTX {item} JIT-compiles "
        f"(driver {driver} >= {needed}); the first start is slow"
    )
    return Reason("ptx_jit", PASS, text, fact, unverified)


def _cuda_checks(
    facts: Facts,
    host_props: Mapping[str, str],
    variant_props: Mapping[str, str],
    gpus: list[Gpu],
    entry: Path_ | None,
    tag: str,
) -> list[Reason]:
    wsl2 = (host_props.get("host.wsl2") or "").strip().lower() == "true"
    driver = (host_props.get("host.driver.nvidia") or "").strip() or None
    cuda = _major_minor(variant_props.get("runtime.cuda"))
    cuda_fact = "observed runtime.cuda"
    if cuda is None and entry is not None and facts.get(*entry, "cuda"):
        cuda = _major_minor(facts.get(*entry, "cuda"))
        cuda_fact = Facts.name(*entry, "cuda")
    if cuda is None:
        match = _CUDA_TAG_RE.match(tag)
        if match:
            cuda, cuda_fact = f"{int(match.group(1))}.{match.group(2)}", "variant.runtime"
    reasons = [_driver_check(facts, driver, cuda, cuda_fact, wsl2)]
    arch = _arch_list(facts, variant_props, entry, "arch", "arch_lists", ("sm_", "compute_"))
    for gpu in gpus:
        code = _code(gpu.capability or "")
        if code is not None:
            support = _gpu_support_check(facts, driver, gpu, code)
            if support is not None:
                reasons.append(support)
        reasons.append(_kernel_image_check(facts, gpu, arch, driver, cuda, wsl2))
    return reasons


def _rocm_official(facts: Facts, rocm: str) -> tuple[list[str] | None, Path_ | None]:
    """The official gfx list of a ROCm release: exact key, else every X.Y.* key merged."""
    table = facts.get("rocm_gfx") or {}
    if isinstance(table.get(rocm), list):
        return list(table[rocm]), ("rocm_gfx", rocm)
    keys = [k for k in table if _major_minor(k) == rocm and isinstance(table[k], list)]
    if not keys:
        return None, None
    merged = sorted({g for k in keys for g in table[k]})
    return merged, ("rocm_gfx", min(keys, key=lambda k: version(k) or ()))


def _rocm_checks(
    facts: Facts,
    variant_props: Mapping[str, str],
    gpus: list[Gpu],
    entry: Path_ | None,
    tag: str,
) -> list[Reason]:
    rocm = _major_minor(variant_props.get("runtime.hip"))
    if rocm is None and entry is not None:
        rocm = _major_minor(facts.get(*entry, "rocm"))
    if rocm is None:
        match = _ROCM_TAG_RE.match(tag)
        rocm = _major_minor(match.group(1)) if match else None
    gfx = _arch_list(facts, variant_props, entry, "gfx", "gfx_lists", ("gfx",))
    official, official_path = _rocm_official(facts, rocm) if rocm else (None, None)
    reasons = []
    for gpu in gpus:
        label = f"GPU {gpu.index}" + (f" ({gpu.name})" if gpu.name else "")
        target = gpu.gfx_target
        if target is None:
            reasons.append(
                Reason(
                    "gfx",
                    UNKNOWN,
                    f"{label}: gfx target unknown",
                    f"host.gpu.{gpu.index}.gfx_target",
                )
            )
            continue
        if gfx is None:
            text = (
                "the wheel's gfx list is unknown (not in the facts, no runtime.arch_list observed)"
            )
            reasons.append(Reason("gfx", UNKNOWN, text, "torch_variants"))
            continue
        verdict = match_arch(target, gfx.entries, facts)
        unverified = gfx.all_unverified or verdict.entry in gfx.unverified
        if not verdict.ok:
            text = (
                f"no kernel image for {label}: {target} is not in the wheel's gfx list "
                f"[{', '.join(gfx.entries)}] (HSA_OVERRIDE_GFX_VERSION aliasing is unsupported)"
            )
            reasons.append(Reason("gfx", FAIL, text, gfx.fact, unverified))
            continue
        if target == "gfx906" and rocm and version(rocm) >= (6, 4):
            text = f"{label}: ROCm {rocm} math libraries dropped gfx906 kernels although the wheel lists it"
            reasons.append(
                Reason("gfx", FAIL, text, "gfx_lists_note", facts.unverified("gfx_lists_note"))
            )
            continue
        reasons.append(
            Reason(
                "gfx", PASS, f"{label}: {target} is in the wheel's gfx list", gfx.fact, unverified
            )
        )
        if official is not None and target not in official and official_path is not None:
            text = f"{target} is not on ROCm {rocm}'s official support list (may work, unsupported)"
            reasons.append(
                Reason(
                    "rocm_support",
                    NOTE,
                    text,
                    Facts.name(*official_path),
                    facts.unverified(*official_path),
                )
            )
    return reasons


def predict(
    host_props: Mapping[str, str],
    variant_props: Mapping[str, str],
    variant_id: str | None = None,
    facts: Facts | None = None,
) -> Prediction:
    """Predict the cell of a host (its ``host.*`` properties) and a variant (``variant.*`` and
    observed ``runtime.*``); ``variant_id`` fills in a missing runtime tag or torch pin."""
    facts = facts or default_facts()
    tag = runtime_tag(variant_props, variant_id)
    accelerator = _accelerator(variant_props, tag)
    if accelerator == "cpu":
        return Prediction(
            PASS,
            (
                Reason(
                    "accelerator",
                    PASS,
                    "CPU build: no driver, GPU or kernel-image requirement",
                    "variant.runtime",
                ),
            ),
        )
    if accelerator is None or tag is None:
        return Prediction(
            UNKNOWN,
            (
                Reason(
                    "inputs",
                    UNKNOWN,
                    "the variant's runtime (cu*/rocm*/cpu) is unknown",
                    "variant.runtime",
                ),
            ),
        )
    gpus = gpus_of(host_props)
    if gpus is None:
        text = "the host has no GPU properties (host.gpu.N.*): nothing to check"
        return Prediction(UNKNOWN, (Reason("inputs", UNKNOWN, text, "host.gpu"),))
    vendor = "nvidia" if accelerator == "cuda" else "amd"
    mine = [gpu for gpu in gpus if gpu.vendor == vendor]
    if not mine:
        what = "no GPU" if not gpus else f"no {'NVIDIA' if vendor == 'nvidia' else 'AMD'} GPU"
        text = f"{what} on this host for a {tag} build: its GPU cases skip, nothing to check"
        return Prediction(UNKNOWN, (Reason("inputs", UNKNOWN, text, "host.gpu_count"),))
    entry = _variant_entry(facts, _torch_key(variant_props, variant_id), tag)
    if accelerator == "cuda":
        reasons = _cuda_checks(facts, host_props, variant_props, mine, entry, tag)
    else:
        reasons = _rocm_checks(facts, variant_props, mine, entry, tag)
    return combine(reasons)
