#!/usr/bin/env bash
# Session 18 run 5: the W4A16 wgmma GEMM's compiled (tokens, stages) x K splits at M = 128 on
# 7168x16384 (acceptance layer: symmetric, fp16 scales; x rotated as bench_linear does), against
# the auto dispatch and bf16 F.linear (issue 5: M = 128 no slower than bf16; the file has 70.11 vs
# 69.01 us there).
#   OUT=/some/dir bash benchmarks/gpu_s18wg.sh   # ~150 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s18wg
gpu_probe wg128 240 "GEMM|rror" benchmarks/probe_w4a16_gemm.py --family wgmma --layer sym-fp16 --rotate-x \
    --ms 128 --shapes 7168x16384 --splits 0 1 2 3 4 5 6 8
gpu_cleanup
