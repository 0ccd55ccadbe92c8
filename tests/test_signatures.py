"""Classification of failure output (repro.signatures.engine), on the texts quoted in the field reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.classify_stream import progress_log
from repro.signatures.engine import _NEEDLES as NEEDLES
from repro.signatures.engine import (
    NO_RUN_COARSE,
    Classification,
    classify,
    first_meaningful_line,
    shows_run,
    signal_name,
    signal_signature,
)
from repro.signatures.hostfacts import HostFacts
from repro.signatures.table import HANG, KINDS, SIGNATURE_BY_NAME, SIGNATURES, UNKNOWN

# Every category of the field reports' overview table and machine-readable block.
CATEGORIES = {
    "cuda_init_failed",  # family 7, native hosts only (repro.signatures.hostfacts)
    "cuda_device_busy",  # family 7, native hosts only
    "cuda_illegal_instruction",
    "cuda_illegal_memory_access",
    "cudnn_execution_failed",
    "cudnn_internal_error",
    "cudnn_no_engine",
    "cuda_reinit_in_forked_subprocess",
    "cuda_init_error_in_worker",
    "hip_fork_abort",
    "dataloader_worker_error",
    "dataloader_worker_killed",
    "dataloader_shm_exhausted",
    "dataloader_timeout",
    "pin_memory_thread_died",
    "fork_multithread_warning",
    "rocm_kfd_workqueue_hog",
    "amdgpu_gpu_fault",
    "nccl_init_failure",
    "nccl_shm",
    "nccl_duplicate_gpu",
    "nccl_timeout",
    "address_in_use",
    "local_rank_arg_mismatch",
    "cuda_ipc_producer_terminated",
    "rank_failed",
    "oom",
    "host_oom_killed_hint",
    "nan_detected",
    "amp_bce_unsafe",
    "driver_too_old",
    "forward_compat_unsupported",
    "no_kernel_image",
    "no_kernel_image_hint",
    "rocm_no_code_object",
    "wsl_gpu_unavailable",
    "cuda_unavailable_host_unknown",  # family 7 or WSL2, host unknown (issue 21)
    # Issue 21: families users' own scripts and logs run into.
    "no_nvidia_driver",
    "wsl_libcuda_missing",  # WSL2 hosts only
    "libcuda_not_found",
    "cudnn_not_initialized",
    "cublas_error",
    "dataloader_fd_exhausted",
    "pickling_error",
    "producer_connection_lost",
    "gloo_connection_closed",
    "nccl_async_error",
    "compile_toolchain_missing",
    "inductor_compile_error",
    "triton_error",
    "rocm_memory_access_fault",
    "cuda_device_side_assert",
    "container_runtime_failed",
    "cuda_internal_assert",
    "cuda_unknown_error",
    "container_gpu_setup",
    "cpp_terminate",
    "segfault",
    "host_sigill",
    "wandb_backend_error",
    # Issue 30: families the field corpus's train half showed no row had.
    "cuda_driver_init_failed",
    "cudnn_plan_failed_warning",
    "shm_bus_error",
    "rocm_hsa_error",
    "rocblas_tensile_missing",
    "hipblas_error",
    # Issue 30, round two: families round two's train half showed no row had.
    "driver_library_mismatch",
    "cpu_only_torch",
    "invalid_device_ordinal",
    "rocm_gpu_hang",
    "launcher_signalled",
    # Issue 30, round eleven: torch's "No CUDA GPUs are available" (cudaErrorNoDevice).
    "cuda_no_device",
}

# (expected signature, one line as quoted in ../shared/field-reports.md or printed by torch).
SINGLE_LINES = [
    # Family 3: CUDA / cuDNN. Class names differ across pins (RuntimeError <= 2.7,
    # torch.AcceleratorError >= 2.8); the message decides.
    (
        "cuda_illegal_instruction",
        "torch.AcceleratorError: CUDA error: an illegal instruction was encountered",
    ),
    (
        "cuda_illegal_instruction",
        "RuntimeError: CUDA error: an illegal instruction was encountered",
    ),
    ("cuda_illegal_instruction", "CUDA driver error: an illegal instruction was encountered"),
    (
        "cuda_illegal_memory_access",
        "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    ),
    (
        "cuda_illegal_memory_access",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ),
    ("cudnn_execution_failed", "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED"),
    ("cudnn_internal_error", "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR"),
    ("cudnn_internal_error", "RuntimeError: cuDNN error: CUDNN_STATUS_MAPPING_ERROR"),
    (
        "cudnn_no_engine",
        "RuntimeError: FIND was unable to find an engine to execute this computation",
    ),
    ("cudnn_no_engine", "RuntimeError: Unable to find a valid cuDNN algorithm to run convolution"),
    (
        "cuda_internal_assert",
        'RuntimeError: handle_0 INTERNAL ASSERT FAILED at "../c10/cuda/driver_api.cpp":15, please report a bug to PyTorch.',
    ),
    (
        "cuda_internal_assert",
        '!handles_.at(i) INTERNAL ASSERT FAILED at "/pytorch/c10/cuda/CUDACachingAllocator.cpp":430',
    ),
    ("cuda_unknown_error", "RuntimeError: CUDA driver error: unknown error"),
    ("cuda_unknown_error", "RuntimeError: CUDA error: unknown error"),
    ("oom", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"),
    ("oom", "torch.cuda.OutOfMemoryError: HIP out of memory. Tried to allocate 20.00 MiB"),
    ("oom", "RuntimeError: CUDA error: out of memory"),
    # Family 1: DataLoader workers and start methods.
    (
        "cuda_reinit_in_forked_subprocess",
        "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start method",
    ),
    ("cuda_init_error_in_worker", "RuntimeError: CUDA error: initialization error"),
    ("cuda_init_error_in_worker", "RuntimeError: CUDA initialization error"),
    ("hip_fork_abort", "terminate called after throwing an instance of 'ihipException'"),
    ("dataloader_worker_error", "RuntimeError: Caught ValueError in DataLoader worker process 0."),
    (
        "dataloader_worker_killed",
        "RuntimeError: DataLoader worker (pid 12345) is killed by signal: Segmentation fault.",
    ),
    (
        "dataloader_worker_killed",
        "RuntimeError: DataLoader worker (pid(s) 123, 456) exited unexpectedly",
    ),
    ("dataloader_worker_killed", "ERROR: Unexpected segmentation fault encountered in worker."),
    (
        "dataloader_shm_exhausted",
        "RuntimeError: unable to allocate shared memory(shm) for file </torch_123_456_0>: No space left on device (28)",
    ),
    (
        "dataloader_shm_exhausted",
        "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
    ),
    (
        "dataloader_shm_exhausted",
        "RuntimeError: DataLoader worker (pid 4321) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit.",
    ),
    (
        "host_oom_killed_hint",
        "RuntimeError: DataLoader worker (pid 777) is killed by signal: Killed.",
    ),
    ("host_oom_killed_hint", "Out of memory: Killed process 4242 (python3) total-vm:80000000kB"),
    ("dataloader_timeout", "RuntimeError: DataLoader timed out after 30 seconds"),
    ("pin_memory_thread_died", "RuntimeError: Pin memory thread exited unexpectedly"),
    (
        "fork_multithread_warning",
        "DeprecationWarning: This process (pid=4242) is multi-threaded, use of fork() may lead to deadlocks in the child.",
    ),
    (
        "rocm_kfd_workqueue_hog",
        "workqueue: amdgpu_amdkfd_restore_userptr_worker [amdgpu] hogged CPU for >10000us 19 times, consider switching to WQ_UNBOUND",
    ),
    (
        "rocm_kfd_workqueue_hog",
        "workqueue: svm_range_restore_work [amdgpu] hogged CPU for >10000us 4 times",
    ),
    ("amdgpu_gpu_fault", "amdgpu 0000:03:00.0: amdgpu: GCVM_L2_PROTECTION_FAULT_STATUS:0x00841051"),
    # The driver's job-timeout handler reports a GPU hang (amdgpu_job.c, amdgpu_job_timedout;
    # issue 30, round ten: https://github.com/ROCm/legacy-rocm-build/issues/3166).
    (
        "rocm_gpu_hang",
        "amdgpu 0000:03:00.0: [drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, signaled seq=1, emitted seq=2",
    ),
    # Family 2: wandb.
    ("wandb_backend_error", "wandb: ERROR Error communicating with wandb process"),
    ("wandb_backend_error", "Exception: The wandb backend process has shutdown"),
    # Family 4: NaN / AMP.
    (
        "nan_detected",
        "RuntimeError: Function 'MulBackward0' returned nan values in its 0th output.",
    ),
    (
        "nan_detected",
        "RuntimeError: Function 'ScaledDotProductEfficientAttentionBackward0' returned nan values in its 1st output.",
    ),
    ("nan_detected", "Found inf or nan, current scale is: 0.0, decrease to: 0.0*0.5"),
    ("nan_detected", "NaN/Inf gradient detected in model.encoder.model.conv1.weight at step 122"),
    ("nan_detected", "step 12 loss: nan"),
    ("nan_detected", "epoch 3 loss=NaN lr=1e-3"),
    (
        "amp_bce_unsafe",
        "RuntimeError: torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.",
    ),
    # Family 5: DDP / torchrun / NCCL.
    (
        "nccl_init_failure",
        "RuntimeError: NCCL error in ProcessGroupNCCL.cpp:290, unhandled system error",
    ),
    (
        "nccl_init_failure",
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, internal error, NCCL version 2.19.3",
    ),
    ("nccl_shm", "NCCL WARN Call to posix_fallocate failed: No space left on device"),
    (
        "nccl_shm",
        "NCCL WARN Error while creating shared memory segment /dev/shm/nccl-ZGxwNj (size 9637888)",
    ),
    ("nccl_shm", "NCCL WARN Call to shm_open failed : Permission denied"),
    (
        "nccl_shm",
        "failed to extend /dev/shm/nccl-1fGQ0B to 9637892 bytes, error: No space left on device (28)",
    ),
    (
        "nccl_duplicate_gpu",
        "torch.distributed.DistBackendError: NCCL error in: …ProcessGroupNCCL.cpp:…, invalid usage … ncclInvalidUsage: This usually reflects invalid usage of NCCL library. Last error: Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 4000",
    ),
    (
        "nccl_timeout",
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=54, OpType=ALLREDUCE, NumelIn=1, Timeout(ms)=600000) ran for 600011 milliseconds before timing out.",
    ),
    (
        "nccl_timeout",
        "[Rank 1] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives.",
    ),
    (
        "address_in_use",
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).",
    ),
    (
        "address_in_use",
        "RuntimeError: The server socket has failed to listen on any local network address. port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use",
    ),
    (
        "address_in_use",
        "[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:25641 (errno: 98 - Address already in use).",
    ),
    ("address_in_use", "RuntimeError: Address already in use"),
    ("local_rank_arg_mismatch", "train.py: error: unrecognized arguments: --local-rank=0"),
    ("local_rank_arg_mismatch", "train.py: error: unrecognized arguments: --local_rank=1"),
    (
        "cuda_ipc_producer_terminated",
        "[W CudaIPCTypes.cpp:15] Producer process has been terminated before all shared CUDA tensors released. See Note [Sharing CUDA tensors]",
    ),
    (
        "cuda_ipc_producer_terminated",
        "[W CudaIPCTypes.cpp:95] Producer process tried to deallocate over 1000 memory blocks referred by consumer processes. Deallocation might be significantly slowed down.",
    ),
    (
        "rank_failed",
        "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 2) local_rank: 0 (pid: 4242)",
    ),
    # A rank killed by SIGKILL names the OOM killer (issue 21; OpenBMB/MiniCPM-V#770, lzhxmu/CPPO#6).
    (
        "host_oom_killed_hint",
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 (pid: 1234) of binary: /usr/bin/python",
    ),
    ("host_oom_killed_hint", "  traceback : Signal 9 (SIGKILL) received by PID 4242"),
    (
        "host_oom_killed_hint",
        "torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with signal SIGKILL",
    ),
    # Issue 21's new rows, each with a line from its public sources.
    (
        "no_nvidia_driver",
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx",
    ),
    ("libcuda_not_found", "AssertionError: libcuda.so cannot found!"),
    ("cudnn_not_initialized", "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"),
    (
        "cublas_error",
        "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`",
    ),
    (
        "dataloader_fd_exhausted",
        "RuntimeError: Too many open files. Communication with the workers is no longer possible. Please increase the limit using `ulimit -n` in the shell or change the sharing strategy by calling `torch.multiprocessing.set_sharing_strategy('file_system')` at the beginning of your code",
    ),
    ("dataloader_fd_exhausted", "OSError: [Errno 24] Too many open files"),
    (
        "pickling_error",
        "AttributeError: Can't pickle local object 'get_loader.<locals>.my_worker_init_fn'",
    ),
    ("producer_connection_lost", "ConnectionResetError: [Errno 104] Connection reset by peer"),
    (
        "gloo_connection_closed",
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [18.25.6.30]:30872",
    ),
    (
        "nccl_async_error",
        'NCCL watchdog thread terminated with exception: traceMap[thisSeq][myRank].second == kEventStart INTERNAL ASSERT FAILED at "/opt/pytorch/pytorch/torch/csrc/distributed/c10d/TraceUtils.h":237, please re',
    ),
    (
        "compile_toolchain_missing",
        "/tmp/tmpn8c04nql/main.c:4:10: fatal error: Python.h: No such file or directory",
    ),
    ("inductor_compile_error", "torch._inductor.exc.CppCompileError: C++ compile error"),
    ("cuda_device_side_assert", "RuntimeError: CUDA error: device-side assert triggered"),
    (
        "container_runtime_failed",
        "docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error running prestart hook #0: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'",
    ),
    (
        "rocm_memory_access_fault",
        "Memory access fault by GPU node-1 (Agent handle: 0x55eb9b596570) on address 0x7f66960b2000. Reason: Page not present or supervisor privilege.",
    ),
    (
        "triton_error",
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised: RuntimeError: Triton Error [CUDA]: device kernel image is invalid",
    ),
    (
        "rank_failed",
        "torch.multiprocessing.spawn.ProcessExitedException: process 3 terminated with exit code 1",
    ),
    ("rank_failed", "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:"),
    # The crash name beats the launcher line that reports it.
    ("segfault", "  traceback : Signal 11 (SIGSEGV) received by PID 4242"),
    (
        "segfault",
        "subprocess.CalledProcessError: Command '['python', 'train.py']' died with <Signals.SIGSEGV: 11>.",
    ),
    # Cross-cutting environment failures.
    (
        "driver_too_old",
        "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 12080)",
    ),
    (
        "driver_too_old",
        "AssertionError: The NVIDIA driver on your system is too old (found version 9000)",
    ),
    ("driver_too_old", "CUDA driver version is insufficient for CUDA runtime version"),
    (
        "forward_compat_unsupported",
        "RuntimeError: CUDA error: forward compatibility was attempted on non supported HW",
    ),
    (
        "forward_compat_unsupported",
        "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility was attempted on non supported HW",
    ),
    (
        "no_kernel_image",
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
    ),
    (
        "no_kernel_image_hint",
        "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.",
    ),
    (
        "no_kernel_image_hint",
        "Minimum and Maximum cuda capability supported by this version of PyTorch is (7.0) - (12.0)",
    ),
    (
        "rocm_no_code_object",
        "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
    ),
    ("rocm_no_code_object", "RuntimeError: HIP error: invalid device function"),
    (
        "wsl_gpu_unavailable",
        "Failed to initialize NVML: GPU access blocked by the operating system",
    ),
    # Without host facts or host evidence these two name the alternatives (native family 7 or
    # WSL2), never WSL2 alone (issue 21, item 5); on WSL2 they are wsl_gpu_unavailable.
    (
        "cuda_unavailable_host_unknown",
        "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable",
    ),
    (
        "cuda_unavailable_host_unknown",
        "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 2: out of memory",
    ),
    (
        "container_gpu_setup",
        "nvidia-container-cli: mount error: stat failed: /usr/lib/wsl/lib/libcuda.so.1: no such file or directory: unknown",
    ),
    (
        "container_gpu_setup",
        "docker: Error response from daemon: OCI runtime create failed: container_linux.go:380: starting container process caused: process_linux.go:545: container init caused: Running hook #0:: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: initialization error: load library failed",
    ),
    ("cpp_terminate", "terminate called after throwing an instance of 'c10::Error'"),
    # The NCCL watchdog's own abort: a consequence, not an NCCL init failure.
    ("cpp_terminate", "terminate called after throwing an instance of 'c10::DistBackendError'"),
    ("segfault", "Segmentation fault (core dumped)"),
    ("segfault", "Fatal Python error: Segmentation fault"),
    ("host_sigill", "Illegal instruction (core dumped)"),
    # Issue 30: lines of the field corpus's train half (tests/fixtures/field-logs-train/, each
    # with its URL there) and the spellings public sources document.
    ("host_sigill", "Program received signal SIGILL, Illegal instruction."),  # pytorch#37577, gdb
    (
        "shm_bus_error",
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -7) local_rank: 0 (pid: 5275) of binary: /usr/bin/python",
    ),  # NVIDIA/Megatron-LM#516
    ("shm_bus_error", "traceback : Signal 7 (SIGBUS) received by PID 100"),  # awslabs/slapo#114
    (
        "shm_bus_error",
        'Thread 787 "imagenet_fake_d" received signal SIGBUS, Bus error.',
    ),  # NVIDIA/JAX-Toolbox#183
    (
        "shm_bus_error",
        "[01b962a216fb:1387 :0:1656] Caught signal 7 (Bus error: nonexistent physical address)",
    ),  # NVIDIA/physicsnemo#1068
    (
        "shm_bus_error",
        "APPLICATION TERMINATED WITH THE EXIT STRING: Bus error (signal 7)",
    ),  # openai/mlsh#17
    ("shm_bus_error", "Fatal Python error: Bus error"),  # CPython's faulthandler
    ("shm_bus_error", "Bus error (core dumped)"),  # bash
    ("host_oom_killed_hint", "**Killed**"),  # InternLandMark/LandMark#61
    ("host_oom_killed_hint", "Killed"),  # bash
    ("host_oom_killed_hint", "[1]+  Killed                  python train.py"),  # bash's jobs
    ("host_oom_killed_hint", "zsh: killed     python train.py"),  # zsh's job report
    (
        "host_oom_killed_hint",
        "Process finished with exit code 137 (interrupted by signal 9:SIGKILL)",
    ),  # noelshin/selfmask#11
    ("host_oom_killed_hint", "=   EXIT CODE: 9"),  # je-santos/MPLBM-UT#92, mpirun
    (
        "cuda_driver_init_failed",
        "UserWarning: CUDA initialization: CUDA driver initialization failed, you might not have a CUDA gpu. (Triggered internally at  /opt/conda/conda-bld/pytorch_1631630839582/work/c10/cuda/CUDAFunctions.cpp:115.)",
    ),  # wenet-e2e/wenet#700
    (
        "cuda_driver_init_failed",
        "RuntimeError: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.",
    ),  # replicate/cog-svd#11
    (
        "cuda_unavailable_host_unknown",
        "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable",
    ),  # pytorch/pytorch#100691 (CUDA 12's spelling; native there, unknown here)
    ("cuda_no_device", "RuntimeError: No CUDA GPUs are available"),  # Grace9994/CoMoSVC#6
    (
        "cudnn_no_engine",
        "RuntimeError: GET was unable to find an engine to execute this computation",
    ),  # zai-org/VisualGLM-6B#3
    (
        "cudnn_no_engine",
        "KSamplerAdvanced - cuDNN Frontend error: [cudnn_frontend] Error: No valid execution plans built.",
    ),  # YanWenKun/ComfyUI-Docker#140
    (
        "cudnn_no_engine",
        "RuntimeError: no valid convolution algorithms available in CuDNN",
    ),  # gistvision/e2sri#13
    (
        "cudnn_plan_failed_warning",
        r"cudnnException: CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: cudnnFinalize Descriptor Failed cudnn_status: CUDNN_STATUS_NOT_SUPPORTED (Triggered internally at ..\aten\src\ATen\native\cudnn\Conv_v8.cpp:919.)",
    ),  # Nerogar/OneTrainer#397
    (
        "cuda_init_error_in_worker",
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=50 error=3 : initialization error",
    ),  # pytorch/pytorch#33407
    (
        "nccl_timeout",
        "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x1554e9e0f8f2 in /mnt/home/ewulff/miniforge3/envs/mlpf/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so)",
    ),  # jpata/particleflow#390
    (
        "compile_toolchain_missing",
        "torch._dynamo.exc.InternalTorchDynamoError: RuntimeError: Compiler: cl is not found.",
    ),  # pytorch/pytorch#157458
    (
        "compile_toolchain_missing",
        "E:/Comfy_UI/ComfyUI_windows_portable/python_embeded/Include/Python.h:12: error: include file 'pyconfig.h' not found",
    ),  # woct0rdho/triton-windows#96
    (
        "rocm_hsa_error",
        ":0:rocdevice.cpp            :2652: 4238358292712 us: 48946: [tid:0x7fffd023f700] Device::callbackQueue aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources. This error may also occur when the core runtime library needs to spawn threads or create internal OS-specific events. code: 0x1008",
    ),  # StanfordLegion/legion#1339
    (
        "rocm_hsa_error",
        ":0:rocdevice.cpp            :2303: 768423197593 us: Device::callbackQueue aborting with status: 0x100f",
    ),  # ROCm/legacy-rocm-build#1393
    (
        "rocm_hsa_error",
        "### HCC STATUS_CHECK Error: HSA_STATUS_ERROR_INVALID_ISA_NAME (0x1017) at file:/home/vishwas/vrajesh_temp/PIM_14.04/hcc_git/hcc/lib/hsa/mcwamp_hsa.cpp line:2319",
    ),  # ROCm/hcc#272
    (
        "rocm_memory_access_fault",
        "rocdevice.cpp Callback: Queue 0x7fc220400000 aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory beyond the largest legal address. code: 0x29",
    ),  # ggml-org/whisper.cpp#3576
    (
        "rocblas_tensile_missing",
        r"rocBLAS error: Cannot read C:\Program Files\AMD\ROCm\6.1\bin\/rocblas/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1103",
    ),  # brknsoul/ROCmLibs#4
    ("hipblas_error", "RuntimeError: HIPBLAS_STATUS_NOT_SUPPORTED"),  # pytorch/pytorch#150016
    (
        "hipblas_error",
        "Attempting to use hipBLASLt on a unsupported architecture!",
    ),  # pytorch/pytorch#138067
    ("rocm_no_code_object", "HIP error: Invalid device function"),  # ROCm/legacy-rocm-build#5264
    # Issue 30, round two: lines of the train half's round-two logs (batch: 2 there, with URLs)
    # and the spellings public sources document.
    (
        "driver_library_mismatch",
        "Failed to initialize NVML: Driver/library version mismatch",
    ),  # Azure/az-hop#269
    (
        "cpu_only_torch",
        "AssertionError: Torch not compiled with CUDA enabled",
    ),  # facebookresearch/detectron2#460
    (
        "invalid_device_ordinal",
        "RuntimeError: CUDA error: invalid device ordinal",
    ),  # wdrink/PyDeepFakeDet#1
    (
        "rocm_gpu_hang",
        "HW Exception by GPU node-1 (Agent handle: 0x5899c75e9d60) reason :GPU Hang",
    ),  # ROCm/TheRock#2151
    (
        "launcher_signalled",
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 642371 got signal: 1",
    ),  # kohya-ss/musubi-tuner#733
    (
        "launcher_signalled",
        "WARNING:torch.distributed.elastic.agent.server.api:Received 15 death signal, shutting down workers",
    ),  # torch/distributed/elastic/agent/server/api.py's spelling
    (
        "container_gpu_setup",
        "docker: Error response from daemon: unknown or invalid runtime name: nvidia",
    ),  # NVIDIA-NeMo/labs-molt#88
    (
        "container_gpu_setup",
        "docker: Error response from daemon: Unknown runtime specified nvidia.",
    ),  # NVIDIA/nvidia-docker#1236
    (
        "nccl_init_failure",
        "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
    ),  # vllm-project/vllm#21661
    (
        "dataloader_shm_exhausted",
        "RuntimeError: unable to write to file </torch_15769_1517813162>",
    ),  # MIC-DKFZ/nnUNet#294
    (
        "nan_detected",
        "ValueError: Input contains NaN, infinity or a value too large for dtype('float32')",
    ),  # rafellerc/Pytorch-SiamFC#36
    (
        "libcuda_not_found",
        "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file: No such file or directory",
    ),  # facebookresearch/nougat#115
    (
        "host_oom_killed_hint",
        "Loading checkpoint shards:   0%|          | 0/2 [00:00<?, ?it/s]Killed",
    ),  # PKU-YuanGroup/Video-LLaVA#13
    # Issue 30, round three: lines of the first two test sets (studied from round three on).
    (
        "container_gpu_setup",
        "docker: Error response from daemon: could not select device driver with capabilities: [[gpu]].",
    ),  # NVIDIA/nvidia-docker#1642 (older docker: no quoted driver name)
    ("dataloader_fd_exhausted", "OSERROR: [Errno 24] Too many files open."),
    # XiaohangZhan/face_recognition_framework#5
    ("nan_detected", "step: 100 total_loss: nan obj_cls: nan frag_cls: nan frag_loc: nan"),
    # thodan/epos#9
    (
        "oom",
        "ins-7df6eojsifuykig9:3018451:3018451 [0] enqueue.cc:1085 NCCL WARN Cuda failure 'out of memory'",
    ),  # PKU-YuanGroup/Open-Sora-Plan#386
    (
        "rocblas_tensile_missing",
        "rocBLAS error: Cannot read /opt/rocm-5.4.0/lib/rocblas/library/TensileLibrary.dat: Illegal seek",
    ),  # ROCm/Tensile#1936
    (
        "rocblas_tensile_missing",
        "rocBLAS error: Could not load C:\\Program Files\\AMD\\ROCm\\6.1\\bin\\/rocblas/library/TensileLibrary_lazy_gfx1103.dat",
    ),  # likelovewant/ROCmLibs-for-gfx1103-AMD780M-APU#12
    (
        "cudnn_no_engine",
        "!!! Exception during processing !!! cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support the graph.",
    ),  # huanngzh/ComfyUI-MVAdapter#83
    (
        "nccl_shm",
        "g148:14937:69361 [0] misc/shmutils.cc:129 NCCL WARN Error while attaching to shared memory segment /dev/shm/nccl-glnlGK (size 14156128), error: No such file or directory (2)",
    ),  # NVIDIA/nccl#1589
    ("local_rank_arg_mismatch", "Error: unrecognized arguments: \u2013local_rank=1"),
    # airbert-vln/bnb-dataset#6
    (
        "rocm_no_code_object",
        ":3:hip_module.cpp           :669 : 14629861952 us: [pid:31113 tid:0x7fa5a37fe700] hipLaunchKernel: Returned hipErrorInvalidDeviceFunction :",
    ),  # ROCm/legacy-rocm-build#2527
    # Round four (issue 30), from the studied third test set:
    ("host_sigill", "Illegal instruction : 4"),  # pytorch/pytorch#29967 (an iMac)
    ("host_sigill", "Upon `import torch`, I get Illegal instruction 4."),  # pytorch/pytorch#27627
    (
        "oom",
        'cuda failed with error 2 out of memory. use CUDA_LAUNCH_BLOCKING=1 to get correct traceback."',
    ),  # junjie18/CMT#15 (tensorview)
    # Round five (issue 30): the families behind the studied fourth test set's misses, each in
    # spellings from other public issues.
    (
        "oom",
        "Last NCCL warning(error) log entry (may be unrelated) 'Cuda failure 2 'out of memory''.",
    ),  # openxla/xla#7201 (NCCL's numbered CUDACHECK message)
    (
        "oom",
        "想用WSL2 Ubuntu来训练以得到速度的加成。但是WSL2下总是报错Cuda out of memory就终止了",
    ),  # RVC-Project/Retrieval-based-Voice-Conversion-WebUI#1482
    (
        "rocm_hsa_error",
        'RuntimeError: Failed in file /data/jenkins-workspace/compute-rocm-rel-3.3/external/hip/hip/src/hip_memory.cpp, in function "d2h_copy", on line 259, with error: HSA_STATUS_ERROR: A generic error has occurred.',
    ),  # ROCm/pytorch#648
    ("nan_detected", "FloatingPointError: Loss became infinite or NaN at iteration=2137!"),
    # facebookresearch/detectron2#838
    (
        "nan_detected",
        "Runtime Error: floatingPointError: Loss became infinite or NaN at iteration=166!",
    ),  # csuhan/opendet2#29
    ("nan_detected", "使用自己的数据集训练，报错 Loss is nan, stopping training"),
    # Intellindust-AI-Lab/DEIM#96
    ("nan_detected", "loss is nan, stopping training!"),  # LayneH/GreenMIM#6
    (
        "dataloader_shm_exhausted",
        "Unexpected bus ERROR encountered in worker. This might be caused by insufficient Shared memory (SHM)",
    ),  # kazuto1011/deeplab-pytorch#17
    (
        "segfault",
        "but I meet segmentation fault (core dumped) when calling `_ = self.model(batch)` in line 362 of feature_extractor.py().",
    ),  # nnanhuang/S3Gaussian#21
    (
        "segfault",
        "train_scratch.sh: 行 57:  5912 段错误               (核心已转储) python run_train.py -b=$BATCH",
    ),  # asanakoy/kaggle_carvana_segmentation#1 (bash, zh_CN)
    ("oom", "Training is stopped because of CUDA OOM error after few epochs"),  # atnikos/teach#7
    # Issue 30, round six: the families behind the studied fifth test set's misses.
    (
        "oom",
        'what issues can lead to this error which is "RuntimeError: CUDA error:out of memory"?',
    ),  # bluer555/CR-GAN#8
    (
        "oom",
        "RuntimeError: CUDA out of the memory. Tried to allocate 360.00 MiB",
    ),  # Confusezius/unet-lits-2d-pipeline#6
    (
        "invalid_device_ordinal",
        "RuntimeError: cuda runtime error (101) : invalid device ordinal at"
        " /pytorch/torch/csrc/cuda/Module.cpp:59",
    ),  # wenwenyu/PICK-pytorch#14 (THC)
    (
        "invalid_device_ordinal",
        "temp_x = x.cuda(self.device_id[i]) RuntimeError: CUDA error (10): invalid device ordinal",
    ),  # ZhaoJ9014/face.evoLVe#58 (pre-CUDA-10.1 numbering)
    (
        "no_kernel_image",
        "no kernel image is available for execution this device",
    ),  # kanhavishva/KeyHunt-Cuda#53
    (
        "rocm_hsa_error",
        "[Issue]: [gfx1103] HSA_ERROR_INVALID_ISA error occurred during calculation in FP16",
    ),  # ROCm/TheRock#3044
    (
        "nan_detected",
        "Training: 2023-03-14 09:08:43,293-Speed 2178.40 samples/sec   Loss nan   LearningRate"
        " 0.001000",
    ),  # deepinsight/insightface#2262 (arcface_torch's log)
    (
        "nan_detected",
        "WARNING: The grad norm is nan. Skipping updating the model.",
    ),  # espnet/espnet#3237 (espnet2/train/trainer.py)
    # Issue 30, round eight: rows broadened by family from the studied seventh test set.
    (
        "container_gpu_setup",
        "WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.",
    ),  # NVIDIA/nvidia-docker#1071 (an NGC image started without --gpus)
    (
        "oom",
        "THCudaCheck FAIL file=/opt/conda/conda-bld/pytorch_1513368888240/work/torch/lib/THC/generic"
        "/THCStorage.c line=82 error=2 : out of memory",
    ),  # Cadene/vqa.pytorch#47
    (
        "cuda_device_side_assert",
        "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:93: operator(): block: [1,0,0], thread:"
        ' [121,0,0] Assertion `index >= -sizes[i] && index < sizes[i] && "index out of bounds"`'
        " failed.",
    ),  # huggingface/accelerate#2539
    (
        "cuda_device_side_assert",
        "C:\\actions-runner\\_work\\pytorch\\pytorch\\builder\\windows\\pytorch\\aten\\src\\ATen"
        "\\native\\cuda\\IndexKernel.cu:91: block: [26,0,0], thread: [32,0,0] Assertion `index >="
        ' -sizes[i] && index < sizes[i] && "index out of bounds"` failed.',
    ),  # kousw/stable-diffusion-webui-daam#4 (a Windows build: no "operator():")
    (
        "segfault",
        "subprocess.CalledProcessError: Command '['C:\\\\Python3_10_11\\\\python.exe',"
        " 'sdxl_train_network.py']' returned non-zero exit status 3221225477.",
    ),  # kohya-ss/sd-scripts#1737 (0xC0000005, an access violation)
    (
        "segfault",
        "Process finished with exit code -1073741819 (0xC0000005)",
    ),  # alterzero/RBPN-PyTorch#58 (PyCharm)
    (
        "nccl_init_failure",
        "SGES-DT279:22220:22220 [0] bootstrap.cc:48 NCCL WARN Bootstrap : no socket interface found",
    ),  # ultralytics/ultralytics#7038
    ("nccl_init_failure", "Bootstrap : no socket interface found"),  # MambaTree#14 (Last error:)
    (
        "shm_bus_error",
        "[2023-07-20 08:33:01,122] [INFO] [launch.py:428:main] Process 1045 exits with return code"
        " = -7",
    ),  # deepspeedai/DeepSpeed#4002
    (
        "shm_bus_error",
        "Bus error (core dumped) when evaluate the result",
    ),  # GuanxingLu/ManiGaussian#16 (a title; docker, fixed by --shm-size)
    (
        "driver_too_old",
        "**error info:** NVIDIA driver on your system is too old (found version 6000)....",
    ),  # pytorch/pytorch#920
]


@pytest.mark.parametrize(("expected", "line"), SINGLE_LINES)
def test_single_line_is_classified(expected: str, line: str) -> None:
    result = classify(line)
    assert result.name == expected
    assert result.message == line.strip()
    assert result.line_no == 1
    assert result.source == SIGNATURE_BY_NAME[expected].source
    assert result.workaround == SIGNATURE_BY_NAME[expected].workaround


# Family 7 texts whose cause depends on the host (repro.signatures.hostfacts): on a native host.
CAPTURED = Path(__file__).resolve().parent / "fixtures" / "captured"
NATIVE_LINES = [
    ("cuda_init_failed", "cuda-802-fabric-manager.log"),
    ("cuda_init_failed", "cuda-802-samples.log"),
    ("cuda_init_failed", "cuda-803-mismatch.log"),
    ("cuda_device_busy", "cuda-busy-exclusive-process.log"),
]


@pytest.mark.parametrize(("expected", "name"), NATIVE_LINES)
def test_captured_family_7_text_is_classified_on_a_native_host(expected: str, name: str) -> None:
    result = classify((CAPTURED / name).read_text(), HostFacts(wsl2=False))
    assert result.name == expected
    assert result.source == SIGNATURE_BY_NAME[expected].source


# A WSL2-only row: libcuda lives in /usr/lib/wsl/lib there (NVIDIA/cuda-python#17, microsoft/WSL#8587).
WSL2_LINES = [("wsl_libcuda_missing", "RuntimeError: Failed to dlopen libcuda.so")]


@pytest.mark.parametrize(("expected", "line"), WSL2_LINES)
def test_wsl2_only_row_needs_a_wsl2_host_or_wsl2_evidence(expected: str, line: str) -> None:
    assert classify(line, HostFacts(wsl2=True)).name == expected
    assert classify(line, HostFacts(wsl2=False)).name == "libcuda_not_found"
    assert classify(line).name == "libcuda_not_found"  # nothing says WSL2
    evidence = "Linux pc 5.15.167.4-microsoft-standard-WSL2 #1 SMP Tue Nov 5 00:21:55 UTC 2024\n"
    found = classify(evidence + line)
    assert (found.name, found.line_no) == (expected, 2)
    assert found.host_evidence == (evidence.strip(),)


def test_every_category_has_a_quoted_example() -> None:
    examples = {expected for expected, _ in SINGLE_LINES} | {e for e, _ in NATIVE_LINES}
    assert examples | {e for e, _ in WSL2_LINES} == CATEGORIES


# -- The table ------------------------------------------------------------------------------------


def test_table_covers_every_category_of_the_field_reports() -> None:
    assert {sig.name for sig in SIGNATURES} == CATEGORIES


def test_names_are_unique() -> None:
    names = [sig.name for sig in SIGNATURES]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("sig", SIGNATURES, ids=lambda sig: sig.name)
def test_every_row_has_source_kind_and_compiled_pattern(sig) -> None:
    assert sig.source.strip()
    assert sig.kind in KINDS
    assert sig.pattern.pattern
    assert "\n" not in sig.workaround


@pytest.mark.parametrize(
    ("specific", "general"),
    [
        ("nccl_shm", "nccl_init_failure"),
        ("nccl_duplicate_gpu", "nccl_init_failure"),
        ("nccl_timeout", "nccl_init_failure"),
        ("dataloader_shm_exhausted", "dataloader_worker_killed"),
        ("host_oom_killed_hint", "dataloader_worker_killed"),
        ("dataloader_worker_killed", "segfault"),
        ("segfault", "rank_failed"),
        ("dataloader_shm_exhausted", "shm_bus_error"),
        ("shm_bus_error", "rank_failed"),
        ("nccl_async_error", "nccl_timeout"),
        ("rocm_memory_access_fault", "rocm_hsa_error"),
        ("hip_fork_abort", "cpp_terminate"),
        ("forward_compat_unsupported", "wsl_gpu_unavailable"),
    ],
)
def test_sub_types_come_before_their_parents(specific: str, general: str) -> None:
    order = [sig.name for sig in SIGNATURES]
    assert order.index(specific) < order.index(general)


def test_environment_and_weak_kinds_are_as_documented() -> None:
    kinds = {sig.name: sig.kind for sig in SIGNATURES}
    environment = {
        "driver_too_old",
        "forward_compat_unsupported",
        "no_kernel_image",
        "no_kernel_image_hint",
        "rocm_no_code_object",
        "wsl_gpu_unavailable",
        "container_gpu_setup",
        "cuda_init_failed",
        "cuda_device_busy",
        "cuda_unavailable_host_unknown",
        "cuda_no_device",
        "no_nvidia_driver",
        "wsl_libcuda_missing",
        "libcuda_not_found",
        "cuda_driver_init_failed",
        "rocblas_tensile_missing",
        "driver_library_mismatch",
        "cpu_only_torch",
    }
    assert {name for name, kind in kinds.items() if kind == "environment"} == environment
    assert {name for name, kind in kinds.items() if kind == "wrapper"} == {
        "dataloader_worker_error",
        "rank_failed",
        "container_runtime_failed",
    }
    assert {name for name, kind in kinds.items() if kind in ("warning", "evidence")} == {
        "fork_multithread_warning",
        "cuda_ipc_producer_terminated",
        "rocm_kfd_workqueue_hog",
        "amdgpu_gpu_fault",
        "cudnn_plan_failed_warning",
    }


def test_every_row_has_literal_needles_that_its_examples_contain() -> None:
    # The prefilter that keeps classify fast must never hide a match.
    for sig, needles in zip(SIGNATURES, NEEDLES, strict=True):
        assert needles is not None, sig.name
    for _, line in SINGLE_LINES:
        for sig, needles in zip(SIGNATURES, NEEDLES, strict=True):
            if sig.pattern.search(line):
                assert any(needle in line for needle in needles), (sig.name, line)


def test_constants() -> None:
    assert HANG == "hang_timeout"
    assert UNKNOWN == "unknown"


# -- Precedence: cascades (rule 2) ---------------------------------------------------------------

O1_CASCADE = """\
Epoch 0:  12%|#2        | 14/117 [00:09<01:10,  1.47it/s, v_num=3]
Traceback (most recent call last):
  File "runners/train.py", line 102, in train
    trainer.fit(model, datamodule)
  File "ocr/models/decoder/fpn_decoder.py", line 77, in forward
    fused = self.fusion(torch.cat(features, dim=1))
  File "torch/nn/modules/conv.py", line 549, in _conv_forward
    return F.conv2d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)
RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "lightning/fabric/utilities/optimizer.py", line 36, in _optimizer_to_device
    data.to(device)
torch.AcceleratorError: CUDA error: an illegal instruction was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
"""


def test_o1_cascade_cudnn_first_illegal_instruction_at_teardown() -> None:
    result = classify(O1_CASCADE)
    assert result.name == "cudnn_execution_failed"
    assert result.message == "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED"
    assert result.line_no == 9
    assert [(m.signature.name, m.line_no) for m in result.matches] == [
        ("cudnn_execution_failed", 9),
        ("cuda_illegal_instruction", 16),
    ]
    assert "pytorch/pytorch#32881" in result.source


def test_nan_gradients_before_illegal_memory_access() -> None:
    text = (
        "NaN/Inf gradient detected in model.encoder.model.conv1.weight at step 122\n"
        "NaN/Inf gradient detected in model.encoder.model.bn1.weight at step 122\n"
        "Epoch 1: 162/400\n"
        "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
    )
    result = classify(text)
    assert result.name == "nan_detected"
    assert result.line_no == 1


def test_illegal_instruction_first_wins_over_later_cudnn_error() -> None:
    text = (
        "RuntimeError: CUDA error: an illegal instruction was encountered\n"
        "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\n"
    )
    assert classify(text).name == "cuda_illegal_instruction"


def test_earliest_root_error_wins() -> None:
    text = (
        "RuntimeError: DataLoader worker (pid(s) 123, 456) exited unexpectedly\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    result = classify(text)
    assert result.name == "dataloader_worker_killed"
    assert [m.signature.name for m in result.matches] == ["dataloader_worker_killed", "oom"]


def test_one_line_matching_two_rows_goes_to_the_specific_one() -> None:
    line = (
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1970, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL "
        "version 2.20.5\nncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
        "Last error:\nDuplicate GPU detected : rank 0 and rank 1 both on CUDA device 4000\n"
    )
    result = classify(line)
    # Line 1 and 2 are the general error; line 4 names the cause but comes later: the earliest
    # root wins, and each line carries exactly one match.
    assert [m.signature.name for m in result.matches] == [
        "nccl_init_failure",
        "nccl_init_failure",
        "nccl_duplicate_gpu",
    ]
    assert len({m.line_no for m in result.matches}) == len(result.matches)


NCCL_TIMEOUT_AFTER_SEGFAULT = """\
Fatal Python error: Segmentation fault

