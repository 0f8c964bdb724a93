#!/usr/bin/env bash
# RECORD ONLY: ran in session 33 run 1 at 1847a9f (the codes it measured were 258434 / 268434 / 257434 / 267434).
# Session 33 run 1: 112- and 128-row pair splits in the W4A16 TMA ring at two token tiles on 7168x16384
# (codes 257434 / 267434: 64 clusters = 128 CTAs; 258434 / 268434: 56 clusters = 112 CTAs, half of 224444's
# x bytes per row): the TMA tests over every code, then the codes against the dispatch (224444) at M = 9 / 12 / 16. Chunks of 7 or 8 row tiles are read and computed in two blocks (tma_row_block), no spills.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s33a.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s33a
gpu_probe tma_sym 200 "BEST|rror|Traceback|skipped|tma 2[56]" benchmarks/bench_w4tma.py --layer sym-fp16 --reps 11 --shapes many --ms 9 12 16 --codes 224444 258434 268434 257434 267434
gpu_probe tma_asym 100 "BEST|rror|Traceback|skipped|tma 2[56]" benchmarks/bench_w4tma.py --layer asym-bf16 --reps 11 --shapes many --ms 16 --codes 224444 258434 268434 257434 267434
gpu_pytest tma_tests 300 tests/gpu/test_w4a16_tma_gpu.py -k "every_code or x3d or groups"
gpu_cleanup
