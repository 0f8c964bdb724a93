#!/usr/bin/env bash
# Nsight Compute on the W4A16 CUDA decode kernels (benchmarks/probe_w4a16_ncu.py): speed of
# light, warp states, scheduler and memory tables per kernel; the second launch of each case is the
# one to read (the first is the warm-up).   OUT=/some/dir bash benchmarks/gpu_w4ncu.sh   # ~60 s
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build w4ncu
gpu_ncu w4ncu 150 "reg_gemv|ring_gemv|bulk_gemv|mma_gemv" benchmarks/probe_w4a16_ncu.py
gpu_cleanup
