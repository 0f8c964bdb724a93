#!/usr/bin/env bash
# RECORD ONLY: ran in session 32 run 1 at 7ef5ace.
# Session 32 run 1: the wgmma GEMM tests after session 31's fill lambdas (not rerun then); the register
# kernel's load ladder at M = 16 on short rows (x fragments' cost: mode 1 against mode 3); the wgmma GEMM
# at M = 64 on short rows against the auto dispatch (Triton there).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s32a.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_probe_lib_start s32a
gpu_run_start s32a
gpu_probe_lib_wait
gpu_pytest w4gemm_tests 200 tests/gpu/test_w4a16_gemm_gpu.py
gpu_probe loads16 120 "LOADS|rror|Traceback" benchmarks/probe_w4a16_loads.py --probe-lib "$probe_so" --m16
gpu_probe gemm64 150 "GEMM|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 48 64 80 \
    --shapes 24576x1536 --rotate-x
gpu_cleanup
