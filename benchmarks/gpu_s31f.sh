#!/usr/bin/env bash
# Session 31 run 6: grid-quantized x in the FP8 decode GEMM (launch code Q = 2: every warp of the grid
# quantizes one (token, k-block) group into the workspace, a grid barrier, then the pre-quantized kernel):
# the FP8 GEMV GPU tests (Q = 2 bit-identical to the quantizer + Q = 1 pair, graph replays, refusals), then
# probe_fp8_preq.py: the whole op at M = 16 / 9 (2112x7168, 1536x7168) against the dispatch's pair (quantizer
# trigger early + 11011114), and at M = 1 / 8 against its in-kernel 10011116.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s31f.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s31f
gpu_pytest gq_tests 150 tests/gpu/test_fp8_cuda_gemv.py -k "grid_quantized or x_ahead or trigger or pair_chain"
gpu_probe gq16 90 "PREQ|rror|Traceback" benchmarks/probe_fp8_preq.py --shapes 2112x7168,1536x7168 --m 16 \
    --gemv-codes 11011114 --pair-codes 11011114 --qmodes early --kernel-codes 12011114,12011116,12011112
gpu_probe gq9 60 "PREQ|rror|Traceback" benchmarks/probe_fp8_preq.py --shapes 2112x7168 --m 9 \
    --gemv-codes "" --pair-codes 11011114 --qmodes early --kernel-codes 12011114,12011116
for m in 1 8; do
    gpu_probe gq$m 60 "PREQ|rror|Traceback" benchmarks/probe_fp8_preq.py --shapes 2112x7168 --m $m \
        --gemv-codes "" --pair-codes "" --qmodes early --kernel-codes 10011116,12011114,12011116
done
gpu_cleanup
