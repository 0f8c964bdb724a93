#!/usr/bin/env bash
# RECORD ONLY: ran in session 29 run 5 at 94ca1d3.
# Session 29 run 5 (no kernel change): the FP8 pair on 2112x7168 at M = 16 / 12 with the quantizer's rows per
# program (fp8_triton.QUANT_ROW_BLOCK 1 committed, 2, 4, 16: fewer, wider quantizer programs) and its PDL
# trigger early / first, against the dispatch.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s29d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s29d
for m in 16 12; do
  gpu_probe m$m 200 "PREQ" benchmarks/probe_fp8_preq.py --shapes 2112x7168 --m $m --gemv-codes 11011114 \
      --pair-codes 11011114 --qmodes early,first --quant-rows 2,4,16 --kernel-codes ""
done
