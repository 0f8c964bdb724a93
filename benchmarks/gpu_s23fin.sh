#!/usr/bin/env bash
# Session 23 final run: the W4A16 GPU tests (decode kernels and their dispatch table, TMA ring, fold,
# split-K GEMMs, the layer), bench_w4tma.py on 2112x7168 at M = 5 .. 8 (the TMA entry against the bulk
# ring it replaced), and the issue-5 acceptance benchmark (bench_linear --format w4a16: whole layer,
# GPTQ symmetric layer, cold weights, against bf16 F.linear and tinygemm in the same run).
#   OUT=/some/dir bash benchmarks/gpu_s23fin.sh   # ~6 min after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s23fin
gpu_pytest w4_tests ${GT_LIMIT:-260} tests/gpu/test_w4a16_tma_gpu.py tests/gpu/test_w4a16_cuda_gpu.py \
    tests/gpu/test_w4a16_fold.py tests/gpu/test_w4a16_gpu.py tests/gpu/test_w4a16_gemm_gpu.py
gpu_probe tma_few8 60 "BEST|rror|Traceback" benchmarks/bench_w4tma.py --shapes few --ms 5 6 7 8 --reps 9 \
    --codes 21844 22464 11824
timeout ${W4_LIMIT:-200} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 40
gpu_cleanup
