#!/usr/bin/env bash
# Nsight Compute on the FP8 block decode kernels of 2112x7168 (benchmarks/probe_fp8_ncu.py): speed of
# light, warp states, scheduler and memory tables per kernel; the second launch of each case is the
# one to read (the first is the warm-up).   OUT=/some/dir bash benchmarks/gpu_fp8ncu.sh   # ~60 s
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build fp8ncu
gpu_ncu fp8ncu 150 "fp8_gemv_kernel|fp8_block_gemm|per_token_group" benchmarks/probe_fp8_ncu.py
gpu_cleanup
