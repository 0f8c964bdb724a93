#!/usr/bin/env bash
# Session 23 run 8: wgmma code 2164 (192 weight rows per CTA: three warpgroups, 128 tokens, 4 stages;
# 24576 rows are 128 such tiles, one wave at M = 128). The split-K GEMM GPU tests, then
# probe_w4a16_gemm.py on 24576x1536 (M = 128 .. 1024), 2112x7168 (M = 128 / 256) and 7168x16384
# (M = 128), 128 / 256-token codes x splits, against the dispatch and bf16.
#   OUT=/some/dir bash benchmarks/gpu_s23g.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s23g
gpu_pytest gemm_tests 200 tests/gpu/test_w4a16_gemm_gpu.py
gpu_probe wg_short 200 "BEST|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 128 256 512 1024 \
    --shapes 24576x1536 --layer sym-fp16 --rotate-x --splits 0 1 2 --tokens 128 256
gpu_probe wg_few 150 "BEST|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 128 256 \
    --shapes 2112x7168,7168x16384 --layer sym-fp16 --rotate-x --splits 0 1 2 4 8 12 --tokens 128
gpu_cleanup
