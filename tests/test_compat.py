"""repro.compat.predictions: predicting a (host, variant) cell from the shipped compatibility facts.

Host and variant inputs are the JUnit properties the runner writes (``host.*`` from the
fingerprint, ``variant.*`` from matrix.yaml, ``runtime.*`` observed by the torch probe).
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from repro import compat
from repro.compat import FAIL, PASS, UNKNOWN, Facts, predict

REPO = Path(__file__).resolve().parent.parent
SHARED_FACTS = REPO.parent / "shared" / "compat" / "compat-facts.yaml"


def nvidia_host(
    driver: str, capability: str = "9.0", wsl2: bool = False, name: str = "NVIDIA H100"
) -> dict[str, str]:
    return {
        "host.driver.nvidia": driver,
        "host.gpu_count": "1",
        "host.gpu.0.name": name,
        "host.gpu.0.vendor": "nvidia",
        "host.gpu.0.compute_capability": capability,
        "host.wsl2": "true" if wsl2 else "false",
    }


def variant(runtime: str, torch: str, **observed: str) -> dict[str, str]:
    props = {"variant.runtime": runtime, "variant.torch": torch}
    props.update({f"runtime.{k}": v for k, v in observed.items()})
    return props


def by_check(prediction: compat.Prediction, check: str) -> compat.Reason:
    return next(r for r in prediction.reasons if r.check == check)


# ------------------------------------------------------------------------------------------
# The required cases


def test_driver_535_with_a_cu130_variant_is_driver_too_old():
    prediction = predict(nvidia_host("535.104.05"), variant("cu130", "2.10.0"), "cu130-torch2.10")
    assert prediction.outcome == FAIL
    driver = by_check(prediction, "driver")
    assert driver.verdict == FAIL
    assert "driver 535.104.05 is older than 580" in driver.text
    assert "cudaErrorInsufficientDriver" in driver.text
    assert driver.fact == "cuda_min_driver.13.0.family_min.linux"
    assert driver.unverified is False
    # The H100 itself is covered by the wheel's sm_90 cubin: only the driver is the problem.
    assert by_check(prediction, "kernel_image").verdict == PASS
    assert prediction.deciding == (driver,)


def test_sm_120_device_on_an_arch_list_that_stops_at_sm_90_without_ptx_has_no_kernel_image():
    host = nvidia_host("580.65.06", capability="12.0", name="NVIDIA GeForce RTX 5090")
    prediction = predict(host, variant("cu126", "2.8.0"), "cu126-torch2.8")
    assert prediction.outcome == FAIL
    kernel = by_check(prediction, "kernel_image")
    assert kernel.verdict == FAIL
    assert kernel.text.startswith(
        "no kernel image for GPU 0 (NVIDIA GeForce RTX 5090), capability 12.0"
    )
    assert "sm_90]" in kernel.text and "no PTX compute_XY with XY <= 120" in kernel.text
    assert kernel.fact == "torch_variants.2.8.variants[0].arch = arch_lists.cu12_maxwell_to_hopper"
    assert by_check(prediction, "driver").verdict == PASS


def test_a_driver_exactly_at_the_family_minimum_is_predicted_to_pass():
    prediction = predict(nvidia_host("525.60.13", capability="8.9"), variant("cu128", "2.8.0"))
    assert prediction.outcome == PASS, [r.line() for r in prediction.reasons]
    assert by_check(prediction, "driver").text == (
        "driver 525.60.13 >= 525.60.13, the minimum for CUDA 12.x (linux)"
    )
    # "580" (the 13.x minimum as NVIDIA writes it) compares as a version, not a string.
    assert predict(nvidia_host("580"), variant("cu130", "2.10.0")).outcome == PASS
    assert predict(nvidia_host("579.99"), variant("cu130", "2.10.0")).outcome == FAIL


def test_a_wsl2_host_uses_the_windows_minimums():
    # 527.41 is above the Linux 12.x minimum (525.60.13) but below the Windows one (528.33).
    cu128 = variant("cu128", "2.8.0")
    assert predict(nvidia_host("527.41"), cu128).outcome == PASS
    prediction = predict(nvidia_host("527.41", wsl2=True), cu128)
    assert prediction.outcome == FAIL
    driver = by_check(prediction, "driver")
    assert driver.fact == "cuda_min_driver.12.8.family_min.windows"
    assert "older than 528.33" in driver.text and "WSL2 reports the Windows driver" in driver.text
    assert predict(nvidia_host("528.33", wsl2=True), cu128).outcome == PASS


# ------------------------------------------------------------------------------------------
# Observed facts, PTX, provenance


def test_the_observed_arch_list_beats_the_table():
    v100 = nvidia_host("570.86.15", capability="7.0", name="Tesla V100")
    # The table says 2.8 cu128 has sm_70 (Volta restored) ...
    assert predict(v100, variant("cu128", "2.8.0")).outcome == PASS
    # ... but the wheel this run actually used reported a list without it.
    observed = predict(v100, variant("cu128", "2.8.0", arch_list="sm_75,sm_80,sm_86,sm_90"))
    assert observed.outcome == FAIL
    assert by_check(observed, "kernel_image").fact == "observed runtime.arch_list"


def test_observed_cuda_version_beats_the_runtime_tag():
    # A cu130-tagged variant whose build reports CUDA 12.8: judged as 12.x.
    prediction = predict(nvidia_host("535.104.05"), variant("cu130", "2.10.0", cuda="12.8"))
    assert by_check(prediction, "driver").verdict == PASS
    assert "CUDA 12.x" in by_check(prediction, "driver").text


def test_ptx_lets_a_newer_device_jit_when_the_driver_knows_that_ptx():
    arch = "sm_80,sm_90,compute_90"
    new_driver = predict(
        nvidia_host("575.51.03", capability="12.0"),
        variant("cu128", "2.8.0", arch_list=arch, cuda="12.8"),
    )
    assert new_driver.outcome == PASS
    jit = by_check(new_driver, "ptx_jit")
    assert "PTX compute_90 JIT-compiles" in jit.text
    assert "cuda_min_driver.12.8.toolkit_driver.12.8.0.linux" in jit.fact
    # Inside minor-version compatibility (>= 525.60.13) but below the 12.8 toolkit driver.
    old_driver = predict(
        nvidia_host("550.54.14", capability="12.0"),
        variant("cu128", "2.8.0", arch_list=arch, cuda="12.8"),
    )
    assert old_driver.outcome == FAIL
    assert "cudaErrorUnsupportedPtxVersion" in by_check(old_driver, "ptx_jit").text
    # PTX newer than the device does not help.
    assert (
        predict(
            nvidia_host("575.51.03", capability="8.6"),
            variant("cu128", "2.8.0", arch_list="sm_90,compute_90"),
        ).outcome
        == FAIL
    )


def test_torch_device_requirement_table_decides_which_cubins_run():
    cases = {
        ("8.9", "sm_86"): PASS,  # Ada runs Ampere cubins
        ("8.7", "sm_80"): FAIL,  # ... but Orin is excluded from sm_80
        ("10.3", "sm_100"): PASS,  # B300 runs sm_100
        ("11.0", "sm_100"): FAIL,  # Thor does not
        ("6.1", "sm_60"): PASS,
        ("9.0", "sm_90a"): PASS,  # arch-specific cubin: that exact device
        ("9.1", "sm_90a"): FAIL,
    }
    for (capability, cubin), expected in cases.items():
        prediction = predict(
            nvidia_host("580.65.06", capability), variant("cu128", "2.8.0", arch_list=cubin)
        )
        assert by_check(prediction, "kernel_image").verdict == expected, (capability, cubin)


def test_predictions_use_match_arch_for_every_published_list():
    """The kernel-image check and the ``arch`` scenario share compat.match_arch: on every
    shipped arch list and device they name the same entry (or both find none)."""
    facts = compat.default_facts()
    devices = [(major, minor) for major in range(3, 13) for minor in range(10)]
    for name, entries in facts.get("arch_lists").items():
        arch = ",".join(entries)
        for major, minor in devices:
            verdict = compat.match_arch((major, minor), entries)
            host = nvidia_host("580.65.06", capability=f"{major}.{minor}")
            reasons = predict(host, variant("cu128", "2.8.0", arch_list=arch, cuda="12.8")).reasons
            image = next(r for r in reasons if r.check in ("kernel_image", "ptx_jit"))
            where = (name, major, minor, image.text)
            if verdict.via == "cubin":
                assert image.check == "kernel_image" and image.verdict == PASS, where
                assert f"runs the {verdict.entry} cubin" in image.text, where
                assert image.fact.endswith(f"; {verdict.fact}") or verdict.fact is None, where
            elif verdict.via == "ptx":
                assert image.check == "ptx_jit" and image.verdict == PASS, where
                assert f"PTX {verdict.entry} JIT-compiles" in image.text, where
            else:
                assert image.check == "kernel_image" and image.verdict == FAIL, where


def test_match_arch_cubin_and_ptx_rules():
    sm80 = compat.match_arch((8, 6), ["sm_80"])
    assert (sm80.via, sm80.fact) == ("cubin", "device_code_compat.80")
    assert compat.match_arch((3, 7), ["sm_37"]).fact is None  # not in torch's table: fallback
    assert compat.match_arch((3, 9), ["sm_37"]).ok and not compat.match_arch((5, 0), ["sm_37"]).ok
    assert compat.match_arch((10, 1), ["sm_110"]).ok  # 10.1 was renamed 11.0: one set
    assert (
        compat.match_arch((10, 3), ["sm_100f"]).ok
        and not compat.match_arch((11, 0), ["sm_100f"]).ok
    )
    assert not compat.match_arch((9, 1), ["compute_90a"]).ok  # arch-specific PTX: 9.0 only
    best = compat.match_arch((12, 0), ["compute_80", "compute_90", "compute_86"])
    assert (best.via, best.entry) == ("ptx", "compute_90")  # the newest PTX the device can JIT
    assert compat.match_arch("GFX1100", ["gfx1100:xnack-"]).entry == "gfx1100:xnack-"
    assert not compat.match_arch("gfx1100", []).ok
    with pytest.raises(ValueError):
        compat.gfx_from_override("10.3")
    with pytest.raises(ValueError):
        compat.match_arch(("8", "x"), ["sm_80"])


def test_drivers_590_and_newer_no_longer_drive_pascal():
    prediction = predict(
        nvidia_host("590.44.01", capability="6.1", name="GTX 1080"), variant("cu126", "2.8.0")
    )
    assert prediction.outcome == FAIL
    support = by_check(prediction, "gpu_support")
    assert support.fact == "driver_branch_gpu_support[0].rule"
    assert "R580 legacy branch" in support.text


def test_an_unverified_fact_is_named_in_the_reason():
    # The shipped facts with one value marked again: the 13.x windows minimum "580" (its source is
    # NVIDIA's minor-version table now; the mark is put back here to test the mechanism).
    text = compat.FACTS_FILE.read_text(encoding="utf-8")
    line = '    family_min: {linux: "580", windows: "580"}   # nvidia_minor_compat_table1\n'
    assert line in text
    text = text.replace(
        line, '    family_min: {linux: "580", windows: "580"}   # windows unverified\n', 1
    )
    history = compat.facts.HISTORY_FACTS_FILE.read_text(encoding="utf-8")
    marked = Facts.from_text(text, history)
    prediction = predict(nvidia_host("581.57", wsl2=True), variant("cu130", "2.10.0"), None, marked)
    driver = by_check(prediction, "driver")
    assert driver.verdict == PASS and driver.unverified is True
    assert driver.fact == "cuda_min_driver.13.0.family_min.windows"
    assert prediction.unverified is True
    assert "unverified" in driver.line()
    # The linux column of the same line is not marked, nor is the shipped value any more.
    linux = predict(nvidia_host("581.57"), variant("cu130", "2.10.0"), None, marked)
    assert by_check(linux, "driver").unverified is False
    shipped = predict(nvidia_host("581.57", wsl2=True), variant("cu130", "2.10.0"))
    assert by_check(shipped, "driver").unverified is False


def test_unverified_marks_follow_the_comment_scope():
    facts = Facts.from_text(
        "a: {linux: '1', windows: '2'}   # windows unverified\n"
        "b: '3'   # unverified (from memory)\n"
        "c: [sm_80, compute_90]   # +PTX linux only; PyPI wheel PTX unverified\n"
        "d: 'x # y'   # checked\n"
        "e:\n"
        "  - {runtime: cu126, arch: l1, nccl: '2'}   # nccl unverified\n"
    )
    assert facts.unverified("a", "windows") and not facts.unverified("a", "linux")
    assert facts.unverified("b")
    assert facts.unverified("c", 1) and not facts.unverified("c", 0)
    assert facts.get("d") == "x # y" and not facts.unverified("d")
    assert facts.unverified("e", 0, "nccl") and not facts.unverified("e", 0, "arch")
    assert Facts.name("e", 0, "arch") == "e[0].arch"


def test_rocm_gfx_target_must_be_in_the_wheel_list():
    def amd(target: str) -> dict[str, str]:
        return {
            "host.gpu_count": "1",
            "host.gpu.0.vendor": "amd",
            "host.gpu.0.gfx_target": target,
            "host.gpu.0.name": f"AMD {target}",
        }

    rocm64 = variant("rocm6.4", "2.8.0")
    missing = predict(amd("gfx1103"), rocm64)
    assert missing.outcome == FAIL
    assert "gfx1103 is not in the wheel's gfx list" in missing.reasons[0].text
    assert missing.reasons[0].unverified is False  # the 2.7 wheel list: astral-sh/uv#14086
    assert predict(amd("gfx90a"), rocm64).outcome == PASS
    dropped = predict(amd("gfx906"), rocm64)  # listed, but ROCm 6.4 libraries dropped its kernels
    assert dropped.outcome == FAIL and dropped.reasons[0].fact == "gfx_lists_note"
    unofficial = predict(amd("gfx1102"), rocm64)
    assert unofficial.outcome == PASS
    assert [r.verdict for r in unofficial.reasons] == [PASS, "note"]
    # The observed gfx list of the build beats the table; ":xnack-" features are ignored.
    observed = predict(
        amd("gfx1103:xnack-"),
        variant("rocm6.4", "2.8.0", arch_list="gfx1100,gfx1103", hip="6.4.43482"),
    )
    assert observed.outcome == PASS


def test_cpu_variants_and_hosts_without_gpu_facts():
    assert predict({}, variant("cpu", "2.13.0")).outcome == PASS
    assert predict({}, variant("cu128", "2.8.0")).outcome == UNKNOWN
    no_gpu = predict({"host.gpu_count": "0"}, variant("cu128", "2.8.0"))
    assert no_gpu.outcome == UNKNOWN and "no GPU" in no_gpu.reasons[0].text
    amd_only = {
        "host.gpu_count": "1",
        "host.gpu.0.vendor": "amd",
        "host.gpu.0.gfx_target": "gfx90a",
    }
    assert predict(amd_only, variant("cu128", "2.8.0")).outcome == UNKNOWN
    # Capability unknown (an old fingerprint): the driver check alone cannot predict a pass.
    no_cc = {"host.driver.nvidia": "570.86.15", "host.gpu.0.name": "NVIDIA GeForce RTX 4090"}
    assert predict(no_cc, variant("cu128", "2.8.0")).outcome == UNKNOWN
    # The runtime and torch pin can come from a canonical variant id alone.
    assert predict(nvidia_host("535.104.05"), {}, "cu130-torch2.10").outcome == FAIL
    # A variant the facts do not list: the kernel-image check is unknown, the driver still known.
    unlisted = predict(nvidia_host("570.86.15"), variant("cu128", "2.13.0"))
    assert unlisted.outcome == UNKNOWN and by_check(unlisted, "driver").verdict == PASS


def test_disagreement_in_both_directions():
    assert compat.disagreement(FAIL, PASS) == "predicted to fail but passed"
    assert compat.disagreement(PASS, FAIL) == "predicted to pass but failed"
    assert compat.disagreement(PASS, PASS) is None
    assert compat.disagreement(UNKNOWN, FAIL) is None
    assert compat.disagreement(FAIL, None) is None


def test_the_shipped_facts_are_the_published_copy_with_its_marks_resolved():
    """repro/data/compat-facts.yaml is ../shared/compat's published copy, except lines whose
    ``# unverified`` mark was resolved (issue 30): a changed line names its source or says what
    was removed, and a line the copy dropped was a marked one."""
    shipped = compat.FACTS_FILE.read_text(encoding="utf-8").splitlines()
    assert not [line for line in shipped if "unverified" in line and not line.startswith("#")], (
        "every value of the shipped facts has a source"
    )
    if not SHARED_FACTS.is_file():
        pytest.skip("../shared/compat/compat-facts.yaml is not beside this checkout")
    published = SHARED_FACTS.read_text(encoding="utf-8").splitlines()
    marked = [i for i, line in enumerate(published) if "unverified" in line]
    matcher = difflib.SequenceMatcher(a=published, b=shipped, autojunk=False)
    changed = 0
    for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
        if tag == "equal" or i1 == i2:
            continue  # insertions: the sources named for resolved marks
        changed += 1
        assert any(i1 - 2 <= i <= i2 + 1 for i in marked), (
            f"published lines {i1 + 1}-{i2} changed without an unverified mark near them: "
            + " / ".join(published[i1:i2])
        )
    assert changed > 0
