#!/usr/bin/env bash
# Session 18 run 2. Needs GemmConfig.k_unroll (the FP8 Triton GEMMs load 2 / 4 K blocks per loop
# iteration). Its GPU tests (swap-AB and split kernels), then probe_fp8_wide.py --set ku on the wide
# shapes at M = 16 / 4 / 1: whole op (quantization launch + GEMM), cold weights, alternated replays.
#   OUT=/some/dir bash benchmarks/gpu_s18ku.sh   # ~300 s
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_pytest swapab_tests 150 tests/gpu/test_fp8_swapab_gpu.py
gpu_probe ku16 200 "WIDE|rror" benchmarks/probe_fp8_wide.py --set ku --ms 16 4
gpu_probe ku1 120 "WIDE|rror" benchmarks/probe_fp8_wide.py --set ku --ms 1
gpu_cleanup
