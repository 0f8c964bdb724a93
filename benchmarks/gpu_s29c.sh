#!/usr/bin/env bash
# RECORD ONLY: ran in session 29 run 4 at d7be29e.
# Session 29 run 4 (no kernel change): FP8 2112x7168 M = 16 with taller row tiles over half of K in the
# register kernel (R = 2, S = 2: x's codes cross L2 once per 32 rows; pre-quantized and in-kernel), against
# the dispatch (quantizer + 11011114); then the W4A16 wgmma GEMM's configs on 2112x7168 at M = 128 / 1024
# (issue 5: M = 128 no slower than bf16, M = 1024 <= 1.15x) with x rotated as bench_linear does.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s29c.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s29c
C16=${C16:-11011114,1022108,1022208,1022008,1021108}
gpu_probe m16 200 "PREQ" benchmarks/probe_fp8_preq.py --shapes 2112x7168 --m 16 --gemv-codes "$C16" \
    --pair-codes "$C16" --qmodes early --kernel-codes 22108,22208,22008
gpu_probe w4 300 "GEMM" benchmarks/probe_w4a16_gemm.py --family wgmma --ms 128 1024 --shapes 2112x7168 \
    --splits 0 4 5 6 8 --rotate-x