Thread 0x00007f3a2b7fe640 (most recent call first):
  File "/work/train_ddp.py", line 30 in step
  File "/work/train_ddp.py", line 44 in main
[rank1]:[E612 10:25:02.412000000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=54, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600011 milliseconds before timing out.
[rank1]:[E612 10:25:02.413000000 ProcessGroupNCCL.cpp:1785] [PG 0 (default_pg) Rank 1] Timeout at NCCL work: 54, last enqueued NCCL work: 54, last completed NCCL work: 53.
[rank1]:[E612 10:25:02.413000000 ProcessGroupNCCL.cpp:630] [Rank 1] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.
[rank1]:[E612 10:25:02.413000000 ProcessGroupNCCL.cpp:636] [Rank 1] To avoid data inconsistency, we are taking the entire process down.
terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [PG 0 (default_pg) Rank 1] Process group watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=54, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600011 milliseconds before timing out.
E0612 10:25:03.000000 4200 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -11) local_rank: 0 (pid: 4241) of binary: /usr/bin/python3
"""


def test_nccl_timeout_is_demoted_by_an_earlier_segfault_on_another_rank() -> None:
    result = classify(NCCL_TIMEOUT_AFTER_SEGFAULT)
    assert result.name == "segfault"
    assert result.line_no == 1
    names = [m.signature.name for m in result.matches]
    assert names.count("nccl_timeout") == 3
    assert "cpp_terminate" in names and "rank_failed" in names


def test_nccl_timeout_is_demoted_by_a_later_failure_on_another_rank() -> None:
    text = NCCL_TIMEOUT_AFTER_SEGFAULT.split("\n", 5)[5]  # drop rank 0's crash
    text += "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    assert classify(text).name == "cuda_illegal_memory_access"


def test_nccl_timeout_alone_wins_over_its_own_abort_and_the_launcher_summary() -> None:
    text = NCCL_TIMEOUT_AFTER_SEGFAULT.split("\n", 5)[5]
    result = classify(text)
    assert result.name == "nccl_timeout"
    assert result.line_no == 1
    assert "Watchdog caught collective operation timeout" in result.message


def test_cpp_terminate_after_a_python_exception_is_demoted() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "worker.py", line 3, in <module>\n'
        "    torch.cuda.device_count()\n"
        "RuntimeError: CUDA error: initialization error\n"
        "terminate called after throwing an instance of 'c10::Error'\n"
        "  what():  CUDA error: initialization error\n"
    )
    assert classify(text).name == "cuda_init_error_in_worker"


def test_cpp_terminate_loses_to_the_error_named_in_what() -> None:
    text = (
        "terminate called after throwing an instance of 'c10::Error'\n"
        "  what():  CUDA error: an illegal memory access was encountered\n"
        "Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43\n"
    )
    result = classify(text)
    assert result.name == "cuda_illegal_memory_access"
    assert result.line_no == 2


def test_hip_runtime_abort_in_child() -> None:
    text = (
        "terminate called after throwing an instance of 'ihipException'\n"
        "  what():  std::exception\n"
    )
    assert classify(text).name == "hip_fork_abort"


# -- Precedence: wrappers (rule 3) ---------------------------------------------------------------

DATALOADER_WRAPPER = """\
Traceback (most recent call last):
  File "/work/train.py", line 52, in <module>
    for images, labels in loader:
  File "/usr/lib/python3/site-packages/torch/utils/data/dataloader.py", line 701, in __next__
    data = self._next_data()
  File "/usr/lib/python3/site-packages/torch/utils/data/dataloader.py", line 1465, in _next_data
    return self._process_data(data)
  File "/usr/lib/python3/site-packages/torch/utils/data/dataloader.py", line 1491, in _process_data
    data.reraise()
  File "/usr/lib/python3/site-packages/torch/_utils.py", line 715, in reraise
    raise exception
