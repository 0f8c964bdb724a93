#!/usr/bin/env bash
# Fused RMSNorm -> FP8 (issue 7), CUDA backend, on the GPU machine in one command (<= ~80 s with
# the extension already built by the caller):
#   1. a build of the CUDA extension (cold unless the caller set QLINEAR_BUILD_DIR), timed;
#   2. SASS of the row kernels (cuobjdump -sass of the built norm_quant_launch object, else of the
#      extension library): per-opcode histogram of each main loop, per row and lane ("sass ..."
#      lines; variant 6 ~744, nq_slim_kernel ~558 from the CPU build's nvdisasm);
#   3. pytest tests/gpu/test_norm_quant_cuda_gpu.py, a quick selection (row kernel in every form vs
#      reference and, bit for bit, vs each other and the register kernel; nq_slim_kernel (variants
#      11, 12) bit for bit vs variant 6 incl. NaN / inf / signed zeros / NaN groups, fused add, both
#      scale layouts, launch shapes; launch configs; graphs);
#   4. benchmarks/bench_normquant_variants.py, CUDA-graph timing: the MLA slices of [M, 2112] bf16
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

echo "== 2. SASS of the row kernels' main loops"
cuobj="$(command -v cuobjdump || true)"
[ -z "$cuobj" ] && [ -x /usr/local/cuda/bin/cuobjdump ] && cuobj=/usr/local/cuda/bin/cuobjdump
[ -z "$cuobj" ] && cuobj="$(python -c 'import os, triton; p = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/cuobjdump"); print(p if os.path.exists(p) else "")' 2>/dev/null)"
obj="$(find "$QLINEAR_BUILD_DIR" -name 'norm_quant_launch*.o' 2>/dev/null | head -n 1)"
[ -z "$obj" ] && obj="$(find "$QLINEAR_BUILD_DIR" -name 'qlinear_C*.so' 2>/dev/null | head -n 1)"
sass_rc=1
if [ -n "$cuobj" ] && [ -n "$obj" ]; then
    timeout 60 "$cuobj" -sass "$obj" >"$OUT/normquant_sass.txt" 2>&1 &&
        timeout 20 python benchmarks/bench_normquant_variants.py --sass "$OUT/normquant_sass.txt" |
        tee "$OUT/normquant_sass_hist.txt"
    sass_rc=${PIPESTATUS[0]}
    echo "(cuobjdump: $cuobj on $obj; rc=$sass_rc)"
else
    echo "no cuobjdump ($cuobj) or no built object under $QLINEAR_BUILD_DIR ($obj)"
fi

echo "== 3. GPU tests"
timeout 40 python -m pytest -q -p no:cacheprovider tests/gpu/test_norm_quant_cuda_gpu.py \
    -k "bulk or slim or test_row_kernel or launch_configs or graph or auto_picks or zeros" \
    >"$OUT/normquant_pytest.txt" 2>&1
test_rc=$?
tail -n 15 "$OUT/normquant_pytest.txt"

echo "== 4. benchmark"
timeout 60 python benchmarks/bench_normquant_variants.py "$OUT" 2>&1 | tee "$OUT/normquant_bench.txt"
bench_rc=${PIPESTATUS[0]}

echo
echo "================ rms_norm_quant_fp8 CUDA summary ================"
echo "first build : ${build_s} s (rc=$build_rc)"
echo "sass        : rc=$sass_rc"
grep -o '^sass v[^|]*' "$OUT/normquant_sass_hist.txt" 2>/dev/null
echo "gpu tests   : $(grep -E '(passed|failed|error)' "$OUT/normquant_pytest.txt" | tail -n 1) (rc=$test_rc)"
echo "benchmark   : rc=$bench_rc"
grep '^best ' "$OUT/normquant_bench.txt" 2>/dev/null
echo "total wall  : $(( $(date +%s) - t_all )) s"
gpu_cleanup
[ "$build_rc" -eq 0 ] && [ "$test_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]
