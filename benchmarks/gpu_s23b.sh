#!/usr/bin/env bash
# Session 23 run 2 (record only; at f33a8fb): the wgmma GEMM with 64-row CTAs (codes 1164 / 1323: both warpgroups the same rows,
# each half of the tokens). Its GPU tests (the whole split-K GEMM file), then probe_w4a16_gemm.py on
# 2112x7168 and 24576x1536 at M = 128 .. 1024, every 128 / 256-token code x splits, against the dispatch
# and bf16.
#   OUT=/some/dir bash benchmarks/gpu_s23b.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s23b
gpu_pytest gemm_tests 200 tests/gpu/test_w4a16_gemm_gpu.py
gpu_probe wg64 300 "BEST|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms ${S23B_MS:-128 256 512 1024} \
    --shapes ${S23B_SHAPES:-2112x7168,24576x1536} --layer sym-fp16 --rotate-x --splits 0 1 2 4 --tokens 128 256
gpu_cleanup
