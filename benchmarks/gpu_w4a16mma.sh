#!/usr/bin/env bash
# Issue 5, M = 16 .. 256 on the GPU machine (< 120 s with Triton compiles):
#   1. GPU tests of the tensor-core paths: the superblock-K kernel (tests/gpu/test_w4a16_mma_sb_gpu.py)
#      and the plane kernel's split-K CUDA-graph test (default "triton" backend, M = 4 .. 64);
#   2. bench_w4a16.py --focus mma: one line per (shape, M, config), then "BEST" lines; JSON in $OUT.
#   OUT=/some/dir bash benchmarks/gpu_w4a16mma.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-benchmarks/results}"
mkdir -p "$OUT"
timeout 60 python -m pytest -q -p no:cacheprovider tests/gpu/test_w4a16_mma_sb_gpu.py \
    "tests/gpu/test_w4a16_gpu.py::test_cuda_graph_capture_split_k" -k "not act_order" --junitxml="$OUT/w4a16mma_gpu_tests.xml" \
    2>&1 | tail -n 25 | tee "$OUT/w4a16mma_gpu_tests.txt"
tests_rc=${PIPESTATUS[0]}
timeout 110 python benchmarks/bench_w4a16.py --focus mma --out "$OUT" 2>&1 | tee "$OUT/bench_w4a16_mma.log"
bench_rc=${PIPESTATUS[0]}
echo "tests rc=$tests_rc bench rc=$bench_rc"
exit $(( tests_rc != 0 || bench_rc != 0 ))
