#!/usr/bin/env bash
# RECORD ONLY: ran in session 32 run 5 at eefabb9 (the K split it measured was removed again).
# Session 32 run 5: the x-staged kernel's K split over a cluster (splits 2 .. 8, summed through distributed
# shared memory): its GPU tests, then the few-rows class (2112x7168) at M = 9 / 16 over codes x warps x splits
# against the dispatch (TMA ring pair split 262434).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s32e.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s32e
gpu_pytest xs_tests 200 tests/gpu/test_w4a16_xs_gpu.py
gpu_probe xs_few 200 "BEST|rror|Traceback" benchmarks/bench_w4reg.py --xs --layer sym-fp16 --reps 9 \
    --shapes 2112x7168 --ms 9 16 --warps 3 4 6 --splits 2 3 4 6 8
gpu_cleanup
