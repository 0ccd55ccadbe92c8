"""The one AMD reader: GPUs from the KFD topology in sysfs, then rocm-smi / amd-smi.

The KFD topology (``/sys/class/kfd/kfd/topology/nodes/N/properties``) is what the ROCm runtime
itself enumerates, needs no tool and gives the gfx target of each GPU node (CPU nodes have
``gfx_target_version 0``). Where ``/dev/kfd`` exists but the topology lists no GPU, the SMI
tools (``rocm-smi --showproductname``, else ``amd-smi list``; PATH first, then
``/opt/rocm/bin``) are asked for names. The ROCm release comes from ``/opt/rocm/.info/version``
and the kernel module's from ``/sys/module/amdgpu/version``. Files are read under ``root``;
what exists but fails is appended to ``unreadable``; nothing here raises or imports torch.
"""

from __future__ import annotations

import re
from pathlib import Path

from repro.host import files, smi
from repro.host.files import Unreadable
from repro.model import Gpu

KFD_NODES = "sys/class/kfd/kfd/topology/nodes"
#: (tool, argument) pairs, in the order they are tried.
SMI_TOOLS = (("rocm-smi", "--showproductname"), ("amd-smi", "list"))


def gfx_name(version: int) -> str:
    """KFD ``gfx_target_version`` to the LLVM target: 90010 -> gfx90a, 110000 -> gfx1100,
    90402 -> gfx942 (major, then minor and stepping as one hex digit each)."""
    major, minor, step = version // 10000, version // 100 % 100, version % 100
    return f"gfx{major}{minor:x}{step:x}"


def _kfd_memory(root: Path, node_rel: str, unreadable: Unreadable) -> int | None:
    """Sum of ``size_in_bytes`` over a KFD node's memory banks (VRAM; system RAM on an APU)."""
    total = 0
    for bank in sorted((root / node_rel / "mem_banks").glob("*/properties")):
        text = files.read_text(root, str(bank.relative_to(root)), unreadable)
        size = files.key_values(text or "").get("size_in_bytes", "")
        total += int(size) if size.isdigit() else 0
    return total or None


def rocr_uuid(unique_id: int) -> str | None:
    """The UUID ROCr gives a GPU (``rocminfo``'s "Uuid", what ``ROCR_VISIBLE_DEVICES`` accepts):
    "GPU-" and the KFD node's ``unique_id`` as 16 hex digits; None for 0 (no UUID: gfx8, old
    thunk). ROCR-Runtime ``amd_gpu_agent.cpp``, ``HSA_AMD_AGENT_INFO_UUID``."""
    return f"GPU-{unique_id:016x}" if unique_id else None


