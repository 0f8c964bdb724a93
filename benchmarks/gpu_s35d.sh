#!/usr/bin/env bash
# RECORD ONLY: ran in session 35 run 3 at 5d8149a.
# Session 35 run 3 (branch s35-pair): the wgmma GEMM's pair reduction (reduce 3: clusters of two CTAs along
# the K splits sum their partials through distributed shared memory; then the pair sums through L2) -- the
# GEMM tests, the split configs of 2112x7168 at M = 64 / 100 / 128 against the dispatch, the W4A16 layer tests
# and the acceptance benchmark with few M = 65 .. 128 on 64-row CTAs x 4 splits in pairs.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s35d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s35d
gpu_pytest wg_tests 200 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma"
gpu_probe pair 200 "GEMM|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 999 --rotate-x \
    --shapes 2112x7168 --ms 64 100 128 --wg-configs 128,4,4,3,64 128,4,4,2,64 128,2,4,3,64 128,6,4,3,0 128,7,4,2,0 64,6,4,3,0
gpu_pytest w4_auto 200 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice or wg"
timeout 240 python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 45
gpu_cleanup
