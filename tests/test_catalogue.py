"""The failure catalogue's scenarios: their pure logic in-process (arch matching, DB losses and
their edge cases, the batch guard, the DBNet model's shapes) and their CPU lanes through the
real CLI (outcomes and signatures as observed on a CPU-only torch 2.13)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, cases_by_name, only_run_dir, run_cli, write_matrix

torch = pytest.importorskip("torch")

from repro import compat, scenarios  # noqa: E402
from repro.compat import gfx_from_override, match_arch  # noqa: E402
from repro.scenarios import _dbnet, arch, data_validation, losses  # noqa: E402

# torch.cuda.get_arch_list() of published wheels, copied from the shipped facts
# repro/data/compat-facts.yaml (``arch_lists``/``gfx_lists``); test_arch_lists_match_compat_facts
# keeps the copy honest.
ARCH_LISTS = {
    "cu118_legacy": ["sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"],
    "cu12_maxwell_to_hopper": ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"],
    "cu128_2_7": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"],
    "cu128_volta": ["sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"],
    "cu129_volta_ptx": [
        "sm_70",
        "sm_75",
        "sm_80",
        "sm_86",
        "sm_90",
        "sm_100",
        "sm_120",
        "compute_120",
    ],
    "cu128_no_volta": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"],
}
GFX_LISTS = {
    "rocm_wheels_2_4": ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx1030", "gfx1100", "gfx942"],
}

NEW_SCENARIOS = ("arch", "cudnn", "model", "losses", "data_validation", "amp", "cuda_ipc")


# -- arch ------------------------------------------------------------------------------------------


#: Entries of the shipped ``device_code_compat`` (copied from torch 2.15's DEVICE_REQUIREMENT)
#: that an older torch has differently: 2.15 makes sm_101 and sm_110 one set {10.1, 11.0} (10.1
#: was renamed 11.0); torch 2.13 still has sm_110 as interval(11.0), i.e. 11.0-11.9.
NEWER_TORCH_RULES = {110}


def test_arch_lists_match_compat_facts():
    facts = compat.default_facts()  # the shipped repro/data/compat-facts.yaml
    for name, entries in ARCH_LISTS.items():
        assert facts.get("arch_lists", name) == entries, name
    for name, entries in GFX_LISTS.items():
        assert facts.get("gfx_lists", name) == entries, name


def _as_fact(rule) -> dict | None:
    """One torch ``_CompatSet``/``_CompatInterval`` as a ``device_code_compat`` entry."""
    if hasattr(rule, "values"):
        return {"set": sorted(str(v) for v in rule.values)}
    if hasattr(rule, "major") and hasattr(rule, "minor"):
        exclude = sorted(str(v) for v in getattr(rule, "exclude", ()) or ())
        return {"interval": str(10 * rule.major + rule.minor), "exclude": exclude}
    return None


def test_cubin_rules_agree_with_torchs_own_device_requirement():
    """match_arch's cubin rule is torch's ``_code_compatible_with_device``: exactly when fed this
    torch's own DEVICE_REQUIREMENT, and with the shipped table except where torch changed it."""
    yaml = pytest.importorskip("yaml")
    torch_rule = getattr(torch.cuda, "_code_compatible_with_device", None)
    table = getattr(torch.cuda, "DEVICE_REQUIREMENT", None)
    if torch_rule is None or table is None:
        pytest.skip("this torch has no DEVICE_REQUIREMENT table")
    mirrored = {str(code): _as_fact(rule) for code, rule in table.items()}
    if None in mirrored.values():
        pytest.skip("this torch's DEVICE_REQUIREMENT entries have an unknown shape")
    torchs = compat.Facts.from_text(yaml.safe_dump({"device_code_compat": mirrored}))
    shipped = compat.default_facts()
    assert set(mirrored) <= set(shipped.get("device_code_compat")), "shipped table lacks codes"
    devices = [(major, minor) for major in range(5, 13) for minor in range(10)]
    changed = set()
    for code in table:
        for device in devices:
            expected = torch_rule(10 * device[0] + device[1], code)
            assert match_arch(device, [f"sm_{code}"], torchs).ok == expected, (device, code)
            if match_arch(device, [f"sm_{code}"], shipped).ok != expected:
                changed.add(code)
    assert changed <= NEWER_TORCH_RULES, sorted(changed)


