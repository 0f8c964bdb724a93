#!/usr/bin/env bash
# Session 24 check on the final code: the W4A16 GPU test files the dispatch change reaches (the layer,
# the zero-point fold, the split-K GEMMs) and the checkpoint-format GPU tests (GPTQ, AWQ,
# compressed-tensors, FP8) with the self-check on the GPU.
#   OUT=/some/dir bash benchmarks/gpu_s24chk.sh   (compressed-tensors fixtures in build/ct_fixtures:
#   python -m qlinear.testing.compressed_tensors build/ct_fixtures where compressed-tensors is installed)
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s24chk
gpu_pytest w4_tests 260 tests/gpu/test_w4a16_gpu.py tests/gpu/test_w4a16_fold.py tests/gpu/test_w4a16_gemm_gpu.py
QLINEAR_CT_FIXTURES=build/ct_fixtures gpu_pytest formats 200 -m gpu tests/quantization/test_gptq_format.py tests/quantization/test_awq_format.py \
    tests/quantization/test_compressed_tensors_format.py tests/quantization/test_fp8_format.py
timeout 60 python -m qlinear selfcheck --device cuda --json "$OUT/selfcheck_gpu.json" 2>&1 | tail -n 3
gpu_cleanup
