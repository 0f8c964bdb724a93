#!/usr/bin/env bash
# Session 14 DIAGNOSTIC: where the cooperative-quantization FP8 GEMV (Q = 2 / 3) loses 3-5 us, round 2
# (main-loop codes / scales now plain loads instead of ld.cg): QLINEAR_FP8_CQ_DEBUG 0 normal, 2 barrier
# without quantization; M = 16 / 12 / 8 / 1 on 2112x7168, M = 16 on 1536x7168 / 576x7168.
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s14cqdbg
gpu_pytest coop_tests ${CT_T:-100} tests/gpu/test_fp8_cuda_gemv.py -k "coop"
for d in 0 2; do
  QLINEAR_FP8_CQ_DEBUG=$d gpu_probe d$d 60 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 2112x7168 --qmodes early \
      --gemv-codes 11011114 --pair-codes 11011114 --kernel-codes 13011114,12011114,12011116 --no-check
done
gpu_probe m12 60 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 12 --shapes 2112x7168 --qmodes early --gemv-codes "" \
    --pair-codes 11011114 --kernel-codes 12011114,12011116
gpu_probe m16b 80 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 1536x7168,576x7168 --qmodes early --gemv-codes "" \
    --pair-codes 11011116,11041108 --kernel-codes 12011116,12011114,12021116,12031108
gpu_probe m8 60 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 8 --shapes 2112x7168,576x7168 --qmodes early --gemv-codes "" \
    --pair-codes "" --kernel-codes 10011116,10041108,12011116,12031108
gpu_probe m1 60 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 1 --shapes 2112x7168 --qmodes early \
    --gemv-codes 1011116 --pair-codes "" --kernel-codes 10011116,12011116
gpu_cleanup
