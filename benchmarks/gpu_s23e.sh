#!/usr/bin/env bash
# Session 23 run 5 (record only; at cc04061, reverted): the wgmma GEMM with each stage refilled by the last warp to release it (a shared
# counter) instead of thread 0 waiting on an `empty` mbarrier. The split-K GEMM GPU tests, then
# probe_w4a16_gemm.py on the three shapes (M = 128 .. 1024 on the two smaller, M = 128 / 1024 on
# 7168x16384), every 128 / 256-token code x splits, against the dispatch and bf16.
#   OUT=/some/dir bash benchmarks/gpu_s23e.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s23e
gpu_pytest gemm_tests 200 tests/gpu/test_w4a16_gemm_gpu.py
gpu_probe wg64 300 "BEST|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 128 256 512 1024 \
    --shapes 2112x7168,24576x1536 --layer sym-fp16 --rotate-x --splits 0 1 2 4 --tokens 128 256
gpu_probe wg_many 120 "BEST|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 128 1024 \
    --shapes 7168x16384 --layer sym-fp16 --rotate-x --splits 0 --tokens 128 256
gpu_cleanup
