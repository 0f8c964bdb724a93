#!/usr/bin/env bash
# Session 14, the code as it lands (product code of 2099c34): the GPU tests of the CUDA decode / GEMM
# kernels whose host-side launch lookup session 13 rewrote (code_list.h) plus the FP8 decode kernel's,
# then the two acceptance files (bench_linear --format fp8-block / w4a16: whole layer, cold weights,
# against bf16 F.linear and the per-format anchors in the same run).
#   OUT=/some/dir bash benchmarks/gpu_s14final.sh
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s14final
gpu_pytest gpu_tests ${GT_LIMIT:-260} tests/gpu/test_w4a16_cuda_gpu.py tests/gpu/test_w4a16_gpu.py \
    tests/gpu/test_w4a16_wgmma_gpu.py tests/gpu/test_w4a16_gemm_gpu.py tests/gpu/test_w4a16_fold.py \
    tests/gpu/test_fp8_cuda_gemv.py
timeout ${FP8_LIMIT:-150} python benchmarks/bench_linear.py --format fp8-block --out "$OUT" 2>&1 | tail -n 30
timeout ${W4_LIMIT:-150} python benchmarks/bench_linear.py --format w4a16 --out "$OUT" 2>&1 | tail -n 30
gpu_cleanup
