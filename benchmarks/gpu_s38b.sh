#!/usr/bin/env bash
# RECORD ONLY: ran in session 38 run 2 at 36be73f (the multicast codes need notes/s38_x_multicast.patch).
# Session 38 run 2: why x multicast (run 1) and the plain 64-row grid at M = 600 took ~75 us against ~50: the
# probe with PDL off and on (graph replays), then Nsight Compute of single launches (no PDL overlap).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s38b.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s38b
gpu_probe wg_pdl 150 "GEMM M|rror|Traceback" benchmarks/probe_w4a16_gemm.py --family wgmma \
    --shapes 2112x7168 --ms 600 768 1024 --layer sym-fp16 --rotate-x --tokens 999 --pdl-ab \
    --wg-configs "256,1,3,0,64" "256,1,3,0,64,0,1"
gpu_ncu ncu_mc 240 "w4_wgmma_kernel" benchmarks/probe_w4a16_gemm_ncu.py --wgmma-mc
gpu_cleanup
