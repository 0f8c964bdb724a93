#!/usr/bin/env bash
# RECORD ONLY: ran in session 32 run 4 at 0a3a7bf.
# Session 32 run 4: the x-staged kernel as the short-row M = 9..16 dispatch (_CUDA_XS_AUTO): the W4A16 decode
# GPU tests (x-staged, register / ring / bulk, fold), the layer tests through the auto dispatch; R1 U3 against
# R1 U2 at 12 warps; then the issue-5 acceptance benchmark (benchmarks/results/linear_w4a16.json).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s32d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s32d
gpu_pytest xs_tests 150 tests/gpu/test_w4a16_xs_gpu.py
gpu_pytest cuda_tests 240 tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_fold.py
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
gpu_probe xs_u3 120 "BEST|rror|Traceback" benchmarks/bench_w4reg.py --xs --layer sym-fp16 --reps 11 --ms 16
timeout ${W4_LIMIT:-260} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 45
gpu_cleanup
