"""``repro check``: would this torch build work on this host? Answered from the shipped facts.

Four checks, each a :class:`~repro.compat.results.Reason` naming the fact it rests on:

- ``published``: the torch release exists (compat-extra.yaml ``torch_releases``) and was published
  for the runtime (compat-facts.yaml ``torch_variants.<minor>.variants``; ``cpu`` builds exist for
  every release). A missing build names the nearest published ones.
- ``python``: the host's Python has a wheel of that release (``torch_variants.<minor>.python``).
- ``driver``, ``kernel_image``/``ptx_jit``/``gpu_support``/``gfx``: the cell prediction of
  :func:`repro.compat.predictions.predict` for the host's ``host.*`` properties and the build.

When something fails, the published builds of the same release (else of the nearest newer
release) that this host would run are suggested. Pure: never imports torch, never touches the
network; the host comes in as fingerprint properties (``repro.host.fingerprint.to_properties``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from packaging.version import Version

from repro import properties as property_names
from repro.compat import sources as src
from repro.compat.facts import Facts, default_facts, extra_facts
from repro.compat.forward_compat import gpu_brand
from repro.compat.pip_command import BuildRequest
from repro.compat.predictions import accelerator, gpus_of, predict, version
from repro.compat.results import FAIL, NOTE, PASS, UNKNOWN, Prediction, Reason, combine
from repro.variant_id import VariantId

_EXTRA = "compat-extra:"
_MAX_SUGGESTIONS = 4


@dataclass(frozen=True)
class CheckResult:
    """The answer for one build on one host.

    ``runtime`` is the resolved runtime tag (PyPI's default where the request named none);
    ``nearest``: published builds closest to an unpublished one (``"2.7.0+cu126"``);
    ``instead``: published builds this host is predicted to run, when the build fails.
    """

    request: BuildRequest
    runtime: str | None
    prediction: Prediction
    nearest: tuple[str, ...] = ()
    instead: tuple[str, ...] = ()

    @property
    def outcome(self) -> str:
        return self.prediction.outcome

    def to_json(self) -> dict[str, Any]:
        return {
            "torch": self.request.torch,
            "runtime": self.runtime,
            "runtime_from": self.request.runtime_from,
            **self.prediction.to_json(),
            "nearest": list(self.nearest),
            "instead": list(self.instead),
        }


def _minor(torch: str) -> str | None:
    parts = version(torch)
    return f"{parts[0]}.{parts[1]}" if parts and len(parts) >= 2 else None


def _minors(facts: Facts) -> list[str]:
    table = facts.get("torch_variants") or {}
    return sorted(table, key=lambda key: version(key) or ())


def _published(facts: Facts, minor: str) -> list[str]:
    """Runtime tags published for a torch minor (``published: false`` entries left out)."""
    out = []
    for entry in facts.get("torch_variants", minor, "variants") or []:
        if isinstance(entry, Mapping) and entry.get("published", True) is not False:
            out.append(str(entry.get("runtime")))
    return out


def _newest_patch(extra: Facts, minor: str) -> str:
    releases = extra.get("torch_releases", minor) or []
    return str(max(releases, key=lambda r: version(r) or ())) if releases else f"{minor}.0"


def _runtime_key(runtime: str) -> tuple[str, tuple[int, ...]]:
    """(family, version) of a tag: cu121 -> ("cu", (12, 1)), rocm6.2.4 -> ("rocm", (6, 2, 4))."""
    if runtime.startswith("cu") and runtime[2:].isdigit():
        digits = runtime[2:]
        return "cu", (int(digits[:-1]), int(digits[-1]))
    if runtime.startswith("rocm"):
        return "rocm", version(runtime[4:]) or ()
    return runtime, ()


def _distance(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """Closeness of two versions: different major first, then the gap in minors."""
    a, b = (a + (0, 0))[:2], (b + (0, 0))[:2]
    return (int(a[0] != b[0]), abs((a[0] * 100 + a[1]) - (b[0] * 100 + b[1])))


def nearest_published(
    request: BuildRequest, runtime: str, facts: Facts | None = None, extra: Facts | None = None
) -> list[str]:
    """Published builds nearest to ``torch request.torch + runtime``: the same release with the
    closest runtimes of the same family, then the same runtime in the closest releases."""
    facts, extra = facts or default_facts(), extra or extra_facts()
    family, wanted = _runtime_key(runtime)
    minor = _minor(request.torch)
    same_torch = [
        r for r in _published(facts, minor or "") if _runtime_key(r)[0] == family and r != runtime
    ]
    same_torch.sort(key=lambda r: _distance(_runtime_key(r)[1], wanted))
    out = [f"{request.torch}+{r}" for r in same_torch[:3]]
    other = [m for m in _minors(facts) if m != minor and runtime in _published(facts, m)]
    other.sort(key=lambda m: _distance(version(m) or (), version(minor or "") or ()))
    out += [f"{_newest_patch(extra, m)}+{runtime}" for m in other[:2]]
    return out


def _published_check(
    request: BuildRequest, facts: Facts, extra: Facts
) -> tuple[Reason, str | None, list[str]]:
    """The ``published`` reason, the resolved runtime and, when not published, the nearest."""
    minor = _minor(request.torch)
    minors = _minors(facts)
    if minor not in minors:
        edge = (
            "newer" if minors and (version(minor) or ()) > (version(minors[-1]) or ()) else "older"
        )
        text = (
            f"torch {request.torch} is {edge} than the shipped facts cover "
            f"({minors[0]}-{minors[-1]}, read {facts.get('generated')})"
        )
        return Reason("published", UNKNOWN, text, "torch_variants"), request.runtime, []
    releases = [str(r) for r in extra.get("torch_releases", minor) or []]
    if releases and request.torch not in releases:
        text = f"torch {request.torch} was never released; {minor} releases: {', '.join(releases)}"
        fact = _EXTRA + Facts.name("torch_releases", minor)
        nearest = [f"{r}+{request.runtime}" if request.runtime else r for r in releases]
        reason = Reason("published", FAIL, text, fact, extra.unverified("torch_releases", minor))
        return reason, request.runtime, nearest
    runtime = request.runtime
    if runtime is None:
        path = ("torch_variants", minor, "pypi_default")
        runtime = str(facts.get(*path))
        text = (
            f"pip install torch=={request.torch} from PyPI gets the {runtime} build (Linux x86_64)"
        )
        return (
            Reason("published", PASS, text, Facts.name(*path), facts.unverified(*path)),
            runtime,
            [],
        )
    published = _published(facts, minor)
    entries = facts.get("torch_variants", minor, "variants") or []
    for index, entry in enumerate(entries):
        if isinstance(entry, Mapping) and entry.get("runtime") == runtime:
            path = ("torch_variants", minor, "variants", index)
            if entry.get("published", True) is False:
                text = f"torch {minor} {runtime} wheels were built but not advertised"
                return Reason("published", UNKNOWN, text, Facts.name(*path), True), runtime, []
            text = f"torch {request.torch}+{runtime} is published"
            parsed = src.parse_version(request.torch)
            read = parsed is None or src.patch_matrix_read(facts, extra, Version(parsed.public))
            if not read:
                text += f" (taken from torch {minor}'s builds: {request.torch}'s were not read)"
            return (
                Reason(
                    "published", PASS, text, Facts.name(*path), facts.unverified(*path) or not read
                ),
                runtime,
                [],
            )
    if runtime == "cpu":
        text = f"torch {request.torch}+cpu is published (CPU builds exist for every release)"
        return (
            Reason("published", PASS, text, _EXTRA + "sources.pytorch_previous_versions"),
            runtime,
            [],
        )
    text = (
        f"torch {request.torch}+{runtime} was not published: torch {minor} builds are "
        f"{', '.join(published)} (and cpu)"
    )
    reason = Reason("published", FAIL, text, Facts.name("torch_variants", minor, "variants"))
    return reason, runtime, nearest_published(request, runtime, facts, extra)


def _python_check(host_props: Mapping[str, str], minor: str, facts: Facts) -> Reason | None:
    python = (host_props.get(property_names.HOST_PYTHON) or "").strip()
    tags = [str(t) for t in facts.get("torch_variants", minor, "python") or []]
    parts = version(python)
    if not tags or not parts or len(parts) < 2:
        return None
    short = f"{parts[0]}.{parts[1]}"
    path = ("torch_variants", minor, "python")
    if short in tags:
        text = f"torch {minor} has wheels for Python {short}"
        return Reason("python", PASS, text, Facts.name(*path), facts.unverified(*path))
    text = f"torch {minor} has no wheel for Python {short} (published: {', '.join(tags)})"
    return Reason("python", FAIL, text, Facts.name(*path), facts.unverified(*path))


def _runs_here(host_props: Mapping[str, str], torch: str, runtime: str, facts: Facts) -> bool:
    variant = {property_names.VARIANT_RUNTIME: runtime, property_names.VARIANT_TORCH: torch}
    return predict(host_props, variant, None, facts).outcome == PASS


def builds_that_run(
    host_props: Mapping[str, str],
    torch: str,
    facts: Facts | None = None,
    extra: Facts | None = None,
) -> list[str]:
    """Published GPU builds of ``torch``'s release this host is predicted to run; if none, those
    of the nearest newer release that has one (``["2.8.0+cu128", ...]``, at most 4)."""
    facts, extra = facts or default_facts(), extra or extra_facts()
    minor = _minor(torch) or ""
    minors = _minors(facts)
    later = [m for m in minors if (version(m) or ()) > (version(minor) or ())]
    for candidate in [minor, *later] if minor in minors else later:
        patch = torch if candidate == minor else _newest_patch(extra, candidate)
        found = [
            f"{patch}+{r}"
            for r in _published(facts, candidate)
            if accelerator({}, str(VariantId(r, candidate))) != "cpu"
            and _runs_here(host_props, patch, r, facts)
        ]
        if found:
            return found[:_MAX_SUGGESTIONS]
    return []


def _forward_compat_hint(
    host_props: Mapping[str, str], cuda_runtime: str, facts: Facts, extra: Facts
) -> Reason | None:
    """A note when the driver is too old but every NVIDIA GPU has a forward-compatible brand:
    the cuda-compat package is the alternative to a driver upgrade (data-centre GPUs only)."""
    gpus = [g for g in gpus_of(host_props) or [] if g.vendor == "nvidia"]
    allowed = {str(b).lower() for b in facts.get("nvidia_container", "forward_compat_brands") or ()}
    brands = [gpu_brand(g.name, g.brand, extra) for g in gpus]
    if not gpus or (host_props.get(property_names.WSL2) or "") == "true":
        return None
    if any(brand not in allowed for brand, _ in brands):
        return None
    family = _runtime_key(cuda_runtime)[1]
    if len(family) != 2:
        return None
    package = f"cuda-compat-{family[0]}-{family[1]}"
    text = (
        f"a data-centre GPU: NVIDIA's forward-compatibility package {package} (its libcuda in "
        f"/usr/local/cuda-{family[0]}.{family[1]}/compat ahead on the library path, or an "
        "nvidia/cuda image that carries it) can run this build without a driver upgrade"
    )
    fact = "nvidia_container.forward_compat_brands; compat-extra:sources.nvidia_forward_compat"
    return Reason("forward_compat", NOTE, text, fact, any(inferred for _, inferred in brands))


def check(
    request: BuildRequest,
    host_props: Mapping[str, str],
    facts: Facts | None = None,
    extra: Facts | None = None,
) -> CheckResult:
    """Whether ``request`` exists and would run on the host of ``host_props`` (``host.*``
    fingerprint properties: driver, GPUs, WSL2, Python). Outcome ``fail`` when any check fails,
    ``unknown`` when one lacked data, else ``pass``."""
    facts, extra = facts or default_facts(), extra or extra_facts()
    host_props = {k: v for k, v in host_props.items() if k.startswith("host.")}
    published, runtime, nearest = _published_check(request, facts, extra)
    reasons = [published]
    minor = _minor(request.torch) or ""
    python = _python_check(host_props, minor, facts)
    if python is not None:
        reasons.append(python)
    if runtime and published.verdict != FAIL:
        variant = {
            property_names.VARIANT_RUNTIME: runtime,
            property_names.VARIANT_TORCH: request.torch,
        }
        reasons += predict(host_props, variant, None, facts).reasons
        if any(r.check == "driver" and r.verdict == FAIL for r in reasons):
            hint = _forward_compat_hint(host_props, runtime, facts, extra)
            reasons += [hint] if hint else []
    prediction = combine(reasons)
    instead: list[str] = []
    if prediction.outcome == FAIL and runtime != "cpu":
        wanted = {f"{request.torch}+{runtime}"}
        instead = [
            b for b in builds_that_run(host_props, request.torch, facts, extra) if b not in wanted
        ]
    return CheckResult(request, runtime, prediction, tuple(nearest), tuple(instead))


def newest_torch(facts: Facts | None = None, extra: Facts | None = None) -> str | None:
    """The newest torch release the shipped facts know ("2.15.0"): the newest patch of
    compat-extra.yaml ``torch_releases`` for the newest ``torch_variants`` minor."""
    facts, extra = facts or default_facts(), extra or extra_facts()
    minors = _minors(facts)
    return _newest_patch(extra, minors[-1]) if minors else None


def stale_pins(
    pins: list[str], facts: Facts | None = None, extra: Facts | None = None
) -> str | None:
    """A warning when the newest of ``pins`` (torch versions of matrix.yaml's variants) is older
    than :func:`newest_torch`, else None."""
    newest_known = newest_torch(facts, extra)
    parsed = [(version(pin) or (), pin) for pin in pins if version(pin)]
    if not newest_known or not parsed:
        return None
    newest_pin = max(parsed)[1]
    if (version(newest_pin) or ()) >= (version(newest_known) or ()):
        return None
    read = (facts or default_facts()).get("generated")
    return (
        f"the newest torch pin is {newest_pin}, but the shipped facts know {newest_known} "
        f"(compat-facts.yaml of {read}): add variants for the newer releases"
    )
