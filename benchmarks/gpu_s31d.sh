#!/usr/bin/env bash
# RECORD ONLY: ran in session 31 run 4 at 10a70d9.
# Session 31 run 4: the norm-quant auto dispatch now takes Triton with PDL and an early trigger for one row of
# 4096 < K <= 8192 (NORM_QUANT_TRITON_EARLY): the norm-quant / FP8-on-codes GPU tests (graph replay at M = 1
# and 16), then the chain at M = 1 / 2 / 4 / 8 (bench_fp8_prequant: "norm-quant + linear on codes" is the auto
# dispatch) against the CUDA kernel and Triton with the early trigger.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s31d.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s31d
gpu_pytest fp8q_tests 150 tests/gpu/test_fp8_quantized_gpu.py
gpu_pytest nq_tests 300 tests/gpu/test_norm_quant_cuda_gpu.py
gpu_probe nq_chain 150 "PREQ|rror|Traceback" benchmarks/bench_fp8_prequant.py --shapes 2112x7168 \
    --ms 1 2 4 8 --nq-backends cuda triton-early
gpu_cleanup
