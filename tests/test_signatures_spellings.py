"""A family's failure in the spellings of other versions and tools (issue 30, round ten, recall).

Rows broadened from the libraries' own sources (torch's THC and ATen messages, the CUDA runtime's
and driver API's error names, torch's NaN checks, rocBLAS's Tensile host, CPython's faulthandler,
the shells' and launchers' exit statuses), each tested on a real text from a public issue (its
URL beside it) and on what must stay unnamed; see repro/data/signatures.yaml for the sources."""

from __future__ import annotations

import pytest

from repro.signatures.engine import _NEEDLES as NEEDLES
from repro.signatures.engine import classify
from repro.signatures.hostfacts import HostFacts
from repro.signatures.table import SIGNATURES, UNKNOWN

#: (row, real text, its public source).
SPELLINGS = [
    # THC's "cuda runtime error (N) : MSG" (torch < 1.5) and THCudaCheck's "error=N : MSG".
    (
        "oom",
        "RuntimeError: cuda runtime error (2) : out of memory at"
        " /pytorch/aten/src/THC/THCTensorRandom.cu:25",
        "https://github.com/rowanz/neural-motifs/issues/58",
    ),
    (
        "oom",
        "RuntimeError: cuda runtime error (2) : out of memory at"
        " /opt/conda/conda-bld/pytorch_1513363039688/work/torch/lib/THC/generic/THCStorage.cu:58",
        "https://github.com/ruoqianguo/DetNet_pytorch/issues/10",
    ),
    (
        "cuda_unknown_error",
        "THCudaCheck FAIL file=torch/csrc/autograd/engine.cpp line=359 error=30 : unknown error",
        "https://github.com/pytorch/pytorch/issues/1154",
    ),
    # The driver API's CUresult names, as Numba prints them.
    (
        "oom",
        "numba.cuda.cudadrv.driver.CudaAPIError: [2] Call to cuMemAlloc results in"
        " CUDA_ERROR_OUT_OF_MEMORY",
        "https://github.com/rapidsai/dask-cuda/issues/225",
    ),
    # The caching allocator's report on a line of its own, as a terminal wraps the message after
    # "CUDA out of memory." (torch < 2.1 and >= 2.1 spellings).
    (
        "oom",
        "Tried to allocate 92.00 MiB (GPU 0; 1.96 GiB total capacity; 1.46 GiB already allocated;"
        " 16.38 MiB free; 1.51 GiB reserved in total by PyTorch",
        "https://github.com/singhsourabh/Resume-NER/issues/4",
    ),
    (
        "oom",
        "Tried to allocate 7.45 GiB. GPU 0 has a total capacity of 14.56 GiB of which 3.24 GiB is"
        " free.",
        "https://github.com/AlphaGPU/leetgpu-challenges/issues/52",
    ),
    # torch >= 2.6 wraps Inductor's failures in InductorError.
    (
        "inductor_compile_error",
        "With v4.3.0, I trained pi0.5 and encountered"
        " `torch._inductor.exc.InductorError: AssertionError`.",
        "https://github.com/huggingface/lerobot/issues/2852",
    ),
    (
        "inductor_compile_error",
        "InductorError                             Traceback (most recent call last)",
        "https://github.com/pytorch/pytorch/issues/179135",
    ),
    (
        "inductor_compile_error",
        "16:26:52-725979 ERROR    Triton: InductorError",
        "https://github.com/vladmandic/sdnext/issues/4355",
    ),
    # torch's own NaN checks and training libraries' NaN guards.
    (
        "nan_detected",
        "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0",
        "https://github.com/InternLM/InternLM/issues/459",
    ),
    (
        "nan_detected",
        "ValueError: Expected parameter loc (Parameter of shape (21, 14456)) of distribution"
        " Normal(loc: torch.Size([21, 14456]), scale: torch.Size([21, 14456])) to satisfy the"
        " constraint Real(), but found invalid values:",
        "https://github.com/BayraktarLab/cell2location/issues/384",
    ),
    (
        "nan_detected",
        "RuntimeError:  [!] NaN loss with decoder_loss.",
        "https://github.com/mozilla/TTS/issues/575",
    ),
    (
        "nan_detected",
        "Exception: Current loss scale already at minimum - cannot decrease scale anymore."
        " Exiting run.",
        "https://github.com/yangjianxin1/Firefly/issues/68",
    ),
    (
        "nan_detected",
        "RuntimeError: The total norm of order 2.0 for gradients from `parameters` is non-finite,"
        " so it cannot be clipped. To disable this error and scale the gradients by the"
        " non-finite norm anyway, set `error_if_nonfinite=False`",
        "torch/nn/utils/clip_grad.py (clip_grad_norm_, error_if_nonfinite=True)",
    ),
    (
        "nan_detected",
        "ValueError: Detected nan and/or inf values in `c_d1.bias`. Check your forward pass for"
        " numerically unstable operations.",
        "lightning/pytorch/utilities/finite_checks.py (its own test's message)",
    ),
    (
        "nan_detected",
        "{'loss': nan, 'grad_norm': nan, 'learning_rate': 2.0e-05, 'epoch': 0.27}",
        "transformers Trainer's logged dict (the loss itself, not grad_norm alone)",
    ),
    # Exit statuses of a signal: 128 + 11 and 128 + 4.
    (
        "segfault",
        "Process finished with exit code 139",
        "https://github.com/yanx27/PointASNL/issues/39",
    ),
    (
        "host_sigill",
        "gpt4all-ui_webui_1 exited with code 132",
        "https://github.com/ParisNeo/lollms-webui/issues/69",
    ),
    (
        "host_sigill",
        "INFO: container failed with non-zero exit code: container failed with non-zero exit code:"
        " 132 (exit code 132)",
        "https://github.com/determined-ai/determined/issues/3610",
    ),
    # CPython's faulthandler on Windows and on Linux.
    (
        "segfault",
        "Windows fatal exception: access violation",
        "https://github.com/patientx-cfz/comfyui-rocm/issues/83",
    ),
    (
        "segfault",
        "Windows fatal exception: Access violation",
        "https://github.com/Bartzi/kiss/issues/24",
    ),
    (
        "host_sigill",
        "Windows fatal exception: code 0xc000001d",
        "CPython Modules/faulthandler.c (STATUS_ILLEGAL_INSTRUCTION printed by number)",
    ),
    (
        "segfault",
        "[ROCm] RX 9060 XT 16GB hard-capped at ~8GB usable VRAM in PyTorch — segfault on"
        " allocation beyond cap",
        "https://github.com/pytorch/pytorch/issues/184880",
    ),
    # rocBLAS's Tensile host finding no code object of the GPU's gfx target.
    (
        "rocblas_tensile_missing",
        "rocBLAS warning: No paths matched /home/leios/.julia/artifacts/1fd1782850f6482c5bdbeec69c"
        "b3d1e43d949a3c/lib/rocblas/library/*gfx1031*co. Make sure that ROCBLAS_TENSILE_LIBPATH is"
        " set correctly.",
        "https://github.com/JuliaGPU/AMDGPU.jl/issues/314",
    ),
    # torch's warning for a GPU below the wheel's oldest architecture.
    (
        "no_kernel_image_hint",
        "    Found GPU0 NVS 510 which is of cuda capability 3.0.\n"
        "    PyTorch no longer supports this GPU because it is too old.",
        "https://github.com/pytorch/pytorch/issues/6515",
    ),
    # The kernel's OOM killer before Linux 5.x (mm/oom_kill.c), as dmesg -T printed it.
    (
        "host_oom_killed_hint",
        "[Thu Mar 14 01:57:54 2019] Out of memory: Kill process 89746 (python) score 1031 or"
        " sacrifice child",
        "https://github.com/intel/platform-resource-manager/issues/42",
    ),
    (
        "host_oom_killed_hint",
        "[Thu Mar 14 01:57:54 2019] Killed process 89879 (python) total-vm:146328kB,"
        " anon-rss:0kB, file-rss:1824kB, shmem-rss:0kB",
        "https://github.com/intel/platform-resource-manager/issues/42",
    ),
    # The statement that raises the DataLoader's error, quoted as a title.
    (
        "dataloader_worker_killed",
        "raise RuntimeError('DataLoader worker (pid(s) {}) exited unexpectedly'.format(pids_str))",
        "https://github.com/crane-papercode/3DMedPT/issues/10",
    ),
    # Round eleven. NCCL >= 2.13's ncclGetErrorString texts as vLLM's pynccl raises them, with no
    # "NCCL error in:" and no enum name (NVIDIA/nccl src/init.cc).
    (
        "nccl_init_failure",
        "RuntimeError: NCCL error: internal error - please report this issue to the NCCL"
        " developers",
        "https://github.com/NVIDIA/nccl/issues/1591",
    ),
    (
        "nccl_init_failure",
        "(VllmWorkerProcess pid=1775) ERROR 09-23 10:49:22 multiproc_worker_utils.py:226]"
        " Exception in worker VllmWorkerProcess while processing method init_device: NCCL error:"
        " internal error - please report this issue to the NCCL developers, Traceback (most"
        " recent call last):",
        "https://github.com/vllm-project/vllm/issues/8691",
    ),
    # nvidia-smi's report of a driver whose kernel module is not loaded (NVML_ERROR_DRIVER_NOT_LOADED),
    # also with the apostrophe retyped.
    (
        "no_nvidia_driver",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure"
        " that the latest NVIDIA driver is installed and running.",
        "https://github.com/pytorch/pytorch/issues/67991",
    ),
    (
        "no_nvidia_driver",
        "NVIDIA-SMI has failed because it couldn‘t communicate with the NVIDIA driver.",
        "https://github.com/qixuema/envs/issues/4",
    ),
    # HIP's hipError_t name under torch >= 2.8's message on ROCm (the message line cut or wrapped).
    (
        "cuda_illegal_memory_access",
        "Search for `hipErrorIllegalAddress' in https://rocm.docs.amd.com/projects/HIP/en/latest/"
        "index.html for more information.",
        "https://github.com/ROCm/legacy-rocm-build/issues/5742",
    ),
    # Round thirteen. NCCL's socket connect failing for good, in three versions' spellings
    # (NVIDIA/nccl src/misc/socket.cc socketStartConnect; include/socket.h before 2.12).
    (
        "nccl_init_failure",
        "id-d3:715:790 [1] include/socket.h:382 NCCL WARN Connect to 172.18.0.1<49273> failed :"
        " Connection refused",
        "https://github.com/pytorch/examples/issues/689",
    ),
    (
        "nccl_init_failure",
        "ubuntu:39964:40075 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to"
        " 10.0.0.2<45763> failed : Software caused connection abort",
        "https://github.com/NVIDIA/nccl-tests/issues/166",
    ),
    (
        "nccl_init_failure",
        "*server name* [0] include/socket.h:185 WARN Call to connect failed : Connection refused",
        "https://github.com/NVIDIA/nccl/issues/111",
    ),
    # torchrun's agent (torch 1.9-1.10) when a worker failed without an error file.
    (
        "rank_failed",
        "Getting Error when start training with single GPU. [Error: CHILD PROCESS FAILED WITH NO"
        " ERROR_FILE ]",
        "https://github.com/open-mmlab/SoftTeacher/issues/158",
    ),
    # rocBLAS prints "Could not load" only for a Tensile library; the path abbreviated.
    (
        "rocblas_tensile_missing",
        "[Issue]: rocBLAS error: Could not load gfx1103",
        "https://github.com/vladmandic/sdnext/issues/4405",
    ),
    # nvidia-container-cli's other error kinds (libnvidia-container), and Ubuntu's ".real" binary.
    (
        "container_gpu_setup",
        "docker: Error response from daemon: OCI runtime create failed: container_linux.go:370:"
        " starting container process caused: process_linux.go:459: container init caused: Running"
        " hook #0:: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli:"
        " container error: cgroup subsystem devices not found: unknown.",
        "https://github.com/NVIDIA/nvidia-docker/issues/1447",
    ),
    (
        "container_gpu_setup",
        "Failure: nvidia-container-cli.real: container error: cgroup subsystem devices not found",
        "https://github.com/NVIDIA/k8s-device-plugin/issues/324",
    ),
    (
        "container_gpu_setup",
        "nvidia-container-cli: detection error: nvml error: unknown error",
        "https://github.com/NVIDIA/nvidia-container-toolkit/issues/416",
    ),
    (
        "container_gpu_setup",
        "nvidia-container-cli: ldcache error: process /usr/sbin/ldconfig failed with error code: 1",
        "https://github.com/NVIDIA/libnvidia-container/issues/177",
    ),
    # The shell's SIGILL report as people retype it, and its form with no core written.
    (
        "host_sigill",
        "I get illegal instruction (core dumped) error. Impossible to know or debug what is going"
        " on.",
        "https://github.com/dusty-nv/jetson-inference/issues/1094",
    ),
    (
        "host_sigill",
        "3] python3 interpreter is killed with output message: Illegal Instruction (core dumped)",
        "https://github.com/microsoft/onnxruntime/issues/6375",
    ),
    (
        "host_sigill",
        "Illegal-instruction (core dumped)",
        "https://github.com/jkjung-avt/tensorrt_demos/issues/339",
    ),
    (
        "host_sigill",
        "The port builds, but crashes with ```Illegal instruction```:"
        " https://people.freebsd.org/~yuri/py-pytorch.shar",
        "https://github.com/pytorch/pytorch/issues/28780",
    ),
    (
        "host_sigill",
        "I'am trying to install torch2trt at Jetson Nano, but `Illegal instruction` occured.",
        "https://github.com/NVIDIA-AI-IOT/torch2trt/issues/609",
    ),
    # cudaGetErrorString's text quoted cut before "on the device".
    (
        "no_kernel_image",
        'Unable To Fix "no kernel image is available for execution" Error',
        "https://github.com/facebookresearch/detectron2/issues/512",
    ),
    # libstdc++'s terminate with no exception in flight (libsupc++ vterminate.cc).
    (
        "cpp_terminate",
        "Trying to train on 2x H200 but it crashes right after start with “terminate called without"
        " an active exception” repeating over and over.",
        "https://github.com/microsoft/TRELLIS.2/issues/95",
    ),
    # Round fourteen. cudaGetErrorString's text capitalised as a title.
    (
        "no_kernel_image",
        "No kernel image is available for execution on the device",
        "https://github.com/pytorch/pytorch/issues/46647",
    ),
    # torch's incompatible-device warning pasted without its first line (_check_cubins).
    (
        "no_kernel_image_hint",
        "I'm currently getting this error:\n\nThe current PyTorch install supports CUDA capabilities"
        " sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.\nIf you want to use the NVIDIA GeForce RTX 5060"
        " Ti GPU with PyTorch",
        "https://github.com/TaterTotterson/microWakeWord-Trainer-Nvidia-Docker/issues/4",
    ),
    # torch 2.13's _warn_unsupported_code when another CUDA build of the release runs the GPU.
    (
        "no_kernel_image_hint",
        "Your installed torch==2.13.0+cu126 does not include kernels for this GPU. Reinstall the"
        " same version against a CUDA build that does, e.g.:\n"
        "  For CUDA 12.9 use pip install torch==2.13.0 --index-url"
        " https://download.pytorch.org/whl/cu129",
        "https://github.com/pytorch/pytorch/blob/v2.13.0/torch/cuda/__init__.py",
    ),
    # torch 1.x's incorrect_binary_warn as _check_capability prints it (its template; the
    # source is the URL).
    (
        "no_kernel_image_hint",
        "UserWarning:\n    Found GPU0 GeForce RTX 2080 Ti which requires CUDA_VERSION >= 10000 to\n"
        "     work properly, but your PyTorch was compiled\n     with CUDA_VERSION 9000. Please"
        " install the correct PyTorch binary\n     using instructions from https://pytorch.org",
        "https://github.com/pytorch/pytorch/blob/v1.7.0/torch/cuda/__init__.py",
    ),
    # rocBLAS's Tensile host, its first letter lost in the paste.
    (
        "rocblas_tensile_missing",
        "I have the following error:\nocBLAS error: Cannot read /home/mark/PycharmProjects/WSN-MA/"
        "venv/lib/python3.12/site-packages/torch/lib/rocblas/library/TensileLibrary.dat: Illegal"
        " seek",
        "https://github.com/ROCm/legacy-rocm-build/issues/3840",
    ),
    # hipBLASLt's Tensile host (library/src/amd_detail/rocblaslt/src/tensile_host.cpp).
    (
        "rocblas_tensile_missing",
        '[Issue] rocblaslt error: Could not load "TensileLibrary_lazy_gfx1030.dat"',
        "https://github.com/vladmandic/sdnext/issues/4035",
    ),
    (
        "rocblas_tensile_missing",
        'rocblaslt error: Cannot read "TensileLibrary_lazy_gfx1201.dat": No such file or directory',
        "https://github.com/ROCm/ROCm/issues/6203",
    ),
    # torch's DataLoader bus-error message retyped with a lower-case first letter.
    (
        "dataloader_shm_exhausted",
        'I train models "without" using docker but I meet "unexpected bus error encountered in'
        ' worker, This might be caused by insufficient shared memory (shm)"',
        "https://github.com/open-mmlab/mmdetection/issues/6993",
    ),
    # The name in title case.
    (
        "segfault",
        "[Issue]: RX 7600 XT ROCm Torch Segmentation Fault Linux",
        "https://github.com/ROCm/legacy-rocm-build/issues/4380",
    ),
    # torch's repr of a NaN loss autograd computed, printed by the training loop.
    (
        "nan_detected",
        "21129:  nan\ntensor(nan, device='cuda:0', grad_fn=<SubBackward0>) 96000",
        "https://github.com/NVIDIA/waveglow/issues/122",
    ),
    # transformers' Trainer's logged dict, printed as its repr (issue 30, round fifteen).
    (
        "nan_detected",
        "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 9.990133642141359e-05, 'epoch': 0.0}",
        "https://github.com/hiyouga/LlamaFactory/issues/5660",
    ),
    (
        "nan_detected",
        "'loss': 0.000, 'grad_norm': nan",
        "https://github.com/hiyouga/LlamaFactory/issues/7263",
    ),
    # The same dict with a NaN loss (the form public fine-tuning notes show; no issue URL).
    (
        "nan_detected",
        "{'loss': 9.8813, 'grad_norm': inf, 'learning_rate': 2.0e-05, 'epoch': 0.26}\n"
        "{'loss': nan, 'grad_norm': nan, 'learning_rate': 2.0e-05, 'epoch': 0.27}",
        "transformers Trainer's logged dict (trainer.py: logs['loss'], logs['grad_norm'])",
    ),
    # torch's DataLoader message retyped without the space or the capital.
    (
        "host_oom_killed_hint",
        "RuntimeError:Dataloader worker (pid 6479) is killed by signal:killed",
        "https://github.com/hustvl/YOLOP/issues/133",
    ),
]


