#!/usr/bin/env bash
# Session 21 run 1: the quantizer's PDL trigger "first" (launch_dependents before griddepcontrol.wait)
# for the quantize-then-GEMM pairs. The GPU tests of the trigger (same bits, a PDL chain of pairs in one
# CUDA graph), then probe_fp8_preq.py with --qmodes early,first: the CUDA pairs on the MLA shapes at
# M = 16 / 12 / 9, and the Triton pairs (triton q ...) on the wide shapes at M = 16 / 4 / 1.
#   OUT=/some/dir bash benchmarks/gpu_s21a.sh   # ~6 min after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s21a
gpu_pytest s21a_tests 240 tests/gpu/test_fp8_cuda_gemv.py -k "trigger or chain"
for m in ${S21_MS:-16 12 9}; do
    gpu_probe "mla_m$m" 150 "PREQ|rror" benchmarks/probe_fp8_preq.py --m "$m" --shapes 2112x7168,1536x7168,576x7168 \
        --gemv-codes "" --pair-codes 11011114,11011212,1011214,1011312,11011116 --qmodes early,first --kernel-codes ""
done
for m in ${S21_WIDE_MS:-16 1}; do
    gpu_probe "wide_m$m" 150 "PREQ|rror" benchmarks/probe_fp8_preq.py --m "$m" --shapes 24576x1536,7168x16384 \
        --gemv-codes "" --pair-codes "" --qmodes late,early,first --kernel-codes ""
done
gpu_cleanup
