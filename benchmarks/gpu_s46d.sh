#!/usr/bin/env bash
# RECORD ONLY: ran in session 46 run 4 at be0005e.
# Session 46 run 4: the decode pair's common shared-memory carveout (FP8_PAIR_CARVEOUT, a launch attribute of both
# kernels when the quantizer is the CUDA one). The FP8 decode GEMV and quantizer GPU test files; probe_fp8_preq.py
# (cold weights, x rotated, alternated replays) with FP8_PAIR_CARVEOUT -1 / 7 / 10 / 14 on 2112x7168 (M = 16, 9),
# 1536x7168 and 576x7168 (M = 16), CUDA quantizer first / early against the committed Triton pair in the same process;
# then bench_linear at M = 9 / 16 with the 2112x7168 row on the CUDA quantizer (trigger first, carveout 10) and as
# committed, two passes each.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s46d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s46d
gpu_pytest fp8_cuda_gemv 240 tests/gpu/test_fp8_cuda_gemv.py
gpu_pytest group_quant 200 tests/gpu/test_group_quant_gpu.py
for cv in -1 7 10 14; do
    for job in "2112x7168 16 11011114" "2112x7168 9 11011114" "1536x7168 16 11011116" "576x7168 16 11041108"; do
        set -- $job
        echo "== carveout $cv $1 M=$2"
        mkdir -p "$OUT/cv${cv}_$1_m$2"
        timeout 120 python benchmarks/with_setting.py "qlinear.ops.fp8:FP8_PAIR_CARVEOUT=$cv" -- \
            benchmarks/probe_fp8_preq.py --out "$OUT/cv${cv}_$1_m$2" --m "$2" --shapes "$1" --gemv-codes "" \
            --pair-codes "$3" --qmodes early --kernel-codes "" --cuda-quant first:128,early:128 --rotate-x 8 \
            2>&1 | tee "$OUT/cv${cv}_$1_m$2.log" | grep -E "PREQ.*(\+|rror)|Traceback"
    done
done
ROW="{(2112, 7168): ((8, 10011116), (16, 11011114, 'first', 'cuda')), (1536, 7168): ((8, 10011116), (16, 11011116, 'early')), (576, 7168): ((8, 10041108), (16, 11041108, 'early')), (7168, 16384): ((16, 101042304, 'early'),), None: 0}"
for pass in 1 2; do
    for v in base cq; do
        mkdir -p "$OUT/bench_${v}_$pass"
        if [ $v = cq ]; then set -- "qlinear.ops.fp8:FP8_CUDA_CONFIG=$ROW"; else set -- "qlinear.ops.fp8:FP8_PAIR_CARVEOUT=10"; fi
        timeout 200 python benchmarks/with_setting.py "$@" -- benchmarks/bench_linear.py --format fp8-block \
            --ms 9 16 --out "$OUT/bench_${v}_$pass" > "$OUT/bench_${v}_$pass.log" 2>&1
        echo "bench $v $pass rc=$?"
        grep -E "M=(9|16) 2112|rror" "$OUT/bench_${v}_$pass.log" | head -n 12
    done
done
echo "run: $(( $(date +%s) - t_all )) s"
gpu_cleanup
