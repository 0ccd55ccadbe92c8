"""A container that cannot start is a red cell, not a missing one (issue 10, item 3).

``repro docker-run`` asks two things of each variant before and while it starts containers:

- **before** (:func:`driver_check`): is the host's NVIDIA driver (from the driver query of
  ``repro.host.hostkind``) new enough for the variant's CUDA runtime? The rule and the
  minimum are ``repro.compat.predictions`` (compat-facts.md section 0, rule 1: CUDA 13.x needs
  driver >= 580); this module never restates them. A CUDA 13 image on an R570 driver would die
  in ``nvidia-container-cli: requirement error: unsatisfied condition: cuda>=13.0`` (rule 2), or
  inside torch, so the variant is not built or started at all.
- **while** (:func:`from_exception`): the parity probe or the run container failed to start;
  the daemon's error text is classified (``repro.signatures``): ``driver_too_old`` for the
  requirement error, ``container_gpu_setup`` for a missing runtime/CDI or absent device nodes.

Either way :func:`write_cell` writes the variant's run directory like ``repro run`` would: one
``<testsuite name="container">`` with ONE ``error`` case whose signature says why, the host's
fingerprint as suite properties, ``fingerprint.json`` and the ``run.json`` sidecar keyed by host
and variant (``repro.junit``), so ``repro report`` shows a red cell. Never imports torch.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import repro
from repro import config as matrix_mod
from repro import gpu_properties, properties
from repro.compat import predictions
from repro.host import hostkind as host_mod
from repro.junit.sidecar import RESULT_KEY, result_entry, write_run_info
from repro.junit.writer import write_junit
from repro.model import CONTAINER, Fingerprint, host_key
from repro.outcomes import CaseResult, Outcome
from repro.signatures import engine as signatures
from repro.signatures import table

#: The scenario (testsuite) and case id of the one error case.
SCENARIO = "container"
CASE_ID = "container_start"
DRIVER_TOO_OLD = "driver_too_old"
_MINIMUM = re.compile(r"older than (\S+), the minimum")


@dataclass(frozen=True)
class StartFailure:
    """Why a variant's container did not (or would not) start.

    ``signature``: ``driver_too_old``, ``container_gpu_setup``, ``container_start_failed`` or
    another environment row the daemon's text matched; ``message``: one line naming the cause
    (``"cu130 needs driver >= 580, host has 570.133.07: ..."``); ``detail``: the full text
    (the daemon's error, or the prediction's reasons); ``source``: the row's public source.
    """

    signature: str
    message: str
    detail: str
    source: str = ""


def _host_props(host: host_mod.Host) -> dict[str, str]:
    """The ``host.*`` properties ``predictions.predict`` reads, from the driver query."""
    query = host.nvidia_query
    props = {properties.WSL2: "true" if host.wsl2 else "false"}
    if query is not None and query.ok:
        props[properties.DRIVER_NVIDIA] = query.driver or ""
        props[gpu_properties.COUNT] = str(len(query.gpus))
        for index, name in enumerate(query.gpus):
            props.update(gpu_properties.encode(index, {"vendor": "nvidia", "name": name}))
    return props


def driver_check(host: host_mod.Host, variant: matrix_mod.Variant) -> StartFailure | None:
    """``driver_too_old`` when the host's known driver is below the variant's CUDA minimum.

    Only the prediction's ``driver`` check counts (an arch or forward-compatibility verdict is
    the run's to observe); None when it passes, when the driver is unknown, or for a non-CUDA
    variant. The minimum comes from ``repro.compat.predictions`` (compat-facts.yaml).
    """
    if variant.accelerator != "cuda":
        return None
    query = host.nvidia_query
    if query is None or not query.ok or not query.driver:
        return None
    variant_props = {
        properties.VARIANT_RUNTIME: variant.runtime,
        properties.VARIANT_TORCH: variant.torch,
        properties.VARIANT_ACCELERATOR: variant.accelerator,
    }
    prediction = predictions.predict(_host_props(host), variant_props, variant.id)
    failing = [r for r in prediction.reasons if r.check == "driver" and r.verdict == "fail"]
    if not failing:
        return None
    reason = failing[0]
    found = _MINIMUM.search(reason.text)
    minimum = found.group(1) if found else "the minimum in compat-facts"
    where = " (Windows driver, WSL2)" if host.wsl2 else ""
    message = (
        f"{variant.runtime} needs driver >= {minimum}, host has {query.driver}{where}: "
        "not started (the image's NVIDIA_REQUIRE_CUDA or the CUDA runtime would refuse it)"
    )
    detail = f"pre-start check (repro.compat.predictions): {reason.line()}"
    return StartFailure(
        signature=DRIVER_TOO_OLD,
        message=message,
        detail=detail,
        source=table.row(DRIVER_TOO_OLD).source,
    )


def from_exception(
    exc: BaseException, host: host_mod.Host, variant: matrix_mod.Variant, what: str
) -> StartFailure:
    """Name why docker could not start ``what`` ("the parity probe", "the run container").

    The daemon's text is classified with the host's facts; an environment row names it
    (``driver_too_old`` for ``unsatisfied condition: cuda>=13.0``, ``container_gpu_setup`` for
    ``could not select device driver`` / a missing ``/dev/kfd``). Otherwise a GPU variant's
    failure is ``container_gpu_setup`` and a CPU variant's ``container_start_failed``.
    """
    text = str(exc).strip() or type(exc).__name__
    # One daemon message, classified as one line: runc puts the hook's stderr (the requirement
    # error) on a line after "OCI runtime create failed", and the hook's reason is the cause.
    found = signatures.classify(" ".join(text.split()))
    if found.name != signatures.UNKNOWN and table.row(found.name).kind == table.ENVIRONMENT:
        name = found.name
    else:
        # Literal names: tests/test_signature_table.py finds what code can emit by reading it.
        name = "container_gpu_setup" if variant.accelerator != "cpu" else "container_start_failed"
    line = " ".join(text.split())[:300]
    message = f"{what} did not start ({host.kind} host): {line}"
    cdi_off = host_mod.cdi_problem(host.daemon) if 'device driver "cdi"' in text else None
    if cdi_off:  # the daemon's line names no cause: say which and how to fix it
        message += f"; {cdi_off}"
    if name == DRIVER_TOO_OLD:
        driver = host.nvidia_query.driver if host.nvidia_query else None
        require = re.search(r"cuda>=\s*([\d.]+)", text)
        message = (
            f"{variant.runtime} image requires cuda>={require.group(1) if require else '?'}, "
            f"host driver {driver or 'unknown'}: {line}"
        )
    return StartFailure(signature=name, message=message, detail=text, source=table.row(name).source)


def write_cell(
    run_dir: Path,
    run_id: str,
    failure: StartFailure,
    variant: matrix_mod.Variant,
    host_fp: Fingerprint,
    extra: Mapping[str, str],
) -> Path:
    """Write ``run_dir/{junit.xml,run.json,fingerprint.json}``: one ``error`` case.

    ``host_fp``: the host's fingerprint (``repro.host.fingerprint.collect``), which keys the
    cell like the container's own run would be keyed; ``extra``: extra suite properties
    (``variant.image``, ``container.*``). Returns the JUnit path; raises OSError when the
    directory cannot be written.
    """
    key = host_key(host_fp)
    suite = properties.suite(host_fp, variant.in_lane(CONTAINER), run_id, repro.__version__)
    suite.update(extra)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    (run_dir / "fingerprint.json").write_text(
        json.dumps(host_fp.to_json(), indent=2, sort_keys=True) + "\n"
    )
    result = CaseResult(
        case_id=CASE_ID,
        scenario=SCENARIO,
        outcome=Outcome.ERROR,
        signature=failure.signature,
        message=failure.message,
        detail=failure.detail,
        properties={properties.SOURCE: failure.source} if failure.source else {},
    )
    junit = run_dir / "junit.xml"
    digest = write_junit(junit, [result], suite, hostname=host_fp.host.hostname or "")
    write_run_info(
        run_dir,
        {
            "schema": 1,
            "run_id": run_id,
            "variant": variant.key(),
            "host_key": key,
            "started": now,
            "finished": now,
            "repro_version": repro.__version__,
            "cases_total": 1,
            "cases_done": 1,
            RESULT_KEY: result_entry(digest),
        },
    )
    return junit
