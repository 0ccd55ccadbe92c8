"""Named-wrong verdict paths fixed in issue 30, round thirteen (precision).

Each change came from first-sight errors of the newly studied sets (test9, test10) or a public
source, and each test below runs a real text from a public issue (URL beside it):

- a missing C++ standard header in a run-time kernel build (MIOpen/hipRTC) is the toolchain,
  not the C++ abort that follows (compile_toolchain_missing over cpp_terminate);
- WSL in a person's lower-case words is WSL2 host evidence, and nvidia-smi's "couldn't
  communicate with the NVIDIA driver" inside WSL is the WSL GPU bridge (wsl_gpu_unavailable),
  not a missing Linux driver (no_nvidia_driver);
- rule 6 (a described hang in an NCCL job) needs "NCCL version" where NCCL or torch prints it,
  not inside a person's sentence;
- rule 8 (a run shown) reads glog/c10 lines at levels I and W only: an E or F line is a program
  logging a failure;
- HSA_STATUS_ERROR_MEMORY_FAULT is the GPU page fault (rocm_memory_access_fault), as
  hsa_ext_amd.h defines it, not another HSA status (rocm_hsa_error);
- torch's CUDA initialization warning for cudaErrorUnknown cut before its tail is still
  cuda_driver_init_failed, not "no failure found".
"""

from __future__ import annotations

import pytest

from repro.signatures import hostfacts, table
from repro.signatures.engine import UNKNOWN, classify
from repro.signatures.runoutput import NO_RUN_COARSE, shows_run

#: MIOpen's run-time kernel build when clang finds no libstdc++ headers, then the abort.
MIOPEN_LIMITS = (
    "MIOpen(HIP): Error [Compile] 'hiprtcCompileProgram(prog.get(), c_options.size(),"
    " c_options.data())' naive_conv.cpp: HIPRTC_ERROR_COMPILATION (6)\n"
    "MIOpen(HIP): Error [BuildHip] HIPRTC status = HIPRTC_ERROR_COMPILATION (6), source file:"
    " naive_conv.cpp\n"
    "MIOpen(HIP): Warning [BuildHip] /tmp/comgr-e64065/input/naive_conv.cpp:39:10: fatal error:"
    " 'limits' file not found\n"
    "#include <limits> // std::numeric_limits\n"
    "         ^~~~~~~~\n"
    "1 error generated when compiling for gfx908.\n"
    "terminate called after throwing an instance of 'miopen::Exception'\n"
    "  what():  /long_pathname_so_that_rpms_can_package_the_debug_info/data/driver/MLOpen/src/"
    "hipoc/hipoc_program.cpp:304: Code object build failed. Source: naive_conv.cpp\n"
    "Aborted (core dumped)\n"
)


@pytest.mark.parametrize(
    ("text", "source", "line_no"),
    [
        (MIOPEN_LIMITS, "https://github.com/ROCm/MIOpen/issues/2049", 3),
        (
            "Error Code:\n"
            "MIOpen(HIP): Warning [BuildHip] In file included from /tmp/comgr-39ed63/input/"
            "convolution_forward_implicit_gemm_v6r1_dlops_nchw_kcyx_nkhw.cpp:1:\n"
            "In file included from /tmp/comgr-39ed63/include/common_header.hpp:10:\n"
            "/tmp/comgr-39ed63/include/data_type.hpp:14:10: fatal error: 'limits' file not found\n"
            "#include <limits> // std::numeric_limits\n"
            "1 error generated when compiling for gfx1030.\n"
            "terminate called after throwing an instance of 'miopen::Exception'\n"
            "  what():  /long_pathname_so_that_rpms_can_package_the_debug_info/data/driver/MLOpen/"
            "src/hipoc/hipoc_program.cpp:304: Code object build failed. Source: convolution\n",
            "https://github.com/AUTOMATIC1111/stable-diffusion-webui/issues/9795",
            4,
        ),
    ],
)
def test_a_missing_cxx_standard_header_is_the_toolchain(
    text: str, source: str, line_no: int
) -> None:
    result = classify(text)
    assert (result.name, result.line_no) == ("compile_toolchain_missing", line_no), source
    assert "libstdc++" in result.workaround


