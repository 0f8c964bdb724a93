#!/usr/bin/env bash
# Session 26 run 5: swizzled x only in code 124444 (24444 with x in TMA's 128-byte swizzle), the
# dispatch's ('many', 2); every other code back to 256-byte x rows. The TMA, dispatch-table and layer GPU
# tests; bench_w4tma on 7168x16384 M = 9 / 16 (124444 against 24444 / 74444) and 2112x7168 M = 9 / 16
# (62434, unswizzled again); then the issue-5 acceptance benchmark (bench_linear --format w4a16).
#   OUT=/some/dir bash benchmarks/gpu_s26e.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s26e
gpu_pytest tma_tests 120 tests/gpu/test_w4a16_tma_gpu.py
gpu_pytest w4_table 60 tests/gpu/test_w4a16_cuda_gpu.py -k "auto_table"
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
gpu_probe swz_many 80 "BEST|rror|Traceback|tma|auto" benchmarks/bench_w4tma.py --shapes many --ms 9 16 \
    --reps 9 --codes 124444 24444 74444
gpu_probe few 60 "BEST|rror|Traceback|tma|auto" benchmarks/bench_w4tma.py --shapes few --ms 9 16 --reps 9 --codes 62434
if grep -q "failed\|error" "$OUT/tma_tests.txt"; then echo "TMA tests failed: no acceptance run"; else
timeout ${W4_LIMIT:-200} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 40; fi
gpu_cleanup
