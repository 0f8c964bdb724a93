#!/usr/bin/env bash
# RECORD ONLY: ran in session 37 run 3 at 621e709.
# Session 37 run 3: the PDL trigger before the main loop at two token tiles (seventh code digit E = 1:
# 1262434) against the dispatch's 262434 (trigger after the main loop) -- bench_w4tma on 2112x7168 at
# M = 9 / 12 / 16, both layers, and 1257434 against 257434 on 7168x16384; then every TMA test (new codes included).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s37c.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s37c
gpu_probe early_sym 150 "BEST|tma |auto|bf16|rror|Traceback" benchmarks/bench_w4tma.py --shapes few --ms 9 12 16 \
    --codes 262434 1262434
gpu_probe early_asym 150 "BEST|tma |auto|bf16|rror|Traceback" benchmarks/bench_w4tma.py --shapes few --ms 9 16 \
    --layer asym-bf16 --codes 262434 1262434
gpu_probe early_sym2 150 "BEST|tma |auto|bf16|rror|Traceback" benchmarks/bench_w4tma.py --shapes few --ms 16 \
    --codes 1262434 262434
gpu_probe early_many 150 "BEST|tma |auto|bf16|rror|Traceback" benchmarks/bench_w4tma.py --shapes many --ms 9 16 \
    --codes 257434 1257434
gpu_pytest tma_tests 240 tests/gpu/test_w4a16_tma_gpu.py
gpu_cleanup
