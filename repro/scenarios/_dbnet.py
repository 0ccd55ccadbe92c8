"""A DBNet-style text detector and its losses in plain torch, for the ``model``, ``losses``,
``amp``, ``cudnn`` and ``data_validation`` scenarios.

Failure family 4 of ../shared/field-reports.md (O1: DBNet with a ResNet encoder, FPN decoder and
DB head; MhLiao/DB ``decoders/seg_detector.py``, ``dice_loss.py``, ``l1_loss.py``,
``balance_cross_entropy_loss.py``). Kept close to those files on purpose, including their sharp
edges, so the scenarios reproduce the field failures rather than a tidied-up version:

- :class:`MaskL1Loss` divides by ``mask.sum()``; ``eps=0`` (the default) is the published code and
  gives NaN for an empty threshold mask (MhLiao/DB#14, F4-2).
- :class:`DiceLoss` keeps ``assert loss <= 1``: ``nan <= 1`` is False, so a NaN surfaces as a bare
  ``AssertionError`` without the word "nan" (F4-4, O1 BUG-20251109-001).
- :class:`BalanceCrossEntropyLoss` calls ``F.binary_cross_entropy`` on the sigmoid map, which
  CUDA autocast refuses ("... are unsafe to autocast", F4-5); ``from_logits=True`` is the fix.
- :func:`step_function` has both forms of the differentiable binarization: ``sigmoid``
  (``torch.sigmoid(k * (P - T))``, O1's fix) and ``reciprocal``
  (``torch.reciprocal(1 + torch.exp(-k * (P - T)))``, MhLiao/DB). In fp16 ``exp`` overflows above
  ~11.1, so with k=50 the reciprocal form has a finite forward and a NaN backward (F4-1 note).

No torchvision (not installable everywhere): the ResNet-18 encoder is written out here. This
module imports torch at module level; scenario modules import it only inside ``run()``, never at
their top level (the runner imports scenario modules without torch). It is not a scenario.
"""

from __future__ import annotations

import math
import traceback

import torch
import torch.nn.functional as F
from torch import nn

#: Forms of the DB step function, see :func:`step_function`.
STEP_FORMS = ("sigmoid", "reciprocal")
#: DB's threshold map range (MhLiao/DB ``MakeBorderMap`` thresh_min/thresh_max).
THRESH_MIN, THRESH_MAX = 0.3, 0.7
#: Kinds of synthetic batch, see :func:`synthetic_batch`.
BATCH_KINDS = ("normal", "empty_mask", "no_text")


def step_function(
    x: torch.Tensor, y: torch.Tensor, k: float = 50.0, form: str = "sigmoid"
) -> torch.Tensor:
    """Differentiable binarization ``1 / (1 + exp(-k (x - y)))`` of probability ``x`` against
    threshold ``y``. ``form="reciprocal"`` is MhLiao/DB's expression, ``"sigmoid"`` O1's fix."""
    if form == "sigmoid":
        return torch.sigmoid(k * (x - y))
    if form == "reciprocal":
        return torch.reciprocal(1 + torch.exp(-k * (x - y)))
    raise ValueError(f"unknown step form {form!r}; expected one of {STEP_FORMS}")


# -- Encoder: ResNet-18 (BasicBlock x [2, 2, 2, 2]) -----------------------------------------------


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or in_planes != planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False), nn.BatchNorm2d(planes)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = self.bn2(self.conv2(out))
        return F.relu(out + identity, inplace=True)


class ResNet18Encoder(nn.Module):
    """ResNet-18 feature extractor: returns C2..C5 at strides 4, 8, 16, 32 (64..512 channels)."""

    channels = (64, 128, 256, 512)

    def __init__(self, blocks: tuple[int, ...] = (2, 2, 2, 2)):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        layers, in_planes = [], 64
        for index, (planes, count) in enumerate(zip(self.channels, blocks, strict=True)):
            stride = 1 if index == 0 else 2
            layer = [BasicBlock(in_planes, planes, stride)]
            layer += [BasicBlock(planes, planes) for _ in range(count - 1)]
            layers.append(nn.Sequential(*layer))
            in_planes = planes
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x = self.maxpool(F.relu(self.bn1(self.conv1(x)), inplace=True))
        c2 = self.layer1(x)
        c3 = self.layer2(c2)
        c4 = self.layer3(c3)
        c5 = self.layer4(c4)
        return c2, c3, c4, c5


# -- Decoder: FPN to 1/4 scale (MhLiao/DB SegDetector's neck) --------------------------------------


