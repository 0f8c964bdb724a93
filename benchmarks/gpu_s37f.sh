#!/usr/bin/env bash
# Session 37 run 6: the final tree's TMA ring tests (1257434 / 1057434 removed after run 4) and the whole CUDA
# W4A16 decode test file.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s37f.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s37f
gpu_pytest tma_tests 60 tests/gpu/test_w4a16_tma_gpu.py
gpu_pytest cuda_tests 200 tests/gpu/test_w4a16_cuda_gpu.py
gpu_cleanup
