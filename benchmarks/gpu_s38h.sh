#!/usr/bin/env bash
# RECORD ONLY: never ran (session 38 had 261 s of device time left; a fresh machine needs more).
# Session 38 run 8: the final tree -- the wgmma GEMM tests (dispatch gap 513 .. 935 on few rows) and the W4A16
# layer dispatch / graph / backend tests.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s38h.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s38h
gpu_pytest wg_tests 90 tests/gpu/test_w4a16_gemm_gpu.py -k "wgmma"
gpu_pytest w4_auto 120 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
gpu_cleanup
