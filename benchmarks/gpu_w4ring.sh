#!/usr/bin/env bash
# W4A16 decode, session 6 (<= 160 s on one H200): the bulk ring kernel (ring codes >= 10000,
# csrc/w4a16_gemv.cuh bulk_gemv_kernel) next to the cp.async ring / register kernels.
# 1. build (reuses $QLINEAR_BUILD_DIR), 2. tests/gpu/test_w4a16_cuda_gpu.py (every bulk code, the
# three shapes, ragged N / M, sym / asym, bf16 / fp16), 3. benchmarks/bench_w4ring.py: per case all
# candidates in one alternated-replay measurement, cold weights; BEST lines, CLASS lines, the SET
# line (_CUDA_RING_AUTO for qlinear/ops/w4a16.py). JSON: $OUT/w4ring.json.
#   OUT=/some/dir bash benchmarks/gpu_w4ring.sh
source "$(dirname "$0")/_gpu_build.sh"
gpu_build w4ring
echo "== GPU tests"
timeout 75 python -m pytest -q -p no:cacheprovider tests/gpu/test_w4a16_cuda_gpu.py >"$OUT/w4ring_pytest.txt" 2>&1
test_rc=$?
tail -n 15 "$OUT/w4ring_pytest.txt"
echo "== benchmark"
left=$(( 150 - ($(date +%s) - t_all) ))
[ "$left" -lt 30 ] && left=30
timeout "$left" python benchmarks/bench_w4ring.py --out "$OUT" --budget-s $(( left - 20 )) 2>&1 | tee "$OUT/w4ring_bench.txt"
bench_rc=${PIPESTATUS[0]}
echo "build rc=$build_rc (${build_s} s)  tests rc=$test_rc  bench rc=$bench_rc  total $(( $(date +%s) - t_all )) s"
gpu_cleanup
[ "$build_rc" -eq 0 ] && [ "$test_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]
