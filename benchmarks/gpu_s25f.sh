#!/usr/bin/env bash
# Session 25 run 6: the TMA ring's x boxes 144 columns wide (rows 288 bytes apart: no shared-memory bank
# conflicts on the x reads from M = 2 on; every box 128-byte aligned). The TMA GPU tests (K = 128 / 120
# added: narrower than the box), the dispatch-table and layer tests through the automatic dispatch;
# bench_w4tma on 2112x7168 (M = 1 .. 16) and 7168x16384 (M = 1 / 8 / 16) against run 4's figures; the
# FP8 cluster split on 576x7168 (S = 4, where the workspace split runs today) at M = 9 / 16; then the
# issue-5 acceptance benchmark (bench_linear --format w4a16).
#   OUT=/some/dir bash benchmarks/gpu_s25f.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s25f
gpu_pytest tma_tests 120 tests/gpu/test_w4a16_tma_gpu.py
gpu_pytest w4_table 60 tests/gpu/test_w4a16_cuda_gpu.py -k "auto_table"
gpu_pytest w4_auto 150 tests/gpu/test_w4a16_gpu.py -k "auto or graph or backend_choice"
gpu_probe tma_few 100 "BEST|rror|Traceback|tma|auto" benchmarks/bench_w4tma.py --shapes few --ms 1 4 8 9 12 16 --reps 9 \
    --codes 52444 62434 21844 21848
gpu_probe tma_many 120 "BEST|rror|Traceback|tma|auto" benchmarks/bench_w4tma.py --shapes many --ms 1 8 16 --reps 9 \
    --codes 32844 22464 74444
for m in 16 9; do
    gpu_probe fp8_576_m$m 60 "PREQ|rror|Traceback" benchmarks/probe_fp8_preq.py --m $m --shapes 576x7168 \
        --gemv-codes 11041108,111041108 --pair-codes 11041108,111041108 --qmodes early --kernel-codes ""
done
timeout ${W4_LIMIT:-200} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 40
gpu_cleanup
