#!/usr/bin/env bash
# Fused RMSNorm -> FP8 (issue 7), CUDA backend, on the GPU machine in one command (<= ~100 s
# with the extension already built by the caller):
#   1. a build of the CUDA extension (cold unless the caller set QLINEAR_BUILD_DIR), timed;
#   2. pytest tests/gpu/test_norm_quant_cuda_gpu.py, a quick selection (row kernel in both forms
#      vs reference and, bit for bit, vs each other and the register kernel; the round-3 variants
#      7 .. 10 bit for bit vs variant 6 incl. NaN / inf / signed zeros; launch configs; graphs);
#   3. benchmarks/bench_normquant_variants.py, CUDA-graph timing: the MLA slices of [M, 2112] bf16
#      (q_c 1536 wide, kv_c 512 wide), M = 32768 plain + fused add and M = 4096, the row kernel's
#      default and launch variants, launch shapes, the previous register kernel (path=1) and
#      Triton; fraction of the copy ceiling measured in the same run (issue 7: >= 0.85 on q_c plain).
#      The committed default per case is the line marked DEFAULT; "best ..." lines close the run.
#      JSON: "$OUT/normquant_variants.json".
# Usage:  OUT=/some/dir bash benchmarks/gpu_normquant.sh      (OUT defaults to benchmarks/results)
source "$(dirname "$0")/_gpu_build.sh"
# the checkout's qlinear without a pip install (_gpu_build.sh cd'ed to the repo root)
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
gpu_build normquant

echo "== 2. GPU tests"
timeout 30 python -m pytest -q -p no:cacheprovider tests/gpu/test_norm_quant_cuda_gpu.py \
    -k "bulk or round3 or test_row_kernel or launch_configs or graph or auto_picks" \
    >"$OUT/normquant_pytest.txt" 2>&1
test_rc=$?
tail -n 15 "$OUT/normquant_pytest.txt"

echo "== 3. benchmark"
timeout 55 python benchmarks/bench_normquant_variants.py "$OUT" 2>&1 | tee "$OUT/normquant_bench.txt"
bench_rc=${PIPESTATUS[0]}

echo
echo "================ rms_norm_quant_fp8 CUDA summary ================"
echo "first build : ${build_s} s (rc=$build_rc)"
echo "gpu tests   : $(grep -E '(passed|failed|error)' "$OUT/normquant_pytest.txt" | tail -n 1) (rc=$test_rc)"
echo "benchmark   : rc=$bench_rc"
echo "total wall  : $(( $(date +%s) - t_all )) s"
gpu_cleanup
[ "$build_rc" -eq 0 ] && [ "$test_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]
