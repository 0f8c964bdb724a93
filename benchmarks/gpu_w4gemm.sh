#!/usr/bin/env bash
# The CUDA W4A16 GEMM (csrc/w4a16_gemm.cuh): its GPU tests, then probe_w4a16_gemm.py on the issue shapes.
#   OUT=/some/dir bash benchmarks/gpu_w4gemm.sh   # ~200 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build w4gemm
gpu_pytest w4gemm_tests 120 -x tests/gpu/test_w4a16_gemm_gpu.py
timeout ${GEMM_T:-240} python benchmarks/probe_w4a16_gemm.py --out "$OUT" ${GEMM_ARGS:-} 2>&1 | tee "$OUT/w4gemm.log" | grep -E "GEMM BEST|rror|skipped"
gpu_cleanup
