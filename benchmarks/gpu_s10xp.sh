#!/usr/bin/env bash
# Session 10: X = 2 (x ahead, and all PF + 1 weight stages requested before the PDL wait) against the
# X = 1 table entries on the MLA shapes (issue 4: 2112x7168 M = 16 at 8.24 us against 8): its GPU
# tests, then probe_fp8_preq.py with the same method as session 9 run 4.
#   OUT=/some/dir bash benchmarks/gpu_s10xp.sh   # ~250 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s10xp
gpu_pytest xa_tests 150 -x tests/gpu/test_fp8_cuda_gemv.py -k "x_ahead"
gpu_probe p16 100 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 2112x7168 --kernel-codes "" --qmodes early \
    --gemv-codes 11011114,21011114,21011116,21011212 \
    --pair-codes 11011114,21011114,21011116,21011112,21011212,21011210
gpu_probe p12 60 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 12 --shapes 2112x7168 --kernel-codes "" --qmodes early --gemv-codes "" \
    --pair-codes 11011114,21011114,21011212
gpu_probe p16b 80 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 1536x7168,576x7168 --kernel-codes "" --qmodes early --gemv-codes "" \
    --pair-codes 11011116,21011116,21011114,11041108,21041108
gpu_probe p8 80 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 8 --shapes 2112x7168,1536x7168,576x7168 --gemv-codes "" --pair-codes "" --qmodes early \
    --kernel-codes 10011116,20011116,20011212,10041108,20041108
gpu_probe p1 80 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 1 --shapes 2112x7168,1536x7168,576x7168 --gemv-codes "" --pair-codes "" --qmodes early \
    --kernel-codes 10011116,20011116,20011212,10041108,20041108
gpu_cleanup
