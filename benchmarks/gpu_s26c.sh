#!/usr/bin/env bash
# Session 26 run 3: how much of the TMA ring's decode time at M > 1 is its x reads from shared memory?
# (x rows 256 bytes apart: the eight rows of an LDS.64 hit the same eight banks.) Diagnostic twins
# 1xxxxx of the dispatch's codes read every x fragment from row 0 (conflict-free, wrong results), timed
# against the real codes on 2112x7168 (M = 4 / 8 / 9 / 16) and 7168x16384 (M = 16); the TMA tests; then
# the issue-4 acceptance benchmark (bench_linear --format fp8-block) at this commit.
#   OUT=/some/dir bash benchmarks/gpu_s26c.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s26c
gpu_pytest tma_tests 120 tests/gpu/test_w4a16_tma_gpu.py
gpu_probe xdiag_few 100 "BEST|rror|Traceback|tma|auto" benchmarks/bench_w4tma.py --shapes few --ms 4 8 9 16 \
    --reps 9 --diag --codes 52444 152444 62434 162434
gpu_probe xdiag_many 60 "BEST|rror|Traceback|tma|auto" benchmarks/bench_w4tma.py --shapes many --ms 16 \
    --reps 9 --diag --codes 74444 174444
timeout ${FP8_LIMIT:-220} python benchmarks/bench_linear.py --format fp8-block --out "$OUT" 2>&1 | tail -n 30
gpu_cleanup