def test_scenario_and_predictions_share_one_arch_rule():
    assert arch.match_arch is compat.match_arch
    assert not hasattr(arch, "DEVICE_REQUIREMENT")


@pytest.mark.parametrize(
    ("device", "arch_list", "ok", "via", "entry"),
    [
        ((12, 0), "cu12_maxwell_to_hopper", False, None, None),  # RTX 5090 + cu12x (#150733)
        ((12, 0), "cu128_2_7", True, "cubin", "sm_120"),
        ((12, 1), "cu128_2_7", True, "cubin", "sm_120"),  # same major, minor >= 0
        ((6, 1), "cu128_volta", False, None, None),  # GTX 1080 Ti + cu128 (ComfyUI-Docker#61)
        ((6, 1), "cu12_maxwell_to_hopper", True, "cubin", "sm_60"),
        ((7, 0), "cu128_no_volta", False, None, None),
        ((7, 0), "cu129_volta_ptx", True, "cubin", "sm_70"),
        ((8, 6), "cu118_legacy", True, "cubin", "sm_80"),
        ((9, 0), "cu118_legacy", True, "cubin", "sm_90"),
    ],
)
def test_match_arch_on_published_wheels(device, arch_list, ok, via, entry):
    verdict = match_arch(device, ARCH_LISTS[arch_list])
    assert (verdict.ok, verdict.via, verdict.entry) == (ok, via, entry), verdict.reason
    if not ok:
        assert "no kernel image" in verdict.reason


def test_match_arch_ptx_fallback_and_its_limits():
    no_sm120 = [e for e in ARCH_LISTS["cu128_2_7"] if e != "sm_120"]  # [.., sm_100, compute_120]
    verdict = match_arch((12, 1), no_sm120)
    assert (verdict.ok, verdict.via, verdict.entry) == (True, "ptx", "compute_120")
    assert match_arch((12, 0), no_sm120).via == "ptx"
    assert not match_arch((11, 0), ["compute_120"]).ok  # PTX never JITs backwards
    assert match_arch((10, 0), ["compute_90"]).via == "ptx"  # ... but forwards across majors
    assert not match_arch((8, 7), ["sm_80", "sm_86"]).ok  # Jetson Orin is excluded
    assert match_arch((9, 0), ["sm_90a"]).ok
    assert not match_arch((10, 0), ["sm_90a"]).ok  # arch-specific cubins run on 9.0 only
    assert not match_arch((8, 6), []).ok  # a CPU-only build


def test_match_arch_rocm_targets():
    wheels = GFX_LISTS["rocm_wheels_2_4"]
    assert match_arch("gfx90a:sramecc+:xnack-", wheels).ok
    rx5600 = match_arch("gfx1010", wheels)  # O2's RX 5600 XT
    assert not rx5600.ok and "gfx1010" in rx5600.reason
    assert gfx_from_override("10.3.0") == "gfx1030"  # O2's HSA_OVERRIDE_GFX_VERSION
    assert gfx_from_override("11.0.0") == "gfx1100"
    assert match_arch(gfx_from_override("10.3.0"), wheels).via == "gfx"


