#!/usr/bin/env bash
# RECORD ONLY: ran in session 37 run 1 at ceb1c6a (its codes need notes/s37_row_split.patch).
# Session 37 run 1: the TMA ring's row split (F = 9: the two warps of a superblock slot take half the row
# tiles each, all k-steps, instead of half the k-steps of every row tile as F = 6 does) -- 2112x7168 at
# M = 9 / 12 / 16 against the dispatch (262434), both layers; one token tile (M = 1 / 4 / 8) against 252444;
# Nsight Compute of 292434 at M = 16; then every TMA test (new codes included).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s37a.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s37a
gpu_probe rs_sym 150 "BEST|tma |auto|bf16|rror|Traceback" benchmarks/bench_w4tma.py --shapes few --ms 9 12 16 \
    --codes 262434 292434 292444
gpu_probe rs_asym 150 "BEST|tma |auto|bf16|rror|Traceback" benchmarks/bench_w4tma.py --shapes few --ms 9 16 \
    --layer asym-bf16 --codes 262434 292434 292444
gpu_probe rs_nt1 150 "BEST|tma |auto|bf16|rror|Traceback" benchmarks/bench_w4tma.py --shapes few --ms 1 4 8 \
    --codes 252444 292444
gpu_ncu ncu_rs 120 "tma_gemv" benchmarks/probe_tma_once.py --m 16 --code 292434
gpu_pytest tma_tests 240 tests/gpu/test_w4a16_tma_gpu.py
gpu_cleanup
