"""torch's "No CUDA GPUs are available" names ``cuda_no_device`` (issue 30, round eleven).

torch's ``device_count_ensure_non_zero`` (c10/cuda/CUDAFunctions.cpp) raises it when
cudaGetDeviceCount answers cudaErrorNoDevice or zero devices: the driver works and shows the
process no GPU, most often because CUDA_VISIBLE_DEVICES names a GPU the host lacks. The other
answers of the same call raise their own messages, which other rows read; each text below is a
real one from a public issue (URL beside it). See repro/data/signatures.yaml for the sources.
"""

from __future__ import annotations

import pytest

from repro.signatures.engine import UNKNOWN, classify

#: (real text, its public source, the line that decides).
NO_DEVICE_TEXTS = [
    (
        'Traceback (most recent call last):\n  File "train.py", line 469, in <module>\n'
        "    safe_state(args.quiet)\n"
        '  File "./exp/CoR-GS/utils/general_utils.py", line 139, in safe_state\n'
        '    torch.cuda.set_device(torch.device("cuda:0"))\n'
        '  File "./.local/lib/python3.8/site-packages/torch/cuda/__init__.py", line 399, in'
        " set_device\n    torch._C._cuda_setDevice(device)\n"
        '  File "./.local/lib/python3.8/site-packages/torch/cuda/__init__.py", line 293, in'
        " _lazy_init\n    torch._C._cuda_init()\n"
        "RuntimeError: No CUDA GPUs are available\n",
        "https://github.com/jiaw-z/CoR-GS/issues/23",
        10,
    ),
    (
        '  File "/home/guest/project/pytorch/torch/cuda/__init__.py", line 383, in _lazy_init\n'
        "    torch._C._cuda_init()\nRuntimeError: No HIP GPUs are available\n",
        "https://github.com/ROCm/hip/issues/3799",
        3,
    ),
    (
        "THCudaCheck FAIL file=/opt/conda/conda-bld/pytorch_1532584813488/work/aten/src/THC/"
        "THCGeneral.cpp line=74 error=38 : no CUDA-capable device is detected\n"
        "Traceback (most recent call last):\n"
        '  File "trainval_net.py", line 222, in <module>\n    im_data = im_data.cuda()\n'
        "RuntimeError: cuda runtime error (38) : no CUDA-capable device is detected at"
        " /opt/conda/conda-bld/pytorch_1532584813488/work/aten/src/THC/THCGeneral.cpp:74\n",
        "https://github.com/jwyang/faster-rcnn.pytorch/issues/377",
        1,
    ),
    (
        "RuntimeError: cuda runtime error (100) : no CUDA-capable device is detected at"
        " /pytorch/aten/src/THC/THCGeneral.cpp:50\n",
        "https://github.com/slczgwh/REDN/issues/5",
        1,
    ),
    (
        '  File "/home2/xh/.conda/envs/skg/lib/python3.7/site-packages/torch/distributed/'
        'distributed_c10d.py", line 603, in _new_process_group_helper\n    timeout)\n'
        "RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!\n",
        "https://github.com/xlang-ai/UnifiedSKG/issues/12",
        3,
    ),
]


@pytest.mark.parametrize(("text", "source", "line_no"), NO_DEVICE_TEXTS)
def test_no_visible_gpu_names_cuda_no_device(text: str, source: str, line_no: int) -> None:
    result = classify(text)
    assert (result.name, result.line_no) == ("cuda_no_device", line_no), source


def test_the_other_answers_of_torchs_device_count_keep_their_rows() -> None:
    """No driver, an init failure and an index past the visible GPUs are other rows."""
    assert classify("RuntimeError: Found no NVIDIA driver on your system.\n").name == (
        "no_nvidia_driver"
    )
    init = "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.\n"
    assert classify(init).name == "cuda_driver_init_failed"
    ordinal = "RuntimeError: CUDA error: invalid device ordinal\n"
    assert classify(ordinal).name == "invalid_device_ordinal"


def test_the_bare_message_in_a_log_line_of_a_cpu_run_is_not_the_row() -> None:
    """TensorFlow's cuInit line and Theano's warning print cudaErrorNoDevice's message on runs
    that go on on the CPU (Theano's from fastai/courses#27, the studied train set; TensorFlow's
    from its stream_executor cuda_driver.cc): only torch's raised spellings name the row."""
    theano = (
        "WARNING (theano.sandbox.cuda): CUDA is installed, but device gpu is not available  (error:"
        " Unable to get the number of gpus available: no CUDA-capable device is detected)\n"
    )
    tf = (
        "E tensorflow/stream_executor/cuda/cuda_driver.cc:271] failed call to cuInit:"
        " CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected\n"
    )
    for text in (theano, tf):
        assert classify(text).name != "cuda_no_device"
    # TensorFlow's E-level line stays an unnamed CUDA error line (Theano's: the run forms' tests).
    result = classify(tf + "Epoch 1/10 loss: 0.52\n")
    assert (result.name, result.coarse) == (UNKNOWN, "a CUDA error")
