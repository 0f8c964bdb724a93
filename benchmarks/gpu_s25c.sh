#!/usr/bin/env bash
# Session 25 run 3: the pair split on 7168x16384 (112-row CTAs, 64 x 2 = 128 CTAs) and the PDL trigger
# before the main loop at two token tiles (F = 9): the TMA GPU tests (every compiled code below 80000),
# then 2112x7168 at M = 9 / 16 and 7168x16384 at M = 1 / 8 / 16 against the dispatch.
#   OUT=/some/dir bash benchmarks/gpu_s25c.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s25c
gpu_pytest tma_tests 150 tests/gpu/test_w4a16_tma_gpu.py
gpu_probe tma_few 100 "BEST|rror|Traceback|tma|auto" benchmarks/bench_w4tma.py --shapes few --ms 9 16 --reps 9 \
    --codes 62434 92434
gpu_probe tma_many 200 "BEST|rror|Traceback|tma|auto" benchmarks/bench_w4tma.py --shapes many --ms 1 8 16 --reps 9 \
    --codes 74444 67232 67242 97242
gpu_cleanup
