#!/usr/bin/env bash
# RECORD ONLY: ran in session 38 run 3 at 6d7bc57 (the multicast codes need notes/s38_x_multicast.patch).
# Session 38 run 3: x multicast variants (mcast 1 .. 4: where the cross-CTA stage releases go, and whether they
# order the thread's loads: run 2's ncu put multicast at 77 us against 52 in one eager launch) -- the multicast
# test over all four, the probe on 2112x7168 at M = 768 / 1024, and the SASS of variants 0 / 1 / 2.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s38c.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s38c
gpu_pytest mc_test 120 tests/gpu/test_w4a16_gemm_gpu.py -k "x_multicast or wgmma_refusals"
gpu_probe wg_mc 150 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --shapes 2112x7168 --ms 768 1024 --layer sym-fp16 --rotate-x --tokens 999 \
    --wg-configs "256,1,3,0,64" "256,1,3,0,64,0,1" "256,1,3,0,64,0,2" "256,1,3,0,64,0,3" "256,1,3,0,64,0,4"
k=_ZN7qlinear6w4a16g15w4_wgmma_kernelI13__nv_bfloat16Li256ELi3ELi64ELb0ELi
gpu_sass "w4a16_wgmma_launch*.o" ${k}0EEEvNS0_8WgParamsE ${k}1EEEvNS0_8WgParamsE ${k}2EEEvNS0_8WgParamsE
for v in 0 1 2; do echo "variant $v: $(zcat "$OUT/${k}${v}EEEvNS0_8WgParamsE.sass.gz" | grep -cE "MEMBAR") MEMBAR, $(zcat "$OUT/${k}${v}EEEvNS0_8WgParamsE.sass.gz" | grep -E "MEMBAR|FENCE|SYNCS" | sort | uniq -c | head -12)"; done
gpu_cleanup
