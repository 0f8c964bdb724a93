#!/usr/bin/env bash
# Session 23 run 1 (survey): the wgmma GEMM's configs at M = 128 / 1024 on 2112x7168 and 24576x1536
# against the dispatch and bf16, the TMA ring's codes at M = 16 on the same shapes, and Nsight Compute
# on the wgmma GEMM at M = 1024 (what bounds it there).
#   OUT=/some/dir bash benchmarks/gpu_s23a.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s23a
gpu_probe wg_large 200 "BEST|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 128 1024 \
    --shapes 2112x7168,24576x1536 --layer sym-fp16 --rotate-x --splits 0 1 2 4
gpu_probe tma_m16 90 "BEST|rror|Traceback" benchmarks/bench_w4tma.py --shapes few short --ms 8 16 --reps 9
NCU_EXTRA="--section ComputeWorkloadAnalysis" gpu_ncu wg_ncu 150 "w4_wgmma" benchmarks/probe_w4a16_gemm_ncu.py --wgmma-large
gpu_cleanup