def test_build_consistency_of_this_torch_and_of_contradictions():
    config = torch.__config__.show()
    facts = (torch.version.cuda, torch.version.hip, torch.cuda.get_arch_list())
    assert arch.build_consistency(config, *facts, torch.backends.cudnn.is_available(),
                                  torch.backends.cpu.get_cpu_capability()) == []  # fmt: skip
    cpu_config = (
        "PyTorch built with:\n  - Build settings: USE_CUDA=0, USE_CUDNN=OFF, USE_ROCM=OFF, \n"
    )
    assert arch.build_consistency(cpu_config, None, None, [], False) == []
    no_avx = cpu_config + "  - CPU capability usage: NO AVX\n"  # printed for DEFAULT (aarch64)
    assert arch.build_consistency(no_avx, None, None, [], False, "DEFAULT") == []
    assert arch.build_consistency(no_avx, None, None, [], False, "AVX2") != []
    problems = arch.build_consistency(cpu_config, "12.8", None, ARCH_LISTS["cu128_volta"], False)
    assert any("USE_CUDA=0" in p for p in problems)
    cuda_config = "  - Build settings: USE_CUDA=ON, USE_CUDNN=ON, USE_ROCM=OFF, \n"
    assert arch.build_consistency(cuda_config, "12.8", None, ARCH_LISTS["cu128_volta"], True) == []
    assert any(
        "empty arch list" in p for p in arch.build_consistency(cuda_config, "12.8", None, [], True)
    )


# -- losses ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "eps", "problem"),
    [
        ("normal", 0.0, None),
        ("empty_mask", 0.0, "l1 loss is nan"),  # MhLiao/DB#14
        ("empty_mask", 1e-6, None),
        ("no_text", 0.0, "l1 loss is nan"),
        ("no_text", 1e-6, None),
        ("nan_pred", 0.0, "Dice loss is nan"),  # F4-4: the assertion, reported as NaN
    ],
)
def test_db_loss_edge_cases(case, eps, problem):
    _leaves, pred, data = losses.make_inputs(case, batch=2, size=64)
    parts, found = losses.evaluate(pred, data, eps)
    if problem is None:
        assert found is None
        assert all(torch.isfinite(parts[name]) for name in ("bce", "l1", "dice"))
    else:
        assert found is not None and found.startswith(problem) and "nan" in found


def test_no_text_batches_mine_no_negatives_and_give_zero_bce():
    _leaves, pred, data = losses.make_inputs("no_text", batch=2, size=64)
    parts, found = losses.evaluate(pred, data, 1e-6)
    assert found is None
    assert float(parts["negatives_mined"]) == 0 and float(parts["bce"].detach()) == 0.0


def test_one_finite_check_names_the_nan_loss_or_gradient_as_nan_detected():
    class Ctx:
        def fail(self, message, signature=None):
            raise scenarios.CaseFailed(message, signature)

    ctx, net = Ctx(), torch.nn.Linear(2, 1)
    net(torch.ones(1, 2)).sum().backward()
    _dbnet.check_finite(ctx, 3, loss=torch.tensor(0.5), grads=net)  # finite: returns
    with pytest.raises(scenarios.CaseFailed) as failed:
        _dbnet.check_finite(ctx, 3, loss=torch.tensor(float("nan")), note=" under bf16 autocast")
    assert str(failed.value) == "step 3: loss = nan under bf16 autocast"
    assert failed.value.signature == "nan_detected"
    net.bias.grad[0] = float("inf")
    with pytest.raises(
        scenarios.CaseFailed, match=r"^NaN/Inf gradient detected in bias at step 3$"
    ):
        _dbnet.check_finite(ctx, 3, grads=net)
    leaves = {"thresh": torch.tensor([float("nan")]), "prob": torch.zeros(1)}
    with pytest.raises(scenarios.CaseFailed, match=r"^NaN/Inf gradient detected in thresh$"):
        _dbnet.check_finite(ctx, grads=leaves)


def test_dice_assertion_hides_nan_and_l1_eps_fixes_the_empty_mask():
    pred = torch.full((1, 1, 8, 8), float("nan"))
    gt, mask = torch.ones(1, 1, 8, 8), torch.ones(1, 8, 8)
    with pytest.raises(AssertionError):
        _dbnet.DiceLoss()(pred, gt, mask)
    assert torch.isnan(_dbnet.DiceLoss(strict=False)(pred, gt, mask))
    thresh, empty = torch.rand(1, 1, 8, 8), torch.zeros(1, 8, 8)
    assert torch.isnan(_dbnet.MaskL1Loss()(thresh, torch.rand(1, 8, 8), empty))
    assert float(_dbnet.MaskL1Loss(eps=1e-6)(thresh, torch.rand(1, 8, 8), empty)) == 0.0


