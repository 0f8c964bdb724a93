#!/usr/bin/env bash
# Session 26 run 4: the TMA ring's x at two token tiles in TMA's 128-byte swizzle (two 64-column halves
# per superblock, 1024-byte aligned): the TMA GPU tests (every code at M = 9 .. 16, ragged K / N, graph),
# the dispatch-table and layer tests; bench_w4tma on 2112x7168 M = 9 / 12 / 16 and 7168x16384 M = 16
# against the x-row-0 twins (the conflict-free bound); then the issue-5 acceptance benchmark.
#   OUT=/some/dir bash benchmarks/gpu_s26d.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s26d
gpu_pytest tma_tests 120 tests/gpu/test_w4a16_tma_gpu.py
gpu_pytest w4_table 60 tests/gpu/test_w4a16_cuda_gpu.py -k "auto_table"
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
gpu_probe swz_few 100 "BEST|rror|Traceback|tma|auto" benchmarks/bench_w4tma.py --shapes few --ms 9 12 16 \
    --reps 9 --diag --codes 62434 162434 21848
gpu_probe swz_other 80 "BEST|rror|Traceback|tma|auto" benchmarks/bench_w4tma.py --shapes many short --ms 16 \
    --reps 9 --diag --codes 74444 174444 24444
if grep -q "failed\|error" "$OUT/tma_tests.txt"; then echo "TMA tests failed: no acceptance run"; else
timeout ${W4_LIMIT:-200} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 40; fi
gpu_cleanup
