#!/usr/bin/env bash
# Session 24 run 6: the TMA ring with x multicast over CTA pairs (codes 4xxxx: each CTA copies half of
# every stage's x boxes into both CTAs of its cluster, so L2 serves x once per pair). The TMA GPU tests
# (every code, ragged N with a padded last cluster), then bench_w4tma.py: 2112x7168 and 7168x16384 at
# M = 8 / 16, each multicast code against its plain twin and the dispatch.
#   OUT=/some/dir bash benchmarks/gpu_s24e.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s24e
gpu_pytest tma_tests 150 tests/gpu/test_w4a16_tma_gpu.py
gpu_probe tma_few 100 "BEST|rror|Traceback|tma" benchmarks/bench_w4tma.py --shapes few --ms 8 16 --reps 9 \
    --codes 21844 41844 21848 41848
gpu_probe tma_many 120 "BEST|rror|Traceback|tma" benchmarks/bench_w4tma.py --shapes many --ms 8 16 --reps 9 \
    --codes 22464 42464 24444 44444
gpu_cleanup