def test_reciprocal_step_has_finite_forward_and_nan_backward_in_fp16():
    x = (torch.rand(1, 1, 16, 16) * 0.2).half().requires_grad_()
    y = (0.3 + 0.4 * torch.rand(1, 1, 16, 16)).half().requires_grad_()
    out = _dbnet.step_function(x, y, form="reciprocal")
    assert torch.isfinite(out).all()
    out.float().sum().backward()
    assert not torch.isfinite(x.grad).all()  # F4-1: exp overflows above ~11.1 in fp16
    x32, y32 = x.detach().float(), y.detach().float()
    assert torch.allclose(
        _dbnet.step_function(x32, y32, form="reciprocal"), _dbnet.step_function(x32, y32)
    )


# -- batch guard -----------------------------------------------------------------------------------


def test_batch_guard_passes_clean_batches_and_names_each_planted_sample():
    batch = _dbnet.synthetic_batch(8, 64)
    assert data_validation.check_batch(batch) == []
    expected = data_validation.plant_bad_samples(batch)
    with pytest.raises(data_validation.BadBatch) as raised:
        data_validation.guard(batch)
    assert {(p.index, p.field, p.what) for p in raised.value.problems} == expected
    assert "sample 2 gt: out_of_range" in str(raised.value)


def test_batch_guard_checks_integer_fields_and_skips_absent_ones():
    batch = {"gt": torch.tensor([[0, 1], [0, 255]], dtype=torch.uint8)}
    problems = data_validation.check_batch(batch)
    assert [(p.index, p.field, p.what) for p in problems] == [(1, "gt", "out_of_range")]


# -- DBNet -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_dbnet_output_shapes_in_train_and_eval():
    torch.manual_seed(0)
    model = _dbnet.DBNet()
    out = model(torch.randn(1, 3, 64, 96))
    assert set(out) == {"prob_logits", "prob", "thresh", "binary"}
    assert all(t.shape == (1, 1, 64, 96) for t in out.values())
    batch = _dbnet.synthetic_batch(1, (64, 96))
    loss, parts = _dbnet.DBLoss()(out, batch)
    loss.backward()
    assert torch.isfinite(loss) and not _dbnet.non_finite_grads(model)
    model.eval()
    with torch.no_grad():
        out = model(torch.randn(2, 3, 96, 64))
    assert set(out) == {"prob_logits", "prob"} and out["prob"].shape == (2, 1, 96, 64)


# -- the grid --------------------------------------------------------------------------------------


def test_grids_have_a_cpu_lane_and_a_cuda_lane_that_needs_an_accelerator():
    counts = {}
    for name in NEW_SCENARIOS:
        cases = scenarios.expand(name)
        by_device = {"cpu": 0, "cuda": 0}
        for case in cases:
            device = case.param_dict["device"]
            by_device[device] += 1
            assert ("accelerator" in case.requires) == (device == "cuda"), case.case_id
        counts[name] = (by_device["cpu"], by_device["cuda"])
    assert counts == {
        "arch": (1, 1),
        "cudnn": (4, 9),
        "model": (1, 1),
        "losses": (6, 6),
        "data_validation": (2, 2),
        "amp": (2, 3),
        "cuda_ipc": (4, 2),
    }


def test_dataloader_cpu_lane_stops_at_two_workers_and_the_cuda_lane_keeps_four():
    # issue 13 item 5: the CPU lane shrinks (each spawn worker imports torch), the GPU lane keeps
    # the field's sizes - also when matrix.yaml asks for more workers.
    cases = scenarios.expand("dataloader", params={"workers": [0, 2, 4, 8]})
    workers = {"cpu": set(), "cuda": set()}
    for case in cases:
        workers[case.param_dict["device"]].add(case.param_dict["workers"])
    assert workers == {"cpu": {0, 2}, "cuda": {0, 2, 4, 8}}


