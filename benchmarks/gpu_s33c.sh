#!/usr/bin/env bash
# RECORD ONLY: ran in session 33 run 3 at 41c5d97.
# Session 33 run 3: the 112-row pair split at one token tile (257434 / 257444 compiled for M <= 8) on 7168x16384
# against the dispatch (32844 at M <= 4, 22464 at M = 5..8): the TMA ring tests over every code, then the
# codes at M = 1 / 4 / 5 / 8; 48-row pair splits (253434 / 263434: 44 clusters, 88 CTAs) on 2112x7168 at M = 9 / 16.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s33c.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s33c
gpu_pytest tma_tests 150 tests/gpu/test_w4a16_tma_gpu.py
gpu_probe tma_sym 200 "BEST|rror|Traceback|skipped|tma 257" benchmarks/bench_w4tma.py --layer sym-fp16 --reps 11 --shapes many --ms 1 4 5 8 --codes 32844 22464 257434 257444
gpu_probe tma_asym 100 "BEST|rror|Traceback|skipped|tma 257" benchmarks/bench_w4tma.py --layer asym-bf16 --reps 11 --shapes many --ms 1 8 --codes 32844 22464 257434 257444
gpu_probe tma_few 100 "BEST|rror|Traceback|skipped|tma 2[56]" benchmarks/bench_w4tma.py --layer sym-fp16 --reps 11 --shapes few --ms 9 16 --codes 262434 253434 263434
gpu_cleanup
