#!/usr/bin/env bash
# RECORD ONLY: the Q = 2 kernel (x quantized once per 2-CTA cluster) it times was removed again
# (no faster than the quantizer + GEMV pair it was meant to replace; benchmarks/results/session20/
# README.md). To rerun it, check out the kernel's last commit: 8456fdd (run 7's code).
# Session 20 run 5 (DIAGNOSTIC kernel: PF digit 2 of a Q = 2 code = the same kernel sending each
# block in the iteration that multiplies it): probe_fp8_preq.py at M = 16 (Q = 2 ahead / not ahead,
# the pair) and M = 8 (the in-kernel one-token-tile kernel the Q = 2 kernel is built on).
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s20diag
gpu_probe d16 100 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 2112x7168,576x7168 --gemv-codes "" \
    --pair-codes 11011114 --qmodes early --kernel-codes 12011116,12011216,12011114,12011214
gpu_probe d8 100 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 8 --shapes 2112x7168 --gemv-codes "" \
    --pair-codes 11011116 --qmodes early --kernel-codes 10011116
gpu_cleanup
