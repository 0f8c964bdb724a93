#!/usr/bin/env bash
# W4A16 decode, session 6 (<= 150 s on one H200): the bulk ring kernel (ring codes >= 10000,
# csrc/w4a16_gemv.cuh bulk_gemv_kernel) next to the cp.async ring / register kernels, and the
# committed dispatch table (qlinear/ops/w4a16.py _CUDA_RING_AUTO) against the launcher's own choice.
# 1. build (reuses $QLINEAR_BUILD_DIR), 2. tests/gpu/test_w4a16_cuda_gpu.py (must all pass: every
# bulk code, the three shapes, ragged N / M, sym / asym, bf16 / fp16, codes too large for shared
# memory refused before launch, the table's choices), 3. benchmarks/bench_w4ring.py: per case all
# candidates in one alternated-replay measurement, cold weights. Read, at the end:
#   BEST  case: fastest kernel | vs auto (the committed dispatch) | vs tinygemm
#   AUTO  case: the table's kernel and its time | launcher (previous dispatch) | auto/launcher
#         (< 1.00: the table is faster than before) | register kernel | best kernel
#   CLASS class tiles (0: M = 1, 1: M 2..8, 2: M 9..16): best kernel summed vs auto, committed entry
#   SET   the table to commit (entries changed only where a kernel beats auto by > 2 %)
#   LAUNCH ERRORS: n   (must not appear)
# JSON: $OUT/w4ring.json.   OUT=/some/dir bash benchmarks/gpu_w4ring.sh
source "$(dirname "$0")/_gpu_build.sh"
gpu_build w4ring
echo "== GPU tests"
timeout 75 python -m pytest -q -p no:cacheprovider tests/gpu/test_w4a16_cuda_gpu.py >"$OUT/w4ring_pytest.txt" 2>&1
test_rc=$?
grep -E "^(FAILED|ERROR)" "$OUT/w4ring_pytest.txt" | head -n 20
tail -n 3 "$OUT/w4ring_pytest.txt"
echo "== benchmark"
left=$(( 145 - ($(date +%s) - t_all) ))
[ "$left" -lt 30 ] && left=30
timeout "$left" python benchmarks/bench_w4ring.py --out "$OUT" --budget-s $(( left - 20 )) >"$OUT/w4ring_bench.txt" 2>&1
bench_rc=$?
# per-candidate lines stay in the file; the summary is printed
grep -E "ERROR|^(BEST|AUTO|CLASS|SET|LAUNCH|bench wall|tinygemm unavailable)|Traceback|Error" "$OUT/w4ring_bench.txt"
echo "build rc=$build_rc (${build_s} s)  tests rc=$test_rc  bench rc=$bench_rc  total $(( $(date +%s) - t_all )) s"
gpu_cleanup
[ "$build_rc" -eq 0 ] && [ "$test_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]