def test_scenario_modules_do_not_import_torch():
    # Every discovered built-in (issue 20: the test covered 7 of 14), and the script runner.
    names = [*scenarios.builtin(), "script"]
    assert len(names) >= 15
    code = (
        "import sys\n"
        + "".join(f"import repro.scenarios.{name}\n" for name in names)
        + "assert 'torch' not in sys.modules, 'a scenario imported torch at module level'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# -- through the real CLI (cpu lanes) --------------------------------------------------------------


@pytest.mark.slow
def test_cpu_lanes_reproduce_the_nan_cases_and_pass_their_fixes(project: Path):
    write_matrix(
        project,
        """\
        arch: {module: repro.scenarios.arch}
        losses:
          module: repro.scenarios.losses
          params: {case: [empty_mask, nan_pred]}
        data_validation: {module: repro.scenarios.data_validation, params: {device: [cpu]}}
        amp:
          module: repro.scenarios.amp
          params: {device: [cpu], loss: [bce]}
        cuda_ipc:
          module: repro.scenarios.cuda_ipc
          params: {device: [cpu], sharing: [file_system], producer: [exits_early]}
        """,
    )
    done = run_cli("run", "--no-doctor", cwd=project)
    # Every red is a reproduction its module's EXPECT declares: expected, so exit 0 (issue 29).
    assert done.returncode == 0, done.stderr
    cases = cases_by_name(only_run_dir(project / "results") / "junit.xml")
    outcome = {name: props["repro.outcome"] for name, (_case, props) in cases.items()}
    cuda = "passed" if torch.cuda.is_available() else "skipped"  # no GPU: the cuda lane skips
    expected = {
        "arch[device=cpu]": "passed",
        "arch[device=cuda]": cuda,
        "losses[device=cpu,case=empty_mask,eps=0]": "failed",  # MhLiao/DB#14
        "losses[device=cpu,case=empty_mask,eps=1e-06]": "passed",  # the fix
        "losses[device=cpu,case=nan_pred,eps=0]": "failed",  # F4-4
        "losses[device=cuda,case=empty_mask,eps=0]": "failed" if cuda == "passed" else cuda,
        "losses[device=cuda,case=empty_mask,eps=1e-06]": cuda,
        "losses[device=cuda,case=nan_pred,eps=0]": "failed" if cuda == "passed" else cuda,
        "data_validation[device=cpu,check=guard]": "passed",
        "data_validation[device=cpu,check=anomaly]": "passed",
        # CPU autocast runs binary_cross_entropy in fp32 and raises nothing (torch 2.13)
        "amp[device=cpu,dtype=bf16,loss=bce]": "passed",
        "cuda_ipc[device=cpu,sharing=file_system,producer=exits_early]": "passed",
    }
    assert outcome == expected
    for name in (
        "losses[device=cpu,case=empty_mask,eps=0]",
        "losses[device=cpu,case=nan_pred,eps=0]",
    ):
        case, props = cases[name]
        assert props["repro.signature"] == "nan_detected"
        assert "nan" in case.result[0].message
    assert (
        "Dice loss is nan" in cases["losses[device=cpu,case=nan_pred,eps=0]"][0].result[0].message
    )
    assert cases["data_validation[device=cpu,check=guard]"][1]["caught"] == (
        "2/gt/out_of_range; 5/image/nan; 6/thresh_map/inf"
    )
    assert (
        cases["data_validation[device=cpu,check=anomaly]"][1]["anomaly_function"] == "ExpBackward0"
    )
    assert cases["amp[device=cpu,dtype=bf16,loss=bce]"][1]["bce_dtype"] == "float32"
    assert cases["arch[device=cpu]"][1]["arch_list"] == ("(empty)" if torch.version.cuda is None else
                                                          " ".join(torch.cuda.get_arch_list()))  # fmt: skip
    ipc = cases["cuda_ipc[device=cpu,sharing=file_system,producer=exits_early]"][1]
    assert (ipc["producer_gone_before_use"], ipc["producer_warning"]) == ("1", "0")
    assert float(ipc["metric.producer_exit_wait_s"]) < 10  # not the sentinel-pipe join timeout
    if cuda == "skipped":
        assert "no CUDA/ROCm device" in cases["arch[device=cuda]"][0].result[0].message
