#!/usr/bin/env bash
# RECORD ONLY: ran in session 46 run 5 at 83f40a0 (from the working tree, QLINEAR_GIT_COMMIT set: the tree with build/snap
# carried was over the device tool's 64 MiB).
# Session 46 run 5: the committed tree (the 2112x7168 M = 9-16 decode pair on the CUDA quantizer, trigger first,
# both launches at FP8_PAIR_CARVEOUT = 10). The FP8 decode GEMV and quantizer GPU tests, the issue-4 acceptance run
# (bench_linear --format fp8-block, every M), then the CUDA quantizer's threads per CTA in that pair (probe, 96 / 128
# / 160) and bench_linear at M = 16 with 96 threads against the committed 128, one pass each.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s46e.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s46e
gpu_pytest fp8_cuda_gemv 120 tests/gpu/test_fp8_cuda_gemv.py
gpu_pytest group_quant 90 tests/gpu/test_group_quant_gpu.py tests/kernels/test_fp8_cuda_dispatch.py
gpu_bench_format fp8-block 280
grep -E "M=(1|16) 2112|rror" "$OUT/bench_linear.log" | head -n 4
echo "at $(( $(date +%s) - t_all )) s"
gpu_probe threads 60 "PREQ.*\+|rror|Traceback" benchmarks/probe_fp8_preq.py --m 16 --shapes 2112x7168 --gemv-codes "" \
    --pair-codes 11011114 --qmodes early --kernel-codes "" --cuda-quant first:96,first:128,first:160 --rotate-x 8
for v in t96 base; do
    [ $(( $(date +%s) - t_all )) -gt 470 ] && break
    mkdir -p "$OUT/bench_$v"
    if [ $v = t96 ]; then set -- "qlinear.ops.fp8:FP8_CUDA_QUANT_THREADS=96"; else set -- "qlinear.ops.fp8:FP8_CUDA_QUANT_THREADS=128"; fi
    timeout 70 python benchmarks/with_setting.py "$@" -- benchmarks/bench_linear.py --format fp8-block --ms 16 \
        --out "$OUT/bench_$v" > "$OUT/bench_$v.log" 2>&1
    echo "bench $v rc=$?"
    grep -E "M=16 2112|rror" "$OUT/bench_$v.log" | head -n 3
done
echo "run: $(( $(date +%s) - t_all )) s"
gpu_cleanup
