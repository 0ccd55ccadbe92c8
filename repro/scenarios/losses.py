"""``losses``: the DB losses (balanced BCE, masked L1, Dice) on real shapes, edge cases included.

Failure family 4 of ../shared/field-reports.md:

- ``empty_mask`` / ``no_text``: ``MaskL1Loss`` divides by ``mask.sum()``; a batch whose threshold
  mask is all zero (text too small to keep a border, or no text at all) gives 0/0 = NaN
  (MhLiao/DB#14, F4-2; no-text batches: mindee/doctr PR #726, mindspore-lab/mindocr PR #546,
  SakuraRiven/EAST#2, abhi1kumar/DEVIANT#2). ``eps=0`` is the published code, ``eps=1e-6`` the fix.
- ``nan_pred``: a NaN in the predicted threshold map (a diverged branch, F4-1) reaches the Dice
  loss, whose ``assert loss <= 1`` turns it into a bare ``AssertionError`` (F4-4, O1
  BUG-20251109-001). The scenario reports it as what it is: "Dice loss is nan".

Reproductions, expected red: ``case=empty_mask,eps=0``, ``case=no_text,eps=0`` and
``case=nan_pred`` end ``failed`` with signature ``nan_detected`` and "nan" in the message. The
default grid keeps each beside its fix (``eps=1e-6``) so the bug and the fix show side by side;
``normal`` is the control. ``eps`` only applies to the masked L1 loss (Dice and BCE keep MhLiao/DB's
1e-6), so ``normal`` and ``nan_pred`` run with ``eps=0`` only.

Inputs have a DB training batch's shapes (4 x 640 x 640, maps at full resolution); the maps are
sigmoids of leaf logits, so the check covers gradients too.
"""

from __future__ import annotations

import traceback

PARAMS = {
    "device": ["cpu", "cuda"],
    "case": ["normal", "empty_mask", "no_text", "nan_pred"],
    "eps": [0, 1e-6],
}
TIMEOUT_S = 90.0
#: Reproductions red by design (the report shows them as expected, and flags one that ever
#: passes): matrix.yaml's ``expect:`` entries, kept beside the scenario (issue 20); the
#: file's own entries override these (``repro.config.load``).
EXPECT = [
    {
        "case": "losses[device=*,case=empty_mask,eps=0]",
        "outcome": "failed",
        "signature": "nan_detected",
        "reason": (
            "masked L1 divides by mask.sum() == 0 on an image without text (fixed by eps; the "
            "eps=1e-06 case beside it passes)"
        ),
        "link": "https://github.com/MhLiao/DB/issues/14",
    },
    {
        "case": "losses[device=*,case=no_text,eps=0]",
        "outcome": "failed",
        "signature": "nan_detected",
        "reason": "DB losses on a batch with no text instances divide by zero (fixed by eps)",
        "link": "https://github.com/mindee/doctr/pull/726",
    },
    {
        "case": "losses[device=*,case=nan_pred,eps=0]",
        "outcome": "failed",
        "signature": "nan_detected",
        "reason": (
            "the Dice loss's `assert loss <= 1` turns a NaN prediction into a bare "
            "AssertionError; repro reports it as NaN"
        ),
    },
]

BATCH, SIZE = 4, 640


def valid(params) -> bool:
    return not (params["case"] in ("normal", "nan_pred") and params["eps"] != 0)


def requires(params) -> list[str]:
    return ["accelerator"] if params["device"] == "cuda" else []


def make_inputs(case: str, device="cpu", batch: int = BATCH, size: int = SIZE, seed: int = 0):
    """(leaf logits, head outputs, batch) for ``case``; outputs are built from the logits."""
    import torch

    from repro.scenarios import _dbnet

    kind = case if case in _dbnet.BATCH_KINDS else "normal"
    data = _dbnet.synthetic_batch(batch, size, kind=kind, device=device, seed=seed)
    gen = torch.Generator().manual_seed(seed + 1)
    prob_logits = (torch.randn(batch, 1, size, size, generator=gen) * 2).to(device).requires_grad_()
    thresh_logits = (
        (torch.randn(batch, 1, size, size, generator=gen) - 1).to(device).requires_grad_()
    )
    leaves = {"prob_logits": prob_logits, "thresh_logits": thresh_logits}
    return leaves, head_outputs(leaves, nan_thresh=case == "nan_pred"), data


