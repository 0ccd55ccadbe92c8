"""The GPUs a job really uses: ``CUDA_VISIBLE_DEVICES``, MIG, ``ROCR_``/``HIP_VISIBLE_DEVICES``.

The driver lists every GPU of the box; a runner given two of eight (one runner service per GPU
pair, ``CUDA_VISIBLE_DEVICES=2,3``), a MIG instance (``CUDA_VISIBLE_DEVICES=MIG-...``) or an AMD
GPU subset uses fewer. The host key, the ``host.gpu.*`` properties the predictions read and the
GPUs a container is given must be those, not all of them. Rules, as the runtimes document them:

- ``CUDA_VISIBLE_DEVICES`` (CUDA C Programming Guide, "CUDA Environment Variables"): a comma-
  separated list of indices or ``GPU-``/``MIG-`` UUIDs (a unique prefix is enough); CUDA stops
  at the first entry it cannot resolve and ignores the rest; an empty value hides every GPU.
  Indices follow ``CUDA_DEVICE_ORDER``: ``PCI_BUS_ID`` is NVML's order; the default
  ``FASTEST_FIRST`` equals it only when the GPUs are alike (noted otherwise).
- MIG (MIG user guide, "CUDA device enumeration"; pytorch/pytorch#102715): a CUDA process
  enumerates a single MIG instance; a GPU in MIG mode selected as a whole shows its first
  instance, and one without instances shows nothing.
- ROCm (ROCm docs, "GPU isolation techniques"): ``ROCR_VISIBLE_DEVICES`` (indices or UUIDs)
  is applied by the ROCr runtime first, then ``HIP_VISIBLE_DEVICES`` (or HIP's alias
  ``CUDA_VISIBLE_DEVICES``) indexes what is left. ROCr's parser (ROCR-Runtime
  ``amd_filter_device.cpp``, ``RvdFilter``): entries upper-cased and trimmed; one beginning
  with ``G`` is a UUID (``GPU-`` + 16 hex digits, :func:`repro.host.amd.rocr_uuid`) matched
  as a unique prefix; any other is a number (``strtol`` base 0); an unknown, ambiguous,
  out-of-range or repeated entry ends the list.
- ``NVIDIA_VISIBLE_DEVICES`` is read by the NVIDIA Container Toolkit only, when a container
  starts: inside one, NVML already lists just those GPUs, so it is recorded, not applied.

Pure functions over :class:`repro.model.Gpu` lists and an environment mapping; never
imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from repro.model import Gpu, Selection

#: Variables that select GPUs, in the order they are reported.
SELECTION_VARIABLES = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
)
#: Other variables the fingerprint records: the gfx override ROCm users set on unsupported
#: GPUs, and the NCCL / torch NCCL settings the field asks for first (prefixes).
EXTRA_VARIABLES = ("HSA_OVERRIDE_GFX_VERSION",)
RECORDED_PREFIXES = ("NCCL_", "TORCH_NCCL_")
#: Values of NVIDIA_VISIBLE_DEVICES that do not name GPUs (NVIDIA Container Toolkit docs).
_NVIDIA_ALL = ("all", "")
_NVIDIA_NONE = ("none", "void")


def environment(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The variables the fingerprint records (selection, ``HSA_OVERRIDE_GFX_VERSION``,
    ``NCCL_*``, ``TORCH_NCCL_*``), sorted by name."""
    names = set(SELECTION_VARIABLES + EXTRA_VARIABLES)
    return tuple(
        sorted(
            (name, str(value))
            for name, value in environ.items()
            if name in names or name.startswith(RECORDED_PREFIXES)
        )
    )


def entries(value: str) -> list[str]:
    """``"0, 2,GPU-ab"`` -> ``["0", "2", "GPU-ab"]``; an empty value is an empty list."""
    return [item.strip() for item in value.split(",") if item.strip()]


def _by_uuid(gpus: Sequence[Gpu], prefix: str) -> Gpu | None:
    """The one GPU whose UUID starts with ``prefix`` (CUDA accepts unique prefixes)."""
    found = [g for g in gpus if g.uuid and g.uuid.startswith(prefix)]
    return found[0] if len(found) == 1 else None


def _mig_by_uuid(gpus: Sequence[Gpu], prefix: str) -> Gpu | None:
    for gpu in gpus:
        for mig in gpu.mig_devices:
            if mig.uuid and mig.uuid.startswith(prefix):
                return _mig_gpu(gpu, mig)
    return None


