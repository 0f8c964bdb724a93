#!/usr/bin/env bash
# Session 14: FP8 decode GEMM with cooperative quantization (Q = 2: the CTAs quantize x together into
# the workspace, a grid barrier, then the pre-quantized main loop; Q = 3 without the cooperative
# launch attribute): its GPU tests, then probe_fp8_preq.py against the committed paths (quantizer +
# GEMV pair at M = 9..16, in-kernel quantization at M <= 8) on the MLA shapes.
#   OUT=/some/dir bash benchmarks/gpu_s14coop.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s14coop
gpu_pytest coop_tests ${CT_T:-150} tests/gpu/test_fp8_cuda_gemv.py -k "coop or x_ahead or preq_configs or graph or quantization_matches"
gpu_probe c16 100 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 2112x7168 --qmodes early \
    --gemv-codes 11011114 --pair-codes 11011114 \
    --kernel-codes 12011114,13011114,12011116,13011116,12011212,12011112,2011116
gpu_probe c12 80 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 12 --shapes 2112x7168 --qmodes early --gemv-codes "" \
    --pair-codes 11011114 --kernel-codes 12011114,12011116
gpu_probe c16b 100 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 16 --shapes 1536x7168,576x7168 --qmodes early --gemv-codes "" \
    --pair-codes 11011116,11041108 --kernel-codes 12011116,12011114,12031116,12031108,12021116
gpu_probe c8 100 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 8 --shapes 2112x7168,1536x7168,576x7168 --gemv-codes "" --pair-codes "" \
    --qmodes early --kernel-codes 10011116,10041108,12011116,13011116,12031116,12031108
gpu_probe c1 80 "PREQ|rror" benchmarks/probe_fp8_preq.py --m 1 --shapes 2112x7168,576x7168 --gemv-codes "" --pair-codes "" \
    --qmodes early --kernel-codes 10011116,10041108,12011116,12031116,12031108
gpu_cleanup
