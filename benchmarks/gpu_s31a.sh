#!/usr/bin/env bash
# RECORD ONLY: ran in session 31 run 1 at 617d007.
# Session 31 run 1: the wgmma W4A16 GEMM with a producer warpgroup (codes P = 1: 10164, 10323, 11323;
# setmaxnreg 40 / 232) against the dispatch's configs: the wgmma GEMM tests, then probe_w4a16_gemm.py at
# M = 128 / 1024 on the three issue shapes (x rotated as bench_linear does).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s31a.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s31a
gpu_pytest wg_tests 240 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma"
gpu_probe wg_few 150 "GEMM|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 128 1024 \
    --shapes 2112x7168 --rotate-x --tokens 0 --wg-configs 256,0,3,0,64 256,0,3,0,64,1 128,0,4,0,128 \
    128,0,4,0,128,1
gpu_probe wg_short 150 "GEMM|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 128 1024 \
    --shapes 24576x1536 --rotate-x --tokens 0 --wg-configs 256,0,3,0,128 256,0,3,0,128,1 128,0,4,0,192 \
    128,0,4,0,128,1
gpu_probe wg_many 150 "GEMM|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 128 1024 \
    --shapes 7168x16384 --rotate-x --tokens 0 --wg-configs 256,0,3,0,128 256,0,3,0,128,1 128,0,4,0,192 \
    128,0,4,0,128,1
gpu_cleanup
