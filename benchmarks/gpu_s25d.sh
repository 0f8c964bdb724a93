#!/usr/bin/env bash
# Session 25 run 4: the dispatch with the pair split (('few', 4) and ('few', 1) 52444, ('few', 2) 62434).
# The TMA GPU tests (every compiled code below 80000, the two sixteen-warp pair codes 62838 / 52848
# included), the dispatch-table test and the layer tests through the automatic dispatch; 2112x7168 at
# M = 2 / 3 / 6 (one token tile, not measured before) and M = 9 / 12 / 16 against the two new codes;
# then the issue-5 acceptance benchmark (bench_linear --format w4a16).
#   OUT=/some/dir bash benchmarks/gpu_s25d.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s25d
gpu_pytest tma_tests 120 tests/gpu/test_w4a16_tma_gpu.py
gpu_pytest w4_table 60 tests/gpu/test_w4a16_cuda_gpu.py -k "auto_table"
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
gpu_probe tma_few1 80 "BEST|rror|Traceback" benchmarks/bench_w4tma.py --shapes few --ms 2 3 6 --reps 9 \
    --codes 52444 21844 --reg
gpu_probe tma_few2 100 "BEST|rror|Traceback|tma|auto" benchmarks/bench_w4tma.py --shapes few --ms 9 12 16 --reps 9 \
    --codes 62434 62838 52848 21848
timeout ${W4_LIMIT:-200} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 40
gpu_cleanup
