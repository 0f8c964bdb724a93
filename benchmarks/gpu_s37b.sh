#!/usr/bin/env bash
# RECORD ONLY: ran in session 37 run 2 at b6bd6db (its codes need notes/s37_row_split.patch).
# Session 37 run 2: sixteen consumer warps per CTA as both splits at once (F = 4: the four warps of a
# superblock slot take half the k-steps of half the row tiles each) -- 2112x7168 at M = 9 / 12 / 16
# against the dispatch (262434), both layers; then every TMA test (new codes included).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s37b.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s37b
gpu_probe kr_sym 150 "BEST|tma |auto|bf16|rror|Traceback" benchmarks/bench_w4tma.py --shapes few --ms 9 12 16 \
    --codes 262434 242434 242444
gpu_probe kr_asym 150 "BEST|tma |auto|bf16|rror|Traceback" benchmarks/bench_w4tma.py --shapes few --ms 9 16 \
    --layer asym-bf16 --codes 262434 242434 242444
gpu_pytest tma_tests 240 tests/gpu/test_w4a16_tma_gpu.py
gpu_cleanup