def test_a_projects_own_missing_header_and_the_abort_alone_are_not_the_toolchain() -> None:
    """Only the C++ standard library's headers say the toolchain lacks them."""
    assert classify("foo.cpp:3:10: fatal error: 'mylib.h' file not found\n").name == UNKNOWN
    abort_only = MIOPEN_LIMITS.split("1 error generated", 1)[1]
    assert classify(abort_only).name == "cpp_terminate"


#: hiyouga/LlamaFactory#7521: the person's "wsl2:" before torch's warning.
LLAMAFACTORY_WSL2 = (
    "windows or wsl2 环境无法运行 5gpu\n"
    "System Info\n"
    "windows:RuntimeError: use_libuv was requested but PyTorch was build without libuv support\n"
    "wsl2: UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you"
    " run some cuda functions before calling NumCudaDevices() that might have already set an"
    " error? Error 2: out of memory (Triggered internally at"
    " /pytorch/c10/cuda/CUDAFunctions.cpp:109.)\n"
    "  return torch._C._cuda_getDeviceCount() > 0\n"
)


def test_wsl_in_lower_case_words_is_wsl2_evidence() -> None:
    result = classify(LLAMAFACTORY_WSL2)
    assert (result.name, result.line_no) == ("wsl_gpu_unavailable", 4)
    assert hostfacts.evidence("wsl --update\n").wsl2 is True
    # Not an identifier or a command that merely contains the letters.
    assert hostfacts.evidence("is_wsl = False\nwslpath -w .\n").wsl2 is None
    # The same warning with nothing about the host keeps the hedge.
    warning = LLAMAFACTORY_WSL2.split("\n", 3)[3].removeprefix("wsl2: ")
    assert classify(warning).name == "cuda_unavailable_host_unknown"


#: nvidia-smi's report as people paste it from inside WSL.
NVIDIA_SMI_FAILED = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that"
    " the latest NVIDIA driver is installed and running.\n"
)


@pytest.mark.parametrize(
    ("text", "source"),
    [
        (
            "I get this error in WSL:\n"
            + NVIDIA_SMI_FAILED
            + "\nFailed to properly shut down NVML:"
            " Driver Not Loaded\n",
            "https://github.com/microsoft/WSL/issues/9134",
        ),
        (
            "Ubuntu app WSL:\nFrom the Graphics settings I added Ubuntu to use the High performance"
            " GPU NVIDIA GeForce 930MX\nand still when using nvidia-smi I get :\n"
            + NVIDIA_SMI_FAILED,
            "https://github.com/microsoft/WSL/issues/3847",
        ),
    ],
)
def test_nvidia_smi_failing_inside_wsl_is_the_wsl_bridge(text: str, source: str) -> None:
    assert classify(text).name == "wsl_gpu_unavailable", source


def test_the_nvidia_smi_line_is_read_by_one_row_per_host() -> None:
    """no_nvidia_driver's host-dependent line is exactly a text wsl_gpu_unavailable reads on WSL2:
    complementary hosts, so the two rows' order does not decide."""
    rows = {sig.name: sig for sig in table.SIGNATURES}
    off_wsl2 = {(line.pattern, line.when) for line in rows["no_nvidia_driver"].lines if line.when}
    on_wsl2 = {(line.pattern, line.when) for line in rows["wsl_gpu_unavailable"].lines}
    assert off_wsl2 and {(pattern, "wsl2") for pattern, _ in off_wsl2} <= on_wsl2
    assert {when for _, when in off_wsl2} == {"not_wsl2"}


def test_nvidia_smi_failing_elsewhere_is_still_no_driver() -> None:
    """pytorch/pytorch#67991: the module not loaded after a kernel update (native Linux)."""
    assert classify("$ nvidia-smi\n" + NVIDIA_SMI_FAILED).name == "no_nvidia_driver"
    native = "Linux gpu01 5.15.0-91-generic #101-Ubuntu SMP x86_64 GNU/Linux\n" + NVIDIA_SMI_FAILED
    assert classify(native).name == "no_nvidia_driver"


#: huggingface/accelerate#412: a comment naming NCCL's version line, no log.
ACCELERATE_412 = (
    "Multi-node training hangs at accelerator.prepare(model)\n\n"
    "One thing to notice is that, in the main server, the last debug message is NCCL version"
    " 2.10.3+cuda11.3, but the same message didn't appear on the second server.\n"
)


