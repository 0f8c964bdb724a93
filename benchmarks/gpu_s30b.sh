#!/usr/bin/env bash
# RECORD ONLY: ran in session 30 run 2 at e62fa67.
# Session 30 run 2: the dispatch at two token tiles now 262434 (2112x7168) / 224444 (7168x16384), swizzled x
# in one 3-D box: the TMA ring, dispatch-table and layer GPU tests; bench_w4tma over the SW = 2 neighbours
# (262444 with four stages, 274444 = the k-step split on 64-row tiles) against the table's codes; Nsight
# Compute of 262434 at M = 16; then the issue-5 acceptance benchmark (bench_linear --format w4a16).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s30b.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s30b
gpu_pytest tma_tests 200 tests/gpu/test_w4a16_tma_gpu.py
gpu_pytest w4_table 60 tests/gpu/test_w4a16_cuda_gpu.py -k "auto_table"
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
gpu_probe tma_few 100 "BEST|rror|Traceback" benchmarks/bench_w4tma.py --shapes few --ms 9 16 \
    --reps 9 --codes 262434 262444 62444 274444
gpu_probe tma_many 100 "BEST|rror|Traceback|tma 2" benchmarks/bench_w4tma.py --shapes many --ms 16 \
    --reps 9 --codes 224444 274444 262444
gpu_ncu ncu_m16 90 "gemv" benchmarks/probe_w4tma_ncu.py --shape 2112x7168 --m 16 --codes 262434 62434
timeout ${W4_LIMIT:-240} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 45
gpu_cleanup
