#!/usr/bin/env bash
# Session 19 run 9: stage counts of the wgmma W4A16 GEMM at the M = 128 misses (2112x7168 1.03x and
# 24576x1536 1.17x bf16 in run 8's acceptance file), and 24576x1536 at M = 64 with 4 stages.
#   OUT=/some/dir bash benchmarks/gpu_s19st.sh   # ~90 s
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_probe few 120 "GEMM" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 0 --ms 96 128 --shapes 2112x7168 \
    --wg-configs 128,0,5 128,6,5 64,0,4 64,3,4
gpu_probe short 120 "GEMM" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 0 --ms 64 128 --shapes 24576x1536 \
    --wg-configs 128,0,5 64,0,4
gpu_cleanup
