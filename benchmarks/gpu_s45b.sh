#!/usr/bin/env bash
# RECORD ONLY: ran in session 45 run 2 at 49366d6 (its full bench_linear files did not come back: run 3 re-ran it).
# Session 45 run 2: the wide config (qlinear/ops/w4a16.py _CUDA_WGMMA_WIDE: 192-row x 176-token CTAs, two K splits in
# pairs, 2112x7168 at M = 936 .. 1024) as committed. Every W4A16 GPU test file and the streams test; bench_linear at
# M = 1024 with the wide config off and on, alternated, two passes (sym) and one (asym); then the acceptance run
# bench_linear --format w4a16 into $DEST/linear.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s45b.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s45b
gpu_test_suite 2
for pass in 1 2 3; do
    fmt=w4a16; [ $pass = 3 ] && fmt=w4a16-asym
    for v in off on; do
        mkdir -p "$DEST/ab_${v}_$pass"
        if [ $v = off ]; then set -- "qlinear.ops.w4a16:_CUDA_WGMMA_WIDE={}"; else set -- ; fi
        timeout 120 python benchmarks/with_setting.py "$@" -- benchmarks/bench_linear.py --format $fmt --ms 1024 \
            --out "$DEST/ab_${v}_$pass" > "$OUT/ab_${v}_$pass.log" 2>&1
        echo "ab $fmt $v $pass rc=$? | $(grep -E "M=1024 2112x7168|rror" "$OUT/ab_${v}_$pass.log" | head -n 3)"
    done
done
if grep -q " passed" "$OUT/w4a16_gemm.txt" && ! grep -qE "failed|error" "$OUT/w4a16_gemm.txt"; then
    gpu_bench_format w4a16 240
fi
gpu_cleanup
