"""The JUnit property names of the host, the variant, the container and the runner: the one
place they are written and read (issue 31, item 2).

Testsuite properties carry the host facts (``host.*``, the GPUs through
:mod:`repro.gpu_properties`), the observed torch build (``runtime.*``), the variant and its lane
(``variant.*``), a container run's settings (``container.*``) and the run (``repro.run_id``...);
testcase properties carry what the runner saw of one case (``repro.outcome``, ``repro.flaky``...).
Writers call the ``of_*``/:func:`suite` functions with typed objects
(:class:`repro.model.Fingerprint`, :class:`repro.model.Variant`); readers call :func:`split`,
:func:`read_host` and :func:`read_variant` and get typed objects back. Nobody else spells a
name: ``tests/test_properties.py`` fails on a quoted ``host.``/``runtime.``/``variant.``/
``container.``/``repro.`` property name anywhere else in the package.

Values are text, as in JUnit: bytes as decimal digits, booleans ``true``/``false``, lists
comma-joined; a None value is not written. Stdlib and the ground floor only (the report and
compat code import it; it must never pull in the host probes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from repro import gpu_properties
from repro.model.fingerprint import (
    GPUS_UNKNOWN,
    ContainerFacts,
    Driver,
    Fingerprint,
    Gpu,
    Machine,
    Runtime,
    UnreadableItem,
)
from repro.model.host_key import host_key
from repro.model.variant import ACCELERATORS, Variant, accelerator_of
from repro.variant_id import VariantId

_HOST = "host."
_DRIVER = "host.driver."
_ENV = "host.env."
_RUNTIME = "runtime."
_VARIANT = "variant."
_CONTAINER = "container."
_REPRO = "repro."

# -- testsuite: the host ----------------------------------------------------------------------

#: ``host.<field>``: the fingerprint's host section, in writing order.
HOST_FIELDS = (
    "hostname",
    "os",
    "kernel",
    "arch",
    "glibc",
    "python",
    "cpu",
    "cpu_count",
    "memory_bytes",
    "container",
    "wsl2",
)
#: ``host.driver.<field>``.
DRIVER_FIELDS = ("nvidia", "cuda_driver_api", "rocm", "amdgpu")
#: ``runtime.<field>``: the torch build the run observed.
RUNTIME_FIELDS = (
    "torch",
    "cuda",
    "hip",
    "cudnn",
    "nccl",
    "arch_list",
    "accelerator",
    "accelerator_available",
    "accelerator_count",
    "default_start_method",
    "cuda_init_error",
)
#: The matrix row key (``repro.model.host_key``).
HOST_KEY = f"{_HOST}key"
HOST_PYTHON = f"{_HOST}python"
HOST_ARCH = f"{_HOST}arch"
HOST_GLIBC = f"{_HOST}glibc"
HOST_OS = f"{_HOST}os"
WSL2 = f"{_HOST}wsl2"
DRIVER_NVIDIA = f"{_DRIVER}nvidia"
#: Every GPU the driver lists (beside ``host.gpu_count``, the ones the job uses) and the
#: selecting variables, when the job uses a selection.
GPU_TOTAL = f"{_HOST}gpu_total"
GPU_SELECTION = f"{_HOST}gpu_selection"
#: The GPUs as one fact (a prediction's reason that depends on which GPUs the host has).
HOST_GPU = f"{_HOST}gpu"
RUNTIME_TORCH = f"{_RUNTIME}torch"
RUNTIME_CUDA = f"{_RUNTIME}cuda"
RUNTIME_HIP = f"{_RUNTIME}hip"
RUNTIME_ARCH_LIST = f"{_RUNTIME}arch_list"

# -- testsuite: the variant and its lane ------------------------------------------------------

#: ``variant.<field>`` of a :class:`Variant`, in writing order.
VARIANT_FIELDS = (
    "id",
    "runtime",
    "accelerator",
    "torch",
    "index_url",
    "base_image",
    "python",
    "shm_size",
    "mem_limit",
    "pids_limit",
    "source",
)
VARIANT_ID = f"{_VARIANT}id"
VARIANT_RUNTIME = f"{_VARIANT}runtime"
VARIANT_TORCH = f"{_VARIANT}torch"
VARIANT_ACCELERATOR = f"{_VARIANT}accelerator"
BASE_IMAGE = f"{_VARIANT}base_image"
#: ``true``/``false``: the image carries CUDA's forward-compatibility package (a user's
#: ``--property``; without it ``repro.compat.forward_compat`` judges the base image).
CUDA_COMPAT = f"{_VARIANT}cuda_compat"
#: Where a run happened: host, venv or container (DESIGN "lane"); the matrix keys on it.
LANE = f"{_VARIANT}lane"
#: The venv lane's environment content key (``repro.envs``).
ENV_KEY = f"{_VARIANT}env_key"
#: The torch release a bisect step installed (``repro.bisect``).
BISECT_VERSION = f"{_VARIANT}bisect_version"
IMAGE = f"{_VARIANT}image"
IMAGE_TAG = f"{_VARIANT}image_tag"
INDEX_URL = f"{_VARIANT}index_url"
VARIANT_PYTHON = f"{_VARIANT}python"

# -- testsuite: a container run ---------------------------------------------------------------

#: ``container.<field>`` of a run inside an image (the image's own facts).
CONTAINER_FIELDS = ("os", "glibc", "python", "container")
#: ``container.<setting>`` of ``repro docker-run``'s container, in writing order.
CONTAINER_SETTINGS = (
    "host_kind",
    "passthrough",
    "shm_size",
    "ipc",
    "network",
    "user",
    "mem_limit",
    "pids_limit",
)
#: Whether the container sees the host's GPUs (``repro.containers.spec.gpu_parity``).
GPU_PARITY = f"{_CONTAINER}gpu_parity"

# -- testsuite: the run -----------------------------------------------------------------------

RUN_ID = f"{_REPRO}run_id"
VERSION = f"{_REPRO}version"
JOBS = f"{_REPRO}jobs"
CASE_THREADS = f"{_REPRO}case_threads"
#: A run recorded under a variant its interpreter does not match: why.
VARIANT_MISMATCH = f"{_REPRO}variant_mismatch"

# -- testcase ---------------------------------------------------------------------------------

OUTCOME = f"{_REPRO}outcome"
SIGNATURE = f"{_REPRO}signature"
LOG = f"{_REPRO}log"
#: The public source of the signature row that named a cell's error.
SOURCE = f"{_REPRO}source"
#: A passed case's failure evidence (issue 21, item 4): how many lines, then each line as
#: ``repro.finding.1`` ... (:func:`finding`).
FINDINGS = f"{_REPRO}findings"
_FINDING = f"{_REPRO}finding."
ISOLATION = f"{_REPRO}isolation"
RETURNCODE = f"{_REPRO}returncode"
SIGNAL = f"{_REPRO}signal"
LAST_PHASE = f"{_REPRO}last_phase"
LEAKED_PROCESSES = f"{_REPRO}leaked_processes"
CPU_S = f"{_REPRO}cpu_s"
CUDA_INIT_ERROR = f"{_REPRO}cuda_init_error"
#: A rerun red case (issue 11): how many reruns ran, ``true`` when it passed on one
#: (``false``: red every time), and a flaky case's first attempt.
RERUNS = f"{_REPRO}reruns"
FLAKY = f"{_REPRO}flaky"
FIRST_OUTCOME = f"{_REPRO}first_outcome"
FIRST_SIGNATURE = f"{_REPRO}first_signature"
FIRST_MESSAGE = f"{_REPRO}first_message"
FIRST_LOG = f"{_REPRO}first_log"
#: ``repro run --rounds N`` (issue 29): how many rounds measured the case's figures, and the
#: log of each later round (``repro.round_logs``: space-separated, relative to the run).
ROUNDS = f"{_REPRO}rounds"
ROUND_LOGS = f"{_REPRO}round_logs"

#: A testcase's ``classname`` is ``repro.<scenario>``.
_CLASSNAME = _REPRO


def finding(number: int) -> str:
    """``repro.finding.<number>`` (1-based)."""
    return f"{_FINDING}{number}"


def finding_number(name: str) -> str | None:
    """The ``N`` of ``repro.finding.N`` (text, unchecked), or None for any other name."""
    return name[len(_FINDING) :] if name.startswith(_FINDING) else None


def classname(scenario: str) -> str:
    """A testcase's ``classname``: ``repro.<scenario>``."""
    return f"{_CLASSNAME}{scenario}"