def test_nccl_version_in_a_sentence_is_no_nccl_job() -> None:
    result = classify(ACCELERATE_412)
    assert (result.name, result.line_no) == (UNKNOWN, 1)
    assert result.coarse.startswith("a hang (in the person's words")


@pytest.mark.parametrize(
    "line",
    [
        "gpu-node1:4021:4021 [0] NCCL INFO NCCL version 2.10.3+cuda11.3",
        "NCCL version 2.4.8+cuda10.1",
    ],
)
def test_nccl_version_as_nccl_prints_it_still_shows_an_nccl_job(line: str) -> None:
    text = "Multi-node training hangs at accelerator.prepare(model)\n" + line + "\n"
    assert classify(text).name == "hang.nccl"


#: pytorch/pytorch#148551: torch._inductor logging a failed kernel's source at level E.
INDUCTOR_E_LINES = "Issue with torch.compile\n\n" + "".join(
    "E0305 20:23:38.890000 755 site-packages/torch/_inductor/runtime/triton_heuristics.py:533]"
    f"     {body}\n"
    for body in (
        "tmp24 = tmp21 * tmp23",
        "tmp25 = tmp18 - tmp24",
        "tmp26 = tl.full(tmp25.shape, 0.0, tmp25.dtype)",
    )
)


def test_error_level_log_lines_are_no_run() -> None:
    result = classify(INDUCTOR_E_LINES)
    assert not result.clean
    assert (result.name, result.coarse) == (UNKNOWN, NO_RUN_COARSE)
    assert not shows_run("F0305 20:23:38.890000 755 train.py:10] Check failed: x\n")
    assert not shows_run("[E ProcessGroupNCCL.cpp:325] Some NCCL operations have failed\n")


def test_info_and_warning_log_lines_still_show_a_run() -> None:
    assert classify(INDUCTOR_E_LINES.replace("E0305", "I0305")).clean
    assert shows_run("W0305 20:23:38.890000 755 torch/_dynamo/convert_frame.py:1009] retry\n")
    assert shows_run("[W reducer.cpp:1050] Warning: find_unused_parameters=True\n")


#: ROCm/legacy-rocm-build#6625: HIP's queue callback on an RX 9070 XT (gfx1201).
HSA_MEMORY_FAULT = (
    "I implemented the fix at my end and compiled and tested. The kernel build phase passed,"
    " however I encountered memory fault errors on the Tensile kernel it selected in place of the"
    " naive kernel:\n\n\n"
    "Warning: Queue error - HSA_STATUS_ERROR_MEMORY_FAULT\n"
    "VGPU(0x55746d9b9ff0) hang analysis:\n"
    "SWq=0x7f12e94de000, HWq=0x7f1094100000, id=1, priority=1, Dispatch Header = 0xd02 (type=2,"
    " barrier=1, acquire=2, release=1), setup=3, grid=[524288, 1, 1], workgroup=[128, 1, 1]\n"
)


def test_the_hsa_memory_fault_status_is_the_gpu_page_fault() -> None:
    result = classify(HSA_MEMORY_FAULT)
    assert (result.name, result.line_no) == ("rocm_memory_access_fault", 4)
    # The other HSA statuses keep their row.
    other = "Warning: Queue error - HSA_STATUS_ERROR_OUT_OF_RESOURCES\n"
    assert classify(other).name == "rocm_hsa_error"


def test_the_cuda_unknown_error_warning_cut_short_is_still_the_init_failure() -> None:
    """ahrm/UnstableFusion#30: the warning as the title, then the person's package list."""
    text = (
        "UserWarning: CUDA initialization: CUDA unknown error\n"
        "setuptools                63.4.1          py310h06a4308_0\n"
        "torchaudio                0.13.0.dev20221009       py310_cpu    pytorch-nightly\n"
        "torchvision               0.15.0.dev20221009       py310_cpu    pytorch-nightly\n"
    )
    result = classify(text)
    assert (result.name, result.line_no) == ("cuda_driver_init_failed", 1)
    # ATen's "CUDA error: unknown error" is another report (cudaErrorUnknown raised), not this.
    assert classify("RuntimeError: CUDA error: unknown error\n").name != "cuda_driver_init_failed"
