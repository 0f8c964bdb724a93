#!/usr/bin/env bash
# Session 24 run 4: the dispatch with ('few', 2) = TMA ring 21848: the W4A16 decode GPU tests (the
# dispatch table, the TMA ring), then bench_w4tma.py on 2112x7168 at M = 9 .. 16 (auto = the new entry,
# against the register kernel the table named before and 21844).
#   OUT=/some/dir bash benchmarks/gpu_s24d.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s24d
gpu_pytest cuda_tests 150 tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_tma_gpu.py
gpu_probe tma_few 150 "us|rror|Traceback" benchmarks/bench_w4tma.py --shapes few --ms 9 10 12 14 16 --reps 9 \
    --codes 21844 21848 --reg
gpu_cleanup
