#!/usr/bin/env bash
# Session 10: the pre-quantized FP8 decode GEMM loading one group scale per lane (its own token's)
# and shuffling it to the C columns, instead of two scalar loads per token tile: the FP8 CUDA GPU
# tests, then probe_fp8_preq.py on the table's Q = 1 entries (same method as run 1).
#   OUT=/some/dir bash benchmarks/gpu_s10sc.sh   # ~200 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s10sc
gpu_pytest fp8_cuda_tests 150 tests/gpu/test_fp8_cuda_gemv.py
gpu_probe p16 80 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 2112x7168 --kernel-codes "" --qmodes early \
    --gemv-codes 11011114,11011116 --pair-codes 11011114,11011115,11011116
gpu_probe p12 60 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 12 --shapes 2112x7168 --kernel-codes "" --qmodes early --gemv-codes "" \
    --pair-codes 11011114
gpu_probe p16b 60 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 1536x7168,576x7168 --kernel-codes "" --qmodes early --gemv-codes "" \
    --pair-codes 11011116,11041108
gpu_cleanup
