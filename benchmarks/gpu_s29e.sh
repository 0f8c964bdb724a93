#!/usr/bin/env bash
# RECORD ONLY: ran in session 29 run 6 at 347fdb2; FP8_CUDA_XS_COLUMN_MAJOR and the probe option it flips were removed after it.
# Session 29 run 6 (no kernel change): the FP8 pair on 2112x7168 at M = 16 / 12 with the quantizer writing
# column-major x scales (a lane's two scale loads per token tile then hit one 32-byte sector per warp instead
# of four), GEMV alone and after the quantizer, against the committed row-major scales.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s29e.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s29e
for m in 16 12 9; do
  gpu_probe m$m 200 "PREQ" benchmarks/probe_fp8_preq.py --shapes 2112x7168 --m $m --gemv-codes 11011114,11011116 \
      --pair-codes 11011114,11011116 --qmodes early --xs-layouts cm --kernel-codes ""
done
