#!/usr/bin/env bash
# Issue 5, W4A16 at M = 64 .. 1024 with the "wg" kernel (register-A wgmma chain, backend
# "triton_wg"), <= 150 s on one H200 (Triton only: no CUDA extension build needed):
#   1. tests/gpu/test_w4a16_wgmma_gpu.py (three shapes x M in {1, 16, 64, 128, 1024}, bit-exact
#      bf16 dequantization, fp16 / 8-bit / g32 / act-order variants, CUDA-graph split-K replay);
#   2. bench_w4a16wg.py: cold-weight CUDA-graph timing of bf16 F.linear, the current qlinear path
#      and a "wg" config sweep at M = 64, 128, 256, 1024; one line per point, BEST / SUMMARY lines,
#      then ASM lines (does each compiled "wg" kernel use wgmma with A in registers and cp.async x
#      loads; registers, spills); JSON in $OUT/bench_w4a16wg.json.
#   OUT=/some/dir bash benchmarks/gpu_w4a16wg.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-benchmarks/results}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TRITON_DEFAULT_FP_FUSION=1
t0=$(date +%s)
python -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)"
timeout 50 python -m pytest -q -p no:cacheprovider tests/gpu/test_w4a16_wgmma_gpu.py \
    --junitxml="$OUT/w4a16wg_gpu_tests.xml" 2>&1 | tail -n 25 | tee "$OUT/w4a16wg_gpu_tests.txt"
tests_rc=${PIPESTATUS[0]}
echo "tests rc=$tests_rc after $(( $(date +%s) - t0 )) s"
left=$(( 140 - ($(date +%s) - t0) ))
budget=$(( left - 25 )); [ "$budget" -gt 75 ] && budget=75; [ "$budget" -lt 20 ] && budget=20
timeout $(( budget + 25 )) python benchmarks/bench_w4a16wg.py --out "$OUT" --budget "$budget" 2>&1 | tee "$OUT/bench_w4a16wg.log"
bench_rc=${PIPESTATUS[0]}
echo "tests rc=$tests_rc bench rc=$bench_rc total $(( $(date +%s) - t0 )) s"
exit $(( tests_rc != 0 || bench_rc != 0 ))
