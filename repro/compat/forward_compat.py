"""CUDA forward compatibility: can an image run a CUDA runtime newer than the host's driver?

NVIDIA's rule (docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html; compat-facts.md
section 0, rule 2 and section 5.3): a CUDA X.Y application runs on an older driver branch when

1. the image carries the ``cuda-compat-X-Y`` package (its newer user-mode driver, ``libcuda``, in
   ``/usr/local/cuda/compat``) for a CUDA X.Y at least the build's;
2. every GPU's brand is a forward-compatible one (``nvidia_container.forward_compat_brands`` in
   compat-facts.yaml: data-centre and workstation brands, never GeForce/Titan, where the compat
   libraries fail with Error 804 "forward compatibility was attempted on non supported HW");
3. the driver's branch is one the image's ``NVIDIA_REQUIRE_CUDA`` accepts for those brands
   (otherwise nvidia-container-cli refuses to start it).

"The image carries the compat package" is a fact of the variant: ``variant.cuda_compat``
(``true``/``false``) when a run recorded it, else its ``variant.base_image`` matched against
``compat_package_images`` in compat-extra.yaml (every ``nvidia/cuda`` image installs
``cuda-compat-X-Y``; ``python:*``, ``ubuntu:*`` and the pytorch runtime images do not). A variant
with neither (a run directly on the host) gets no forward-compatibility verdict: the host's own
driver decides. Pure functions; never imports torch.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from repro import properties as property_names
from repro.compat.facts import Facts
from repro.compat.results import FAIL, PASS, UNKNOWN

_IMAGE_CUDA_RE = re.compile(r"(?:^|/)cuda:(\d+)\.(\d+)")
_EXTRA = "compat-extra:"


@dataclass(frozen=True)
class ForwardCompat:
    """The forward-compatibility verdict for one (host, variant) whose driver is too old.

    ``verdict``: ``pass`` (the image's compat libraries run the build), ``fail`` (they do not,
    ``text`` says which condition breaks), ``unknown`` (a fact is missing). ``fact`` names the
    facts it rests on; ``unverified`` is true when any of them carries an ``# unverified`` mark.
    """

    verdict: str
    text: str
    fact: str
    unverified: bool = False


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text))


def _glob_any(patterns: Any, image: str) -> bool:
    return any(fnmatch.fnmatchcase(image, str(p)) for p in patterns or ())


def image_carries_compat(
    variant_props: Mapping[str, str], extra: Facts
) -> tuple[bool | None, str, bool]:
    """Whether the variant's image carries ``cuda-compat-X-Y``: (answer, fact, unverified).

    ``variant.cuda_compat`` ("true"/"false") wins; else ``variant.base_image`` is matched against
    compat-extra.yaml ``compat_package_images.carries`` / ``.lacks``. None: no image or unknown.
    """
    explicit = (variant_props.get(property_names.CUDA_COMPAT) or "").strip().lower()
    if explicit in ("true", "false"):
        return explicit == "true", property_names.CUDA_COMPAT, False
    image = (variant_props.get(property_names.BASE_IMAGE) or "").strip()
    if not image:
        return None, property_names.BASE_IMAGE, False
    carries = ("compat_package_images", "carries")
    if _glob_any(extra.get(*carries), image):
        return True, _EXTRA + Facts.name(*carries), extra.unverified(*carries)
    lacks = ("compat_package_images", "lacks")
    if _glob_any(extra.get(*lacks), image):
        return False, _EXTRA + Facts.name(*lacks), extra.unverified(*lacks)
    return None, _EXTRA + Facts.name(*carries), False


def _branches(facts: Facts, extra: Facts, image_cuda: str) -> tuple[list[str] | None, str, bool]:
    """Driver branches the image's NVIDIA_REQUIRE_CUDA accepts by brand, with provenance."""
    path = ("image_forward_compat_branches", image_cuda)
    value = extra.get(*path)
    if isinstance(value, list):
        return [str(v) for v in value], _EXTRA + Facts.name(*path), extra.unverified(*path)
    path = ("nvidia_container", "nvidia_cuda_image_require", image_cuda)
    value = facts.get(*path, "forward_compat_driver_branches")
    if isinstance(value, list):
        full = (*path, "forward_compat_driver_branches")
        return [str(v) for v in value], Facts.name(*full), facts.unverified(*full)
    return None, Facts.name("nvidia_container", "nvidia_cuda_image_require"), True


