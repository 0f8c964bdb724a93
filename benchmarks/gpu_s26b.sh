#!/usr/bin/env bash
# Session 26 run 2: the TMA ring's workspace split (F = 4 / 9: four CTAs per 64-row tile, each a quarter
# of K, partial sums through a global workspace, the last CTA to arrive adds them; no cluster, so all
# 132 CTAs of 2112x7168 are resident at once): x is read once per 64 rows instead of per 32 (half the x
# bytes through L2 of the pair split 62434). The TMA GPU tests (every code, the workspace split's
# determinism / counters / refusal / graph), then bench_w4tma on 2112x7168 M = 1 .. 16 against the
# dispatch's 52444 / 62434, and one look at 7168x16384 / 24576x1536 at M = 16.
#   OUT=/some/dir bash benchmarks/gpu_s26b.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s26b
gpu_pytest tma_tests 180 tests/gpu/test_w4a16_tma_gpu.py
gpu_probe tma_few 150 "BEST|rror|Traceback|tma|auto" benchmarks/bench_w4tma.py --shapes few --ms 1 4 8 9 12 16 \
    --reps 9 --codes 52444 62434 44444 44242 44272 94444
gpu_probe tma_other 100 "BEST|rror|Traceback|tma|auto" benchmarks/bench_w4tma.py --shapes many short --ms 16 \
    --reps 9 --codes 74444 44444 44242 44272 94444
gpu_pytest w4_table 60 tests/gpu/test_w4a16_cuda_gpu.py -k "auto_table"
gpu_cleanup
