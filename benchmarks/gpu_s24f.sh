#!/usr/bin/env bash
# Session 24 run 9: the TMA ring's token split (codes 6xxxx: at M = 9 .. 16 one CTA per row tile and
# token tile of 8, the one-tile instance, two CTAs of a row tile side by side) against the two-tile codes
# and the dispatch: 2112x7168 at M = 9 / 12 / 16, 7168x16384 at M = 16. The TMA GPU tests first.
#   OUT=/some/dir bash benchmarks/gpu_s24f.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s24f
gpu_pytest tma_tests 150 tests/gpu/test_w4a16_tma_gpu.py
gpu_probe tma_few 100 "BEST|rror|Traceback|tma" benchmarks/bench_w4tma.py --shapes few --ms 9 12 16 --reps 9 \
    --codes 21848 61844 61848
gpu_probe tma_many 80 "BEST|rror|Traceback|tma" benchmarks/bench_w4tma.py --shapes many --ms 16 --reps 9 \
    --codes 24444 62464
gpu_cleanup
