#!/usr/bin/env bash
# Session 25 run 2: the quad split (F = 4: four CTAs per row tile with the k-step split) and more pair-split
# shapes: the TMA GPU tests (every compiled code), then 2112x7168 at M = 1 .. 16 against the dispatch.
#   OUT=/some/dir bash benchmarks/gpu_s25b.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s25b
gpu_pytest tma_tests 150 tests/gpu/test_w4a16_tma_gpu.py
gpu_probe tma_few1 150 "BEST|rror|Traceback|tma|auto" benchmarks/bench_w4tma.py --shapes few --ms 1 4 8 --reps 9 \
    --codes 21844 52444 52434 62434 44232 44242
gpu_probe tma_few2 150 "BEST|rror|Traceback|tma|auto" benchmarks/bench_w4tma.py --shapes few --ms 9 12 16 --reps 9 \
    --codes 62434 62424 44222 44232 44242
gpu_cleanup
