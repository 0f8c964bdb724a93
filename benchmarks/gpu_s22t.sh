#!/usr/bin/env bash
# Session 22 run 10: the TMA ring GPU tests after two test fixes (codes for M > 8 that run 9's pruning
# left out of the NT = 2 list).
#   OUT=/some/dir bash benchmarks/gpu_s22t.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s22t
gpu_pytest tma_tests 120 tests/gpu/test_w4a16_tma_gpu.py
gpu_cleanup
