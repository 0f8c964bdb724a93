#!/usr/bin/env bash
# RECORD ONLY: ran in session 43 run 3 at 26d3df3.
# Session 43 run 3: the final tree. The CUDA quantizer's tests (its use on the scaled_mm path included), every FP8
# GPU test file and the streams test, then the issue-4 acceptance run (bench_linear --format fp8-block, every M).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s43c.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s43c
gpu_pytest gq_tests 240 tests/gpu/test_group_quant_gpu.py tests/kernels/test_fp8_cuda_dispatch.py
gpu_pytest fp8 200 tests/gpu/test_fp8_gpu.py
gpu_pytest fp8_cuda_gemv 120 tests/gpu/test_fp8_cuda_gemv.py
gpu_pytest fp8_swapab_tma_quantized 120 tests/gpu/test_fp8_swapab_gpu.py tests/gpu/test_fp8_tma_gpu.py \
    tests/gpu/test_fp8_quantized_gpu.py tests/gpu/test_mla_norm_quant_gpu.py
gpu_pytest streams 60 tests/gpu/test_streams_gpu.py
gpu_bench_format fp8-block 280
echo "run: $(( $(date +%s) - t_all )) s"