RuntimeError: Caught RuntimeError in DataLoader worker process 0.
Original Traceback (most recent call last):
  File "/usr/lib/python3/site-packages/torch/utils/data/_utils/worker.py", line 351, in _worker_loop
    data = fetcher.fetch(index)
  File "/usr/lib/python3/site-packages/torch/utils/data/_utils/fetch.py", line 52, in fetch
    data = [self.dataset[idx] for idx in possibly_batched_index]
  File "/work/train.py", line 21, in __getitem__
    return self.images[index].to("cuda")
RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start method
"""


def test_dataloader_wrapper_is_classified_from_its_original_traceback() -> None:
    result = classify(DATALOADER_WRAPPER)
    assert result.name == "cuda_reinit_in_forked_subprocess"
    assert result.line_no == 20
    assert [m.signature.name for m in result.matches] == [
        "dataloader_worker_error",
        "cuda_reinit_in_forked_subprocess",
    ]
    assert "spawn" in result.workaround


def test_dataloader_wrapper_with_unknown_inner_error_is_the_wrapper_with_the_inner_message() -> (
    None
):
    text = DATALOADER_WRAPPER.replace("Caught RuntimeError", "Caught ValueError").replace(
        "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
        "multiprocessing, you must use the 'spawn' start method",
        "ValueError: planted failure",
    )
    result = classify(text)
    assert result.name == "dataloader_worker_error"
    # The decisive line is the worker's own exception, not the wrapper's (issue 21, item 3).
    assert result.message == "ValueError: planted failure"
    assert text.splitlines()[result.line_no - 1].strip() == "ValueError: planted failure"


TORCHRUN_RANK_LOG = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/work/train_ddp.py", line 41, in <module>
[rank1]:     main()
[rank1]:   File "/work/train_ddp.py", line 33, in main
[rank1]:     loss.backward()
[rank1]: RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED
"""

TORCHRUN_SUMMARY = """\
W0612 10:15:02.123000 4200 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 4241 closing signal SIGTERM
E0612 10:15:02.456000 4200 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 1 (pid: 4242) of binary: /usr/bin/python3
Traceback (most recent call last):
  File "/usr/local/bin/torchrun", line 8, in <module>
    sys.exit(main())
             ^^^^^^
  File "/usr/local/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper
    return f(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^
  File "/usr/local/lib/python3.11/site-packages/torch/distributed/run.py", line 918, in main
    run(args)
  File "/usr/local/lib/python3.11/site-packages/torch/distributed/run.py", line 909, in run
    elastic_launch(
  File "/usr/local/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 138, in __call__
    return launch_agent(self._config, self._entrypoint, list(args))
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/local/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 269, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train_ddp.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-06-12_10:15:02
  host      : gpu-node-1
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 4242)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def test_torchrun_summary_is_classified_from_the_rank_error() -> None:
    result = classify(TORCHRUN_RANK_LOG + TORCHRUN_SUMMARY)
    assert result.name == "cudnn_execution_failed"
    assert result.line_no == 6
    assert result.message == "[rank1]: RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED"
    names = [m.signature.name for m in result.matches]
    assert names[0] == "cudnn_execution_failed"
    assert set(names[1:]) == {"rank_failed"}
    # failed (exitcode...) line, "raise ChildFailedError(", the ChildFailedError line, "exitcode  :"
    assert len(names[1:]) == 4


def test_torchrun_summary_with_unknown_rank_error_is_rank_failed() -> None:
    rank_log = TORCHRUN_RANK_LOG.replace(
        "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED", "ValueError: planted failure"
    )
    result = classify(rank_log + TORCHRUN_SUMMARY)
    assert result.name == "rank_failed"
    # The message is the failing rank's own exception, not the launcher's (issue 21, item 3).
    assert result.message == "ValueError: planted failure"
    assert result.line_no == 6
    # The rank's own exception is still the first meaningful line of the text.
    assert first_meaningful_line(rank_log + TORCHRUN_SUMMARY) == "ValueError: planted failure"


def test_torchrun_summary_alone_is_rank_failed() -> None:
    assert classify(TORCHRUN_SUMMARY).name == "rank_failed"


def test_local_rank_argument_mismatch_beats_the_launcher_line() -> None:
    text = (
        "usage: train.py [-h] [--local_rank LOCAL_RANK]\n"
        "train.py: error: unrecognized arguments: --local-rank=0\n"
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 2) local_rank: 0 "
        "(pid: 4242) of binary: /usr/bin/python3\n"
    )
    result = classify(text)
    assert result.name == "local_rank_arg_mismatch"
    assert result.line_no == 2


# -- NaN through the DB Dice assertion -----------------------------------------------------------

DICE_ASSERTION = """\
Traceback (most recent call last):
  File "runners/train.py", line 88, in train
    trainer.fit(model, datamodule)
  File "ocr/models/loss/db_loss.py", line 54, in forward
    loss_binary = self.dice_loss(pred["binary_map"], gt_binary, gt_mask)
                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "ocr/models/loss/dice_loss.py", line 47, in _compute
    assert loss <= 1
           ^^^^^^^^^
