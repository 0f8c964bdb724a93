#!/usr/bin/env bash
# Quick FP8 GPU tests of the small-M paths (default configs, PDL, CUDA graphs), <= 110 s.
#   OUT=/some/dir bash benchmarks/gpu_fp8quick.sh
cd "$(dirname "$0")/.."
OUT="${OUT:-benchmarks/results}"
mkdir -p "$OUT"
timeout ${FP8QUICK_T:-110} python -m pytest -q -p no:cacheprovider tests/gpu/test_fp8_gpu.py -k "small_m or cuda_graph or auto_backend or ragged" \
    --junitxml="$OUT/fp8quick_junit.xml" 2>&1 | tail -n 15
