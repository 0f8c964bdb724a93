#!/usr/bin/env bash
# RECORD ONLY: ran in session 38 run 5 at fbe7367.
# Session 38 run 5: 2112x7168 between M = 513 and 1024, where the few row's 64-row CTAs run unsplit on 99 or 132
# SMs (runs 1-2: M = 600 took 76-80 us with PDL, 58 without, against 47 at M = 768 and bf16 27). The dispatch
# (auto), that row with PDL off, 64-row 128-token and 128-row 256-token tiles, and dequantize + cuBLAS.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s38e.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s38e
gpu_probe mid_m 300 "GEMM M|GEMM BEST|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --shapes 2112x7168 --ms 520 600 700 768 900 1024 --layer sym-fp16 --rotate-x --tokens 999 --pdl-ab --dequant \
    --wg-configs "256,0,3,0,64" "128,0,4,0,64" "256,0,3"
gpu_cleanup
