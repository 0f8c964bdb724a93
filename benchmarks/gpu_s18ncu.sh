#!/usr/bin/env bash
# Session 18 run 8: Nsight Compute on the 7168x16384 FP8 Triton GEMMs at M = 1 and 16
# (benchmarks/probe_fp8_ncu_wide.py): why the split-K GEMM alone takes ~2.2 us more at M = 16 (run 4).
# The second launch of each case is the one to read.   OUT=/some/dir bash benchmarks/gpu_s18ncu.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_ncu ncuwide 240 "_fp8_block_gemm" benchmarks/probe_fp8_ncu_wide.py
gpu_cleanup
