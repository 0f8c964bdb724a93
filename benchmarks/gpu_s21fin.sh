#!/usr/bin/env bash
# Session 21 run 8: the GPU tests the session's product change touches (PDL trigger placements of the Triton
# kernels), on the final tree: the CUDA FP8 decode kernel file (pairs, triggers, the chained graph) and the
# FP8 GPU file (Triton quantizer and GEMMs, PDL on / off).
#   OUT=/some/dir bash benchmarks/gpu_s21fin.sh   # ~4 min after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build s21fin
gpu_pytest s21fin_cuda_gemv 150 tests/gpu/test_fp8_cuda_gemv.py
gpu_pytest s21fin_fp8 200 tests/gpu/test_fp8_gpu.py
gpu_cleanup
