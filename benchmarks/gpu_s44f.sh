#!/usr/bin/env bash
# RECORD ONLY: ran in session 44 run 6 at fff9f85.
# Session 44 run 6: the two eager pair tests that now pin FP8_EAGER_QUANT_CUDA (the Triton quantizer's triggers
# and the either-quantizer test), and their files whole.
#   (device, carry build/snap) cd build/snap && OUT=$OUT bash benchmarks/gpu_s44f.sh
: "${OUT:?}"
source "$(dirname "$0")/_gpu_build.sh"
gpu_run_start s44f
gpu_pytest pair_tests 240 tests/gpu/test_fp8_cuda_gemv.py tests/gpu/test_group_quant_gpu.py
echo "run: $(( $(date +%s) - t_all )) s"
