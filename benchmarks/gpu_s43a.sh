#!/usr/bin/env bash
# RECORD ONLY: ran in session 43 run 1 at 09d3e25.
# Session 43 run 1: the CUDA per-token-group FP8 quantizer (csrc/group_quant.cuh). Its GPU tests; the decode pairs
# (quantizer + GEMV, Q = 1 codes) with it against the Triton quantizer at M = 9 / 12 / 16 on the MLA shapes
# (probe_fp8_preq.py, cold weights, alternated replays); both quantizers alone and their eager host time
# (probe_group_quant.py); the FP8 layer's eager host time with either quantizer in the pair (bench_host.py).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s43a.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s43a
gpu_pytest gq_tests 240 tests/gpu/test_group_quant_gpu.py
CQ=early:64,early:128,early:256,late:128,first:128,exit:128
for m in 16 12 9; do
    gpu_probe "preq_2112_m$m" 120 "PREQ|rror|Traceback" benchmarks/probe_fp8_preq.py --m "$m" --shapes 2112x7168 \
        --gemv-codes 11011114 --pair-codes 11011114 --qmodes early,late --kernel-codes "" --cuda-quant "$CQ"
done
gpu_probe preq_1536 100 "PREQ|rror|Traceback" benchmarks/probe_fp8_preq.py --m 16 --shapes 1536x7168 \
    --gemv-codes 11011116 --pair-codes 11011116 --qmodes early --kernel-codes "" --cuda-quant early:128,early:256
gpu_probe preq_576 100 "PREQ|rror|Traceback" benchmarks/probe_fp8_preq.py --m 16 --shapes 576x7168 \
    --gemv-codes 11041108 --pair-codes 11041108 --qmodes early --kernel-codes "" --cuda-quant early:128,early:256
gpu_probe gq 200 "GQ|rror|Traceback" benchmarks/probe_group_quant.py
for q in triton cuda; do
    mkdir -p "$OUT/host_$q"
    timeout 150 python benchmarks/with_setting.py "qlinear.ops.fp8:FP8_CUDA_QUANTIZER='$q'" -- \
        benchmarks/bench_host.py --ms 1 16 --out "$OUT/host_$q" > "$OUT/host_$q.log" 2>&1
    echo "host $q rc=$?"
    grep -E "F.linear|fp8-block|rror" "$OUT/host_$q.log" | head -n 12
done
echo "run: $(( $(date +%s) - t_all )) s"