def _mig_gpu(parent: Gpu, mig) -> Gpu:
    """A MIG instance as the Gpu a job uses (capability and modes of its parent)."""
    return replace(
        parent,
        name=mig.name or f"{parent.name} MIG",
        uuid=mig.uuid,
        memory_bytes=mig.memory_bytes,
        mig_devices=(),
        mig_parent=parent.index,
    )


def _as_cuda_sees(gpu: Gpu, notes: list[str]) -> Gpu | None:
    """A whole GPU as CUDA enumerates it: itself, or its first MIG instance in MIG mode."""
    if gpu.mig_mode != "Enabled":
        return gpu
    if not gpu.mig_devices:
        notes.append(
            f"GPU {gpu.index} is in MIG mode without MIG instances: CUDA sees no device on it"
        )
        return None
    notes.append(
        f"GPU {gpu.index} is in MIG mode: CUDA sees only its first MIG instance "
        f"({gpu.mig_devices[0].uuid}); select one with CUDA_VISIBLE_DEVICES=MIG-..."
    )
    return _mig_gpu(gpu, gpu.mig_devices[0])


def _resolve_cuda(gpus: Sequence[Gpu], value: str, order: str, notes: list[str]) -> list[Gpu]:
    chosen: list[Gpu] = []
    if order != "PCI_BUS_ID" and len({g.name for g in gpus}) > 1:
        notes.append(
            "CUDA_DEVICE_ORDER is FASTEST_FIRST (the default) and the GPUs differ: CUDA's indices "
            "may not be NVML's; set CUDA_DEVICE_ORDER=PCI_BUS_ID"
        )
    for item in entries(value):
        if item.isdigit() and int(item) < len(gpus):
            gpu = _as_cuda_sees(gpus[int(item)], notes)
        elif item.startswith("MIG-"):
            gpu = _mig_by_uuid(gpus, item)
        elif item.startswith("GPU-"):
            whole = _by_uuid(gpus, item)
            gpu = _as_cuda_sees(whole, notes) if whole else None
        else:
            gpu = None
        if gpu is None or any(g.uuid == gpu.uuid and g.index == gpu.index for g in chosen):
            notes.append(
                f"CUDA_VISIBLE_DEVICES entry {item!r} names no GPU of this host (or repeats one): "
                "CUDA ignores it and every entry after it"
            )
            break
        chosen.append(gpu)
    return chosen


def _one_mig(chosen: list[Gpu], notes: list[str]) -> list[Gpu]:
    """A CUDA process enumerates a single MIG instance (MIG user guide)."""
    migs = [g for g in chosen if g.mig_parent is not None]
    if len(migs) <= 1:
        return chosen
    notes.append(
        f"{len(migs)} MIG instances selected: a CUDA process enumerates only the first ({migs[0].uuid})"
    )
    return [g for g in chosen if g.mig_parent is None or g is migs[0]]


def _rocr_entry(gpus: Sequence[Gpu], item: str) -> Gpu | None:
    """One ``ROCR_VISIBLE_DEVICES`` entry as ROCr reads it (see the module docstring)."""
    token = item.strip().upper()
    if token.startswith("G"):
        found = [g for g in gpus if g.uuid and g.uuid.upper().startswith(token)]
        return found[0] if len(found) == 1 else None
    try:
        index = int(token, 0)
    except ValueError:
        try:  # strtol base 0 reads a leading 0 as octal ("010" is 8)
            index = int(token, 8)
        except ValueError:
            return None
    return gpus[index] if 0 <= index < len(gpus) else None


def _resolve_rocm(gpus: Sequence[Gpu], environ: Mapping[str, str], notes: list[str]) -> list[Gpu]:
    chosen = list(gpus)
    for name in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        if name not in environ:
            continue
        if name == "CUDA_VISIBLE_DEVICES" and "HIP_VISIBLE_DEVICES" in environ:
            continue  # HIP_VISIBLE_DEVICES wins over its alias
        picked: list[Gpu] = []
        for item in entries(environ[name]):
            if name == "ROCR_VISIBLE_DEVICES":
                gpu = _rocr_entry(chosen, item)
            else:
                gpu = chosen[int(item)] if item.isdigit() and int(item) < len(chosen) else None
            if gpu is None or gpu in picked:
                what = "an index or UUID" if name == "ROCR_VISIBLE_DEVICES" else "an index"
                notes.append(
                    f"{name} entry {item!r} is not {what} of the GPUs left: ignored with the rest"
                )
                break
            picked.append(gpu)
        chosen = picked
    return chosen


