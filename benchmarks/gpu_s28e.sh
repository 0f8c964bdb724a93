#!/usr/bin/env bash
# Session 28 run 6: the FP8 TMA ring at the session's end (pair split and losing keys removed, kTmaKeys
# trimmed): build and its GPU tests plus the register kernel's auto-dispatch tests.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s28e.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s28e
gpu_pytest tma 60 tests/gpu/test_fp8_tma_gpu.py
gpu_pytest fp8cuda 40 tests/gpu/test_fp8_cuda_gemv.py -k "auto"
