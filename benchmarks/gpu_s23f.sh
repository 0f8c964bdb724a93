#!/usr/bin/env bash
# Session 23 run 6 (record only; at c27f505, code 1163 removed after it): code 1163 (64 rows, 128 tokens, 3 stages, compiled for two CTAs per SM) next to the
# other wgmma codes. The split-K GEMM GPU tests, then probe_w4a16_gemm.py on 2112x7168 at M = 128 .. 1024
# (splits 0 / 1 / 2 / 4 / 8).
#   OUT=/some/dir bash benchmarks/gpu_s23f.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s23f
gpu_pytest gemm_tests 200 tests/gpu/test_w4a16_gemm_gpu.py
gpu_probe wg64 300 "BEST|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 128 256 512 1024 \
    --shapes 2112x7168 --layer sym-fp16 --rotate-x --splits 0 1 2 4 8 --tokens 128 256
gpu_cleanup
