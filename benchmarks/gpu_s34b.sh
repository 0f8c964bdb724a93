#!/usr/bin/env bash
# RECORD ONLY: ran in session 34 run 2 at 4d6ff7f (branch s34-streamk).
# Session 34 run 2: why the stream-K grid (reduce 3) ran slower than its units suggest (run 1): Nsight Compute
# of the stream-K kernel at M = 1024 / 256 and of the 64-row and plain 128-row grids on 2112x7168; the probe
# with each config also timed without PDL.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s34b.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s34b
gpu_ncu ncu_sk 200 "w4_wgmma_kernel" benchmarks/probe_w4a16_gemm_ncu.py --wgmma-sk
gpu_probe sk 240 "GEMM|rror|Traceback|skipped" benchmarks/probe_w4a16_gemm.py --family wgmma --tokens 999 --rotate-x \
    --shapes 2112x7168 --ms 256 1024 --wg-configs 256,0,3,3,128,1 256,0,3,0,64 --pdl-ab
gpu_cleanup
