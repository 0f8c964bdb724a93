#!/usr/bin/env bash
# CUDA tensor-core W4A16 decode kernel (backend "cuda", csrc/w4a16_gemv.cuh) on the GPU machine
# (< 150 s): build of the extension (timed; reuses $QLINEAR_BUILD_DIR when set), then
# tests/gpu/test_w4a16_cuda_gpu.py, then benchmarks/bench_w4a16_cuda.py (one line per measurement,
# BEST lines per case at the end; JSON in $OUT/w4a16_cuda.json).
#   OUT=/some/dir bash benchmarks/gpu_w4a16gemv.sh
source "$(dirname "$0")/_gpu_build.sh"
gpu_build w4a16gemv
echo "== GPU tests"
timeout 45 python -m pytest -q -p no:cacheprovider tests/gpu/test_w4a16_cuda_gpu.py \
    >"$OUT/w4a16gemv_pytest.txt" 2>&1
test_rc=$?
tail -n 15 "$OUT/w4a16gemv_pytest.txt"
echo "== benchmark"
timeout 80 python benchmarks/bench_w4a16_cuda.py --out "$OUT" --budget-s 55 2>&1 | tee "$OUT/w4a16gemv_bench.txt"
bench_rc=${PIPESTATUS[0]}
echo "build rc=$build_rc (${build_s} s)  tests rc=$test_rc  bench rc=$bench_rc  total $(( $(date +%s) - t_all )) s"
gpu_cleanup
[ "$build_rc" -eq 0 ] && [ "$test_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]
