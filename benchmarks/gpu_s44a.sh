#!/usr/bin/env bash
# RECORD ONLY: ran in session 44 run 1 at eeeeb2a (the flags pair is not compiled since: notes/s44_flags.patch).
# Session 44 run 1: the flags-mode decode pair (csrc/group_quant.cuh flags mode + csrc/fp8_gemv.cuh waiting for
# per-k-block release flags instead of griddepcontrol.wait on the quantizer grid). Its GPU tests and the tests of
# the two kernels it changed; the M = 9 / 12 / 16 pairs on the MLA shapes against the committed Triton-quantizer
# pair and the CUDA quantizer's (probe_fp8_preq.py, cold weights, x rotated, alternated replays); bench_linear's
# M <= 16 rows with the flags row in the table (with_setting) and without, two passes each.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s44a.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s44a
gpu_pytest flags_tests 300 tests/gpu/test_fp8_flags_gpu.py
gpu_pytest gq_tests 240 tests/gpu/test_group_quant_gpu.py tests/gpu/test_fp8_cuda_gemv.py
FQ=early:8:32,early:8:1,early:16:32,late:8:32
for m in 16 9; do
    gpu_probe "preq_2112_m$m" 150 "PREQ|rror|Traceback" benchmarks/probe_fp8_preq.py --m "$m" --shapes 2112x7168 \
        --gemv-codes 11011114 --pair-codes 11011114 --qmodes early --kernel-codes "" --cuda-quant first:128 \
        --flag-quant "$FQ" --rotate-x 8
done
gpu_probe preq_1536 120 "PREQ|rror|Traceback" benchmarks/probe_fp8_preq.py --m 16 --shapes 1536x7168 \
    --gemv-codes 11011116 --pair-codes 11011116 --qmodes early --kernel-codes "" --flag-quant "$FQ" --rotate-x 8
gpu_probe preq_576 120 "PREQ|rror|Traceback" benchmarks/probe_fp8_preq.py --m 16 --shapes 576x7168 \
    --gemv-codes 11041108 --pair-codes 11041108 --qmodes early --kernel-codes "" --flag-quant "$FQ" --rotate-x 8
FLAGROWS="{(2112, 7168): ((8, 10011116), (16, 11011114, 'early', 'cuda-flags')), (1536, 7168): ((8, 10011116), (16, 11011116, 'early', 'cuda-flags')), (576, 7168): ((8, 10041108), (16, 11041108, 'early', 'cuda-flags')), (7168, 16384): ((16, 101042304, 'early'),), None: 0}"
if grep -q " passed" "$OUT/flags_tests.txt" && ! grep -qE "failed|error" "$OUT/flags_tests.txt"; then
    for pass in 1 2; do
        for v in base flags; do
            mkdir -p "$DEST/bench_${v}_$pass"
            if [ $v = flags ]; then set -- "qlinear.ops.fp8:FP8_CUDA_CONFIG=$FLAGROWS"; else set -- "qlinear.ops.fp8:FP8_CUDA_QUANTIZER='triton'"; fi
            timeout 200 python benchmarks/with_setting.py "$@" -- benchmarks/bench_linear.py --format fp8-block \
                --ms 9 16 --out "$DEST/bench_${v}_$pass" > "$OUT/bench_${v}_$pass.log" 2>&1
            echo "bench $v $pass rc=$?"
            grep -E "M=(9|16) |rror" "$OUT/bench_${v}_$pass.log" | head -n 12
        done
    done
fi
echo "run: $(( $(date +%s) - t_all )) s"
