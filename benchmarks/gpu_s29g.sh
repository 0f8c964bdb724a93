#!/usr/bin/env bash
# RECORD ONLY: ran in session 29 run 8 at c99dd21 (its benchmark check and a test tolerance were fixed after it).
# Session 29 run 8: the block FP8 linear on activations quantized before it (fp8_block_linear_quantized,
# Fp8GroupActivation into a layer): build, its GPU tests and the register kernel's pre-quantized / auto tests,
# then bench_fp8_prequant.py (RMSNorm -> linear vs rms_norm_quant_fp8 -> linear on codes, and each GEMM alone).
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s29g.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s29g
gpu_pytest prequant 200 tests/gpu/test_fp8_quantized_gpu.py
gpu_pytest fp8cuda 120 tests/gpu/test_fp8_cuda_gemv.py -k "auto or preq"
timeout ${BENCH_LIMIT:-200} python benchmarks/bench_fp8_prequant.py --out "$OUT/bench" --ms 1 16 64 2>&1 | tee "$OUT/bench.log" | grep -v "^$"