@pytest.mark.parametrize(("name", "text", "source"), SPELLINGS)
def test_a_familys_failure_in_another_versions_or_tools_spelling_is_named(
    name: str, text: str, source: str
) -> None:
    result = classify(text + "\n")
    assert result.name == name, source
    assert result.line_no is not None


def test_each_spelling_is_found_by_its_rows_literal_needles() -> None:
    # The prefilter that keeps classify fast must never hide one of these matches.
    for _, text, _ in SPELLINGS:
        for sig, needles in zip(SIGNATURES, NEEDLES, strict=True):
            if sig.pattern is not None and sig.pattern.search(text):
                assert needles is not None and any(n in text for n in needles), (sig.name, text)


def test_thc_spellings_of_other_cuda_errors_name_their_rows() -> None:
    # THC's format "cuda runtime error (%d) : %s at %s:%d" (aten/src/THC/THCGeneral.cpp) with the
    # messages cudaGetErrorString gives (pytorch/pytorch#6515's "(48) : no kernel image ..." is
    # the same format).
    for name, text in (
        (
            "cuda_init_error_in_worker",
            "RuntimeError: cuda runtime error (3) : initialization error at"
            " /pytorch/aten/src/THC/THCGeneral.cpp:50",
        ),
        (
            "cuda_illegal_instruction",
            "RuntimeError: cuda runtime error (73) : an illegal instruction was encountered at"
            " /pytorch/aten/src/THC/generic/THCTensorCopy.cpp:70",
        ),
        (
            "cuda_unknown_error",
            "RuntimeError: cuda runtime error (30) : unknown error at"
            " /pytorch/aten/src/THC/THCGeneral.cpp:87",
        ),
    ):
        assert classify(text).name == name


