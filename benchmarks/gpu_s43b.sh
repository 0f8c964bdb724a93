#!/usr/bin/env bash
# RECORD ONLY: ran in session 43 run 2 at c33dc4f.
# Session 43 run 2: the CUDA quantizer's launch knobs in the decode pairs (trigger "first", threads per CTA, x
# prefetched into L2 before the PDL wait; x rotated as bench_linear's, and one L2-resident x) on the three MLA
# shapes; the quantizers alone (threads 64-512 and the public op's auto choice); then bench_linear --format
# fp8-block at M = 1, 2, 4, 16 with the committed table and with the 2112x7168 M = 9..16 row on the CUDA quantizer,
# trigger first (with and without the prefetch), passes alternated.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s43b.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s43b
gpu_pytest gq_tests 240 tests/gpu/test_group_quant_gpu.py tests/kernels/test_fp8_cuda_dispatch.py
CQ=first:64,first:96,first:128,first:160,first:192,first:128:p,early:128,early:128:p
for rx in 8 1; do
    gpu_probe "preq_2112_m16_x$rx" 120 "PREQ|rror|Traceback" benchmarks/probe_fp8_preq.py --m 16 --shapes 2112x7168 \
        --gemv-codes 11011114 --pair-codes 11011114 --qmodes early --kernel-codes "" --cuda-quant "$CQ" --rotate-x "$rx"
done
gpu_probe preq_2112_m9 100 "PREQ|rror|Traceback" benchmarks/probe_fp8_preq.py --m 9 --shapes 2112x7168 \
    --gemv-codes 11011114 --pair-codes 11011114 --qmodes early --kernel-codes "" --rotate-x 8 \
    --cuda-quant first:128,first:128:p,early:128
gpu_probe preq_1536 100 "PREQ|rror|Traceback" benchmarks/probe_fp8_preq.py --m 16 --shapes 1536x7168 \
    --gemv-codes 11011116 --pair-codes 11011116 --qmodes early --kernel-codes "" --rotate-x 8 \
    --cuda-quant first:128,first:128:p,early:128:p
gpu_probe preq_576 100 "PREQ|rror|Traceback" benchmarks/probe_fp8_preq.py --m 16 --shapes 576x7168 \
    --gemv-codes 11041108 --pair-codes 11041108 --qmodes early --kernel-codes "" --rotate-x 8 \
    --cuda-quant first:128,first:128:p,early:128:p
gpu_probe gq 150 "GQ M|rror|Traceback" benchmarks/probe_group_quant.py --ms 1,16,128,1024,16384 --ks 7168
ROW="qlinear.ops.fp8:FP8_CUDA_CONFIG={(2112, 7168): ((8, 10011116), (16, 11011114, 'first', 'cuda')), (1536, 7168): ((8, 10011116), (16, 11011116, 'early')), (576, 7168): ((8, 10041108), (16, 11041108, 'early')), (7168, 16384): ((16, 101042304, 'early'),), None: 0}"
for pass in 1 2; do
    for v in committed cuda cuda_pf; do
        mkdir -p "$OUT/lin_${v}_$pass"
        set -- 
        [ "$v" != committed ] && set -- "$ROW"
        [ "$v" = cuda_pf ] && set -- "$@" "qlinear.ops.fp8:FP8_CUDA_QUANT_PREFETCH=True"
        timeout 150 python benchmarks/with_setting.py "$@" -- benchmarks/bench_linear.py --format fp8-block \
            --ms 1 2 4 16 --out "$OUT/lin_${v}_$pass" > "$OUT/lin_${v}_$pass.log" 2>&1
        echo "bench_linear $v pass $pass rc=$?"
        grep -E "M=16 2112x7168|rror" "$OUT/lin_${v}_$pass.log" | head -n 6
    done
done
echo "run: $(( $(date +%s) - t_all )) s"
