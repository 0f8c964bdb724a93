#!/usr/bin/env bash
# Session 23 run 4: Nsight Compute on the wgmma GEMM's 64-row CTAs at M = 1024 (2112x7168: one wave of
# 132 CTAs; 24576x1536 against 128-row CTAs): what bounds them.
#   OUT=/some/dir bash benchmarks/gpu_s23d.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s23d
NCU_EXTRA="--section ComputeWorkloadAnalysis --section SourceCounters" gpu_ncu wg_ncu 200 "w4_wgmma" benchmarks/probe_w4a16_gemm_ncu.py --wgmma-r64
gpu_cleanup