def test_an_inductor_error_that_is_a_version_mismatch_or_another_rows_error_is_not_a_compile_error() -> (
    None
):
    # FoundationVision/Infinity#31 (studied test4, labelled unknown): triton's triton_key
    # missing, a torch/triton version mismatch, wrapped by Inductor.
    assert (
        classify(
            "torch._inductor.exc.InductorError: ImportError: cannot import name 'triton_key' from"
            " 'triton.compiler.compiler'\n"
        ).name
        == UNKNOWN
    )
    # The row Inductor's message carries names it (here: a Triton launch error).
    assert (
        classify(
            "torch._inductor.exc.InductorError: RuntimeError: Triton Error [CUDA]: device kernel"
            " image is invalid\n"
        ).name
        == "triton_error"
    )
    # The statement that raises it is a traceback's source line, not the error.
    assert classify("    raise InductorError(e, currentframe()).with_traceback(\n").name != (
        "inductor_compile_error"
    )


def test_a_nan_only_a_loss_scaler_skipped_or_a_constraint_nan_cannot_fail_stays_unnamed() -> None:
    # A grad_norm of nan alone: a fp16 loss scaler's skipped step logs it in runs that go on
    # (JiaquanYe/TableMASTER-mmocr#32, NVlabs/OmniDrive#33).
    assert classify("{'loss': 1.8998, 'grad_norm': nan, 'learning_rate': 1.6e-05}\n").name != (
        "nan_detected"
    )
    # A constraint other than Real() fails on finite values too (a negative scale):
    # ChenFengYe/motion-latent-diffusion#21's person read it so.
    assert (
        classify(
            "ValueError: Expected parameter scale (Tensor of shape (1, 64)) of distribution"
            " Normal(loc: torch.Size([1, 64]), scale: torch.Size([1, 64])) to satisfy the"
            " constraint GreaterThan(lower_bound=0.0), but found invalid values:\n"
        ).name
        == UNKNOWN
    )


