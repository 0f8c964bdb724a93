#!/usr/bin/env bash
# Session 22 final run: the W4A16 GPU tests (TMA ring, decode kernels and their dispatch table, the fold,
# the layer), the issue-5 acceptance benchmark (bench_linear --format w4a16: whole layer, GPTQ symmetric
# layer, cold weights, against bf16 F.linear and tinygemm in the same run) and bench_w4tma.py on 7168x16384.
#   OUT=/some/dir bash benchmarks/gpu_s22fin.sh   # ~6 min after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s22fin
gpu_pytest w4_tests ${GT_LIMIT:-240} tests/gpu/test_w4a16_tma_gpu.py tests/gpu/test_w4a16_cuda_gpu.py \
    tests/gpu/test_w4a16_fold.py tests/gpu/test_w4a16_gpu.py
timeout ${W4_LIMIT:-170} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 40
gpu_probe tma_many 90 "BEST|rror|Traceback" benchmarks/bench_w4tma.py --shapes many --reps 9
gpu_cleanup
