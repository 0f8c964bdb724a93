#!/usr/bin/env bash
# RECORD ONLY: ran in session 37 run 5 at 1c04f4b.
# Session 37 run 5 (no kernel change): the FP8 pair on 2112x7168 at M = 16 / 12 with fewer GEMV warps per CTA
# (8 / 10 / 12 against the dispatch's 14: at 8 warps of 120 registers two CTAs fit an SM, so the next GEMV
# could start beside the last, as the W4A16 ring's early trigger does) and a K split over two CTAs (S = 2).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s37e.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s37e
for m in 16 12; do
  gpu_probe m$m 200 "PREQ" benchmarks/probe_fp8_preq.py --shapes 2112x7168 --m $m \
      --gemv-codes 11011114,11011108 \
      --pair-codes 11011114,11011108,11011110,11011112,11021108 --qmodes early --kernel-codes ""
done
gpu_cleanup
