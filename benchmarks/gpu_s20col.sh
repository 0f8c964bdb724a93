#!/usr/bin/env bash
# RECORD ONLY: the knob and the probe's --col-major were removed again (column-major scales were slower at
# M = 16; benchmarks/results/session20/README.md run 9). To rerun, check out 5324c61.
# Session 20 run 9: the M = 9..16 pair (Triton quantizer early + CUDA GEMV on its codes) with the x
# scales written column-major (FP8_CUDA_PREQ_COLUMN_MAJOR; a block's scales of 8 tokens in one
# sector instead of 8) against row-major, probe_fp8_preq.py --col-major, 2112x7168 and 1536x7168.
#   OUT=/some/dir bash benchmarks/gpu_s20col.sh   # ~60 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s20col
for m in ${COL_MS:-16 12 9}; do
    gpu_probe "col_m$m" 100 "PREQ|rror" benchmarks/probe_fp8_preq.py --m "$m" --shapes 2112x7168,1536x7168 \
        --gemv-codes "" --pair-codes 11011114,11011116 --qmodes early --kernel-codes "" --col-major
done
gpu_cleanup
