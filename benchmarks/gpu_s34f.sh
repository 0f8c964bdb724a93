#!/usr/bin/env bash
# RECORD ONLY: ran in session 34 run 6 at 1948794 (branch s34-trace; its stamps and probe_wg_trace.py are in
# notes/s34_wg_trace.patch).
# Session 34 run 6: the wgmma W4A16 GEMM's phases per CTA (probe_wg_trace.py): prologue, main
# loop and epilogue of the dispatch's configs at M = 1024 (three shapes) and 128 (2112x7168).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s34f.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s34f
timeout 200 python benchmarks/probe_wg_trace.py 2>&1 | tee "$OUT/trace.log"
gpu_cleanup
