#!/usr/bin/env bash
# Session 12: the mma.sync W4A16 GEMM's dispatch extended to M = 64 on many-row layers: the GEMM GPU
# tests (auto-dispatch bounds, every config), then bench_linear --format w4a16 at M = 64 (whole layer,
# cold weights, against bf16 and tinygemm).
#   OUT=/some/dir bash benchmarks/gpu_s12final.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s12final
gpu_pytest gemm_tests ${G_T:-100} tests/gpu/test_w4a16_gemm_gpu.py -k "cuda_gemm or auto_dispatch"
timeout ${LIN_LIMIT:-120} python benchmarks/bench_linear.py --format w4a16 --ms 64 --out "$OUT" 2>&1 | tail -n 16
gpu_cleanup