def head_outputs(leaves, nan_thresh: bool = False, step_form: str = "sigmoid"):
    import torch

    from repro.scenarios import _dbnet

    prob = torch.sigmoid(leaves["prob_logits"])
    thresh = torch.sigmoid(leaves["thresh_logits"])
    if nan_thresh:  # one pixel of the threshold branch diverged upstream
        poison = torch.zeros_like(thresh)
        poison[0, 0, 17, 23] = float("nan")
        thresh = thresh + poison
    binary = _dbnet.step_function(prob, thresh, k=50.0, form=step_form)
    return {"prob_logits": leaves["prob_logits"], "prob": prob, "thresh": thresh, "binary": binary}


def evaluate(pred, data, eps: float) -> tuple[dict, str | None]:
    """Compute the DB loss parts in MhLiao/DB's order (bce, l1, dice).

    Returns ``(parts, problem)``: ``problem`` is None, or a sentence naming the part that is
    NaN/Inf ("... loss is nan ..."); a Dice ``AssertionError`` is reported with the value the
    unchecked loss really has.
    """
    import torch

    from repro.scenarios import _dbnet

    criterion = _dbnet.DBLoss(l1_eps=eps)
    parts = {"bce": criterion.bce(pred["prob"], data["gt"], data["mask"])}
    parts["l1"] = criterion.l1(pred["thresh"], data["thresh_map"], data["thresh_mask"])
    try:
        parts["dice"] = criterion.dice(pred["binary"], data["gt"], data["mask"])
    except AssertionError:
        traceback.print_exc()  # the log keeps the original "assert loss <= 1" traceback (F4-4)
        value = _dbnet.DiceLoss(strict=False)(pred["binary"], data["gt"], data["mask"])
        parts["dice"] = value
        return parts, (
            f"Dice loss is {_word(value)}: the original 'assert loss <= 1' raised AssertionError "
            f"(nan <= 1 is False, F4-4); the threshold map holds "
            f"{int(torch.isnan(pred['thresh']).sum())} NaN values"
        )
    parts["negatives_mined"] = torch.tensor(float(criterion.bce.last_negative_count))
    for name in ("bce", "l1", "dice"):
        if not torch.isfinite(parts[name]):
            detail = ""
            if name == "l1":
                detail = f" (threshold mask sum {float(data['thresh_mask'].sum()):g}, eps {eps:g}: MhLiao/DB#14)"
            return parts, f"{name} loss is {_word(parts[name])}{detail}"
    return parts, None


def _word(value) -> str:
    value = float(value.detach()) if hasattr(value, "detach") else float(value)
    return "nan" if value != value else str(value)


def run(ctx, params) -> None:
    import torch

    from repro.scenarios import _dbnet

    device = torch.device(params["device"])
    case, eps = params["case"], float(params["eps"])
    ctx.heartbeat("inputs")
    leaves, pred, data = make_inputs(case, device)
    ctx.property("thresh_mask_sum", float(data["thresh_mask"].sum()))
    ctx.property("gt_sum", float(data["gt"].sum()))

    ctx.heartbeat("forward")
    parts, problem = evaluate(pred, data, eps)
    for name, value in parts.items():
        ctx.metric(f"{name}_loss" if name != "negatives_mined" else name, float(value.detach()))
    if problem:
        ctx.fail(problem, signature="nan_detected")
    if float(parts["negatives_mined"]) == 0:
        ctx.log(
            "no positives, so no negatives mined: BCE gives 0 and no signal (mindspore-lab/mindocr PR #546)"
        )

    ctx.heartbeat("backward")
    total = parts["dice"] + 10.0 * parts["l1"] + 5.0 * parts["bce"]
    total.backward()
    if device.type == "cuda":
        torch.cuda.synchronize(device)  # surface asynchronous kernel errors inside this case
    grads = {name: leaf.grad for name, leaf in leaves.items()}
    _dbnet.check_finite(ctx, grads=grads, note=f" (loss {float(total.detach()):g})")
    ctx.metric("total_loss", float(total.detach()))
