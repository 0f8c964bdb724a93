#!/usr/bin/env bash
# RECORD ONLY: ran in session 31 run 5 at cec8540 (its 16-token codes were removed after it).
# Session 31 run 5: 16-token wgmma tiles (codes 29: 128 rows, 9 stages; 2026 / 2029: 192 rows, 6 / 9 stages) for
# decode batches of 9 .. 16 rows: 24576x1536 at M = 16 as 128 CTAs of 192 rows read x (48 KB) 128 times
# instead of once per 32-row register-kernel CTA (768). The wgmma GEMM tests, then probe_w4a16_gemm.py at
# M = 9 / 16 against the dispatch (issue 5: M = 16 <= 1.3 x M = 1).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s31e.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s31e
gpu_pytest wg_tests 200 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma"
gpu_probe wg_short 120 "GEMM|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 9 16 \
    --shapes 24576x1536 --rotate-x --tokens 0 --wg-configs 16,0,9,0,192 16,0,6,0,192 16,0,9,0,128 16,2,9,0,192
gpu_probe wg_other 120 "GEMM|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 16 \
    --shapes 2112x7168,7168x16384 --rotate-x --tokens 0 --wg-configs 16,0,9,0,128 16,0,9,0,192
gpu_cleanup
