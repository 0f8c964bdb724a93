#!/usr/bin/env bash
# RECORD ONLY: ran in session 31 run 2 at ed91f67 (its 88-token codes were removed after it).
# Session 31 run 2: 88-token tiles of 192 rows (codes 2115 / 2116: 2112x7168 at M = 1024 as 11 x 12 = 132
# CTAs, one wave) against the dispatch's 64-row, 256-token CTAs; the producer warpgroup (run 1: faster
# with 128 rows x 256 tokens at M = 1024) at M = 256 / 512 on the short and many shapes.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s31b.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s31b
gpu_pytest wg_tests 240 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma"
gpu_probe wg_few 150 "GEMM|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 768 1024 \
    --shapes 2112x7168 --rotate-x --tokens 0 --wg-configs 256,0,3,0,64 88,0,5,0,192 88,0,6,0,192
gpu_probe wg_short 150 "GEMM|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 256 512 \
    --shapes 24576x1536 --rotate-x --tokens 0 --wg-configs 256,0,3,0,128 256,0,3,0,128,1
gpu_probe wg_many 150 "GEMM|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 256 512 \
    --shapes 7168x16384 --rotate-x --tokens 0 --wg-configs 256,0,3,0,128 256,0,3,0,128,1
gpu_cleanup
