#!/usr/bin/env bash
# RECORD ONLY: ran in session 46 run 1 at 1d1f023.
# Session 46 run 1: is the pre-quantized FP8 decode GEMV on 2112x7168 at M = 16 bound by x's L2 traffic?
# probe_fp8_xtraffic.py: the GEMV with x rows aliased (stride 0) and / or hot weights against the committed code,
# and the two-row-tile, two-split codes (half of x per CTA) alone and after the quantizer, at M = 16 / 12 / 8.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s46a.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s46a
gpu_probe xt16 200 "XT|rror|Traceback" benchmarks/probe_fp8_xtraffic.py --ms 16,12,8 \
    --codes 11011114,1022108,1022208,1022008,1022106 --pair-codes 11011114,1022108,1022208 --diag-codes 11011114
echo "run: $(( $(date +%s) - t_all )) s"
gpu_cleanup
