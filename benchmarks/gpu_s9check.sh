#!/usr/bin/env bash
# Session 9's check after the last host-side change (codes with a digit above X refused): the FP8
# CUDA GPU tests, and one gpu_probe call (the helper the FP8 scripts now share).
#   OUT=/some/dir bash benchmarks/gpu_s9check.sh   # ~60 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s9check
gpu_pytest fp8_cuda_tests 120 tests/gpu/test_fp8_cuda_gemv.py
gpu_probe c16 60 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 2112x7168 --gemv-codes 11011114 \
    --pair-codes 11011114 --qmodes early --kernel-codes ""
gpu_cleanup
