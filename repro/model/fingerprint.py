"""The host facts as typed, immutable objects, and their JSON form (``fingerprint.json``).

:class:`Fingerprint` holds the sections ``host`` (:class:`Machine`), ``gpus``, ``driver``,
``runtime``, optional ``container`` (a run inside an image: the image's own OS/glibc/Python) and
``unreadable``. It is made once where the facts are read (``repro.host.fingerprint.collect``,
``Fingerprint.from_json`` of a ``fingerprint.json`` or ``--fingerprint`` file, or
``repro.properties.read_suite`` from JUnit properties) and passed down typed to where it is
written: no function takes "a dict or the object" (issue 31).

``Fingerprint.from_json`` reads any fingerprint JSON ever written (missing keys become None,
empty or False; a section of the wrong type is read as empty), so old ``fingerprint.json``
files still load; ``to_json`` writes exactly the layout ``repro.host.fingerprint.collect``
has always produced (schema 1): the file format does not change.

Ground floor: stdlib and ``repro.model.variant`` only; nothing above it is imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from repro.model.variant import runtime_tag

SCHEMA = 1


def _section(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _items(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _text(value: Any) -> str | None:
    """A text field: None stays None, numbers (an old file's ``"cudnn": 91002``) become text."""
    if value is None or isinstance(value, str):
        return value
    return str(value)


def _count(value: Any) -> int | None:
    """An integer field (bytes, counts, indices): None where absent or not a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in _items(value))


@dataclass(frozen=True)
class Machine:
    """The ``host`` section: OS, kernel, CPU, memory (bytes), container runtime, WSL2.

    ``python``/``python_executable`` are those of the interpreter under test (from the probe)."""

    hostname: str | None = None
    os: str | None = None
    kernel: str | None = None
    arch: str | None = None
    glibc: str | None = None
    python: str | None = None
    python_executable: str | None = None
    cpu: str | None = None
    cpu_count: int = 0
    memory_bytes: int | None = None
    container: str | None = None
    #: True on WSL2, False on a host known not to be, None where nothing said (a file or a
    #: JUnit input without it); ``fingerprint.json`` writes None as false, as it always has.
    wsl2: bool | None = None
    wsl_evidence: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: Any) -> Machine:
        data = _section(data)
        texts = {
            name: _text(data.get(name))
            for name in (
                "hostname",
                "os",
                "kernel",
                "arch",
                "glibc",
                "python",
                "python_executable",
                "cpu",
                "container",
            )
        }
        return cls(
            **texts,
            cpu_count=_count(data.get("cpu_count")) or 0,
            memory_bytes=_count(data.get("memory_bytes")),
            wsl2=None if data.get("wsl2") is None else bool(data.get("wsl2")),
            wsl_evidence=_texts(data.get("wsl_evidence")),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "hostname": self.hostname,
            "os": self.os,
            "kernel": self.kernel,
            "arch": self.arch,
            "glibc": self.glibc,
            "python": self.python,
            "python_executable": self.python_executable,
            "cpu": self.cpu,
            "cpu_count": self.cpu_count,
            "memory_bytes": self.memory_bytes,
            "container": self.container,
            "wsl2": bool(self.wsl2),
            "wsl_evidence": list(self.wsl_evidence),
        }


@dataclass(frozen=True)
class MigDevice:
    """One MIG instance of a GPU in MIG mode, as NVML lists it: ``uuid`` "MIG-...", ``name``
    "NVIDIA A100-SXM4-40GB MIG 1g.5gb", ``memory_bytes`` in bytes."""

    index: int | None = None
    uuid: str | None = None
    name: str | None = None
    memory_bytes: int | None = None

    @classmethod
    def from_json(cls, data: Any) -> MigDevice:
        data = _section(data)
        return cls(
            index=_count(data.get("index")),
            uuid=_text(data.get("uuid")),
            name=_text(data.get("name")),
            memory_bytes=_count(data.get("memory_bytes")),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "uuid": self.uuid,
            "name": self.name,
            "memory_bytes": self.memory_bytes,
        }


#: Per-GPU modes read from NVML, in ``nvidia-smi -q`` words (None: not read or not supported).
GPU_MODES = ("compute_mode", "mig_mode", "persistence_mode", "ecc_mode", "fabric_state")


@dataclass(frozen=True)
class Gpu:
    """One GPU as the driver lists it: ``vendor`` nvidia|amd, ``memory_bytes`` in bytes,
    ``compute_capability`` "9.0" (NVIDIA) or ``gfx_target`` "gfx90a" (AMD), and ``source``
    (``nvml``, ``nvidia-smi``, ``sysfs`` for the KFD topology, ``rocm-smi``/``amd-smi``, or
    ``torch`` where only the probe saw it).

    NVIDIA GPUs read through NVML also carry ``bus_id`` ("00000000:18:00.0") and the modes of
    :data:`GPU_MODES` in ``nvidia-smi -q`` words: ``compute_mode`` "Default" |
    "Exclusive_Process" | "Prohibited", ``mig_mode``/``persistence_mode``/``ecc_mode``
    "Enabled" | "Disabled", ``fabric_state`` (Fabric Manager / NVLink fabric: "Completed",
    "In Progress", "Not Started", or the service state "inactive" where only systemd said),
    and ``mig_devices`` (MIG instances, MIG mode only). A MIG instance selected by its UUID
    appears as a Gpu of its own with ``mig_parent`` the index of its GPU."""

    index: int | None = None
    vendor: str | None = None
    name: str | None = None
    uuid: str | None = None
    memory_bytes: int | None = None
    compute_capability: str | None = None
    gfx_target: str | None = None
    source: str | None = None
    bus_id: str | None = None
    compute_mode: str | None = None
    mig_mode: str | None = None
    persistence_mode: str | None = None
    ecc_mode: str | None = None
    fabric_state: str | None = None
    mig_devices: tuple[MigDevice, ...] = ()
    mig_parent: int | None = None
    #: NVML's brand (``geforce``, ``nvidia``, ``tesla``...) where a result or a hand-written
    #: input recorded it (``host.gpu.N.brand``); this version's fingerprint does not collect it.
    brand: str | None = None

    @classmethod
    def from_json(cls, data: Any) -> Gpu:
        data = _section(data)
        return cls(
            index=_count(data.get("index")),
            vendor=_text(data.get("vendor")),
            name=_text(data.get("name")),
            uuid=_text(data.get("uuid")),
            memory_bytes=_count(data.get("memory_bytes")),
            compute_capability=_text(data.get("compute_capability")),
            gfx_target=_text(data.get("gfx_target")),
            source=_text(data.get("source")),
            bus_id=_text(data.get("bus_id")),
            **{mode: _text(data.get(mode)) for mode in GPU_MODES},
            mig_devices=tuple(MigDevice.from_json(m) for m in _items(data.get("mig_devices"))),
            mig_parent=_count(data.get("mig_parent")),
            brand=_text(data.get("brand")),
        )

    def to_json(self) -> dict[str, Any]:
        """Schema-1 keys; the NVML extras only where known (old readers see the old layout)."""
        out: dict[str, Any] = {
            "index": self.index,
            "vendor": self.vendor,
            "name": self.name,
            "uuid": self.uuid,
            "memory_bytes": self.memory_bytes,
            "compute_capability": self.compute_capability,
            "gfx_target": self.gfx_target,
            "source": self.source,
        }
        extras: dict[str, Any] = {"bus_id": self.bus_id}
        extras.update({mode: getattr(self, mode) for mode in GPU_MODES})
        extras["mig_parent"] = self.mig_parent
        extras["brand"] = self.brand
        out.update({k: v for k, v in extras.items() if v is not None})
        if self.mig_devices:
            out["mig_devices"] = [m.to_json() for m in self.mig_devices]
        return out


@dataclass(frozen=True)
class Driver:
    """The ``driver`` section: NVIDIA driver "570.86.15", its CUDA driver API "12.8", the ROCm
    release "6.4.1" and the amdgpu kernel module version."""

    nvidia: str | None = None
    cuda_driver_api: str | None = None
    rocm: str | None = None
    amdgpu: str | None = None

    @classmethod
    def from_json(cls, data: Any) -> Driver:
        data = _section(data)
        return cls(
            nvidia=_text(data.get("nvidia")),
            cuda_driver_api=_text(data.get("cuda_driver_api")),
            rocm=_text(data.get("rocm")),
            amdgpu=_text(data.get("amdgpu")),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "nvidia": self.nvidia,
            "cuda_driver_api": self.cuda_driver_api,
            "rocm": self.rocm,
            "amdgpu": self.amdgpu,
        }


@dataclass(frozen=True)
class TorchDevice:
    """One device as torch saw it: ``capability`` "9.0", ``total_memory_bytes`` in bytes,
    ``gcn_arch`` "gfx90a:sramecc+:xnack-" on ROCm."""

    index: int | None = None
    name: str | None = None
    capability: str | None = None
    total_memory_bytes: int | None = None
    gcn_arch: str | None = None

    @classmethod
    def from_json(cls, data: Any) -> TorchDevice:
        data = _section(data)
        return cls(
            index=_count(data.get("index")),
            name=_text(data.get("name")),
            capability=_text(data.get("capability")),
            total_memory_bytes=_count(data.get("total_memory_bytes")),
            gcn_arch=_text(data.get("gcn_arch")),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "capability": self.capability,
            "total_memory_bytes": self.total_memory_bytes,
            "gcn_arch": self.gcn_arch,
        }


@dataclass(frozen=True)
class Runtime:
    """The ``runtime`` section: the torch build of the interpreter under test (versions, arch
    list, accelerator ``cuda``/``rocm``/None, devices it sees, multiprocessing start methods).

    ``cuda_init_error``: CUDA's (or HIP's) own words when the accelerator would not initialise
    although the build has one and NVML counts devices (``torch.cuda.is_available()``'s
    warning, or the exception of a one-element tensor on the device), e.g. "CUDA
    initialization: Unexpected error from cudaGetDeviceCount() ... Error 802: system not yet
    initialized"; None when it initialised or was not tried. See :mod:`repro.host.cuda_init`."""

    torch: str | None = None
    cuda: str | None = None
    hip: str | None = None
    cudnn: str | None = None
    nccl: str | None = None
    arch_list: tuple[str, ...] = ()
    accelerator: str | None = None
    accelerator_available: bool = False
    accelerator_count: int = 0
    devices: tuple[TorchDevice, ...] = ()
    start_methods: tuple[str, ...] = ()
    default_start_method: str | None = None
    cuda_init_error: str | None = None

    @classmethod
    def from_json(cls, data: Any) -> Runtime:
        """From a fingerprint's ``runtime`` section or the torch probe's JSON (same keys)."""
        data = _section(data)
        return cls(
            torch=_text(data.get("torch")),
            cuda=_text(data.get("cuda")),
            hip=_text(data.get("hip")),
            cudnn=_text(data.get("cudnn")),
            nccl=_text(data.get("nccl")),
            arch_list=_texts(data.get("arch_list")),
            accelerator=_text(data.get("accelerator")),
            accelerator_available=bool(data.get("accelerator_available")),
            accelerator_count=_count(data.get("accelerator_count")) or 0,
            devices=tuple(TorchDevice.from_json(d) for d in _items(data.get("devices"))),
            start_methods=_texts(data.get("start_methods")),
            default_start_method=_text(data.get("default_start_method")),
            cuda_init_error=_text(data.get("cuda_init_error")),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "torch": self.torch,
            "cuda": self.cuda,
            "hip": self.hip,
            "cudnn": self.cudnn,
            "nccl": self.nccl,
            "arch_list": list(self.arch_list),
            "accelerator": self.accelerator,
            "accelerator_available": self.accelerator_available,
            "accelerator_count": self.accelerator_count,
            "devices": [d.to_json() for d in self.devices],
            "start_methods": list(self.start_methods),
            "default_start_method": self.default_start_method,
            **({"cuda_init_error": self.cuda_init_error} if self.cuda_init_error else {}),
        }

    @property
    def tag(self) -> str:
        """The wheel flavour of this torch build: "cu128", "cu130", "rocm6.4", "cpu"; "none"
        without torch (:func:`repro.model.variant.runtime_tag`, the one rule)."""
        return runtime_tag(self.torch, self.cuda, self.hip)

    def gpus(self) -> tuple[Gpu, ...]:
        """GPUs as torch saw them (``source`` "torch"): the fallback where neither NVML,
        nvidia-smi nor the KFD topology listed any. Empty for a CPU build."""
        vendor = {"cuda": "nvidia", "rocm": "amd"}.get(self.accelerator or "")
        if vendor is None:
            return ()
        return tuple(
            Gpu(
                index=d.index,
                vendor=vendor,
                name=d.name,
                memory_bytes=d.total_memory_bytes,
                compute_capability=d.capability if vendor == "nvidia" else None,
                gfx_target=d.gcn_arch.split(":")[0] if d.gcn_arch else None,
                source="torch",
            )
            for d in self.devices
        )