def test_a_quoted_dataloader_raise_statement_does_not_replace_the_message_in_a_traceback() -> None:
    # In a traceback the statement is the source line under its frame; the message with the
    # worker's pid follows and decides (pytorch/pytorch#5040's form).
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/site-packages/torch/utils/data/dataloader.py", line 1133, in'
        " _try_get_data\n"
        "    raise RuntimeError(f'DataLoader worker (pid(s) {pids_str}) exited unexpectedly')"
        " from e\n"
        "RuntimeError: DataLoader worker (pid(s) 9396) exited unexpectedly\n"
    )
    result = classify(text)
    assert result.name == "dataloader_worker_killed"
    assert result.message == "RuntimeError: DataLoader worker (pid(s) 9396) exited unexpectedly"


def test_torchruns_summary_exit_code_alone_stays_the_launchers_report() -> None:
    # torchrun's "exitcode: -11" is the launcher's summary (rank_failed); the signal's own line
    # names the crash ("Signal 11 (SIGSEGV) received by PID" -> segfault, "Signal 4 (SIGILL)"
    # -> host_sigill, torch/distributed/elastic's error file format).
    summary = (
        "E0612 10:25:03.000000 4200 torch/distributed/elastic/multiprocessing/api.py:869] failed"
        " (exitcode: -11) local_rank: 0 (pid: 4241) of binary: /usr/bin/python3\n"
    )
    assert classify(summary).name != "segfault"
    assert classify("traceback : Signal 4 (SIGILL) received by PID 4241\n").name == "host_sigill"


