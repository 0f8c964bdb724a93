#!/usr/bin/env bash
# FP8 decode at M = 9..16 (issue 4): probe_fp8_preq.py on the pre-quantized CUDA path (warps per CTA,
# quantizer PDL trigger) and the Triton path, per shape and M; then the FP8 CUDA kernel tests.
#   OUT=/some/dir bash benchmarks/gpu_fp8xs.sh   # ~250 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build fp8xs
gpu_probe m16 120 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 2112x7168 --kernel-codes ""
gpu_probe m12 120 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 12 --shapes 2112x7168 --kernel-codes ""
gpu_probe m9 120 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 9 --shapes 2112x7168 --kernel-codes "" --gemv-codes 1011116,1011114 --pair-codes 1011116,1011115,1011114,1011113,1011214
gpu_probe m16b 120 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 1536x7168,576x7168 --kernel-codes "" --gemv-codes 1011116,1011114,1041108,1041107 \
    --pair-codes 1011116,1011115,1011114,1011214,1041108,1041107,1041106
gpu_probe m16w 120 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 24576x1536,7168x16384 --kernel-codes "" --gemv-codes "" --pair-codes ""
gpu_pytest fp8xs_tests 120 -x tests/gpu/test_fp8_cuda_gemv.py
gpu_cleanup
