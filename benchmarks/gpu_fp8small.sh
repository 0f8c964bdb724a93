#!/usr/bin/env bash
# FP8 block layer forward at small M (issue 4, session 4): GPU tests of the swap-AB kernels, then
# today's path vs swap-AB (fused quantization) on COLD weights, merged vs separate 2112x7168, and a
# swap-AB config sweep until the budget (benchmarks/bench_fp8_probe.py). Triton only: no build.
#   OUT=/some/dir bash benchmarks/gpu_fp8small.sh        # <= ~150 s on an H200
#   FP8SMALL_BUDGET_S=60 ... shortens the sweep
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-benchmarks/results}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="${PYTHONPATH:-$PWD}"
t0=$(date +%s)
echo "== GPU tests (swap-AB kernel, fused quantization, dispatch, graphs)"
timeout 75 python -m pytest tests/gpu/test_fp8_swapab_gpu.py -q -p no:cacheprovider 2>&1 | tail -n 25 \
    | tee "$OUT/fp8small_tests.txt"
tests_rc=${PIPESTATUS[0]}
echo "tests rc=$tests_rc ($(( $(date +%s) - t0 )) s)"
left=$(( 145 - ($(date +%s) - t0) ))
# the budget is checked between points: keep ~15 s for the last one, the BEST lines and the JSON
budget=${FP8SMALL_BUDGET_S:-$(( left > 35 ? left - 15 : 20 ))}
echo "== layer: today vs swap-AB, cold weights (sweep budget ${budget} s)"
timeout $(( budget + 20 )) python benchmarks/bench_fp8_probe.py --budget-s "$budget" --out "$OUT" 2>&1 \
    | tee "$OUT/fp8small.log"
bench_rc=${PIPESTATUS[0]}
echo "tests rc=$tests_rc bench rc=$bench_rc total $(( $(date +%s) - t0 )) s; JSON: $OUT/fp8small.json"
exit $(( tests_rc != 0 || bench_rc != 0 ))
