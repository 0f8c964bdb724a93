#!/usr/bin/env bash
# Session 22 run 4: Nsight Compute on the W4A16 TMA ring codes at 7168x16384 M = 1 (probe_w4tma_ncu.py),
# the register kernel last; and the SASS of the 22844 instance.
#   OUT=/some/dir bash benchmarks/gpu_s22b.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s22b
gpu_ncu s22b_ncu 200 "tma_gemv|reg_gemv" benchmarks/probe_w4tma_ncu.py --codes ${S22B_CODES:-22844 22848 22464 82844}
gpu_sass "w4a16_tma_launch*.o" _ZN7qlinear6w4a16g15tma_gemv_kernelI13__nv_bfloat16Li2ELi8ELi4ELi4ELi1ELi0ELi0EEEvNS0_9TmaParamsE
gpu_cleanup
