"""``data_validation``: catch bad data before it becomes a NaN, and name the op when it does.

Failure family 4 of ../shared/field-reports.md. O1 logged ``NaN/Inf gradient detected in
model.encoder.model.conv1.weight at step 122`` for 34 parameters and never learnt which sample or
op produced it; O2 (``docs/NAN_FIX_SUMMARY.md``) skipped NaN losses on ROCm; NaN inputs and
empty images poison DB-style losses (MhLiao/DB#14, SakuraRiven/EAST#2, abhi1kumar/DEVIANT#2).
Two tools the field reports ask for, each checked here:

- ``check=guard``: :func:`check_batch` scans a batch per sample and field for NaN, Inf and values
  out of range. A clean DB batch must pass without a finding; then three bad samples are planted
  (a NaN pixel, an 8-bit label ``255`` in the 0/1 text map, an Inf in the threshold map) and the
  guard must name each one - index, field, what - and nothing else. Passes when it does.
- ``check=anomaly``: ``torch.autograd.set_detect_anomaly(True)`` around the backward of MhLiao/DB's
  step function ``reciprocal(1 + exp(-k (P - T)))`` in fp16 (k=50): its forward is finite, but
  ``exp`` overflows above ~11.1 in fp16 and its backward is ``inf * 0 = NaN`` (F4-1). Anomaly
  mode must raise ``Function 'XBackward0' returned nan values in its 0th output`` (F4-8,
  pytorch/pytorch#119320) naming the backward function; the case passes when it does and when
  the ``sigmoid`` form (O1's fix) keeps the gradients finite.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

PARAMS = {"device": ["cpu", "cuda"], "check": ["guard", "anomaly"]}
TIMEOUT_S = 90.0

#: field -> inclusive value range a DB training batch must respect (images are
#: ImageNet-normalised: roughly -2.2..2.7; a raw 0..255 image lands far outside).
DB_RANGES: dict[str, tuple[float, float]] = {
    "image": (-5.0, 5.0),
    "gt": (0.0, 1.0),
    "mask": (0.0, 1.0),
    "thresh_map": (0.0, 1.0),
    "thresh_mask": (0.0, 1.0),
}
ANOMALY_MESSAGE = re.compile(
    r"Function '(\w*Backward\w*)' returned nan values in its (\d+)(?:st|nd|rd|th) output"
)


@dataclass(frozen=True, order=True)
class Problem:
    """One finding of :func:`check_batch`: sample ``index``, ``field``, ``what`` it is
    (``"nan"``, ``"inf"`` or ``"out_of_range"``) and a ``detail`` for people."""

    index: int
    field: str
    what: str
    detail: str = ""

    def __str__(self) -> str:
        return f"sample {self.index} {self.field}: {self.what} ({self.detail})"


class BadBatch(ValueError):
    """Raised by :func:`guard` with every :class:`Problem` of the batch."""

    def __init__(self, problems: list[Problem]):
        super().__init__("bad batch: " + "; ".join(str(p) for p in problems))
        self.problems = problems


def check_batch(
    batch: Mapping, ranges: Mapping[str, tuple[float, float]] = DB_RANGES
) -> list[Problem]:
    """Every NaN / Inf / out-of-range finding per sample (dim 0) and field, sorted.

    Fields absent from ``batch`` are skipped; non-tensor values are ignored. Runs on the batch's
    device and moves only per-sample counts to the host.
    """
    import torch

    problems = []
    for field, (low, high) in ranges.items():
        tensor = batch.get(field)
        if not isinstance(tensor, torch.Tensor) or tensor.numel() == 0:
            continue
        flat = tensor.detach().reshape(tensor.shape[0], -1)
        if not flat.is_floating_point():
            flat = flat.float()
        nans = torch.isnan(flat).sum(dim=1)
        infs = torch.isinf(flat).sum(dim=1)
        finite = torch.isfinite(flat)
        outside = (finite & ((flat < low) | (flat > high))).sum(dim=1)
        lows = torch.where(finite, flat, torch.full_like(flat, float("inf"))).amin(dim=1)
        highs = torch.where(finite, flat, torch.full_like(flat, float("-inf"))).amax(dim=1)
        for index, (n_nan, n_inf, n_out, lo, hi) in enumerate(
            zip(
                nans.tolist(),
                infs.tolist(),
                outside.tolist(),
                lows.tolist(),
                highs.tolist(),
                strict=True,
            )
        ):
            if n_nan:
                problems.append(Problem(index, field, "nan", f"{n_nan} NaN values"))
            if n_inf:
                problems.append(Problem(index, field, "inf", f"{n_inf} Inf values"))
            if n_out:
                problems.append(
                    Problem(
                        index,
                        field,
                        "out_of_range",
                        f"{n_out} values outside [{low:g}, {high:g}], min {lo:g} max {hi:g}",
                    )
                )
    return sorted(problems)


def guard(batch: Mapping, ranges: Mapping[str, tuple[float, float]] = DB_RANGES) -> None:
    """Raise :class:`BadBatch` naming every problem of ``batch``; return quietly otherwise."""
    problems = check_batch(batch, ranges)
    if problems:
        raise BadBatch(problems)


def plant_bad_samples(batch: dict) -> set[tuple[int, str, str]]:
    """Corrupt ``batch`` in place the way field data goes bad; return what the guard must name."""
    batch["image"][5, 1, 40, 33] = float("nan")  # a decoding/augmentation NaN
    batch["gt"][2, 0, 10:20, 10:30] = 255.0  # an 8-bit label map never divided by 255
    batch["thresh_map"][6, 12, 7] = float("inf")  # a border-map distance divided by zero
    return {(5, "image", "nan"), (2, "gt", "out_of_range"), (6, "thresh_map", "inf")}


def requires(params) -> list[str]:
    return ["accelerator"] if params["device"] == "cuda" else []


def run(ctx, params) -> None:
    import torch

    device = torch.device(params["device"])
    if params["check"] == "guard":
        _run_guard(ctx, device)
    else:
        _run_anomaly(ctx, device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)  # surface asynchronous kernel errors inside this case


def _run_guard(ctx, device) -> None:
    from repro.scenarios import _dbnet

    ctx.heartbeat("clean_batch")
    batch = _dbnet.synthetic_batch(8, 320, device=device)
    false_alarms = check_batch(batch)
    if false_alarms:
        ctx.fail("guard flagged a clean batch: " + "; ".join(str(p) for p in false_alarms))

    ctx.heartbeat("planted_batch")
    expected = plant_bad_samples(batch)
    try:
        guard(batch)
    except BadBatch as exc:
        found = exc.problems
    else:
        found = []
    for problem in found:
        ctx.log(f"guard: {problem}")
    named = {(p.index, p.field, p.what) for p in found}
    missed, extra = expected - named, named - expected
    ctx.property("caught", "; ".join(f"{i}/{f}/{w}" for i, f, w in sorted(named)) or "(nothing)")
    if missed:
        ctx.fail(
            "guard missed planted bad samples: "
            + ", ".join(f"sample {i} {f} {w}" for i, f, w in sorted(missed))
        )
    if extra:
        ctx.fail(
            "guard named samples that were not planted: "
            + ", ".join(f"sample {i} {f} {w}" for i, f, w in sorted(extra))
        )
    ctx.metric("problems_found", len(found))


def _run_anomaly(ctx, device) -> None:
    import torch

    from repro.scenarios import _dbnet

    gen = torch.Generator().manual_seed(0)
    # Typical DB maps early in training: low text probability against a 0.3..0.7 threshold.
    prob = (torch.rand(2, 1, 64, 64, generator=gen) * 0.2).to(device)
    thresh = (0.3 + 0.4 * torch.rand(2, 1, 64, 64, generator=gen)).to(device)

    def grads(form: str, dtype, anomaly: bool):
        x = prob.to(dtype=dtype, copy=True).requires_grad_()
        y = thresh.to(dtype=dtype, copy=True).requires_grad_()
        with torch.autograd.set_detect_anomaly(anomaly):
            binary = _dbnet.step_function(x, y, k=50.0, form=form)
            forward_finite = bool(torch.isfinite(binary).all())
            binary.float().mean().backward()
        return forward_finite, bool(torch.isfinite(x.grad).all() and torch.isfinite(y.grad).all())

    ctx.heartbeat("anomaly_reciprocal_fp16")
    message = None
    try:
        forward_finite, _ = grads("reciprocal", torch.float16, anomaly=True)
    except RuntimeError as exc:
        message = str(exc).strip()
    if message is None:
        ctx.fail(
            "anomaly mode raised nothing for the fp16 reciprocal step function (expected a NaN in ExpBackward0)"
        )
    found = ANOMALY_MESSAGE.search(message)
    if not found:
        ctx.fail(
            f"anomaly mode raised, but without naming a backward function: {message.splitlines()[0]}"
        )
    ctx.log(f"anomaly mode: {found.group(0)}")
    ctx.property("anomaly_function", found.group(1))
    ctx.property("anomaly_output_index", found.group(2))

    ctx.heartbeat("fixes")
    forward_finite, finite = grads("reciprocal", torch.float16, anomaly=False)
    ctx.property("reciprocal_fp16_forward_finite", int(forward_finite))
    _, sigmoid_ok = grads("sigmoid", torch.float16, anomaly=False)
    _, fp32_ok = grads("reciprocal", torch.float32, anomaly=False)
    ctx.property("sigmoid_fp16_grads_finite", int(sigmoid_ok))
    ctx.property("reciprocal_fp32_grads_finite", int(fp32_ok))
    assert not finite, "the fp16 reciprocal form gave finite gradients without anomaly mode"
    assert sigmoid_ok, "the sigmoid form (O1's fix) still gives non-finite gradients in fp16"
