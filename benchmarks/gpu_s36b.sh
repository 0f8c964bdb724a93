#!/usr/bin/env bash
# RECORD ONLY: ran in session 36 run 2 at 1dfe44e (branch s36-quad, deleted; its codes need notes/s36_quad.patch).
# Session 36 run 2 (branch s36-quad): the TMA ring's K split over clusters of 3 / 4 CTAs (the KQ digit) --
# the TMA tests (every compiled code), then 2112x7168 at M = 9 / 12 / 16 against the dispatch (262434).
#   (device, carry build/snapQ) cd build/snapQ && OUT=$OUT bash benchmarks/gpu_s36b.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s36b
gpu_probe quad 150 "BEST|tma |auto|bf16|rror|Traceback" benchmarks/bench_w4tma.py --shapes few --ms 9 12 16 \
    --codes 262434 4264434 4265434 3263434 4254727
gpu_pytest tma_tests 240 tests/gpu/test_w4a16_tma_gpu.py
gpu_cleanup
