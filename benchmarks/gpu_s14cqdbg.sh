#!/usr/bin/env bash
# Session 14 DIAGNOSTIC: where the cooperative-quantization FP8 GEMV (Q = 2 / 3) loses 3-5 us:
# QLINEAR_FP8_CQ_DEBUG 0 normal, 1 no barrier, 2 barrier without quantization, 3 volatile spin with
# fences, 4 volatile spin without fences (codes from the normal run stay in the workspace: same x).
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s14cqdbg
for d in 0 1 2 3 4; do
  QLINEAR_FP8_CQ_DEBUG=$d gpu_probe d$d 60 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 2112x7168 --qmodes early \
      --gemv-codes 11011114 --pair-codes "" --kernel-codes 13011114,12011114 --no-check
done
QLINEAR_FP8_CQ_DEBUG=0 gpu_probe m1 60 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 1 --shapes 2112x7168 --qmodes early \
    --gemv-codes 1011116 --pair-codes "" --kernel-codes 10011116,13011116
QLINEAR_FP8_CQ_DEBUG=1 gpu_probe m1d1 60 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 1 --shapes 2112x7168 --qmodes early \
    --gemv-codes "" --pair-codes "" --kernel-codes 13011116 --no-check
gpu_cleanup
