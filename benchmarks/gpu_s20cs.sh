#!/usr/bin/env bash
# RECORD ONLY: the Q = 2 kernel (x quantized once per 2-CTA cluster) it times was removed again
# (no faster than the quantizer + GEMV pair it was meant to replace; benchmarks/results/session20/
# README.md). To rerun it, check out the kernel's last commit: 8456fdd (run 7's code).
# Session 20 runs 1-4, 6, 7: the FP8 decode GEMM with x quantized once per 2-CTA cluster (Q = 2). Its GPU tests
# (against the reference and bit for bit against Q = 1), then probe_fp8_preq.py on the MLA shapes at
# M = 16 / 12 / 9: Q = 2 codes against the table's pair (Triton quantizer early + 11011114) and auto.
#   OUT=/some/dir bash benchmarks/gpu_s20cs.sh   # ~250 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s20cs
gpu_pytest cs_tests 200 tests/gpu/test_fp8_cuda_gemv.py -k "cluster or x_ahead"
for m in ${CS_MS:-16 12 9}; do
    gpu_probe "cs_m$m" 100 "PREQ|rror" benchmarks/probe_fp8_preq.py --m "$m" \
        --shapes "${CS_SHAPES:-2112x7168,1536x7168,576x7168}" --gemv-codes "" --pair-codes 11011114,11011116,11041108 \
        --qmodes early --kernel-codes "${CS_CODES:-12011116,12011114,12011112,12011212,12021108,12041104}"
done
gpu_cleanup