def test_the_word_segfault_denied_is_not_a_segfault() -> None:
    assert classify("It trains fine now, no segfault anymore.\n").name != "segfault"
    assert classify("This is not a segfault but a hang.\n").name != "segfault"


def test_english_failure_words_inside_a_chinese_sentence_are_read() -> None:
    # QwenLM/Qwen-VL#507: "Killed" written against the Chinese words around it (no space): the
    # person's words say the host killed it (rule 7), read with ASCII word boundaries.
    text = "[BUG] <title>训练到一段出现Killed\n训练到一段时间就出现Killed, 如下图\n"
    result = classify(text)
    assert result.name == "host_oom_killed_hint"
    assert result.line_no == 1
    # An ASCII word that merely contains it is still not the word.
    assert classify("[BUG] 训练时出现Unkilledable\n").name != "host_oom_killed_hint"


def test_rocblas_library_errors_no_row_names_are_a_rocm_runtime_error() -> None:
    # ROCm/rocBLAS#1331: the person's one line, no row's spelling; coarse family named (item 3).
    result = classify("ROCm Version: 5.5.1\nError: TensileLibrary.dat not found\n")
    assert result.name == UNKNOWN
    assert result.coarse == "a ROCm runtime error"


def test_a_torch_compile_error_no_row_reads_names_its_coarse_family() -> None:
    # FoundationVision/Infinity#31 (studied test4, labelled unknown): Dynamo's wrapper around a
    # triton version mismatch; unknown, but said to be torch.compile's (item 3).
    text = (
        "    raise BackendCompilerFailed(self.compiler_fn, e) from e\n"
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
        "ImportError: cannot import name 'triton_key' from 'triton.compiler.compiler'"
        " (/opt/conda/lib/python3.10/site-packages/triton/compiler/compiler.py)\n"
    )
    result = classify(text)
    assert result.name == UNKNOWN
    assert result.coarse == "a torch.compile (Dynamo/Inductor) error"
    # A CUDA error inside it keeps the more specific coarse family, listed first.
    cuda = "torch._dynamo.exc.TorchRuntimeError: CUDA error: unspecified launch failure\n"
    assert classify(cuda).coarse == "a CUDA error"


