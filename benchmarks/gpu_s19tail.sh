#!/usr/bin/env bash
# (Run 6 measured the tail split of commit 25a98d5, reverted: see benchmarks/results/session19/README.md.)
# Session 19 run 6: the wgmma W4A16 GEMM's tail split (between one and two waves of whole tiles, the
# tiles past the first wave in K pieces): the GEMM GPU tests, then probe_w4a16_gemm.py on 24576x1536
# (192 row tiles) at M = 64 / 128 / 256 with tail 1 (none) / 2 / 3, and 2112x7168 M = 128.
#   OUT=/some/dir bash benchmarks/gpu_s19tail.sh   # ~120 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_pytest gemm_tests ${GT_LIMIT:-200} tests/gpu/test_w4a16_gemm_gpu.py
gpu_probe short 200 "GEMM" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 0 --ms 64 128 256 --shapes 24576x1536 \
    --wg-configs 64,1,8,0,1 64,1,8,0,2 128,1,4,0,1 128,1,4,0,2 128,1,4,0,3 256,1,3,0,1 256,1,3,0,2
gpu_probe few 100 "GEMM" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 0 --ms 128 --shapes 2112x7168
gpu_cleanup
