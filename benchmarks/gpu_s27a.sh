#!/usr/bin/env bash
# RECORD ONLY: session 27 runs 1-2 ran this on 50219bd / 1e9d598 (the paired grid, reverted in c191fe9).
# Session 27 run 1: the wgmma GEMM's paired grid (tail = 1: 128-row CTAs in K splits, N's last row tile of
# <= 64 rows as 64-row CTAs over twice the superblocks). The wgmma / mma GEMM GPU tests, then
# probe_w4a16_gemm on 2112x7168 at M = 128 .. 1024 (x rotated past L2 as in bench_linear): paired configs
# against the dispatch's (64-row CTAs at 256 tokens; 128 rows, 7 splits at M = 128) and bf16.
#   OUT=/some/dir bash benchmarks/gpu_s27a.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s27a
gpu_pytest gemm_tests 220 tests/gpu/test_w4a16_gemm_gpu.py
gpu_probe tail 260 "GEMM" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 999 --rotate-x \
    --shapes 2112x7168 --ms 128 256 512 1024 \
    --wg-configs 256,2,3,0,128,1 256,0,3,0,64 128,8,4,0,128,1 128,6,4,0,128,1 128,4,4,0,128,1 128,7,4
gpu_cleanup