def scenario_of(name: str) -> str:
    """The scenario of a ``classname``: ``repro.dataloader`` -> ``dataloader``; another
    producer's classname stays as it is."""
    return name[len(_CLASSNAME) :] if name.startswith(_CLASSNAME) else name


def variant_field(name: str) -> str:
    """``variant.<name>``: a field of ``run.json``'s ``variant`` object as a property."""
    return f"{_VARIANT}{name}"


def host_env(name: str) -> str:
    """``host.env.<NAME>``: a variable that steers GPUs or NCCL, as set for the run."""
    return f"{_ENV}{name}"


def container_setting(name: str) -> str:
    """``container.<name>`` for a name of :data:`CONTAINER_SETTINGS`; ValueError otherwise."""
    if name not in CONTAINER_SETTINGS:
        raise ValueError(
            f"unknown container setting {name!r}; expected one of {CONTAINER_SETTINGS}"
        )
    return f"{_CONTAINER}{name}"


# ---------------------------------------------------------------------------------------------
# writing


def _text(value: Any) -> str | None:
    """Property text: bools as "true"/"false", lists comma-joined, None stays None."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _written(props: Mapping[str, Any]) -> dict[str, str]:
    texts = {name: _text(value) for name, value in props.items()}
    return {name: text for name, text in texts.items() if text is not None}


def of_fingerprint(fp: Fingerprint) -> dict[str, str]:
    """The host facts as testsuite properties; names whose value is None are left out.

    ``host.{hostname,os,kernel,arch,glibc,python,cpu,cpu_count,memory_bytes,container,wsl2,key,
    gpu_count}``, ``host.gpu.<index>.<field>`` (:mod:`repro.gpu_properties`) for the GPUs the
    job uses (:attr:`Fingerprint.used_gpus`; with a selection also ``host.gpu_total`` and
    ``host.gpu_selection``), ``host.driver.{nvidia,cuda_driver_api,rocm,amdgpu}``,
    ``runtime.{torch,cuda,hip,cudnn,nccl,arch_list,accelerator,accelerator_available,
    accelerator_count,default_start_method,cuda_init_error}`` (``arch_list`` comma-joined) and
    ``host.env.<NAME>`` for the recorded environment. ``wsl2`` unknown is written ``false``.
    """
    props: dict[str, Any] = {f"{_HOST}{n}": getattr(fp.host, n) for n in HOST_FIELDS}
    props[WSL2] = bool(fp.host.wsl2)
    props[HOST_KEY] = host_key(fp)
    used = fp.used_gpus
    props[gpu_properties.COUNT] = len(used)
    if fp.selection is not None:
        props[GPU_TOTAL] = len(fp.gpus)
        chosen = ", ".join(f"{k}={v}" for k, v in fp.selection.variables)
        props[GPU_SELECTION] = chosen or "MIG"
    props.update({host_env(name): value for name, value in fp.environment})
    for position, gpu in enumerate(used):
        values = {name: getattr(gpu, name) for name in gpu_properties.FIELDS}
        index = gpu.index if gpu.index is not None else position
        props.update(gpu_properties.encode(index, values))
    props.update({f"{_DRIVER}{n}": getattr(fp.driver, n) for n in DRIVER_FIELDS})
    props.update({f"{_RUNTIME}{n}": getattr(fp.runtime, n) for n in RUNTIME_FIELDS})
    return _written(props)


def of_variant(variant: Variant) -> dict[str, str]:
    """``variant.<field>`` for each set field of :data:`VARIANT_FIELDS` and ``variant.lane``."""
    values = {f"{_VARIANT}{n}": getattr(variant, n) for n in VARIANT_FIELDS}
    values[LANE] = variant.lane
    return {name: text for name, text in _written(values).items() if text != ""}


def of_container(container: ContainerFacts | None) -> dict[str, str]:
    """``container.{os,glibc,python,container}``: the image's own facts (none on the host)."""
    if container is None:
        return {}
    return _written({f"{_CONTAINER}{n}": getattr(container, n) for n in CONTAINER_FIELDS})