def select(gpus: Sequence[Gpu], environ: Mapping[str, str]) -> Selection | None:
    """The GPUs a job started with ``environ`` uses out of ``gpus`` (all the driver listed, in
    NVML / KFD order), or None when that is simply all of them (no selecting variable, no MIG).

    Devices keep their host ``index`` (a MIG instance its parent's, with ``mig_parent``)."""
    nvidia = [g for g in gpus if g.vendor == "nvidia"]
    amd = [g for g in gpus if g.vendor == "amd"]
    notes: list[str] = []
    variables = tuple((n, environ[n]) for n in SELECTION_VARIABLES if n in environ)
    mig = any(g.mig_mode == "Enabled" for g in nvidia)
    cuda_value = environ.get("CUDA_VISIBLE_DEVICES")
    nvidia_env = environ.get("NVIDIA_VISIBLE_DEVICES", "all").strip().lower()
    if nvidia_env not in _NVIDIA_ALL:
        notes.append(
            "NVIDIA_VISIBLE_DEVICES is read by the NVIDIA Container Toolkit when a container "
            + (
                "starts: this process is given no GPU"
                if nvidia_env in _NVIDIA_NONE
                else "starts, not by CUDA"
            )
        )
    rocm_vars = any(n in environ for n in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"))
    if cuda_value is None and not mig and not (amd and rocm_vars):
        return Selection(variables, tuple(gpus), tuple(notes)) if notes else None
    chosen: list[Gpu] = []
    if nvidia:
        if cuda_value is not None:
            picked = _resolve_cuda(nvidia, cuda_value, environ.get("CUDA_DEVICE_ORDER", ""), notes)
        else:
            picked = [g for g in (_as_cuda_sees(g, notes) for g in nvidia) if g is not None]
        chosen += _one_mig(picked, notes)
    if amd:
        chosen += _resolve_rocm(amd, environ, notes)
    return Selection(variables, tuple(chosen), tuple(notes))


def container_gpus(environ: Mapping[str, str], accelerator: str) -> str:
    """The runner's GPU selection as ``repro.containers.spec.ContainerRun.gpus`` ("all", or
    indices / UUIDs comma-joined) for a variant of ``accelerator`` (cuda|rocm|cpu).

    NVIDIA: ``CUDA_VISIBLE_DEVICES``, else ``NVIDIA_VISIBLE_DEVICES`` (a runner service given
    its GPUs the toolkit's way); ROCm: ``ROCR_VISIBLE_DEVICES`` composed with
    ``HIP_VISIBLE_DEVICES`` (HIP indexes what ROCr left) into host indices."""
    if accelerator == "cuda":
        if "CUDA_VISIBLE_DEVICES" in environ:  # "" hides every GPU from CUDA
            return ",".join(entries(environ["CUDA_VISIBLE_DEVICES"])) or "none"
        value = environ.get("NVIDIA_VISIBLE_DEVICES", "all").strip()
        if value.lower() == "all":
            return "all"
        return "none" if value.lower() in _NVIDIA_NONE else ",".join(entries(value)) or "none"
    if accelerator == "rocm":
        rocr = (
            entries(environ.get("ROCR_VISIBLE_DEVICES", ""))
            if "ROCR_VISIBLE_DEVICES" in environ
            else None
        )
        hip_name = (
            "HIP_VISIBLE_DEVICES" if "HIP_VISIBLE_DEVICES" in environ else "CUDA_VISIBLE_DEVICES"
        )
        hip = entries(environ[hip_name]) if hip_name in environ else None
        if hip is not None and rocr is not None:
            picked = [rocr[int(i)] for i in hip if i.isdigit() and int(i) < len(rocr)]
            return ",".join(picked) or "none"
        chosen = hip if hip is not None else rocr
        return "all" if chosen is None else (",".join(chosen) or "none")
    return "all"


def container_env(environ: Mapping[str, str], accelerator: str) -> tuple[tuple[str, str], ...]:
    """Host variables a container of ``accelerator`` must inherit: ``HSA_OVERRIDE_GFX_VERSION``
    (ROCm on a GPU its release does not list: the host's override must hold inside too)."""
    if accelerator == "rocm" and environ.get("HSA_OVERRIDE_GFX_VERSION"):
        return (("HSA_OVERRIDE_GFX_VERSION", environ["HSA_OVERRIDE_GFX_VERSION"]),)
    return ()
