#!/usr/bin/env bash
# Session 35 run 5 (main after the merge): the wgmma GEMM tests (the pair reduction among them) and the W4A16
# layer's auto / graph / backend tests with the final dispatch (symmetric few-row layers at M = 65 .. 128 in
# pairs, asymmetric ones on 128 x 128 tiles with 7 spread splits).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s35f.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s35f
gpu_pytest wg_tests 200 tests/gpu/test_w4a16_gemm_gpu.py
gpu_pytest w4_auto 200 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice or wg"
gpu_cleanup
