#!/usr/bin/env bash
# Session 24 run 2: TMA ring codes with one row tile per CTA at two token tiles (21844, 21854, 21484;
# 2112 rows are 132 such CTAs, each streaming all of x: 229 KB at M = 16) against the dispatch at
# M = 8 / 16 on 2112x7168 and M = 16 on 7168x16384. The TMA GPU tests first.
#   OUT=/some/dir bash benchmarks/gpu_s24b.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s24b
gpu_pytest tma_tests 150 tests/gpu/test_w4a16_tma_gpu.py
gpu_probe tma_few 120 "us|rror|Traceback" benchmarks/bench_w4tma.py --shapes few --ms 8 12 16 --reps 9
gpu_probe tma_many 100 "us|rror|Traceback" benchmarks/bench_w4tma.py --shapes many --ms 16 --reps 9 --codes 21844 21854 21484 24444
gpu_cleanup
