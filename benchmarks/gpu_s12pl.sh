#!/usr/bin/env bash
# Session 12: the FP8 decode GEMM's preload (P digit, X = 1 instances: all PF + 1 register stages of
# weights requested before griddepcontrol.wait): probe_fp8_preq.py, P = 1 codes against the same
# codes without P (the dispatch's) on the MLA shapes at M = 16 / 12 / 9 (quantizer + GEMV, and GEMV
# alone) and M = 8 / 1 (x quantized in the kernel); then the GPU tests of the CUDA kernel.
#   OUT=/some/dir bash benchmarks/gpu_s12pl.sh
# Ran once (session 12 run 5, fc9a923); the preload was slower on 2112x7168 and 1536x7168 and was
# removed after it, so this script needs that commit.
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s12pl
P="PREQ|rror"
gpu_probe p16 90 "$P" benchmarks/probe_fp8_preq.py --m 16 --shapes 2112x7168,1536x7168,576x7168 --kernel-codes "" --qmodes early \
    --gemv-codes 11011114,111011114 \
    --pair-codes 11011114,111011114,11011116,111011116,11041108,111041108,111011212
gpu_probe p12 60 "$P" benchmarks/probe_fp8_preq.py --m 12 --shapes 2112x7168 --kernel-codes "" --qmodes early --gemv-codes "" \
    --pair-codes 11011114,111011114,111011116
gpu_probe p9 60 "$P" benchmarks/probe_fp8_preq.py --m 9 --shapes 2112x7168 --kernel-codes "" --qmodes early --gemv-codes "" \
    --pair-codes 11011114,111011114,111011116
gpu_probe p8 70 "$P" benchmarks/probe_fp8_preq.py --m 8 --shapes 2112x7168,1536x7168,576x7168 --gemv-codes "" --pair-codes "" --qmodes early \
    --kernel-codes 10011116,110011116,10041108,110041108,110011212
gpu_probe p1 70 "$P" benchmarks/probe_fp8_preq.py --m 1 --shapes 2112x7168,1536x7168,576x7168 --gemv-codes "" --pair-codes "" --qmodes early \
    --kernel-codes 10011116,110011116,10041108,110041108
gpu_pytest fp8_cuda_tests 150 tests/gpu/test_fp8_cuda_gemv.py
gpu_cleanup
