#!/usr/bin/env bash
# RECORD ONLY: ran in session 37 run 4 at 9b34f26.
# Session 37 run 4: the dispatch with ('few', 2) = 1262434 (PDL trigger before the main loop at two token
# tiles) -- the TMA tests, the W4A16 dispatch / graph tests, then bench_linear --format w4a16 (the issue-5
# acceptance file).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s37d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s37d
gpu_pytest tma_tests 60 tests/gpu/test_w4a16_tma_gpu.py
gpu_pytest cuda_auto 120 tests/gpu/test_w4a16_cuda_gpu.py -k "auto or graph"
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
mkdir -p "$DEST/linear"
timeout 260 python benchmarks/bench_linear.py --format w4a16 --out "$DEST/linear" 2>&1 | tee "$OUT/bench_linear.log" | tail -n 40
gpu_cleanup
