#!/usr/bin/env bash
# RECORD ONLY: ran in session 43 run 4 at 8443236.
# Session 43 run 4: after the final reading's mends (one operand struct and one check of x / q / scales for both
# FP8 quantizer bindings; one FP8_CUDA_CONFIG walk per decode call): the tests of both bindings and of the paths
# that call them.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s43d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s43d
gpu_pytest gq_tests 240 tests/gpu/test_group_quant_gpu.py tests/kernels/test_fp8_cuda_dispatch.py
gpu_pytest normquant 120 tests/gpu/test_norm_quant_cuda_gpu.py
gpu_pytest mla_quantized 120 tests/gpu/test_mla_norm_quant_gpu.py tests/gpu/test_fp8_quantized_gpu.py
gpu_pytest fp8_cuda_gemv 120 tests/gpu/test_fp8_cuda_gemv.py
echo "run: $(( $(date +%s) - t_all )) s"