def test_a_pasted_nvidia_smi_failure_outranks_the_cuda_error_it_explains() -> None:
    # pytorch/pytorch#67991: nvidia-smi cannot reach the driver, then torch finds no GPU (a line
    # no row reads): the driver's row names it, on nvidia-smi's line.
    text = (
        "$ nvidia-smi\n"
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure"
        " that the latest NVIDIA driver is installed and running.\n"
        'File "/home/ubuntu/.local/lib/python3.9/site-packages/torch/cuda/__init__.py", line 214,'
        " in _lazy_init\n"
        "    torch._C._cuda_init()\n"
        "RuntimeError: No CUDA GPUs are available\n"
    )
    result = classify(text)
    assert result.name == "no_nvidia_driver"
    assert result.line_no == 2


def test_hips_own_trace_of_a_return_value_is_not_the_error() -> None:
    # AMD_LOG_LEVEL=3 traces every HIP call's return ("hipMemGetInfo: Returned
    # hipErrorInvalidValue", vllm-project/vllm#3122); a call returning the illegal-address error
    # there is the trace, not torch's raised error.
    trace = (
        ":3:hip_memory.cpp           :777 : 3852921767 us: [pid:9     tid:0x7fcd5fa0c4c0]"
        " hipMemcpy: Returned hipErrorIllegalAddress :\n"
    )
    assert classify(trace).name != "cuda_illegal_memory_access"


