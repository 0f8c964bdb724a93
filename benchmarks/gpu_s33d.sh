#!/usr/bin/env bash
# RECORD ONLY: ran in session 33 run 4 at b9d47c4.
# Session 33 run 4: the 112-row pair split (257434) as the dispatch for 7168x16384 at every M <= 16: the TMA ring
# tests over every code, the decode kernels' tests (the auto table), the layer tests through the auto dispatch;
# then the issue-5 acceptance benchmark (benchmarks/results/linear_w4a16.json).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s33d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s33d
gpu_pytest tma_tests 150 tests/gpu/test_w4a16_tma_gpu.py
gpu_pytest cuda_tests 240 tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_fold.py
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
timeout ${W4_LIMIT:-260} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 45
gpu_cleanup
