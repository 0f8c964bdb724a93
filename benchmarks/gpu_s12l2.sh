#!/usr/bin/env bash
# Session 12: the FP8 decode GEMM's L2 prefetch (P digit: the CTA first asks L2 for its weight rows'
# k range, fp8_gemv.cuh): probe_fp8_preq.py, P = 1 codes against the same codes with P = 0 and the
# dispatch (CUDA on 2112x7168, Triton on the wide shapes), then the GPU tests of the CUDA kernel.
#   OUT=/some/dir bash benchmarks/gpu_s12l2.sh
# Ran once (session 12 run 2, cd5f083); P = 1 was slower everywhere and was removed after it, so this
# script needs that commit.
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s12l2
P="PREQ|rror"
gpu_probe l16 80 "$P" benchmarks/probe_fp8_preq.py --m 16 --shapes 2112x7168 --kernel-codes "" --qmodes early \
    --gemv-codes 11011114,111011114,111011116,111011112 \
    --pair-codes 11011114,111011114,111011116,111011112,111021108
gpu_probe l8 60 "$P" benchmarks/probe_fp8_preq.py --m 8 --shapes 2112x7168 --gemv-codes "" --pair-codes "" --qmodes early \
    --kernel-codes 10011116,110011116,110011114,110011212
gpu_probe l1 60 "$P" benchmarks/probe_fp8_preq.py --m 1 --shapes 2112x7168 --gemv-codes "" --pair-codes "" --qmodes early \
    --kernel-codes 10011116,110011116,110011114
gpu_probe lw16 100 "$P" benchmarks/probe_fp8_preq.py --m 16 --shapes 24576x1536,7168x16384 --gemv-codes "" --qmodes early \
    --kernel-codes "" --pair-codes 11011104,111011104,111011106,111021106,111041108,111011116,111011112
gpu_probe lw1 90 "$P" benchmarks/probe_fp8_preq.py --m 1 --shapes 24576x1536,7168x16384 --gemv-codes "" --pair-codes "" --qmodes early \
    --kernel-codes 10011104,110011104,110011106,110011116,110021108,110041108
gpu_pytest fp8_cuda_tests 150 tests/gpu/test_fp8_cuda_gemv.py
gpu_cleanup
