#!/usr/bin/env bash
# W4A16 dequantize + cuBLAS in L2-sized chunks (benchmarks/probe_w4a16_l2chunk.py) at M = 64..4096 on
# the three issue shapes, then the W4A16 format GPU tests that run the dequant_cublas path.
#   OUT=/some/dir bash benchmarks/gpu_w4l2.sh   # ~200 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build w4l2
timeout 300 python benchmarks/probe_w4a16_l2chunk.py --out "$OUT" ${L2_ARGS:-} 2>&1 | tee "$OUT/w4l2.log" | grep -E "L2CHUNK|rror"
timeout 120 python -m pytest -q -p no:cacheprovider tests/gpu/test_w4a16_gpu.py -k "dequant" >"$OUT/w4l2_tests.txt" 2>&1
echo "w4a16 gpu tests (dequant) rc=$? | $(tail -n 1 "$OUT/w4l2_tests.txt")"
grep -E "^(FAILED|ERROR)" "$OUT/w4l2_tests.txt" | head -n 5
gpu_cleanup
