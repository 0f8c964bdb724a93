#!/usr/bin/env bash
# Session 22 run 1: the W4A16 TMA ring decode kernel (csrc/w4a16_tma.cuh, ring codes >= 20000). Its GPU
# tests, the bulk / ring tests it shares a launcher with, then bench_w4tma.py: every TMA code against the
# committed dispatch and bf16 on the three shapes at M = 1, 4, 8, 16 (sym-fp16 layer, cold weights).
#   OUT=/some/dir bash benchmarks/gpu_s22a.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s22a
gpu_pytest s22a_tma_tests ${GT_LIMIT:-180} tests/gpu/test_w4a16_tma_gpu.py -x
for shape in ${S22_SHAPES:-many few short}; do
    gpu_probe "tma_$shape" 150 "BEST|rror|Traceback" benchmarks/bench_w4tma.py --shapes "$shape" --reps ${S22_REPS:-9} ${S22_ARGS:-}
done
gpu_pytest s22a_ring_tests ${GT2_LIMIT:-120} tests/gpu/test_w4a16_cuda_gpu.py -k "bulk or ring"
[ -n "${S22_SASS:-}" ] && gpu_sass "w4a16_tma_launch*.o" $S22_SASS
gpu_cleanup