@dataclass(frozen=True)
class ContainerFacts:
    """The ``container`` section of a run inside an image: the image's OS, glibc, Python and
    container runtime (the ``host`` section is then the real host's)."""

    os: str | None = None
    glibc: str | None = None
    python: str | None = None
    container: str | None = None

    @classmethod
    def from_json(cls, data: Any) -> ContainerFacts:
        data = _section(data)
        return cls(
            **{name: _text(data.get(name)) for name in ("os", "glibc", "python", "container")}
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "os": self.os,
            "glibc": self.glibc,
            "python": self.python,
            "container": self.container,
        }


@dataclass(frozen=True)
class UnreadableItem:
    """Something that exists but could not be read: ``what`` (``nvml``, ``/proc/cpuinfo``,
    ``torch``, ``nvidia-smi``) and ``why`` (one line)."""

    what: str
    why: str

    @classmethod
    def from_json(cls, data: Any) -> UnreadableItem:
        data = _section(data)
        return cls(what=str(data.get("what")), why=str(data.get("why")))

    def to_json(self) -> dict[str, str]:
        return {"what": self.what, "why": self.why}


@dataclass(frozen=True)
class Selection:
    """The GPUs a job really uses when the environment narrows them (``CUDA_VISIBLE_DEVICES``,
    ``ROCR_VISIBLE_DEVICES``/``HIP_VISIBLE_DEVICES``) or MIG splits them.

    ``variables``: the selecting variables as set; ``devices``: the GPUs (or MIG instances, as
    Gpu with ``mig_parent``) in the job's own numbering (``index`` 0, 1, ...; ``uuid`` kept);
    ``notes``: what could not be resolved exactly (one line each). Built by
    :mod:`repro.host.selection`."""

    variables: tuple[tuple[str, str], ...] = ()
    devices: tuple[Gpu, ...] = ()
    notes: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: Any) -> Selection:
        data = _section(data)
        variables = _section(data.get("variables"))
        return cls(
            variables=tuple((str(k), str(v)) for k, v in variables.items()),
            devices=tuple(Gpu.from_json(g) for g in _items(data.get("devices"))),
            notes=_texts(data.get("notes")),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "variables": dict(self.variables),
            "devices": [g.to_json() for g in self.devices],
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Fingerprint:
    """The machine a run happens on and the torch build under test (``fingerprint.json``).

    ``collected_at`` is ISO-8601 UTC; ``container`` is None for a run directly on the host.
    ``gpus`` are all GPUs the driver lists; ``selection`` (None: the job uses all of them) the
    ones the job uses; ``environment`` the variables that steer GPUs and NCCL (GPU selection,
    ``HSA_OVERRIDE_GFX_VERSION``, ``NCCL_*``, ``TORCH_NCCL_*``) as set for the run."""

    schema: int = SCHEMA
    collected_at: str | None = None
    host: Machine = field(default_factory=Machine)
    gpus: tuple[Gpu, ...] = ()
    driver: Driver = field(default_factory=Driver)
    runtime: Runtime = field(default_factory=Runtime)
    unreadable: tuple[UnreadableItem, ...] = ()
    container: ContainerFacts | None = None
    selection: Selection | None = None
    environment: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fingerprint:
        """From fingerprint JSON of any age: missing keys take their defaults, never raises for
        a mapping (a section of the wrong type reads as empty)."""
        data = _section(data)
        container = data.get("container")
        selection = data.get("selection")
        environment = _section(data.get("environment"))
        return cls(
            schema=_count(data.get("schema")) or SCHEMA,
            collected_at=_text(data.get("collected_at")),
            host=Machine.from_json(data.get("host")),
            gpus=tuple(Gpu.from_json(g) for g in _items(data.get("gpus"))),
            driver=Driver.from_json(data.get("driver")),
            runtime=Runtime.from_json(data.get("runtime")),
            unreadable=tuple(UnreadableItem.from_json(u) for u in _items(data.get("unreadable"))),
            container=ContainerFacts.from_json(container)
            if isinstance(container, Mapping)
            else None,
            selection=Selection.from_json(selection) if isinstance(selection, Mapping) else None,
            environment=tuple((str(k), str(v)) for k, v in environment.items()),
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON object of ``fingerprint.json`` (keys as schema 1 has always had them;
        ``container`` only for a run inside an image)."""
        out: dict[str, Any] = {
            "schema": self.schema,
            "collected_at": self.collected_at,
            "host": self.host.to_json(),
            "gpus": [g.to_json() for g in self.gpus],
            "driver": self.driver.to_json(),
            "runtime": self.runtime.to_json(),
            "unreadable": [u.to_json() for u in self.unreadable],
        }
        if self.container is not None:
            out["container"] = self.container.to_json()
        if self.selection is not None:
            out["selection"] = self.selection.to_json()
        if self.environment:
            out["environment"] = dict(self.environment)
        return out

    def keyed_by(self, host: Fingerprint) -> Fingerprint:
        """This fingerprint, taken inside a container, keyed by the real ``host``'s (collected
        outside it, ``--fingerprint``): host, GPUs and driver as the host sees them (they key
        the matrix row), runtime (torch build, visible devices) as the container sees it, the
        container's own OS/glibc/Python/runtime as ``container``, and the host's unreadable
        items after this one's, named ``host:<what>``."""
        inner = self.host
        return replace(
            self,
            host=host.host,
            gpus=host.gpus,
            driver=host.driver,
            container=ContainerFacts(inner.os, inner.glibc, inner.python, inner.container),
            unreadable=self.unreadable
            + tuple(UnreadableItem(f"host:{u.what}", u.why) for u in host.unreadable),
        )

    @property
    def used_gpus(self) -> tuple[Gpu, ...]:
        """The GPUs (or MIG instances) the job uses: the selection's, else all the driver listed."""
        return self.selection.devices if self.selection is not None else self.gpus

    @property
    def visible_gpus(self) -> tuple[Gpu, ...]:
        """The GPUs the job uses (:attr:`used_gpus`), else those torch saw (``Runtime.gpus``)."""
        if self.selection is not None:
            return self.selection.devices
        return self.gpus or self.runtime.gpus()


#: The ``what`` of an :class:`UnreadableItem` saying the GPUs are unknown: a fingerprint read
#: from another producer's JUnit that names no ``host.gpu`` property (``repro.properties``).
GPUS_UNKNOWN = "gpus"
