#!/usr/bin/env bash
# RECORD ONLY: ran in session 44 run 2 at f99e1ef (the flags pair is not compiled since: notes/s44_flags.patch).
# Session 44 run 2: the flags-mode pair with a sleep between polls (run 1: spinning GEMV warps, 9.9 against the
# PDL-wait pair's 8.3 us at M = 16). Its GPU tests; the 2112x7168 pairs at M = 16 / 9 with 0-2000 ns between polls
# against the committed pair (probe_fp8_preq.py, cold weights, x rotated, alternated replays).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s44b.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s44b
gpu_pytest flags_tests 300 tests/gpu/test_fp8_flags_gpu.py
FQ=early:8:32:0,early:8:32:100,early:8:32:400,early:8:32:2000,early:16:32:400,late:8:32:400
for m in 16 9; do
    gpu_probe "preq_2112_m$m" 150 "PREQ|rror|Traceback" benchmarks/probe_fp8_preq.py --m "$m" --shapes 2112x7168 \
        --gemv-codes 11011114 --pair-codes 11011114 --qmodes early --kernel-codes "" --flag-quant "$FQ" --rotate-x 8
done
echo "run: $(( $(date +%s) - t_all )) s"
