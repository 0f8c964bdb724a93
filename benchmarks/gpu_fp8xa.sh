#!/usr/bin/env bash
# FP8 decode, x ahead (X = 1: each warp loads its next k-block's x operands before multiplying the
# current one; issue 4): its GPU tests, then probe_fp8_preq.py against the committed configs on the
# MLA shapes at M = 1 / 4 / 8 / 9 / 12 / 16 and on the wide shapes at M = 4 / 16; then the FP8 CUDA tests.
#   OUT=/some/dir bash benchmarks/gpu_fp8xa.sh   # ~250 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build fp8xa
gpu_pytest xa_tests 120 -x tests/gpu/test_fp8_cuda_gemv.py -k "x_ahead"
gpu_probe x16 100 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 2112x7168 --kernel-codes "" --qmodes early \
    --gemv-codes 1011114,11011114,11011116,11011112,11011214,11011212 \
    --pair-codes 1011114,11011114,11011116,11011112,11011214,11011212
gpu_probe x12 80 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 12 --shapes 2112x7168 --kernel-codes "" --qmodes early --gemv-codes "" \
    --pair-codes 1011114,11011114,11011116,11011214
gpu_probe x9 80 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 9 --shapes 2112x7168 --kernel-codes "" --qmodes early --gemv-codes "" \
    --pair-codes 1011114,11011114,11011116,11011214
gpu_probe x16b 80 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 1536x7168,576x7168 --kernel-codes "" --qmodes early --gemv-codes "" \
    --pair-codes 1011116,11011116,11011114,1041108,11041108
gpu_probe x8 80 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 8 --shapes 2112x7168,1536x7168 --gemv-codes "" --pair-codes 11011116 --qmodes early \
    --kernel-codes 11116,10011116,10011114,10011212
gpu_probe x4 100 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 4 --shapes 2112x7168,1536x7168,576x7168 --gemv-codes "" --pair-codes "" --qmodes early \
    --kernel-codes 11116,10011116,10011114,10011212,41108,10041108
gpu_probe x1 80 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 1 --shapes 2112x7168,576x7168 --gemv-codes "" --pair-codes "" --qmodes early \
    --kernel-codes 11116,10011116,10011114,41108,10041108
gpu_probe xw16 100 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 24576x1536,7168x16384 --gemv-codes "" --qmodes early --kernel-codes "" \
    --pair-codes 1011106,11011106,11011104,11021106,11041108,11041116,11081108
gpu_probe xw4 80 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 4 --shapes 24576x1536 --gemv-codes "" --pair-codes "" --qmodes early \
    --kernel-codes 11106,10011106,10011104,10011112
gpu_pytest fp8_cuda_tests 150 tests/gpu/test_fp8_cuda_gemv.py -k "not x_ahead"
gpu_cleanup