def read_gpus(root: Path, unreadable: Unreadable) -> tuple[Gpu, ...]:
    """AMD GPUs from the KFD topology nodes under ``root``, in node order, skipping CPU nodes
    (``gfx_target_version`` 0); ``memory_bytes`` in bytes, ``uuid`` :func:`rocr_uuid`,
    ``source`` "sysfs"."""
    nodes_dir = root / KFD_NODES
    if not nodes_dir.is_dir():
        return ()
    nodes = sorted((p for p in nodes_dir.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    gpus: list[Gpu] = []
    for node in nodes:
        node_rel = f"{KFD_NODES}/{node.name}"
        text = files.read_text(root, node_rel + "/properties", unreadable)
        version = files.key_values(text or "").get("gfx_target_version", "0")
        if not version.isdigit() or int(version) == 0:
            continue
        target = gfx_name(int(version))
        unique_id = files.key_values(text or "").get("unique_id", "0")
        gpus.append(
            Gpu(
                index=len(gpus),
                vendor="amd",
                name=f"AMD {target}",
                uuid=rocr_uuid(int(unique_id)) if unique_id.isdigit() else None,
                memory_bytes=_kfd_memory(root, node_rel, unreadable),
                gfx_target=target,
                source="sysfs",
            )
        )
    return tuple(gpus)


def query_kfd(root: Path) -> smi.DriverQuery:
    """The KFD topology as a DriverQuery (``kfd-topology``): ok with the gfx targets, else why
    not (the first unreadable file, or no GPU node)."""
    unreadable: Unreadable = []
    gpus = read_gpus(root, unreadable)
    if not gpus:
        why = (
            unreadable[0]["why"]
            if unreadable
            else f"no GPU node in /{KFD_NODES} (amdgpu driver not loaded?)"
        )
        return smi.DriverQuery("kfd-topology", False, error=why)
    return smi.DriverQuery("kfd-topology", True, tuple(g.gfx_target or "?" for g in gpus))


def smi_candidates(root: Path) -> list[tuple[str, ...]]:
    """rocm-smi then amd-smi, each from PATH first, then from ``/opt/rocm/bin`` under ``root``."""
    candidates: list[tuple[str, ...]] = []
    for tool, argument in SMI_TOOLS:
        candidates.append((tool, argument))
        if (root / "opt/rocm/bin" / tool).exists():
            candidates.append((str(root / "opt/rocm/bin" / tool), argument))
    return candidates


def smi_gpu_names(stdout: str) -> list[str]:
    """GPU labels from ``rocm-smi --showproductname`` (``GPU[0] : Card Series: ...``) or
    ``amd-smi list`` (``GPU: 0``: no name, so ``GPU 0``), in index order."""
    names: dict[str, str] = {}
    for line in stdout.splitlines():
        match = re.match(r"\s*GPU\[(\d+)\]\s*:\s*(.*)$", line)
        if match:
            index, rest = match.groups()
            label = re.match(r"(?:Card [Ss]eries|Marketing Name)\s*:\s*(.+)$", rest.strip())
            if label or index not in names:
                names[index] = label.group(1).strip() if label else f"GPU {index}"
            continue
        match = re.match(r"\s*GPU:\s*(\d+)\s*$", line)
        if match:
            names.setdefault(match.group(1), f"GPU {match.group(1)}")
    return [names[k] for k in sorted(names, key=int)]


def ask_smi(
    root: Path, run: smi.Runner = smi.run_command, timeout_s: float = smi.DEFAULT_TIMEOUT_S
) -> smi.Answer | None:
    """Run the first of rocm-smi / amd-smi that exists (:func:`smi_candidates`); None if none."""
    return smi.ask(smi_candidates(root), run, timeout_s)


def read(
    root: Path,
    unreadable: Unreadable,
    *,
    run: smi.Runner = smi.run_command,
    timeout_s: float = smi.DEFAULT_TIMEOUT_S,
) -> tuple[Gpu, ...]:
    """AMD GPUs: the KFD topology; where ``/dev/kfd`` exists but it lists none, rocm-smi or
    amd-smi (``source`` the tool; a tool that fails is recorded as unreadable)."""
    gpus = read_gpus(root, unreadable)
    if gpus or not (root / "dev/kfd").exists():
        return gpus
    answer = ask_smi(root, run, timeout_s)
    if answer is None:
        return ()
    proc = answer.proc
    if proc is None or proc.returncode != 0:
        why = answer.error or smi.failure_line(proc.stdout, proc.stderr, proc.returncode)
        unreadable.append({"what": answer.tool, "why": why})
        return ()
    return tuple(
        Gpu(index=i, vendor="amd", name=name, source=answer.tool)
        for i, name in enumerate(smi_gpu_names(proc.stdout or ""))
    )


def rocm_version(root: Path, unreadable: Unreadable) -> str | None:
    """opt/rocm/.info/version ("6.4.1-83") without the build suffix: "6.4.1"."""
    line = files.first_line(root, "opt/rocm/.info/version", unreadable)
    return line.split("-")[0] if line else None


def amdgpu_version(root: Path, unreadable: Unreadable) -> str | None:
    """The amdgpu kernel module's version (sys/module/amdgpu/version), e.g. "6.12.12"."""
    return files.first_line(root, "sys/module/amdgpu/version", unreadable)
