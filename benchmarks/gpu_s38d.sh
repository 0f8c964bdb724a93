#!/usr/bin/env bash
# RECORD ONLY: ran in session 38 run 4 at e503653 (the multicast codes need notes/s38_x_multicast.patch).
# Session 38 run 4: x multicast with relaxed cross-CTA releases (mcast 3; run 3: 63-67 us against 47-50 plain, the
# releasing ones 74-77) and with a producer warpgroup issuing the fills, so that no MMA warp waits for the peer's
# releases (producer 1: codes 11323 plain, 311323 multicast). The multicast test over the variants, then the probe.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s38d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s38d
gpu_pytest mc_test 120 tests/gpu/test_w4a16_gemm_gpu.py -k "x_multicast or wgmma_refusals"
gpu_probe wg_mc 150 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --shapes 2112x7168 --ms 768 1024 --layer sym-fp16 --rotate-x --tokens 999 \
    --wg-configs "256,1,3,0,64" "256,1,3,0,64,1" "256,1,3,0,64,0,1" "256,1,3,0,64,0,3" "256,1,3,0,64,1,3"
gpu_cleanup
