#!/usr/bin/env bash
# RECORD ONLY: ran in session 39 run 2 at 9e1481a.
# Session 39 run 2: is 2048x7168's slow 64-row grid (run 1: 55.5 us against 51.9 on 2112x7168) the power-of-two
# scale row stride (4096 bytes)? 1920x7168 (3840-byte rows) in both tile shapes; 64-row CTAs alone (256x7168,
# 16 CTAs): what the 4 leftover CTAs of a 2112-row grid could take.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s39b.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s39b
gpu_probe tiles 300 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --shapes 1920x7168,2048x7168,256x7168,2112x7168 --ms 1024 --layer sym-fp16 --rotate-x --tokens 999 \
    --wg-configs "256,1,3,0,64" "256,2,3,3,128" "256,2,3,1,128,1"
gpu_cleanup