def test_torchruns_no_error_file_report_names_the_failed_child() -> None:
    # torch/distributed/elastic/multiprocessing/errors/__init__.py (torch 1.9-1.10),
    # _no_error_file_warning_msg's lines, in its own format (no public paste of the second line
    # was found): the wrapper row, as for ChildFailedError.
    text = (
        "CHILD PROCESS FAILED WITH NO ERROR_FILE\n"
        "Child process 3124 (local_rank 1) FAILED (exitcode 1)\n"
        "Error msg: Process failed with exitcode 1\n"
    )
    result = classify(text)
    assert result.name == "rank_failed"
    assert result.line_no == 1
    assert classify(text.split("\n", 1)[1]).name == "rank_failed"


def test_nccls_connect_retry_and_the_word_illegal_instruction_name_nothing() -> None:
    # NCCL's INFO line for a connect it retries is no failure (socketStartConnect retries
    # ECONNREFUSED/ETIMEDOUT before its WARN); a sentence about illegal instructions is no report.
    retry = "node1:123:456 [0] NCCL INFO Call to connect returned Connection refused, retrying\n"
    assert classify(retry).name != "nccl_init_failure"
    words = "Illegal instruction handling was reworked in the emulator for this release.\n"
    assert classify(words).name != "host_sigill"
    # CUDA's own illegal-instruction error keeps its row.
    cuda = "RuntimeError: CUDA error: an illegal instruction was encountered\n"
    assert classify(cuda).name == "cuda_illegal_instruction"


def test_nvidia_smis_failure_inside_wsl_is_wsls_gpu_path_not_a_linux_driver() -> None:
    # microsoft/WSL#9134 (and #3847, #5265, #7716, #9640): nvidia-smi inside WSL is
    # /usr/lib/wsl/lib's and reaches the Windows driver; its "couldn't communicate" there is WSL's
    # GPU path. Known from the host facts or from the log's own WSL evidence.
    line = (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure"
        " that the latest NVIDIA driver is installed and running.\n"
    )
    assert classify(line, HostFacts(wsl2=True)).name == "wsl_gpu_unavailable"
    assert classify("I get this error in WSL:\n" + line).name == "wsl_gpu_unavailable"
    # On a native host, or one nothing says is WSL, it stays the driver's row.
    assert classify(line, HostFacts(wsl2=False)).name == "no_nvidia_driver"
    assert classify(line).name == "no_nvidia_driver"


def test_torchs_no_build_supports_this_gpu_warning_alone_names_nothing() -> None:
    # Jetson Orin (CC 8.7) under torch 2.13 prints it and runs the sm_80 kernels (the warning is
    # cosmetic there): only "does not include kernels for this GPU" (another build has them) is
    # the hint.
    text = (
        "UserWarning: Found GPU0 Orin which is of compute capability (CC) 8.7.\n"
        "The following list shows the CCs this version of PyTorch was built for and the hardware"
        " CCs it supports:\n"
        "- 8.0 which supports hardware CC >=8.0,<9.0 except {8.7}\n"
        "No published PyTorch CUDA builds for release 2.13.0+cu130 support this GPU.\n"
    )
    assert classify(text).name != "no_kernel_image_hint"


def test_a_nan_tensor_autograd_did_not_compute_is_not_a_nan_loss() -> None:
    assert classify(">>> torch.tensor(float('nan'))\ntensor(nan)\n").name != "nan_detected"


def test_a_trainer_log_with_finite_values_names_nothing() -> None:
    # The same dict a healthy run prints (LlamaFactory#5660's shape, finite values): no NaN row.
    text = "{'loss': 4.6758, 'grad_norm': 1.3437, 'learning_rate': 0.0001, 'epoch': 0.05}\n"
    assert classify(text).name != "nan_detected"


#: A GPU out of memory only in the person's words (rule 7, round fourteen): the line names the GPU
#: or the batch size, not the host's memory. (text, decisive line, source)
GPU_OOM_IN_WORDS = [
    (
        "OOM on validation\n\nI can run train on my GPU with batch size = 24, but on validation I've"
        " got OOM, nevertheless on validation I don't need gradients.\n",
        3,
        "https://github.com/MhLiao/DB/issues/320",
    ),
    (
        "out of memory in training with batch size 1\n\nThank you for your incredible work.\n",
        1,
        "https://github.com/timothybrooks/instruct-pix2pix/issues/65",
    ),
    (
        "Exhausted GPU memory with batch size of 1\n\nI have 12GB of GPU memory (Titan Xp) and I ran"
        " out of memory using a batch size of 1 (when running valid.py). Is this expected?\n",
        1,
        "https://github.com/HRNet/DEKR/issues/16",
    ),
    (
        "Hi, thank you for your excellent work. I am attempting to finetune the model on an RTX"
        " 5090. Even after reducing all training parameters to their lowest feasible values, I am"
        " still encountering out-of-memory (OOM) issues.\n",
        1,
        "https://github.com/ML-GSAI/LLaDA-V/issues/25",
    ),
]