AssertionError
"""


def test_dice_assertion_is_nan_detected() -> None:
    result = classify(DICE_ASSERTION)
    assert result.name == "nan_detected"
    assert result.line_no == 8
    assert result.message == "assert loss <= 1"


def test_dice_assertion_with_rank_prefix_is_nan_detected() -> None:
    text = "".join(f"[rank0]: {line}\n" for line in DICE_ASSERTION.splitlines())
    assert classify(text).name == "nan_detected"


def test_dice_assertion_line_without_assertion_error_is_not_nan() -> None:
    other_ending = DICE_ASSERTION.replace("AssertionError", "KeyError: 'gt_mask'")
    result = classify(other_ending)
    assert result.name == UNKNOWN
    assert result.message == "KeyError: 'gt_mask'"
    listing = "def _compute(self, pred, gt, mask):\n    assert loss <= 1\n    return loss\n"
    assert classify(listing).name == UNKNOWN


# -- Warnings and evidence (rule 4) --------------------------------------------------------------

FORK_WARNING = (
    "/usr/lib/python3.12/multiprocessing/popen_fork.py:66: DeprecationWarning: This process "
    "(pid=4242) is multi-threaded, use of fork() may lead to deadlocks in the child.\n"
    "  self.pid = os.fork()\n"
)
IPC_WARNING = (
    "[W CudaIPCTypes.cpp:15] Producer process has been terminated before all shared CUDA "
    "tensors released. See Note [Sharing CUDA tensors]\n"
)


def test_warning_alone_is_the_classification() -> None:
    assert classify(FORK_WARNING).name == "fork_multithread_warning"
    assert classify(IPC_WARNING).name == "cuda_ipc_producer_terminated"


def test_warnings_never_beat_a_real_error() -> None:
    text = FORK_WARNING + "RuntimeError: DataLoader worker (pid(s) 123, 456) exited unexpectedly\n"
    assert classify(text).name == "dataloader_worker_killed"
    text = "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\n" + IPC_WARNING
    result = classify(text)
    assert result.name == "cudnn_execution_failed"
    assert [m.signature.name for m in result.matches] == [
        "cudnn_execution_failed",
        "cuda_ipc_producer_terminated",
    ]


def test_warnings_never_beat_a_wrapper() -> None:
    text = FORK_WARNING + "RuntimeError: Caught ValueError in DataLoader worker process 1.\n"
    assert classify(text).name == "dataloader_worker_error"


def test_warning_beside_an_unmatched_exception_is_unknown() -> None:
    text = (
        FORK_WARNING + "Traceback (most recent call last):\n"
        '  File "scenario.py", line 9, in run\n'
        "    check(batch)\n"
        "AssertionError: checksum changed after iterating the loader\n"
    )
    result = classify(text)
    assert result.name == UNKNOWN
    assert result.message == "AssertionError: checksum changed after iterating the loader"
    assert [m.signature.name for m in result.matches] == ["fork_multithread_warning"]


def test_kernel_log_evidence_alone() -> None:
    text = (
        "[32401.123] workqueue: amdgpu_amdkfd_restore_userptr_worker [amdgpu] hogged CPU for "
        ">10000us 19 times, consider switching to WQ_UNBOUND\n"
        "[32460.001] amdgpu 0000:03:00.0: amdgpu: GCVM_L2_PROTECTION_FAULT_STATUS:0x00841051\n"
    )
    result = classify(text)
    assert result.name == "rocm_kfd_workqueue_hog"
    assert [m.signature.name for m in result.matches] == [
        "rocm_kfd_workqueue_hog",
        "amdgpu_gpu_fault",
    ]


# -- Environment first (rule 1) ------------------------------------------------------------------


def test_environment_signature_pre_empts_a_later_illegal_memory_access() -> None:
    text = (
        "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found "
        "version 12080)\n"
        "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
    )
    assert classify(text).name == "driver_too_old"


def test_environment_signature_pre_empts_an_earlier_root_error() -> None:
    text = (
        "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\n"
        "Failed to initialize NVML: GPU access blocked by the operating system\n"
    )
    result = classify(text)
    assert result.name == "wsl_gpu_unavailable"
    assert result.line_no == 2


def test_arch_hint_explains_a_later_cudnn_failure() -> None:
    # F3-2: an arch-unsupported wheel can surface as CUDNN_STATUS_EXECUTION_FAILED.
    text = (
        "UserWarning: NVIDIA GeForce RTX 3060 with CUDA capability sm_86 is not compatible with "
        "the current PyTorch installation.\n"
        "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\n"
    )
    assert classify(text).name == "no_kernel_image_hint"


def test_no_kernel_image_names_the_cell_when_its_hint_came_first() -> None:
    text = (
        "UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with "
        "the current PyTorch installation.\n"
        "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 "
        "sm_86 sm_90.\n"
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    result = classify(text)
    assert result.name == "no_kernel_image"
    assert result.line_no == 3


# -- Unknown and first_meaningful_line -----------------------------------------------------------


def test_unknown_traceback_keeps_its_exception_line() -> None:
    text = (
        "case dataloader[start_method=fork,workers=2] starting\n"
        "Traceback (most recent call last):\n"
        '  File "/work/repro/scenarios/planted.py", line 12, in run\n'
        '    raise ValueError("planted failure")\n'
        "ValueError: planted failure\n"
    )
    result = classify(text)
    assert result == Classification(
        name=UNKNOWN,
        message="ValueError: planted failure",
        line_no=None,
        source="",
        workaround="",
        matches=(),
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ""),
        ("\n  \n", ""),
        ("just one line\nsecond line\n", "just one line"),
        (
            'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\n'
            '    f()\n  File "a.py", line 3, in f\n    assert x\n           ^\nAssertionError\n',
            "AssertionError",
        ),
        (
            'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\n'
            "    g()\nmy_pkg.sub.PlantedError: boom: with colon\n",
            "my_pkg.sub.PlantedError: boom: with colon",
        ),
        # First traceback, not the last one.
        (
            'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\n'
            "KeyError: 'a'\n\nDuring handling of the above exception, another exception "
            'occurred:\n\nTraceback (most recent call last):\n  File "a.py", line 4, in '
            "<module>\nTypeError: b\n",
            "KeyError: 'a'",
        ),
        # A faulthandler dump: headers and frames are skipped.
        (
            "Timeout (0:05:00)!\nThread 0x00007f00 (most recent call first):\n"
            '  File "/usr/lib/python3.11/threading.py", line 320 in wait\n'
            "Current thread 0x00007f01 (most recent call first):\n"
            '  File "/work/case.py", line 7 in main\n'
            "still waiting for the first batch\n",
            "still waiting for the first batch",
        ),
        # A traceback cut off before its exception line.
        (
            'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\n    f()\n',
            "",
        ),
    ],
)
def test_first_meaningful_line(text: str, expected: str) -> None:
    assert first_meaningful_line(text) == expected


def test_messages_are_capped_at_500_characters() -> None:
    long_line = "RuntimeError: CUDA error: an illegal memory access was encountered " + "x" * 900
    result = classify(long_line)
    assert len(result.message) <= 500
    assert result.message.startswith("RuntimeError: CUDA error: an illegal memory access")
    assert len(first_meaningful_line("ValueError: " + "y" * 900)) <= 500
    assert len(classify("ValueError: " + "y" * 900).message) <= 500


def test_line_numbers_count_crlf_and_progress_bar_carriage_returns() -> None:
    text = (
        "step 1\r\nstep 2\r 10%\r 20%\nRuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\n"
    )
    result = classify(text)
    assert result.line_no == 5
    assert result.message == "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED"


def test_colour_codes_are_ignored() -> None:
    text = "\x1b[31mRuntimeError: CUDA error: an illegal instruction was encountered\x1b[0m\n"
    result = classify(text)
    assert result.name == "cuda_illegal_instruction"
    assert result.message == "RuntimeError: CUDA error: an illegal instruction was encountered"


@pytest.mark.slow
def test_big_log_is_classified_exactly() -> None:
    """The 4.1 MB progress log before a cascade: the verdict and its line, exactly. Its speed is
    measured by ``benchmarks/classify_stream.py --in-process``, never asserted here."""
    text = progress_log() + "\n" + O1_CASCADE
    assert len(text) > 3_000_000
    result = classify(text)
    assert result.name == "cudnn_execution_failed"
    assert result.line_no == 40_000 + 9


# -- Signals -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("signum", "signature", "name"),
    [
        (11, "segfault", "SIGSEGV"),
        (6, "sigabrt", "SIGABRT"),
        (7, "sigbus", "SIGBUS"),
        (4, "host_sigill", "SIGILL"),
        (9, "sigkill", "SIGKILL"),
        (15, "sigterm", "SIGTERM"),
        (10, "signal_sigusr1", "SIGUSR1"),
        (-11, "segfault", "SIGSEGV"),
        (99, "signal_99", "signal 99"),
    ],
)
def test_signal_signature_and_name(signum: int, signature: str, name: str) -> None:
    assert signal_signature(signum) == signature
    assert signal_name(signum) == name


def test_a_worker_segfault_seen_first_as_eof_in_the_main_process_is_the_worker_killed():
    """A clean-clone CI run: the worker segfaulted while the main process received its shared
    tensor, so the log holds the worker's own "Unexpected segmentation fault" line and an
    EOFError traceback, not the "DataLoader worker ... exited unexpectedly" RuntimeError; the
    case was named producer_connection_lost in that run and dataloader_worker_killed in others."""
    log = (
        "ERROR: Unexpected segmentation fault encountered in worker.\n"
        "Traceback (most recent call last):\n"
        '  File "/x/multiprocessing/resource_sharer.py", line 86, in get_connection\n'
        "    c = Client(address, authkey=process.current_process().authkey)\n"
        '  File "/x/multiprocessing/connection.py", line 399, in _recv\n'
        "    raise EOFError\n"
        "EOFError\n"
        "repro: check failed: DataLoader failed after 4 batches: EOFError: \n"
    )
    assert classify(log).name == "dataloader_worker_killed"


def test_a_wrapped_watchdog_timeout_is_a_timeout_not_an_async_error() -> None:
    # hiyouga/LlamaFactory#8261 (test2, studied in round three): the watchdog's timeout report
    # wrapped after "[Rank 4] Watchdog"; the collective timed out, nothing else failed.
    text = (
        "[rank4]:[E602 11:18:52.531176265 ProcessGroupNCCL.cpp:684] [Rank 4] Some NCCL operations"
        " have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU"
        " operations might run on corrupted/incomplete data.\n"
        "[rank4]:[E602 11:18:52.536602063 ProcessGroupNCCL.cpp:1896] [PG ID 1 PG GUID 1 Rank 4]"
        " Process group watchdog thread terminated with exception: [Rank 4] Watchdog\n"
        "caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran for"
        " 600000 milliseconds before timing out.\n"
    )
    assert classify(text).name == "nccl_timeout"


@pytest.mark.parametrize(
    "text",
    [
        # wmyw96/FAST-NN#1: the error pasted in a Markdown code span.
        "When I tried the real data application I encountered the following error:\n\n"
        "`RuntimeError: Expected all tensors to be on the same device, but found at least two"
        " devices, cpu and cuda:0! (when checking argument for argument mat2 in method wrapper_mm)`\n",
        # pytorch/helion#470: an exception class from triton.runtime.errors not named *Error.
        '  File "/x/triton/compiler/compiler.py", line 483, in _init_handles\n'
        '    raise OutOfResources(self.metadata.shared, max_shared, "shared memory")\n'
        "triton.runtime.errors.OutOfResources: out of resource: shared memory,\n",
    ],
    ids=["markdown-code-span", "triton-errors-module"],
)
def test_an_error_no_row_reads_is_unknown_not_clean(text) -> None:
    found = classify(text)
    assert found.name == UNKNOWN and not found.clean


@pytest.mark.parametrize(
    ("text", "name"),
    [
        # verl-project/verl#161 (the first test set, studied in round three).
        (
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "NCCLUtils.hpp:275, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL"
            " version 2.20.5\n"
            "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
            "Last error:\n"
            "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 10\n",
            "nccl_duplicate_gpu",
        ),
        # chenfei-wu/TaskMatrix#379: the message wrapped before its error number.
        (
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda"
            " functions before calling NumCudaDevices() that might have\n"
            "already set an error? Error 804: forward compatibility was attempted on non"
            " supported HW\n",
            "forward_compat_unsupported",
        ),
    ],
    ids=["nccl-duplicate-gpu-after-distbackenderror", "error-804-wrapped"],
)
def test_the_most_specific_row_names_one_error_report(text, name) -> None:
    assert classify(text).name == name


def test_a_later_unrelated_error_does_not_take_over() -> None:
    # Rule 2b reads one report: a CUDA OOM long after an NCCL error is not its cause.
    text = (
        "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
        + ("step ok\n" * 10)
        + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    assert classify(text).name == "nccl_init_failure"


# -- Round four (issue 30): readings from the studied third test set -----------------------------


def test_bash_s_killed_in_a_chinese_locale_is_an_oom_kill() -> None:
    # danijar/dreamerv3#203: bash's zh_CN "Killed" after the last metrics line.
    text = (
        "episode/score 0.1 / episode/length 34 / train/loss/con 0.04 / fps/train 1253.7\n\n"
        "Writing metrics: /home/bzs/logdir/dreamer/20251205T175323/metrics.jsonl\n"
        "已杀死\n"
    )
    assert classify(text).name == "host_oom_killed_hint"
    # The word inside a sentence is not bash's line (no row reads it); since round six the
    # person's "killed" alone can still name the kill (rule 7), which is not this row's line.
    assert not classify("它已杀死了进程\n").matches


def test_a_worker_s_bus_error_wrapped_after_bus_is_still_shared_memory() -> None:
    # fastai/docker-containers#21: the message pasted with its line broken after "Bus".
    text = (
        'it erred with  the following message: " RuntimeError: DataLoader worker (pid 47) is killed'
        " by signal: Bus\n"
        "error. It is possible that dataloader's workers are out of shared\n"
        'memory. Please try to raise your shared memory limit.".\n'
    )
    assert classify(text).name == "dataloader_shm_exhausted"
    assert classify("DataLoader worker (pid 47) is killed by signal: Bus Stop\n").name != (
        "dataloader_shm_exhausted"
    )


@pytest.mark.parametrize(
    ("text", "name"),
    [
        # facebookresearch/seamless_communication#167: the person says where it ran.
        (
            "Demo crash on Linux Subsystem\n"
            '"Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared'
            ' object file: No such file or directory"\n',
            "wsl_libcuda_missing",
        ),
        # ProjectNUWA/DragNUWA#10: cuDNN's half of the message only, on WSL.
        (
            "WSL Could not load library libcudnn_cnn_infer.so.8.\nTraceback (most recent call last):\n"
            '  File "x.py", line 1, in <module>\n',
            "wsl_libcuda_missing",
        ),
        # Without the person's words the host is unknown: the general row.
        (
            '"Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared'
            ' object file: No such file or directory"\n',
            "libcuda_not_found",
        ),
    ],
    ids=["ubuntu-subsystem", "wsl-word", "no-host-evidence"],
)
def test_the_person_s_own_words_say_wsl(text, name) -> None:
    assert classify(text).name == name


def test_autograd_anomaly_mode_s_report_is_a_failure_not_clean() -> None:
    # QiangAIResearcher/sahp_repo#4: only the anomaly warning was pasted.
    text = (
        "[W python_anomaly_mode.cpp:60] Warning: Error detected in SoftmaxBackward. Traceback of"
        " forward call that caused the error:\n"
        '  File "main_func.py", line 206, in <module>\n'
        "    model = train_eval_sahp(params)\n"
    )
    found = classify(text)
    assert found.name == UNKNOWN and not found.clean


@pytest.mark.parametrize(
    "text",
    [
        # horovod/horovod#685: no verbs library, NCCL goes on over sockets.
        "problem:misc/ibvwrap.cu:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
        "ml3:32632:32662 [0] NCCL INFO Using network Socket\n"
        "NCCL version 2.3.7+cuda9.0\n",
        # zai-org/ImageReward#65: two devices fail to open, NCCL uses the others.
        "x:80744:80744 [1] misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed\n"
        "x:80746:80746 [3] transport/net_ib.cc:149 NCCL WARN NET/IB : Unable to open device mlx5_59\n"
        "x:80746:80746 [3] NCCL INFO Using network IB\n",
        # deepspeedai/DeepSpeedExamples#310: a fabric event after Init COMPLETE.
        "gpu1:5021:5376 [0] NCCL INFO comm 0x453b9880 rank 0 nranks 8 cudaDev 0 busId 4f000 - Init"
        " COMPLETE\n"
        "gpu1:5021:5386 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : client"
        " reregistration\n",
    ],
    ids=["no-libibverbs", "ibv-open-device", "ib-async-event"],
)
def test_nccl_s_infiniband_probing_warnings_alone_are_no_failure(text) -> None:
    assert classify(text).clean


def test_another_nccl_warning_still_shows_an_nccl_failure() -> None:
    # NVIDIA/nccl#193 (the third test set): a peer reset the connection.
    found = classify(
        "worker0:15:91 [3] include/socket.h 398 NCCL WARN Call to write failed : Connection reset"
        " by peer.\n"
    )
    assert found.name == UNKNOWN and not found.clean and found.coarse == "an NCCL error"


def test_a_ctrl_c_in_the_worker_shutdown_join_is_a_dataloader_hang() -> None:
    # pytorch/pytorch#39570 (the second test set): the main process waits for a worker to exit.
    text = (
        "Traceback (most recent call last):\n"
        '  File "/x/torch/utils/data/dataloader.py", line 830, in _next_data\n'
        "    self._shutdown_workers()\n"
        '  File "/x/torch/utils/data/dataloader.py", line 942, in _shutdown_workers\n'
        "    w.join()\n"
        '  File "/x/multiprocessing/process.py", line 140, in join\n'
        "    res = self._popen.wait(timeout)\n"
        '  File "/x/multiprocessing/popen_fork.py", line 28, in poll\n'
        "    pid, sts = os.waitpid(self.pid, flag)\n"
        "KeyboardInterrupt\n"
    )
    assert classify(text).name == "hang.dataloader_wait"
    # The same frames in an exception CPython ignored at exit are no failure at all.
    ignored = (
        "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f>\n"
        "Traceback (most recent call last):\n"
        '  File "/x/torch/utils/data/dataloader.py", line 1466, in __del__\n'
        "    self._shutdown_workers()\n"
        '  File "/x/torch/utils/data/dataloader.py", line 1430, in _shutdown_workers\n'
        "    w.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)\n"
        "AssertionError: can only join a child process\n"
    )
    assert classify(ignored).clean


def test_a_numbered_gfxhub_no_retry_page_fault_is_an_amdgpu_fault() -> None:
    # ROCm/amdgpu#172 (the second test set): the kernel log of a newer amdgpu driver.
    text = (
        "[ 4778.948515] amdgpu 0000:c6:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0"
        " ring:24 vmid:3 pasid:32769)\n"
        "[ 4778.949976] amdgpu 0000:c6:00.0: amdgpu: VM_L2_PROTECTION_FAULT_STATUS:0x00000000\n"
        "[ 4778.951382] amdgpu 0000:c6:00.0: amdgpu: \t WALKER_ERROR: 0x0\n"
    )
    assert classify(text).name == "amdgpu_gpu_fault"


def test_a_backward_cpp_trace_through_std_terminate_is_an_uncaught_cpp_exception() -> None:
    # hku-mars/GS-SDF#1 (the first test set): libtorch's check threw, nobody caught it.
    text = (
        '#6    Object "/x/libtorch/lib/libc10.so", at 0x7faf2b23d0b9, in'
        " c10::detail::torchCheckFail(char const*, char const*, unsigned int, char const*)\n"
        '#5    Object "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.28", at 0x7faf2b077698, in'
        " __cxa_throw\n"
        '#4    Object "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.28", at 0x7faf2b0773e6, in'
        " std::terminate()\n"
        '#1    Source "/build/glibc-B3wQXB/glibc-2.31/stdlib/abort.c", line 79, in abort'
        " [0x7faf2ade0858]\n"
        "Aborted (Signal sent by tkill() 1733323 1000)\n"
        "Aborted (core dumped)\n"
    )
    assert classify(text).name == "cpp_terminate"


def test_nccls_numbered_cuda_failure_names_the_cuda_error_not_the_nccl_report() -> None:
    # NVIDIA/nccl#1231 (the studied fourth test set): "unhandled cuda error" is NCCL's general
    # report, the "Last error:" it quotes is CUDA's 802 (Fabric Manager) on a native host.
    text = (
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1691, unhandled cuda error (run with NCCL_DEBUG=INFO for details),"
        " NCCL version 2.19.3\n"
        "ncclUnhandledCudaError: Call to CUDA function failed.\n"
        "Last error:\n"
        "Cuda failure 802 'system not yet initialized'\n"
    )
    assert classify(text).name == "cuda_init_failed"
    assert classify(text, host=HostFacts(wsl2=True)).name != "cuda_init_failed"
    # The same report quoting another CUDA error stays NCCL's (NVIDIA/nccl#1410).
    other = text.replace(
        "Cuda failure 802 'system not yet initialized'", "Cuda failure 1 'invalid argument'"
    )
    assert classify(other).name == "nccl_init_failure"


DIST_BACKEND_TIMEOUT = """\
frame #6: clone + 0x44 (0x7fe77666aa04 in /usr/lib/x86_64-linux-gnu/libc.so.6)

terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [PG 1 Rank 1] Process group watchdog thread terminated with exception: [Rank 1] \
Watchdog caught collective operation timeout: WorkNCCL(SeqNum=199, OpType=_REDUCE_SCATTER_BASE, \
NumelIn=7098994688, NumelOut=443687168, Timeout(ms)=600000) ran for 600005 milliseconds before timing out.
Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:609 (most recent call first):
"""  # NVIDIA/Megatron-LM#935 (also sgl-project/sglang#1693, huggingface/open-r1#620)


def test_terminate_is_named_by_the_error_its_what_line_carries_of_any_family() -> None:
    """Rule 2c: "terminate called after throwing" only announces c10::DistBackendError; the
    watchdog's timeout in its what() line is the failure (nccl_timeout, family distributed)."""
    result = classify(DIST_BACKEND_TIMEOUT)
    assert result.name == "nccl_timeout"
    assert result.line_no == 4
    # An exception whose what() no row reads stays an uncaught C++ exception.
    plain = (
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "  what():  Unable to open config.yaml\n"
    )
    assert classify(plain).name == "cpp_terminate"
    # A secondary error further down is another report: the terminate line keeps its name.
    far = plain + "".join(f"frame #{n}: <unknown function>\n" for n in range(6))
    far += "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)\n"
    assert classify(far).name == "cpp_terminate"


NCCL_INFO_STUCK = """\
When I tried to use distributed training, the code ran stuck, the GPUs of both graphics cards were \
stretched to 100%, and the program output the following error.
zkti:702444:702444 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>
zkti:702444:702444 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation
zkti:702444:702444 [0] NCCL INFO NET/IB : No device found.
NCCL version 2.10.3+cuda11.3
"""  # NVIDIA/nccl#1126 (the studied fourth test set)


def test_a_hang_the_person_describes_in_an_nccl_jobs_log_is_an_nccl_hang() -> None:
    """Rule 6: the person's own words say the job hangs and the log is an NCCL job's."""
    result = classify(NCCL_INFO_STUCK)
    assert result.name == "hang.nccl"
    assert result.line_no == 1 and "ran stuck" in result.message
    # horovod/horovod#3658: the title says so, NCCL's INFO lines follow.
    horovod = (
        "NCCL INFO Launch mode Parallel hangs during training\n"
        "[1,1]<stdout>:ip-172-31-0-63:2121:2136 [1] NCCL INFO NET/Socket: Using 2 threads and 8"
        " sockets per thread\n"
        "[1,1]<stdout>:ip-172-31-0-63:2121:2136 [1] NCCL INFO Channel 01 : 1[1c0] -> 2[1d0] [send]"
        " via NET/Socket/0\n"
    )
    assert classify(horovod).name == "hang.nccl"
    # pytorch/pytorch#49733: "deadLock" and the Ctrl-C stack through torch's spawn (one rank a GPU).
    deadlock = (
        'When I find the trianing process is in deadLock, I use "Ctrl +C" to exit.\n'
        '  File "/opt/conda/lib/python3.7/site-packages/torch/multiprocessing/spawn.py", line 200,'
        " in spawn\n"
        "    return start_processes(fn, args, nprocs, join, daemon, start_method='spawn')\n"
    )
    assert classify(deadlock).name == "hang.nccl"


def test_a_described_hang_needs_the_nccl_job_and_no_other_failure() -> None:
    # The same NCCL INFO lines with no word of a hang: a working fabric, no failure.
    assert classify(NCCL_INFO_STUCK.split("\n", 2)[2]).clean
    # A hang word with no distributed job in the log is not an NCCL hang.
    single = "Training is stuck at epoch 3, nothing printed for an hour.\nEpoch 3/10\n"
    assert classify(single).name != "hang.nccl"
    # An exception no row names ends the run: that is the failure, not the hang it mentions.
    failed = NCCL_INFO_STUCK + (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 9, in <module>\n'
        "ValueError: too many values to unpack\n"
    )
    assert classify(failed).name == UNKNOWN
    # A row's error decides over the words: the watchdog's own report of the stuck collective.
    timeout = NCCL_INFO_STUCK + (
        "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE)"
        " ran for 1800000 milliseconds before timing out.\n"
    )
    assert classify(timeout).name == "nccl_timeout"


def test_cuda_oom_in_the_persons_words_names_the_rank_the_launcher_reports() -> None:
    # hiyouga/LlamaFactory#6827 (the studied third test set): the title says CUDA OOM, the log
    # kept only torchrun's summary of the failed rank.
    text = (
        "CUDA OOM in the middle of QLoRA with Llama 3.3 70B 4-bit AWQ\n"
        "    raise ChildFailedError(\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  exitcode  : 1 (pid: 907695)\n"
    )
    result = classify(text)
    assert result.name == "oom" and result.line_no == 1


# Rule 7 (issue 30, round six): a failure only the person's words tell, in a log whose lines show
# none, is an unknown failure with that line deciding, not "no failure found". Texts from the
# studied fifth test set, whose first-sight records the rule was fitted on.
DESCRIBED_FAILURES = [
    # mkocabas/VIBE#83: the shell's Killed, in the person's sentence.
    (
        "After processing all the datasets, I try to run the train command, but it ends with"
        " Killed error again..\nOutput of nvidia-smi:\n",
        "killed",
    ),
    # deepinsight/insightface#2262: the loss turned NaN in the training log.
    (
        "Training: 2023-03-14 09:08:43,293-Speed 2178.40 samples/sec   Loss nan   LearningRate"
        " 0.001000\n",
        "NaN in training",
    ),
    # espnet/espnet#3237: the trainer's own warning, quoted in the person's sentence.
    (
        "i try to use mix precision to training and set use_amp: true.\nhowever , it's just print"
        ' " WARNING: The grad norm is nan. Skipping updating the model" in the log\n',
        "NaN in training",
    ),
    # csuhan/opendet2#29 without its FloatingPointError line: an error only in words.
    (
        "I keep getting this error every time I try to train the model.\nEpoch 3/10\n",
        "an error",
    ),
    # NVIDIA/nccl#1126 without its NCCL lines: a hang in a log that is no NCCL job's (rule 6
    # does not apply), still no clean run.
    ("Training is stuck at epoch 3, nothing printed for an hour.\nEpoch 3/10\n", "a hang"),
    # Round eight, from the studied seventh test set and sources of the same families:
    # PKU-YuanGroup/Open-Sora-Plan#333 and Xu3XiWang/CACViT-AAAI24#9 (NaN in either case),
    # ultralytics/yolov5#4538 ("are nan"), sgrvinod/a-PyTorch-Tutorial-to-Object-Detection#43 (an
    # infinite loss), MIC-DKFZ/nnUNet#842 (a run that never ends), pytorch/pytorch#28195 (the
    # driver message in the person's words), open-mmlab/mmdetection#392 (an exit without a
    # traceback), daswer123/xtts-finetune-webui#45 (a title).
    (
        "Nan loss after 20k+ steps of training.\nHi, have you ever seen this happened?\n",
        "NaN in training",
    ),
    (
        "About the loss value is Nan\nWhen I am training, the loss always becomes Nan after a period"
        " of time.\n",
        "NaN in training",
    ),
    (
        "when use gpu, datas(box, obj, cls) are nan, while the Labels, P, R, mAP are all zero.\n",
        "NaN in training",
    ),
    ("MultiBox loss goes to infinity\nWhile training, in the first steps ...\n", "NaN in training"),
    (
        "Now, I have finished the training of a 2d nnUNet (all 1000 epoch), but the program does not"
        " stop and the GPU memory is still occupied.\n",
        "a hang",
    ),
    (
        "after i update pythorch to version1.2\nwhen i run my program，the msg is that my Nvidia"
        " version is too old.\n",
        "a driver too old",
    ),
    (
        "The training process exit without any Traceback\nloading annotations into memory...\n",
        "a failure",
    ),
    ("Errors during the training!\nEpoch 3/10\n", "an error"),
]


#: The described kinds that name a row; the others stay unknown with a coarse family.
DESCRIBED_ROWS = {
    "killed": "host_oom_killed_hint",
    "NaN in training": "nan_detected",
    "a driver too old": "driver_too_old",
}


@pytest.mark.parametrize(("text", "kind"), DESCRIBED_FAILURES)
def test_a_failure_only_the_persons_words_tell_is_unknown_not_clean(text: str, kind: str) -> None:
    result = classify(text)
    assert not result.clean
    assert result.line_no is not None
    assert result.message == text.splitlines()[result.line_no - 1].strip()
    if kind in DESCRIBED_ROWS:
        assert result.name == DESCRIBED_ROWS[kind]
        assert result.source == SIGNATURE_BY_NAME[result.name].source
    else:
        assert result.name == UNKNOWN
        assert result.coarse.startswith(kind) and "in the person's words" in result.coarse


