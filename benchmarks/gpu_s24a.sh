#!/usr/bin/env bash
# Session 24 run 1: wgmma codes 2114 / 2116 (192 weight rows per CTA, 88 tokens, 4 / 6 stages; 2112 rows
# are 11 such tiles, so M = 1024 is 11 x 12 CTAs, one wave, reading half the x bytes per output of the
# 64-row T256 tiles). The split-K GEMM GPU tests, then probe_w4a16_gemm.py on 2112x7168 (M = 512 / 1024)
# and 24576x1536 (M = 1024), 88 / 256-token codes x splits, against the dispatch and bf16.
#   OUT=/some/dir bash benchmarks/gpu_s24a.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s24a
gpu_pytest gemm_tests 200 tests/gpu/test_w4a16_gemm_gpu.py
gpu_probe wg_few 150 "GEMM|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 512 1024 \
    --shapes 2112x7168 --layer sym-fp16 --rotate-x --splits 0 1 2 --tokens 88 256
gpu_probe wg_short 100 "GEMM|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 1024 \
    --shapes 24576x1536 --layer sym-fp16 --rotate-x --splits 0 --tokens 88 256
gpu_cleanup