def gpu_brand(name: str | None, brand: str | None, extra: Facts) -> tuple[str | None, bool]:
    """The GPU's NVML brand (lower case) and whether it was inferred from the name.

    A recorded ``brand`` wins; else a name with a consumer word (``GeForce``, ``TITAN``:
    compat-extra.yaml ``consumer_name_words``) is ``geforce``, any other name ``nvidia``
    (data-centre or workstation: inferred, so unverified); no name: None.
    """
    if brand and brand.strip():
        return brand.strip().lower(), False
    if not name:
        return None, True
    words = [str(w).lower() for w in extra.get("consumer_name_words") or ()]
    lowered = name.lower()
    if any(word in lowered for word in words):
        return "geforce", True
    return "nvidia", True


def forward_compat(
    facts: Facts,
    extra: Facts,
    *,
    driver: str,
    cuda: str,
    wsl2: bool,
    gpus: Sequence[tuple[int, str | None, str | None]],
    variant_props: Mapping[str, str],
) -> ForwardCompat | None:
    """Whether a CUDA ``cuda`` ("13.0") build runs on ``driver`` (below the CUDA family minimum)
    through the image's forward-compatibility package.

    ``gpus``: (index, name, brand) of each NVIDIA GPU the job uses. Returns None when the variant
    names no image (a host run: the host's driver alone decides).
    """
    carries, carries_fact, carries_unverified = image_carries_compat(variant_props, extra)
    if carries is None and carries_fact == property_names.BASE_IMAGE:
        return None
    image = variant_props.get(property_names.BASE_IMAGE) or "the image"
    brands_path = ("nvidia_container", "forward_compat_brands")
    brands_fact = Facts.name(*brands_path)
    if carries is False:
        return ForwardCompat(
            FAIL, f"{image} does not carry cuda-compat", carries_fact, carries_unverified
        )
    if carries is None:
        text = f"whether {image} carries cuda-compat is not in the facts"
        return ForwardCompat(UNKNOWN, text, carries_fact)
    if wsl2:
        text = "forward compatibility is for Linux data-centre GPUs, not WSL2"
        return ForwardCompat(FAIL, text, _EXTRA + "sources.nvidia_forward_compat")
    found = _IMAGE_CUDA_RE.search(image)
    image_cuda = f"{found.group(1)}.{found.group(2)}" if found else cuda
    if _version_tuple(image_cuda) < _version_tuple(cuda):
        text = f"{image} carries the CUDA {image_cuda} compat package, older than the build's CUDA {cuda}"
        return ForwardCompat(FAIL, text, carries_fact, carries_unverified)
    allowed = {str(b).lower() for b in facts.get(*brands_path) or ()}
    unverified = carries_unverified or facts.unverified(*brands_path)
    for index, name, brand in gpus:
        found_brand, inferred = gpu_brand(name, brand, extra)
        label = f"GPU {index}" + (f" ({name})" if name else "")
        if found_brand is None:
            text = f"{label}: brand unknown (forward compatibility needs a data-centre brand)"
            return ForwardCompat(UNKNOWN, text, brands_fact, unverified)
        if found_brand not in allowed:
            text = (
                f"{label} is a {found_brand} card: forward compatibility is for data-centre "
                "brands only (the compat libraries fail with Error 804)"
            )
            return ForwardCompat(FAIL, text, brands_fact, unverified)
        unverified = unverified or inferred
    branches, branches_fact, branches_unverified = _branches(facts, extra, image_cuda)
    branch = driver.split(".")[0]
    fact = f"{carries_fact}; {brands_fact}; {branches_fact}"
    unverified = unverified or branches_unverified
    if branches is None:
        text = f"the driver branches a CUDA {image_cuda} image accepts are not in the facts"
        return ForwardCompat(UNKNOWN, text, fact, True)
    if branch not in branches:
        text = (
            f"branch {branch} is not one the CUDA {image_cuda} image accepts for forward "
            f"compatibility ({', '.join(branches)})"
        )
        return ForwardCompat(FAIL, text, fact, unverified)
    text = (
        f"{image} carries cuda-compat (CUDA {image_cuda}), the GPU brand allows it and branch "
        f"{branch} is one the image accepts ({', '.join(branches)})"
    )
    return ForwardCompat(PASS, text, fact, unverified)