def test_a_process_the_person_says_was_killed_is_the_hosts_kill_only_without_an_error_line() -> (
    None
):
    # georghess/neurad-studio#45, facebookresearch/SymbolicMathematics#9: no line of the log.
    for said in (
        "The model couldn't load full data batch, it was killed like the image below.\n",
        "I run this model on the ibp dataset and it gets killed when loading the training data.\n",
    ):
        assert classify(said).name == "host_oom_killed_hint"
    # An error line the log shows decides, whatever the person says.
    shown = "My run was killed.\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 MiB\n"
    assert classify(shown).name == "oom"


def test_words_near_a_failure_s_words_that_say_none_stay_clean() -> None:
    # Round eight's broader words keep their negatives: a NaN denied, a GPU (not a driver) too
    # old, a loss that does not decrease, a failure to open a device the run does not need.
    for text in (
        "The loss is not nan, it just does not decrease.\nEpoch 3/10\n",
        "It might also be that your GPU is too old.\nEpoch 3/10\n",
        "NCCL WARN Call to ibv_open_device failed\nEpoch 3/10 loss 0.412\n",
    ):
        assert classify(text).clean, text


def test_log_lines_that_say_failed_or_cannot_in_a_working_run_stay_clean() -> None:
    # What the corpora's clean logs hold (horovod/horovod#685, vidur#49, pytorch/pytorch#2757):
    # log lines, not a person saying the run failed.
    clean = (
        "NCCL WARN Call to ibv_open_device failed\n"
        "[W socket.cpp:401] [c10d] The server socket cannot be initialized on [::]:29500 (errno:"
        " 97 - Address family not supported by protocol).\n"
        "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f>\n"
        "Epoch 3/10 loss 0.412\n"
    )
    assert classify(clean).clean
    # A failure the log shows keeps its own decisive line; the person's words do not replace it.
    shown = "My training was killed, see below.\nRuntimeError: CUDA error: unknown error\n"
    result = classify(shown)
    assert result.message == "RuntimeError: CUDA error: unknown error"


# Rule 7c (issue 30, round eight): the person's own words in a log no row, failure line or kind
# of rule 7 reads. Texts from the studied sets' first-sight records: a slowdown told in the first
# person (clovaai/voxceleb_trainer#110), a greeting over a log (MIC-DKFZ/nnUNet#1490), a question
# (amdegroot/ssd.pytorch#539), a run that works on one node and not on two (NVIDIA/nccl#447).
PERSONS_WORDS = [
    "I saw a very strange behavior during training. The Training slows down after a few steps.\n"
    "Python Version: 3.6.9\n",
    "Hello, nnUNet community,\n\n2023-06-11 23:08:33.267476: Current learning rate: 0.01\n"
    "using pin_memory on device 0\n",
    "Why is training so slow and GPU utilization so low?\n",
    "I am using GCP and created slurm cluster, using pytorch for training NCCL backend.\n"
    "When using 1 nodes it works .\n",
]


@pytest.mark.parametrize("text", PERSONS_WORDS)
def test_a_log_in_the_persons_words_that_no_row_reads_is_unknown_not_clean(text: str) -> None:
    result = classify(text)
    assert result.name == UNKNOWN
    assert not result.clean
    assert result.coarse.startswith("a problem in the person's words")
    assert result.line_no is not None
    assert result.message == text.splitlines()[result.line_no - 1].strip()


# Issue 30, round ten: a run or a GPU the person says does not work, over a run that shows no
# failure line (test8's first-sight "no failure found" verdicts).
NOT_WORKING = [
    # https://github.com/ROCm/pytorch/issues/342 (the loss never moves; labelled unknown)
    "Cannot train on gfx803\nIn the PyTorch beginning tutorial, there are no errors, but the"
    " network is clearly not being trained:\n[1,  2000] loss: 2.304\n[1,  4000] loss: 2.303\n"
    "[2, 12000] loss: 2.303\nFinished Training\n",
    # (pytorch/pytorch#84550, "Pytorch does not recognize GPU in WSL2", was here until round
    # fifteen: rule 7's "no GPU in WSL" kind names it wsl_gpu_unavailable, its label;
    # tests/test_signatures_spellings.py.)
    # https://github.com/huggingface/lerobot/issues/2363 (a CPU-only torch on a Jetson)
    "On jetson AGX Orin no gpu used to train policy : We recommend that you migrate to"
    " TorchCodec\n- PyTorch version: 2.7.1+cpu\n"
    "WARNING:root:No accelerated backend detected. Using default cpu, this will be slow.\n"
    "WARNING:lerobot.configs.policies:Device 'cuda' is not available. Switching to 'cpu'.\n",
]


@pytest.mark.parametrize("text", NOT_WORKING)
def test_a_run_or_gpu_the_person_says_does_not_work_is_unknown_not_clean(text: str) -> None:
    result = classify(text)
    assert result.name == UNKNOWN and not result.clean
    assert result.coarse.startswith("a problem in the person's words")
    assert result.line_no == 1
    # Without the person's sentences the run is what is left: no failure found.
    said = ("not being trained", "Same issue")
    run = "\n".join(line for line in text.splitlines()[1:] if not any(w in line for w in said))
    assert classify(run).clean


def test_log_lines_that_say_not_used_or_not_available_are_not_the_persons_words() -> None:
    # What clean runs print: transformers' checkpoint warning, a DETR-style notice, a CPU
    # fallback notice, a loss that does not decrease told as a fact, libibverbs' warning.
    for line in (
        "Some weights of the model checkpoint at bert-base-uncased were not used when"
        " initializing BertModel: ['cls.predictions.bias']",
        "Not using distributed mode",
        "CUDA is not available, using CPU",
        "libibverbs: Warning: couldn't open config directory '/etc/libibverbs.d'.",
        # TensorFlow 2.13+ on a host without CUDA, with and without its timestamp.
        "I tensorflow/tsl/cuda/cudart_stub.cc:28] Could not find cuda drivers on your machine,"
        " GPU will not be used.",
        "2023-08-23 10:05:50.296451: I tensorflow/tsl/cuda/cudart_stub.cc:28] Could not find cuda"
        " drivers on your machine, GPU will not be used.",
    ):
        assert classify(line + "\nEpoch 3/10 loss 0.412\n").clean, line


def test_the_persons_words_that_decide_are_not_a_greeting_when_there_are_others() -> None:
    # MIC-DKFZ/nnUNet#1490: the greeting comes first, the sentence says what the person saw.
    text = (
        "Hello, nnUNet community,\nI am trying to run nnUNet on my dataset, and somehow, my"
        " training is stopped here.\n\n2023-06-11 23:08:33.267476: Current learning rate: 0.01\n"
        "Thanks\n"
    )
    result = classify(text)
    assert result.name == UNKNOWN
    assert result.line_no == 2
    assert result.message.startswith("I am trying to run nnUNet")


def test_log_lines_that_read_like_words_are_not_the_persons_words() -> None:
    # The clean corpora's log lines: tensorflow's "I" level (tensorflow/tensorflow#3891), the NGC
    # banner (sgl-project/sglang#3226), a UserWarning's sentence (CompVis/latent-diffusion#281),
    # bitsandbytes' question under its own prefix, a logged question.
    for text in (
        "I tensorflow/stream_executor/dso_loader.cc:108] successfully opened CUDA library"
        " libcublas.so locally\nEpoch 3/10 loss 0.412\n",
        "This container image and its contents are governed by the NVIDIA Deep Learning Container"
        " License.\n",
        "UserWarning: Grad strides do not match bucket view strides. This may indicate grad was"
        " not created according to the gradient layout contract, or that the param's strides"
        " changed since DDP was constructed.\n",
        "CUDA SETUP: Do you have a CUDA driver installed?\n",
        "[2024-05-01 10:00:00] Why is the loader slow? prefetch_factor=2\n",
    ):
        found = classify(text)
        assert "the person's words" not in found.coarse, text
        # Rule 8 (issue 30, round eight): a text that shows a run is clean; the banner alone and
        # bitsandbytes' question alone show none, so they are unknown for that reason, not 7c's.
        if "Epoch" in text or "UserWarning" in text or "[2024" in text:
            assert found.clean, text
        else:
            assert (found.name, found.coarse) == (UNKNOWN, NO_RUN_COARSE), text
    # A line the log shows decides, whatever the person wrote over it (junjie18/CMT#15's text
    # with the out-of-memory line a row reads).
    shown = "I tried to set sample per GPU=1.\nRuntimeError: CUDA out of memory.\n"
    assert classify(shown).name == "oom"


# facebookresearch/DeepSDF#40 (the studied fifth test set): the traceback pasted inside inline
# code, an error no row names, then the C++ abort that error caused.
DEEPSDF_40 = """when I'm running "train_deep_sdf.py" in epoch 26, the error occurs.
`Traceback (most recent call last):
  File "train_deep_sdf.py", line 501, in main_function
    chunk_loss = loss_l1(pred_sdf, sdf_gt[i].cuda()) / num_sdf_samples
RuntimeError: CUDA error: unspecified launch failure
terminate called after throwing an instance of 'c10::Error'
  what():  CUDA error: unspecified launch failure (insert_events at THCCachingAllocator.cpp:470)
frame #0: c10::Error::Error(c10::SourceLocation, std::string const&) + 0x45 (0x7f16 in libc10.so)
"""


def test_a_secondary_row_loses_to_an_unnamed_exception_before_it() -> None:
    """Rule 4b: "terminate called" only follows the error; an error no row names is unknown,
    its exception deciding (and a traceback inside backticks is a traceback)."""
    result = classify(DEEPSDF_40)
    assert result.name == UNKNOWN
    assert result.message == "RuntimeError: CUDA error: unspecified launch failure"
    assert result.coarse == "a CUDA error"
    # With no Python exception before it, the CUDA error in the abort's what() decides (rule 2d).
    alone = classify("terminate called" + DEEPSDF_40.split("terminate called", 1)[1])
    assert alone.name == UNKNOWN
    assert alone.message.startswith("what():  CUDA error: unspecified launch failure")
    # A KeyboardInterrupt before the watchdog's timeout is no failure of its own.
    interrupted = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 9, in <module>\n'
        "KeyboardInterrupt\n"
        "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1,"
        " OpType=ALLREDUCE) ran for 1800000 milliseconds before timing out.\n"
    )
    assert classify(interrupted).name == "nccl_timeout"


def test_a_cpp_abort_over_a_gpu_error_no_row_reads_is_that_error_unknown() -> None:
    """Rule 2d: "terminate called" whose what() carries a GPU runtime's error no row reads only
    reports it (facebookresearch/DeepSDF#40's abort without its Python traceback;
    pytorch/pytorch#2567's THC spelling): unknown, the what() line deciding."""
    for what in (
        "  what():  CUDA error: unspecified launch failure (insert_events at"
        " THCCachingAllocator.cpp:470)",
        "  what():  cuda runtime error (4) : unspecified launch failure at"
        " /home/ubuntu/pytorch/torch/lib/THC/generic/THCStorage.c:32",
    ):
        text = (
            "terminate called after throwing an instance of 'c10::Error'\n"
            f"{what}\n"
            "frame #0: c10::Error::Error(c10::SourceLocation, std::string const&) + 0x45\n"
        )
        result = classify(text)
        assert result.name == UNKNOWN
        assert (result.line_no, result.message) == (2, what.strip())
        assert result.coarse == "a CUDA error"
    # A what() a row reads names that row (rule 2c); a what() that is no GPU error, and an abort
    # with no what(), stay the C++ abort (hku-mars/GS-SDF#1's libtorch abort).
    told = (
        "terminate called after throwing an instance of 'c10::Error'\n  what():  CUDA error: {}\n"
    )
    assert classify(told.format("device-side assert triggered")).name == "cuda_device_side_assert"
    assert classify(told.format("an illegal memory access was encountered")).name == (
        "cuda_illegal_memory_access"
    )
    other = "terminate called after throwing an instance of 'std::runtime_error'\n  what():  {}\n"
    assert classify(other.format("could not open file data.bin")).name == "cpp_terminate"
    alone = "terminate called after throwing an instance of 'std::bad_alloc'\nAborted\n"
    assert classify(alone).name == "cpp_terminate"


# unslothai/unsloth#1175 (the studied seventh test set): dynamo's warning dumps a traceback, the
# excerpt ends before its exception.
UNSLOTH_1175 = """Hi thanks for the lib! When trying torch_compile=True for trainer for llama3.2 1B, I see:

[01:17:10.938]: W1024 01:17:10.936000 1404 torch/_dynamo/convert_frame.py:1009] Traceback (most recent call last):
[01:17:10.938]: W1024 01:17:10.936000 1404 torch/_dynamo/convert_frame.py:1009]   File "/opt/conda/lib/python3.11/site-packages/torch/_dynamo/convert_frame.py", line 948, in __call__
[01:17:10.938]: W1024 01:17:10.936000 1404 torch/_dynamo/convert_frame.py:1009]     result = self._inner_convert(
[01:17:10.938]: W1024 01:17:10.936000 1404 torch/_dynamo/convert_frame.py:1009]              ^^^^^^^^^^^^^^^^^^^^
"""  # noqa: E501


