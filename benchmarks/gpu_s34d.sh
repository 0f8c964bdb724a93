#!/usr/bin/env bash
# RECORD ONLY: ran in session 34 run 4 at 4d9e75c (the 152-token code was removed after it: it lost).
# Session 34 run 4: wgmma W4A16 GEMM CTAs of 128 rows x 152 tokens with the producer warpgroup (code 10194):
# 2112x7168 at M = 1024 as 17 x 7 = 119 CTAs (one wave, no K split), 7168x16384 as 392 (3 waves, where 256
# tokens give 224 in 2). The GEMM tests (every compiled code); then M = 960 / 1024 on both shapes against the
# dispatch and bf16 F.linear.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s34d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s34d
gpu_pytest wg_tests 300 tests/gpu/test_w4a16_gemm_gpu.py -k "every_config or graph_replays or issue_shapes or 64_and_192"
gpu_probe t152 300 "GEMM|rror|Traceback|skipped" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 999 --rotate-x \
    --shapes 2112x7168,7168x16384 --ms 960 1024 --wg-configs 152,0,4,0,128,1 256,0,3,0,64
gpu_cleanup
