#!/usr/bin/env bash
# Session 23 run 3: the wgmma GEMM's 64-row CTAs with the warpgroups splitting each superblock's k-steps
# (run 2's split the tokens, which dequantized every weight twice). The split-K GEMM GPU tests, then
# probe_w4a16_gemm.py on 2112x7168 and 24576x1536 at M = 128 .. 1024, every 128 / 256-token code x
# splits, against the dispatch and bf16.
#   OUT=/some/dir bash benchmarks/gpu_s23c.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s23c
gpu_pytest gemm_tests 200 tests/gpu/test_w4a16_gemm_gpu.py
gpu_probe wg64 300 "BEST|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms ${S23C_MS:-128 256 512 1024} \
    --shapes ${S23C_SHAPES:-2112x7168,24576x1536} --layer sym-fp16 --rotate-x --splits 0 1 2 4 --tokens 128 256
gpu_cleanup