def of_run(run_id: str, version: str, key: str) -> dict[str, str]:
    """``repro.run_id``, ``repro.version`` and ``host.key``."""
    return {RUN_ID: run_id, VERSION: version, HOST_KEY: key}


def suite(fp: Fingerprint, variant: Variant, run_id: str, version: str) -> dict[str, str]:
    """Every testsuite property a run of ``variant`` on the host ``fp`` starts with: the host
    facts, the variant and its lane, the run, and the container's facts for a run inside an
    image. The one layout of ``repro run``, a container that did not start and a Slurm
    scheduler cell."""
    out = of_fingerprint(fp)
    out.update(of_variant(variant))
    out.update(of_run(run_id, version, host_key(fp)))
    out.update(of_container(fp.container))
    return out


@dataclass(frozen=True)
class ImageFacts:
    """What ``repro docker-run`` adds about the image and the container it ran in (every
    field text): ``image`` the image id, ``index_url`` the wheel index it was built from
    (``wheelhouse:DIR`` for an offline build), ``shm_size`` in words; the rest as
    :data:`CONTAINER_SETTINGS` name them."""

    image: str
    image_tag: str
    base_image: str
    python: str
    index_url: str
    host_kind: str
    passthrough: str
    shm_size: str
    ipc: str
    network: str
    user: str
    mem_limit: str
    pids_limit: str


