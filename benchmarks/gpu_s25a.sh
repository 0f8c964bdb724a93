#!/usr/bin/env bash
# Session 25 run 1: the TMA ring's pair split (F = 5 / 6: a cluster of two CTAs per row tile, each half of
# the stages, summed through distributed shared memory): the TMA GPU tests (every compiled code), then
# 2112x7168 at M = 8 .. 16 against 21844 / 21848, and Nsight Compute of 21848 and 62444 at M = 16.
#   OUT=/some/dir bash benchmarks/gpu_s25a.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s25a
gpu_pytest tma_tests 150 tests/gpu/test_w4a16_tma_gpu.py
gpu_probe tma_few 150 "BEST|rror|Traceback|tma|auto" benchmarks/bench_w4tma.py --shapes few --ms 8 12 16 --reps 9 \
    --codes 21844 52444 21848 62444 62434
gpu_ncu ncu_m16 120 "gemv" benchmarks/probe_w4tma_ncu.py --shape 2112x7168 --m 16 --codes 21848 62444
gpu_cleanup
