#!/usr/bin/env bash
# The CUDA W4A16 GEMM (csrc/w4a16_gemm.cuh): its GPU tests, then probe_w4a16_gemm.py on the issue shapes.
#   OUT=/some/dir bash benchmarks/gpu_w4gemm.sh   # ~200 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build w4gemm
timeout 120 python -m pytest -q -x -p no:cacheprovider tests/gpu/test_w4a16_gemm_gpu.py >"$OUT/w4gemm_tests.txt" 2>&1
echo "w4a16 gemm tests rc=$? | $(tail -n 1 "$OUT/w4gemm_tests.txt")"
grep -E "^(FAILED|ERROR)|Error|assert" "$OUT/w4gemm_tests.txt" | head -n 12
timeout ${GEMM_T:-240} python benchmarks/probe_w4a16_gemm.py --out "$OUT" ${GEMM_ARGS:-} 2>&1 | tee "$OUT/w4gemm.log" | grep -E "GEMM BEST|rror|skipped"
gpu_cleanup
