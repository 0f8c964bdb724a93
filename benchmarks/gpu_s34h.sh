#!/usr/bin/env bash
# RECORD ONLY: ran in session 34 run 8 at 342d55e (the acceptance file of issue 5 since).
# Session 34 run 8: as run 7, with the staged tile in the 128-byte swizzle (boxes of 64 rows): the wgmma W4A16 GEMM stores unsplit tiles with a TMA bulk tensor store (stmatrix.trans into
# shared memory, one cp.async.bulk.tensor per CTA) where out is 16-byte aligned: the GEMM and layer tests, then
# the acceptance benchmark `bench_linear --format w4a16`.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s34h.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s34h
gpu_pytest wg_tests 300 tests/gpu/test_w4a16_gemm_gpu.py
gpu_pytest w4_auto 200 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice or wg"
timeout ${W4_LIMIT:-240} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 45
gpu_cleanup
