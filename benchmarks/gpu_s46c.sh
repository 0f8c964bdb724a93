#!/usr/bin/env bash
# RECORD ONLY: ran in session 46 run 3 at 6601249 (QLINEAR_SMEM_CARVEOUT, a function attribute on every CUDA launch, was
# replaced by the per-launch carveout of FP8_PAIR_CARVEOUT in be0005e).
# Session 46 run 3: do the quantizer and the GEMV of the FP8 decode pair lose their PDL overlap to different
# shared-memory configurations? probe_fp8_preq.py on 2112x7168 at M = 16 / 9 (cold weights, x rotated, alternated
# replays): the committed pair (Triton quantizer, trigger early) and the CUDA quantizer's (early / first), with the
# preferred shared-memory carveout unset and set to 100 / 10 / 0 % on every kernel of the pair (QLINEAR_SMEM_CARVEOUT
# for the CUDA kernels, --triton-carveout for the Triton quantizer), one process per setting, two rounds.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s46c.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s46c
for round in 1 2; do
    for cv in none 100 10 0; do
        for m in 16 9; do
            if [ $cv = none ]; then extra=(); unset QLINEAR_SMEM_CARVEOUT; else extra=(--triton-carveout "$cv"); export QLINEAR_SMEM_CARVEOUT=$cv; fi
            echo "== carveout $cv M=$m round $round"
            gpu_probe "cv${cv}_m${m}_r$round" 120 "PREQ|rror|Traceback" benchmarks/probe_fp8_preq.py --m "$m" \
                --shapes 2112x7168 --gemv-codes 11011114 --pair-codes 11011114 --qmodes early --kernel-codes "" \
                --cuda-quant early:128,first:128 --rotate-x 8 "${extra[@]}"
        done
    done
done
unset QLINEAR_SMEM_CARVEOUT
echo "run: $(( $(date +%s) - t_all )) s"
gpu_cleanup
