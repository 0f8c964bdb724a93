#!/usr/bin/env bash
# Session 18 run 3 (needs the k_unroll entry of GEMM_CONFIGS for 24576x1536 M = 5..16): the FP8
# Triton GPU tests (the whole-op test over M x shapes x dtypes x backends included), probe_fp8_wide.py --set ku3 at M = 2 / 5 / 8 / 12 / 16, then bench_linear
# --format fp8-block (the issue-4 acceptance file: whole layer, cold weights, against bf16
# F.linear and torch._scaled_mm in the same run).
#   OUT=/some/dir bash benchmarks/gpu_s18fin.sh   # ~330 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s18fin
gpu_pytest fp8_tests 230 tests/gpu/test_fp8_swapab_gpu.py tests/gpu/test_fp8_gpu.py
gpu_probe ku3 120 "WIDE|rror" benchmarks/probe_fp8_wide.py --set ku3 --ms 2 5 8 12 16
timeout ${FP8_LIMIT:-170} python benchmarks/bench_linear.py --format fp8-block --out "$OUT" 2>&1 | tail -n 40
gpu_cleanup
