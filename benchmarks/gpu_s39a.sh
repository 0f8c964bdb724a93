#!/usr/bin/env bash
# RECORD ONLY: ran in session 39 run 1 at 0e3bc58.
# Session 39 run 1: per-CTA cost of the tile shapes that could share one wave at M = 1024. 2048x7168 makes
# 128 CTAs in every shape (128 rows x 128 tokens, 64 x 256, 128 x 256 over two K splits); 2112x7168 is the
# dispatch's 64-row grid (132 CTAs) and 128 x 128 tiles (136 CTAs, a second wave of 4).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s39a.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s39a
gpu_probe tiles2048 200 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --shapes 2048x7168 --ms 1024 --layer sym-fp16 --rotate-x --tokens 999 \
    --wg-configs "128,1,4,0,128" "128,1,5,0,128" "256,1,3,0,64" "256,2,3,3,128" "256,2,3,1,128" "256,2,3,1,128,1"
gpu_probe tiles2112 150 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --shapes 2112x7168 --ms 1024 --layer sym-fp16 --rotate-x --tokens 999 \
    --wg-configs "256,1,3,0,64" "128,1,4,0,128" "128,1,5,0,128"
gpu_cleanup
