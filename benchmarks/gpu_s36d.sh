#!/usr/bin/env bash
# RECORD ONLY: ran in session 36 run 3 at 4bc792b (through gpu_s36e.sh; its ncu steps later became gpu_ncu_sass in
# _gpu_build.sh: the same steps).
# (its ncu lookup later became gpu_ncu_bin in _gpu_build.sh: the same commands.)
# Session 36 run 3 (first half): Nsight Compute of the TMA ring on 2112x7168 at one token tile (M = 8,
# 252444) and two (M = 16, 262434, the dispatch's code): warp-state and per-SASS-instruction stall samples,
# to find where the second token tile's ~1.5 us go (session 36 run 2: the time follows the consumers' work
# per CTA).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s36d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s36d
ncu=$(gpu_ncu_bin)
echo "ncu: ${ncu:-missing} $("$ncu" --version 2>/dev/null | tail -n 1)"
for mc in "8 252444" "16 262434"; do
    set -- $mc
    gpu_ncu_sass "m$1_$2" 150 tma_gemv_kernel benchmarks/probe_tma_once.py --m "$1" --code "$2"
done
gzip -f "$OUT"/*_sass.csv
gpu_cleanup
