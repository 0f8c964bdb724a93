#!/usr/bin/env bash
# RECORD ONLY: ran in session 44 run 3 at c67b786.
# Session 44 run 3: eager FP8 calls take the CUDA quantizer (FP8_EAGER_QUANT_CUDA; captured calls keep Triton's).
# The quantizer's GPU tests (with the eager / captured test) and every FP8 GPU test file (their eager calls now go
# through the CUDA quantizer); the FP8 layer's eager host time at M = 16 (decode pair) and M = 48 (Triton GEMM)
# with the switch on and off, two passes each alternated (bench_host.py).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s44c.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s44c
gpu_pytest gq_tests 240 tests/gpu/test_group_quant_gpu.py
gpu_pytest fp8_tests 300 tests/gpu/test_fp8_gpu.py
gpu_pytest fp8_more 240 tests/gpu/test_fp8_cuda_gemv.py tests/gpu/test_fp8_tma_gpu.py tests/gpu/test_fp8_quantized_gpu.py \
    tests/gpu/test_fp8_swapab_gpu.py tests/gpu/test_streams_gpu.py
for pass in 1 2; do
    for v in True False; do
        mkdir -p "$DEST/host_${v}_$pass"
        timeout 150 python benchmarks/with_setting.py "qlinear.ops.fp8:FP8_EAGER_QUANT_CUDA=$v" -- \
            benchmarks/bench_host.py --ms 16 48 --out "$DEST/host_${v}_$pass" > "$OUT/host_${v}_$pass.log" 2>&1
        echo "host $v $pass rc=$?"
        grep -E "F.linear|fp8-block|rror" "$OUT/host_${v}_$pass.log" | head -n 8
    done
done
echo "run: $(( $(date +%s) - t_all )) s"
