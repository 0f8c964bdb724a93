#!/usr/bin/env bash
# RECORD ONLY: ran in session 32 run 6 at 44a7a0a.
# Session 32 run 6: after removing the K split (run 5) and R1 U3 (run 4): the x-staged kernel's tests, the
# decode kernels' tests and the layer's auto-dispatch tests on the build that ships; the wgmma GEMM on short
# rows at M = 17 .. 40 against the dispatch (Triton there).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s32f.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s32f
gpu_pytest xs_tests 150 tests/gpu/test_w4a16_xs_gpu.py
gpu_pytest cuda_tests 240 tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_fold.py tests/gpu/test_w4a16_tma_gpu.py
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
gpu_probe gemm_short 150 "GEMM BEST|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --ms 17 24 33 40 --shapes 24576x1536 --rotate-x --layer sym-fp16
gpu_cleanup
