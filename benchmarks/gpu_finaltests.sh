#!/usr/bin/env bash
# Session 5's GPU tests of what changed: the FP8 one-launch decode kernel (and its auto dispatch),
# the RMSNorm rules / Triton loop configs, the FP8 format through the layers.
set -uo pipefail
cd "$(dirname "$0")/.."
timeout 40 python -m pytest -q -p no:cacheprovider tests/gpu/test_fp8_cuda_gemv.py --junitxml="$OUT/fp8cuda_junit.xml" >"$OUT/fp8cuda_tests.txt" 2>&1; a=$?
timeout 45 python -m pytest -q -p no:cacheprovider tests/gpu/test_rms_norm_gpu.py -k "committed_rules or triton_loop_kernel or auto_backend" --junitxml="$OUT/rms_junit.xml" >"$OUT/rms_tests.txt" 2>&1; b=$?
QLINEAR_GPU_RESULTS=$OUT/fp8_format_gpu.json timeout 40 python -m pytest -q -p no:cacheprovider -m gpu tests/quantization/test_fp8_format.py --junitxml="$OUT/fp8fmt_junit.xml" >"$OUT/fp8fmt_tests.txt" 2>&1; c=$?
for f in fp8cuda_tests rms_tests fp8fmt_tests; do echo "== $f: $(tail -n 1 $OUT/$f.txt)"; grep -E "^FAILED" $OUT/$f.txt | head -5; done
echo "fp8cuda=$a rms=$b fp8fmt=$c"; exit $((a|b|c))