def test_a_traceback_cut_before_its_exception_is_an_unknown_failure() -> None:
    """Rule 7b: frames with no exception after them show a failure no line names."""
    result = classify(UNSLOTH_1175)
    assert result.name == UNKNOWN and not result.clean
    assert result.line_no == 3
    assert result.coarse.startswith("a Python traceback cut before its exception")
    # A traceback that ends in its exception is not cut (that exception decides, as before).
    ended = UNSLOTH_1175 + (
        "[01:17:10.938]: W1024 01:17:10.936000 1404 torch/_dynamo/convert_frame.py:1009]"
        " ValueError: bad shape\n"
    )
    assert not classify(ended).coarse.startswith("a Python traceback cut")
    # Ctrl-C's traceback ends in KeyboardInterrupt: not cut (a pasted stack, as before).
    ctrl_c = (
        'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
        "    time.sleep(1)\nKeyboardInterrupt\n"
    )
    assert not classify(ctrl_c).coarse.startswith("a Python traceback cut")
    # The person's words after the frames close it for rule 7b (the paste ended, not the
    # traceback; what the scanner makes of the open traceback is as before).
    worded = (
        'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\nAny idea?\n'
    )
    assert not classify(worded).coarse.startswith("a Python traceback cut")


# pytorch/pytorch#2567 (the studied sixth test set): frames pasted without their header, an error
# no row names, then the C++ abort it caused.
PYTORCH_2567 = """I keep having this error during the training using recent pytorch version.
  File "/home/ubuntu/anaconda3/lib/python3.6/site-packages/torch/_utils.py", line 66, in _cuda
    return new_type(self.size()).copy_(self, async)
RuntimeError: cuda runtime error (4) : unspecified launch failure at /home/ubuntu/pytorch/torch/lib/THC/THCTensorCopy.cu:85
terminate called after throwing an instance of 'std::runtime_error'
  what():  cuda runtime error (4) : unspecified launch failure at /home/ubuntu/pytorch/torch/lib/THC/generic/THCStorage.c:182
"""  # noqa: E501


def test_frames_without_their_header_end_in_an_exception_like_a_traceback() -> None:
    """Rule 4c: the exception after header-less frames beats the secondary row after it."""
    result = classify(PYTORCH_2567)
    assert result.name == UNKNOWN
    assert result.message.startswith("RuntimeError: cuda runtime error (4) : unspecified launch")
    # Without the frames the abort is all the log shows, and its what() carries the CUDA error
    # no row reads: that error decides (rule 2d).
    alone = classify(PYTORCH_2567.split("\n", 4)[4])
    assert alone.name == UNKNOWN
    assert alone.message.startswith("what():  cuda runtime error (4) : unspecified launch failure")
    assert alone.coarse == "a CUDA error"


def test_a_described_hang_needs_nccl_s_own_lines_not_a_launcher_command() -> None:
    # stepfun-ai/Step1X-3D#12 (the studied seventh test set): torchrun in the command the person
    # typed shows a distributed job, not that NCCL is where it hangs.
    text = (
        "mutli gpu training will hung\nThe multi gpu training for the diffusion model will hung on"
        " the first gpu initialization according to the command\n\ntorchrun train.py --config"
        " configs/x.yaml --train --gpu 0,1,2,3,4,5,6,7\nIt seems that it did not initialize\n"
    )
    result = classify(text)
    assert result.name == UNKNOWN and result.coarse.startswith("a hang")


# Issue 30, round ten: a hang at the rendezvous, told with the API's names in a title, a
# sentence, a launch command or pasted code, and no line NCCL printed. The first-sight records
# named each hang.nccl (rule 6); the set labels each unknown (the hang.nccl row is a collective
# stuck in NCCL, and nothing shows NCCL started).
INIT_HANGS = [
    # https://github.com/NVIDIA/DeepLearningExamples/issues/1157
    "[BERT/Pytorch] Multi-nodes training bert hang at init_process_group\n"
    "I wanna training bert at two nodes (each is 8XA100), however the program hangs at"
    " init_process_group.\n\nThe core command to reproduce is :\n"
    'CMD="python3 -m torch.distributed.launch --master_addr=$MASTER_ADDR'
    ' --master_port=$MASTER_PORT --nnodes=2 --node_rank=$RANK --nproc_per_node=$num_gpus $CMD"\n',
    # https://github.com/pytorch/pytorch/issues/23074
    "Hang at initializing DistributedDataParallel\n"
    "Distributed processes hang at the initilization of DistributedDataParallel line.\n\n"
    "Cuda compilation tools, release 10.0, V10.0.130\nPython 3.6.5\n\n**Hanging line here:**\n"
    "generator = nn.parallel.DistributedDataParallel(\n                self.generator,\n"
    "                device_ids=[self.local_rank],\n",
    # https://github.com/pytorch/pytorch/issues/15638
    "init_process_group() sometimes hangs (not stable) with pytorch 1.0.0\n"
    "Looks like it hangs at the function call of `c10d::TCPStore::TCPStore(std::string const&,"
    " unsigned short, bool) ()`\n\n## Expected behavior\nIt should return rather than stuck.\n",
]


@pytest.mark.parametrize("text", INIT_HANGS)
def test_a_described_hang_needs_lines_nccl_printed_not_the_api_in_words_or_code(text) -> None:
    result = classify(text)
    assert result.name == UNKNOWN
    assert result.coarse.startswith("a hang (in the person's words")
    assert result.line_no == 1
    # The same text with a line NCCL printed: the job reached NCCL, rule 6 names the hang.
    nccl = text + "node1:2121:2136 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    assert classify(nccl).name == "hang.nccl"


def test_cuda_gdb_on_a_running_nccl_kernel_is_an_nccl_hang() -> None:
    # k2-fsa/snowfall#71 (the studied fifth test set), NVIDIA/cuda-gdb#18.
    listing = (
        "This is what I got:\n(cuda-gdb) info cuda kernels\n"
        "  Kernel Parent Dev Grid Status   SMs Mask GridDim BlockDim Invocation\n"
        "*      0      -   0 52162520 Active 0x00000001 (1,1,1) (64,1,1)"
        " ncclReduceRingLLKernel_sum_f64()\n"
    )
    assert classify(listing).name == "hang.nccl"
    focus = (
        "[Switching focus to CUDA kernel 0, grid 11534, block (0,0,0), thread (0,0,0), device 1]\n"
        "ncclFunction_AllGather_RING_SIMPLE_Sum_int8_t () at /data/nccl/src/collectives/device/"
        "./prims_simple.h:128\n"
    )
    assert classify(focus).name == "hang.nccl"
    # The kernel's name alone, in no debugger's output, is no hang.
    assert classify("Launching ncclKernel_AllReduce_RING_LL_Sum_float\n").name != "hang.nccl"


def test_bitsandbytes_missing_libcuda_is_the_wsl2_loader_path_only_on_wsl2() -> None:
    # lxe/simple-llm-finetuner#13 (the studied seventh test set): WSL2 in the title only;
    # bitsandbytes-foundation/bitsandbytes#243 and #449 (WSL2), its PR #337 (the loader path).
    line = (
        "CUDA SETUP: WARNING! libcuda.so not found! Do you have a CUDA driver installed? If you"
        " are on a cluster, make sure you are on a CUDA machine!\n"
    )
    assert classify("(WSL2) - No GPU / Cuda detected....\n" + line).name == "wsl_libcuda_missing"
    assert classify(line, HostFacts(wsl2=True)).name == "wsl_libcuda_missing"
    # Elsewhere bitsandbytes' warning is no verdict of its own (the run goes on, on the CPU).
    assert classify(line, HostFacts(wsl2=False)).name != "wsl_libcuda_missing"


def test_the_persons_words_are_read_at_the_head_of_a_log_only() -> None:
    """Rule 7 reads the first 64 KiB (a title, a description): words deep in a machine log are
    not the person's, and searching all of a big log for them doubled classify's time."""
    head = "My training got killed after epoch 3.\n"
    progress = progress_log(1_000)  # about 100 KB of progress lines, no failure
    assert classify(head + progress).name == "host_oom_killed_hint"
    assert classify(progress + head).clean


# Rule 8 (issue 30, round eight): "no failure found" needs a run in the text. Real texts from the
# studied corpora, cut as the field cuts them: kanhavishva/KeyHunt-Cuda#53 (studied test5; at
# first sight "clean", today no_kernel_image by its last line) before its failure line; the
# command WenmuZhou/PytorchOCR#275 (studied test2, labelled clean) ran, without the warning its
# run printed; the environment listing of pytorch/pytorch#74733 (studied test7) without its
# UserWarning.
KEYHUNT_53 = (
    "v. 1.03\n"
    "CUDA 10.1 runtime with gt650m\n"
    "получаю сообщение и программа закрывается:\n"
    "no kernel image is available for execution this device\n"
)
PYTORCHOCR_275 = (
    "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6 torchrun --nnodes=1 --nproc_per_node=7 tools/train.py"
    " -c configs/rec/PP-OCRv3/ch_PP-OCRv3_rec_coc2300.yml \\\n"
    "-o Global.checkpoints=output/rec/rec_ppocr_v3/best.pth\n\n"
    "[W reducer.cpp:1300] Warning: find_unused_parameters=True was specified in DDP constructor,"
    " but did not find any unused parameters in the forward pass.\n"
)
PYTORCH_74733_VERSIONS = (
    "PyTorch version: 1.7.0+cu110\nIs debug build: True\nCUDA used to build PyTorch: 11.0\n"
    "ROCM used to build PyTorch: N/A\n\nOS: CentOS Linux 7 (Core) (x86_64)\n"
    "GCC version: (GCC) 8.2.0\nPython version: 3.6.4 (default, Mar 17 2022, 20:24:30)\n"
    "Is CUDA available: False\n"
)


@pytest.mark.parametrize(
    "text, message",
    [
        ("".join(KEYHUNT_53.splitlines(keepends=True)[:3]), "v. 1.03"),
        (PYTORCHOCR_275.split("\n\n")[0] + "\n", PYTORCHOCR_275.splitlines()[0]),
        (PYTORCH_74733_VERSIONS, "PyTorch version: 1.7.0+cu110"),
        ("$ python train.py --lr=0.01 --epoch 10\n", "python train.py --lr=0.01 --epoch 10"),
    ],
)
def test_a_text_with_no_failure_line_and_no_run_is_unknown_not_clean(text, message) -> None:
    result = classify(text)
    assert (result.name, result.clean, result.failure_evidence) == (UNKNOWN, False, False)
    assert result.coarse == NO_RUN_COARSE
    assert result.message == message  # the first meaningful line; a prompt's command without it


def test_the_same_texts_with_their_failure_or_their_run_are_named_or_clean() -> None:
    assert classify(KEYHUNT_53).name == "no_kernel_image"
    assert classify(PYTORCHOCR_275).clean
    warning = (
        "/home/python3_env/venv-py3/lib/python3.6/site-packages/torch/cuda/__init__.py:52:"
        " UserWarning: CUDA initialization: Found no NVIDIA driver on your system.\n"
    )
    assert classify(warning + PYTORCH_74733_VERSIONS).name == "no_nvidia_driver"


# One line of each form of run output, from the labelled-clean logs of the studied corpora
# (rule 8's :data:`repro.signatures.runoutput._RUN_OUTPUT`).
RUN_LINES = [
    "25it [00:08,  3.00it/s]",  # tqdm (thuml/AFN#8)
    "Epoch 2 train Loc Loss: 0.0044 Cls Loss: 0.0044 Tot Loss: 0.0044 Accu :0.0008",  # WLASL#74
    "[lfw][878000]Accuracy-Flip: 0.99450+-0.00422",  # deepinsight/insightface#697
    "2024-04-10 04:59:03 | INFO | logs | Total loss at epoch 5, step at 58400",  # RVC#1882
    "I0814 17:34:01.763001 139699710150400 tf_logging.py:115] loss = 0.90108997",  # mlcommons#124
    "`[W NNPACK.cpp:80] Could not initialize NNPACK! Reason: Unsupported hardware.`",  # lama#277
    "ml3:32632:32662 [0] NCCL INFO NET/Socket : 3 interfaces found",  # horovod/horovod#685
    "libibverbs: Warning: couldn't open config directory '/etc/libibverbs.d'.",  # docker-monitor#7
    "Exception ignored in: <bound method DataLoaderIter.__del__ of <...>>",  # pytorch/pytorch#6461
    "| NVIDIA-SMI 410.104	  Driver Version: 410.104      CUDA Version: 10.0     |",  # crnn#3
    "ROCk module is loaded",  # ROCm/ROCm#1530 (rocminfo)
    "        libcuda.so.1 (libc6,x86-64) => /usr/lib/wsl/lib/libcuda.so.1",  # WSL#8587 (ldconfig)
    "INFO: Start training...",  # IterativePFN#4
]


@pytest.mark.parametrize("line", RUN_LINES)
def test_each_form_of_run_output_makes_a_text_without_a_failure_clean(line: str) -> None:
    assert shows_run(line)
    assert classify(line + "\n").clean


def test_a_command_s_options_and_an_environment_listing_are_no_run() -> None:
    for text in (
        "python train.py --lr=0.01 --epoch 10 --batch 8",
        "torch==2.0.1\nnumpy==1.24.1\n",
        PYTORCH_74733_VERSIONS,
    ):
        assert not shows_run(text), text


def test_the_runner_adds_nothing_from_a_log_with_no_failure_line_run_or_not() -> None:
    """The runner knows the case failed: a log with no failure line adds no decisive line to the
    scenario's message, whether rule 8 calls it unknown (no run) or it is clean (a run)."""
    from repro.outcomes import Outcome
    from repro.runner.protocol import Events
    from repro.runner.verdict import classify as runner_classify

    events = Events(result={"outcome": "failed", "message": "loss did not decrease"})
    for log in (PYTORCH_74733_VERSIONS, RUN_LINES[0] + "\n"):
        assert runner_classify(1, None, events, log) == (
            Outcome.FAILED,
            UNKNOWN,
            "loss did not decrease",
        )
    # A failure line still adds its decisive line.
    outcome, _, message = runner_classify(1, None, events, "ValueError: bad lr\n")
    assert message == "loss did not decrease | ValueError: bad lr"
