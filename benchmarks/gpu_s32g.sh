#!/usr/bin/env bash
# Session 32 run 7: short rows take the wgmma GEMM from M = 33 (was 65): the wgmma GEMM's dispatch test and
# the layer's auto / backend tests.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s32g.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s32g
gpu_pytest wg_dispatch 120 tests/gpu/test_w4a16_gemm_gpu.py -k "auto_dispatch"
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
gpu_cleanup
