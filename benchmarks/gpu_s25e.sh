#!/usr/bin/env bash
# Session 25 run 5: the FP8 decode GEMV's cluster split (C = 1: the S split CTAs of a tile group in one
# cluster, summed through distributed shared memory) and x ahead at two row tiles (X = 1, R = 2). The
# FP8 CUDA GEMV GPU tests, then 2112x7168 at M = 16 / 12 / 9: the GEMV alone on pre-quantized x and
# the whole path (quantizer with its PDL trigger early + GEMV) against the dispatch's 11011114.
#   OUT=/some/dir bash benchmarks/gpu_s25e.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s25e
gpu_pytest fp8_gemv_tests 240 tests/gpu/test_fp8_cuda_gemv.py
for m in 16 12 9; do
    gpu_probe fp8_m$m 100 "PREQ|rror|Traceback" benchmarks/probe_fp8_preq.py --m $m --shapes 2112x7168 \
        --gemv-codes 11011114,11022108,111022108,111021108,111042104 \
        --pair-codes 11011114,11022108,111022108,111022106,111021108,111042104 --qmodes early --kernel-codes ""
done
gpu_cleanup