@pytest.mark.parametrize(("text", "line_no", "source"), GPU_OOM_IN_WORDS)
def test_a_gpu_out_of_memory_in_the_persons_words_is_oom(
    text: str, line_no: int, source: str
) -> None:
    result = classify(text)
    assert result.name == "oom", source
    assert result.line_no == line_no, source
    assert result.message == text.splitlines()[line_no - 1].strip(), source


def test_out_of_memory_words_about_the_host_or_a_negation_are_not_a_gpu_oom() -> None:
    # Host RAM (pytorch/torchtune#1871, labelled unknown), a Kubernetes node
    # (ZettaAI/zetta_utils#524, labelled unknown), the kernel's OOM killer (DagnyT/hardnet#19: the
    # host's kill), a bare "OOM" title, a negation.
    for text in (
        "Out of Memory Issue During Fine-Tuning of Llama 3.1 (70B)\nI am fine-tuning on 8 NVIDIA"
        " 4090 GPUs, each with 24GB VRAM, and 500GB system RAM, and it runs out of memory.\n",
        "At 10:01:27 PM CEST `gke-zutils-x3-gpu-n1-highmem-8-t4-non-a60edc7f-7lpz` ran out of"
        " memory.\n",
        "Training error : OOM\n\nWhen I try to run the train code , I get a error : killed by OOM"
        " killer\n",
        "The GPU run with batch size 8 finished without OOM.\n",
    ):
        assert classify(text).name != "oom", text
    assert classify("Training error : OOM\n\nI get a error : killed by OOM killer\n").name == (
        "host_oom_killed_hint"
    )


def test_a_loss_that_goes_nan_in_the_persons_words_is_a_nan_loss() -> None:
    # SWivid/F5-TTS#341's title: "goes NAN" without "to" (rule 7's NaN kind).
    result = classify("Finetuning goes NAN after 1/2 epochs\n\nAny idea why this is happening?\n")
    assert result.name == "nan_detected"
    assert result.line_no == 1
    assert classify("Finetuning goes on after 2 epochs, no nan.\n").name != "nan_detected"


#: A GPU WSL does not give CUDA, in the person's words on a line that names WSL (rule 7, round
#: fifteen). (text, decisive line, source)
NO_GPU_IN_WSL_WORDS = [
    (
        "Pytorch does not recognize GPU in WSL2\n\nI have an RTX 3090 and Ubuntu 22.04 on WSL2.\n",
        1,
        "https://github.com/pytorch/pytorch/issues/84550",
    ),
    (
        "CUDA won't detect GPU in WSL\n\nI tried setting up Pytorch with CUDA in WSL but it just"
        " doesn't pick up my GPU.\n",
        1,
        "https://github.com/microsoft/WSL/issues/9254",
    ),
    (
        "PyTorch/Tensorflow not recognizing GPU on WSL - installed cudnn and cuda\n",
        1,
        "https://github.com/microsoft/WSL/issues/8102",
    ),
    (
        "WSL: Training on CPU even when having compatible NVIDIA GPU\n",
        1,
        "https://github.com/ivadomed/ivadomed/issues/953",
    ),
    (
        "Steps:\n7. While using the pytorch package in python, 'torch.cuda.is_available()' always"
        " returns 'false' in wsl (ubuntu).\n",
        2,
        "https://github.com/microsoft/WSL/issues/7056",
    ),
]


@pytest.mark.parametrize(("text", "line_no", "source"), NO_GPU_IN_WSL_WORDS)
def test_a_gpu_wsl_does_not_give_cuda_in_the_persons_words_is_wsl_gpu_unavailable(
    text: str, line_no: int, source: str
) -> None:
    result = classify(text)
    assert result.name == "wsl_gpu_unavailable", source
    assert result.line_no == line_no, source


def test_gpu_words_without_wsl_on_the_line_or_without_a_negation_are_not_wsl() -> None:
    # The same words on a native host's line, WSL only on another line, a working GPU, a path
    # holding "wsl" (/usr/lib/wsl/lib is WSL's own folder, not the person's word).
    for text in (
        "Pytorch does not recognize GPU on Ubuntu 22.04\n",
        "Running under WSL2.\n\nThe model does not recognize my GPU.\n",
        "WSL2 now detects the GPU after wsl --update.\n",
        "ls /usr/lib/wsl/lib: cannot find nvidia-smi on the GPU host\n",
    ):
        assert classify(text).name != "wsl_gpu_unavailable", text
