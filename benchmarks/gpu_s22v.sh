#!/usr/bin/env bash
# Session 22 run 11: after the duplicate-removal edits (one cross-warp reduction helper for the register
# and TMA ring kernels, the TMA ring's read-only diagnostic mode removed): the W4A16 decode GPU tests and
# bench_w4tma.py on 7168x16384 (the dispatch's TMA entries against their neighbours).
#   OUT=/some/dir bash benchmarks/gpu_s22v.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s22v
gpu_pytest w4_tests 200 tests/gpu/test_w4a16_tma_gpu.py tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_fold.py
gpu_probe tma_many 90 "BEST|rror|Traceback" benchmarks/bench_w4tma.py --shapes many --reps 9
gpu_cleanup