class FPNDecoder(nn.Module):
    """Top-down FPN; every level is reduced to ``inner // 4`` channels, upsampled to 1/4 scale and
    concatenated (the "fusion" feature map whose conv failed in O1)."""

    def __init__(self, in_channels: tuple[int, ...] = ResNet18Encoder.channels, inner: int = 256):
        super().__init__()
        self.lateral = nn.ModuleList(nn.Conv2d(c, inner, 1, bias=False) for c in in_channels)
        self.smooth = nn.ModuleList(
            nn.Conv2d(inner, inner // 4, 3, padding=1, bias=False) for _ in in_channels
        )
        self.out_channels = inner

    def forward(self, features: tuple[torch.Tensor, ...]) -> torch.Tensor:
        laterals = [conv(f) for conv, f in zip(self.lateral, features, strict=True)]
        for level in range(len(laterals) - 1, 0, -1):  # C5 -> C2
            below = laterals[level - 1]
            laterals[level - 1] = below + F.interpolate(
                laterals[level], size=below.shape[-2:], mode="nearest"
            )
        size = laterals[0].shape[-2:]
        outs = [
            F.interpolate(conv(lat), size=size, mode="nearest") if i else conv(lat)
            for i, (conv, lat) in enumerate(zip(self.smooth, laterals, strict=True))
        ]
        return torch.cat(outs, dim=1)


# -- Head: probability, threshold and approximate binary maps --------------------------------------


def _head_branch(in_channels: int) -> nn.Sequential:
    mid = in_channels // 4
    return nn.Sequential(
        nn.Conv2d(in_channels, mid, 3, padding=1, bias=False),
        nn.BatchNorm2d(mid),
        nn.ReLU(inplace=True),
        nn.ConvTranspose2d(mid, mid, 2, 2),
        nn.BatchNorm2d(mid),
        nn.ReLU(inplace=True),
        nn.ConvTranspose2d(mid, 1, 2, 2),  # logits at full resolution; sigmoid applied outside
    )


class DBHead(nn.Module):
    """DB head. Returns a dict: ``prob_logits``, ``prob`` (N,1,H,W) always; while training also
    ``thresh`` and ``binary`` (the approximate binary map, :func:`step_function`)."""

    def __init__(self, in_channels: int = 256, k: float = 50.0, step_form: str = "sigmoid"):
        super().__init__()
        if step_form not in STEP_FORMS:
            raise ValueError(f"unknown step form {step_form!r}; expected one of {STEP_FORMS}")
        self.k, self.step_form = k, step_form
        self.binarize = _head_branch(in_channels)
        self.thresh = _head_branch(in_channels)

    def forward(self, fuse: torch.Tensor) -> dict[str, torch.Tensor]:
        prob_logits = self.binarize(fuse)
        out = {"prob_logits": prob_logits, "prob": torch.sigmoid(prob_logits)}
        if self.training:
            thresh = torch.sigmoid(self.thresh(fuse))
            out["thresh"] = thresh
            out["binary"] = step_function(out["prob"], thresh, self.k, self.step_form)
        return out


class DBNet(nn.Module):
    """ResNet-18 encoder + FPN decoder + DB head. Input (N, 3, H, W) with H, W multiples of 32;
    outputs at (N, 1, H, W)."""

    def __init__(self, k: float = 50.0, step_form: str = "sigmoid", inner: int = 256):
        super().__init__()
        self.encoder = ResNet18Encoder()
        self.decoder = FPNDecoder(inner=inner)
        self.head = DBHead(self.decoder.out_channels, k=k, step_form=step_form)

    def forward(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        return self.head(self.decoder(self.encoder(images)))


# -- Losses (MhLiao/DB decoders/*.py) --------------------------------------------------------------


class DiceLoss(nn.Module):
    """``1 - 2 |P.G.M| / (|P.M| + |G.M| + eps)``. ``strict`` keeps the original
    ``assert loss <= 1`` (F4-4); ``strict=False`` returns the value, NaN included."""

    def __init__(self, eps: float = 1e-6, strict: bool = True):
        super().__init__()
        self.eps, self.strict = eps, strict

    def forward(self, pred: torch.Tensor, gt: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if pred.dim() == 4:
            pred, gt = pred[:, 0], gt[:, 0]
        assert pred.shape == gt.shape == mask.shape, (pred.shape, gt.shape, mask.shape)
        pred = pred.float()
        intersection = (pred * gt * mask).sum()
        union = (pred * mask).sum() + (gt * mask).sum() + self.eps
        loss = 1 - 2.0 * intersection / union
        if self.strict:
            assert loss <= 1
        return loss


class MaskL1Loss(nn.Module):
    """``sum(|T - T*| . M) / (sum(M) + eps)`` over the threshold mask. ``eps=0`` is MhLiao/DB's
    code: an all-zero mask (no text) gives 0/0 = NaN (MhLiao/DB#14)."""

    def __init__(self, eps: float = 0.0):
        super().__init__()
        self.eps = eps

    def forward(self, pred: torch.Tensor, gt: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return (torch.abs(pred[:, 0].float() - gt) * mask).sum() / (mask.sum() + self.eps)


class BalanceCrossEntropyLoss(nn.Module):
    """Balanced BCE with hard negative mining (negatives <= ``negative_ratio`` x positives).

    ``from_logits=False`` is MhLiao/DB: ``F.binary_cross_entropy`` on the sigmoid map, refused
    under CUDA autocast (F4-5). ``from_logits=True`` takes logits and uses
    ``F.binary_cross_entropy_with_logits`` (autocast-safe). With no positives no negative is
    mined either and the loss is 0 (mindspore-lab/mindocr PR #546 puts a floor under it).
    """

    def __init__(self, negative_ratio: float = 3.0, eps: float = 1e-6, from_logits: bool = False):
        super().__init__()
        self.negative_ratio, self.eps, self.from_logits = negative_ratio, eps, from_logits
        self.last_negative_count = 0

    def forward(self, pred: torch.Tensor, gt: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        positive = (gt[:, 0] * mask).byte()
        negative = ((1 - gt[:, 0]) * mask).byte()
        positive_count = int(positive.float().sum())
        negative_count = min(int(negative.float().sum()), int(positive_count * self.negative_ratio))
        self.last_negative_count = negative_count
        if self.from_logits:
            loss = F.binary_cross_entropy_with_logits(pred, gt, reduction="none")[:, 0]
        else:
            loss = F.binary_cross_entropy(pred, gt, reduction="none")[:, 0]
        positive_loss = loss * positive.float()
        negative_loss = loss * negative.float()
        negative_loss, _ = torch.topk(negative_loss.reshape(-1), negative_count)
        return (positive_loss.sum() + negative_loss.sum()) / (
            positive_count + negative_count + self.eps
        )


class DBLoss(nn.Module):
    """MhLiao/DB ``L1BalanceCELoss``: ``dice(binary) + 10 * l1(thresh) + 5 * bce(prob)``.

    ``l1_eps`` is :class:`MaskL1Loss`'s epsilon (0 = the published code). Returns the total and
    the parts. Parts are computed in the original order (bce, l1, dice), so a NaN threshold map
    surfaces as the Dice ``AssertionError``.
    """

    def __init__(self, l1_eps: float = 0.0, from_logits: bool = False, strict_dice: bool = True):
        super().__init__()
        self.bce = BalanceCrossEntropyLoss(from_logits=from_logits)
        self.l1 = MaskL1Loss(eps=l1_eps)
        self.dice = DiceLoss(strict=strict_dice)

    def forward(self, pred: dict[str, torch.Tensor], batch: dict[str, torch.Tensor]):
        prob = pred["prob_logits"] if self.bce.from_logits else pred["prob"]
        bce = self.bce(prob, batch["gt"], batch["mask"])
        l1 = self.l1(pred["thresh"], batch["thresh_map"], batch["thresh_mask"])
        dice = self.dice(pred["binary"], batch["gt"], batch["mask"])
        total = dice + 10.0 * l1 + 5.0 * bce
        return total, {"bce": bce, "l1": l1, "dice": dice}


# -- Synthetic data with realistic shapes ----------------------------------------------------------


def synthetic_batch(
    batch: int,
    size: int | tuple[int, int],
    kind: str = "normal",
    device: str | torch.device = "cpu",
    seed: int = 0,
    boxes: int = 4,
) -> dict[str, torch.Tensor]:
    """A DB training batch: ``image`` (N,3,H,W, ImageNet-normalised), ``gt`` (N,1,H,W) shrunk text
    kernels, ``mask`` (N,H,W) training mask, ``thresh_map``/``thresh_mask`` (N,H,W) border maps.

    ``kind``: ``normal`` (a few text boxes per image), ``empty_mask`` (text present but the
    threshold mask is all zero, as when every polygon's border is dropped), ``no_text`` (an
    image without text: gt and threshold mask all zero).
    """
    if kind not in BATCH_KINDS:
        raise ValueError(f"unknown batch kind {kind!r}; expected one of {BATCH_KINDS}")
    height, width = (size, size) if isinstance(size, int) else size
    gen = torch.Generator().manual_seed(seed)
    image = torch.rand(batch, 3, height, width, generator=gen)
    gt = torch.zeros(batch, 1, height, width)
    thresh_mask = torch.zeros(batch, height, width)
    thresh_map = torch.full((batch, height, width), THRESH_MIN)
    if kind != "no_text":
        for n in range(batch):
            for _ in range(boxes):
                h = int(
                    torch.randint(max(4, height // 16), max(5, height // 5), (1,), generator=gen)
                )
                w = int(torch.randint(max(8, width // 8), max(9, width // 2), (1,), generator=gen))
                top = int(torch.randint(0, height - h, (1,), generator=gen))
                left = int(torch.randint(0, width - w, (1,), generator=gen))
                image[n, :, top : top + h, left : left + w] *= 0.3  # dark text on a light page
                shrink = max(1, h // 5)
                gt[n, 0, top + shrink : top + h - shrink, left + shrink : left + w - shrink] = 1.0
                t0, l0 = max(0, top - shrink), max(0, left - shrink)
                thresh_mask[n, t0 : top + h + shrink, l0 : left + w + shrink] = 1.0
                thresh_map[n, t0 : top + h + shrink, l0 : left + w + shrink] = THRESH_MAX
    if kind == "empty_mask":
        thresh_mask.zero_()
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    out = {
        "image": (image - mean) / std,
        "gt": gt,
        "mask": torch.ones(batch, height, width),
        "thresh_map": thresh_map,
        "thresh_mask": thresh_mask,
    }
    return {key: value.to(device) for key, value in out.items()}


def non_finite(named: dict[str, torch.Tensor]) -> list[str]:
    """Names whose tensor holds a NaN or Inf (``None`` entries are skipped)."""
    return [
        name for name, t in named.items() if t is not None and not bool(torch.isfinite(t).all())
    ]


def non_finite_grads(model: nn.Module) -> list[str]:
    """Parameter names whose gradient holds a NaN or Inf (parameters without one are skipped)."""
    return non_finite({name: p.grad for name, p in model.named_parameters()})


def check_finite(
    ctx,
    step: int | None = None,
    *,
    loss: torch.Tensor | None = None,
    grads: nn.Module | dict[str, torch.Tensor] | None = None,
    note: str = "",
) -> None:
    """The one NaN/Inf check of the DBNet scenarios: fail the case as ``nan_detected`` when
    ``loss`` (a scalar tensor) or any gradient (of a module's parameters, or named tensors) is
    NaN or infinite. Messages follow the field reports' wording, which the signature table
    matches: ``step 3: loss = nan`` and ``NaN/Inf gradient detected in conv1.weight at step 3``
    (``note`` is appended to either). Returns when everything is finite."""
    at = "" if step is None else f" at step {step}"
    if loss is not None:
        value = float(loss.detach())
        if not math.isfinite(value):
            ctx.fail(
                f"{'loss' if step is None else f'step {step}: loss'} = {value}{note}",
                signature="nan_detected",
            )
    if grads is None:
        return
    bad = non_finite_grads(grads) if isinstance(grads, nn.Module) else non_finite(grads)
    if bad:
        more = f" (+{len(bad) - 3} more)" if len(bad) > 3 else ""
        ctx.fail(
            f"NaN/Inf gradient detected in {', '.join(bad[:3])}{more}{at}{note}",
            signature="nan_detected",
        )


def unchecked_dice(pred: dict[str, torch.Tensor], batch: dict[str, torch.Tensor]) -> float:
    """The Dice loss value without the ``assert loss <= 1`` (to report what the assertion hid)."""
    with torch.no_grad():
        return float(DiceLoss(strict=False)(pred["binary"], batch["gt"], batch["mask"]))


def training_loss(
    ctx, criterion: DBLoss, pred: dict[str, torch.Tensor], batch: dict[str, torch.Tensor], step: int
):
    """``criterion(pred, batch)`` -> ``(loss, parts)``; when the original Dice ``assert loss <= 1``
    fires (a NaN prediction: ``nan <= 1`` is False, field report F4-4), the case fails as
    ``nan_detected`` with the value the assertion hid, never as a bare AssertionError."""
    try:
        return criterion(pred, batch)
    except AssertionError:
        traceback.print_exc()  # the log keeps the original assert's traceback
        ctx.fail(
            f"step {step}: Dice loss is {unchecked_dice(pred, batch)} "
            "('assert loss <= 1' raised AssertionError, F4-4)",
            signature="nan_detected",
        )
        raise  # unreachable: ctx.fail raises
