#!/usr/bin/env bash
# RECORD ONLY: ran in session 41 run 3 at a7d3779 (its ncu steps later became gpu_ncu_sass in _gpu_build.sh: the same steps).
# (its ncu lookup later became gpu_ncu_bin in _gpu_build.sh: the same commands.)
# Session 41 run 3: Nsight Compute of the W4A16 wgmma GEMM at M = 1024: the few row's 64-row CTAs on 2112x7168
# (256,0,3,0,64) against the paired 128-row CTAs on 2048x7168 (256,2,3,3,128), the same products per CTA.
# Warp states, scheduler statistics and per-SASS stall samples, to find where the 64-row CTA's extra cycles per
# superblock go (run 1: its stage ring alone keeps up with ideal tensor time).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s41c.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s41c
ncu=$(gpu_ncu_bin)
echo "ncu: ${ncu:-missing} $("$ncu" --version 2>/dev/null | tail -n 1)"
for case in "r64 2112 256,0,3,0,64" "r128 2048 256,2,3,3,128"; do
    set -- $case
    NCU_EXTRA="--section ComputeWorkloadAnalysis" NCU_RAW=1 gpu_ncu_sass "$1" 200 w4_wgmma_kernel \
        benchmarks/probe_wgmma_once.py --m 1024 --n "$2" --config "$3"
done
gzip -f "$OUT"/*_sass.csv "$OUT"/*_raw.csv
gpu_cleanup