def of_image(facts: ImageFacts) -> dict[str, str]:
    """``variant.{image,image_tag,base_image,python,index_url}`` and ``container.<setting>``."""
    out = {
        IMAGE: facts.image,
        IMAGE_TAG: facts.image_tag,
        BASE_IMAGE: facts.base_image,
        VARIANT_PYTHON: facts.python,
        INDEX_URL: facts.index_url,
    }
    out.update({container_setting(n): getattr(facts, n) for n in CONTAINER_SETTINGS})
    return out


def parse_assignments(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """``NAME=VALUE`` strings (``repro run --property``) as a dict. Raises ValueError naming
    the item without ``=`` or a name."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"expected NAME=VALUE, got {item!r}")
        out[name.strip()] = value
    return out


def assignment(name: str, value: str) -> str:
    """``NAME=VALUE`` for ``repro run --property``."""
    return f"{name}={value}"


# ---------------------------------------------------------------------------------------------
# reading


def is_host(name: str) -> bool:
    """Whether a testsuite property describes the host (``host.*``: the row)."""
    return name.startswith(_HOST)


def is_variant(name: str) -> bool:
    """Whether a testsuite property describes the variant or its observed build (the column)."""
    return name.startswith((_VARIANT, _RUNTIME))


def split(props: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """``(host, variant)``: a testsuite's properties of the row (``host.*``) and of the column
    (``variant.*``, ``runtime.*``), in ``props``' order; the rest are neither's."""
    host = {name: value for name, value in props.items() if is_host(name)}
    variant = {name: value for name, value in props.items() if is_variant(name)}
    return host, variant


def _count(text: str | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.isdigit() and len(text) < 20 else None


def _flag(text: str | None) -> bool | None:
    value = (text or "").strip().lower()
    return {"true": True, "false": False}.get(value)


def _or_none(text: str | None) -> str | None:
    text = (text or "").strip()
    return text or None


def _gpu(index: int, values: Mapping[str, str]) -> Gpu:
    known = {f.name for f in fields(Gpu)}
    texts = {k: _or_none(v) for k, v in values.items() if k in known and k != "memory_bytes"}
    return Gpu(index=index, memory_bytes=_count(values.get("memory_bytes")), **texts)


def read_host(props: Mapping[str, str]) -> Fingerprint:
    """The host facts of a testsuite's properties (``host.*``, and ``runtime.*`` as the
    observed build), as a :class:`Fingerprint`: what :func:`of_fingerprint` wrote reads back
    (never raises; text that is not a number or a boolean reads as unknown).

    ``gpus`` are the GPUs the job used (``host.gpu.N.*``); when neither they nor
    ``host.gpu_count`` say anything, the GPUs are unknown: ``unreadable`` then holds
    :data:`repro.model.fingerprint.GPUS_UNKNOWN` (another producer's JUnit)."""
    machine = Machine(
        **{n: _or_none(props.get(f"{_HOST}{n}")) for n in HOST_FIELDS[:7]},
        cpu_count=_count(props.get(f"{_HOST}cpu_count")) or 0,
        memory_bytes=_count(props.get(f"{_HOST}memory_bytes")),
        container=_or_none(props.get(f"{_HOST}container")),
        wsl2=_flag(props.get(WSL2)),
    )
    gpus = tuple(_gpu(i, values) for i, values in gpu_properties.decode(props).items())
    unknown = not gpus and _count(props.get(gpu_properties.COUNT)) != 0
    environment = tuple(
        (name[len(_ENV) :], value) for name, value in props.items() if name.startswith(_ENV)
    )
    return Fingerprint(
        host=machine,
        gpus=gpus,
        driver=Driver(**{n: _or_none(props.get(f"{_DRIVER}{n}")) for n in DRIVER_FIELDS}),
        runtime=read_runtime(props),
        unreadable=(UnreadableItem(GPUS_UNKNOWN, "no host.gpu properties"),) if unknown else (),
        environment=environment,
    )


def read_runtime(props: Mapping[str, str]) -> Runtime:
    """The observed torch build of ``runtime.*`` properties (:func:`of_fingerprint`)."""
    arch = (props.get(RUNTIME_ARCH_LIST) or "").split(",")
    return Runtime(
        **{n: _or_none(props.get(f"{_RUNTIME}{n}")) for n in ("torch", "cuda", "hip", "cudnn")},
        nccl=_or_none(props.get(f"{_RUNTIME}nccl")),
        arch_list=tuple(item.strip() for item in arch if item.strip()),
        accelerator=_or_none(props.get(f"{_RUNTIME}accelerator")),
        accelerator_available=bool(_flag(props.get(f"{_RUNTIME}accelerator_available"))),
        accelerator_count=_count(props.get(f"{_RUNTIME}accelerator_count")) or 0,
        default_start_method=_or_none(props.get(f"{_RUNTIME}default_start_method")),
        cuda_init_error=_or_none(props.get(f"{_RUNTIME}cuda_init_error")),
    )


def read_variant(props: Mapping[str, str], variant_id: str | None = None) -> Variant:
    """The variant of ``variant.*`` properties (and ``runtime.torch`` where no pin is named).

    ``variant_id`` (the record's key) stands in for a missing ``variant.id``; a canonical id
    (``cu128-torch2.8``) fills in a missing runtime or pin. ``runtime`` is "" and
    ``accelerator`` "" where nothing says (another producer's JUnit): the accelerator rule
    (:func:`repro.model.accelerator_of`) applies only to a runtime tag it knows (``cu*``,
    ``rocm*``, ``cpu``). ``lane`` is "" where none is written."""
    vid = _or_none(props.get(VARIANT_ID)) or variant_id or ""
    parsed = VariantId.parse(vid)
    runtime = _or_none(props.get(VARIANT_RUNTIME)) or (parsed.runtime if parsed else "")
    torch = _or_none(props.get(VARIANT_TORCH)) or _or_none(props.get(RUNTIME_TORCH)) or ""
    if not torch and parsed:
        torch = parsed.torch
    accelerator = _or_none(props.get(VARIANT_ACCELERATOR)) or ""
    if accelerator not in ACCELERATORS:
        known = runtime.startswith(("cu", "rocm")) or runtime == "cpu"
        accelerator = accelerator_of(runtime) if known else ""
    lane = _or_none(props.get(LANE)) or ""
    return Variant(
        id=vid,
        runtime=runtime,
        accelerator=accelerator,
        torch=torch,
        index_url=_or_none(props.get(INDEX_URL)) or "",
        base_image=_or_none(props.get(BASE_IMAGE)) or "",
        python=_or_none(props.get(VARIANT_PYTHON)) or "",
        cuda_compat=_flag(props.get(CUDA_COMPAT)),
        lane=lane,
    )


def lane_of(props: Mapping[str, str]) -> str:
    """The lane a testsuite's properties name (``variant.lane``), "" where none."""
    return (props.get(LANE) or "").strip()
