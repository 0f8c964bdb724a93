#!/usr/bin/env bash
# FP8 block layer forward at small M (issue 4): GPU tests of the changed kernels, then the layer
# variants (PDL at M <= 16, L2 weight prefetch, row-block quantization, fused quantization), the
# merged/separate ratio, M = 128 Triton vs scaled_mm and a GEMM_CONFIGS sweep until the budget.
#   OUT=/some/dir bash benchmarks/gpu_fp8small.sh        # <= ~150 s on an H200
#   FP8SMALL_BUDGET_S=60 ... shortens the sweep; FP8SMALL_VARIANTS="base fused" picks variants
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-benchmarks/results}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
t0=$(date +%s)
echo "== GPU tests (quantizer, small-M variants, Triton block linear)"
timeout 70 python -m pytest tests/gpu/test_fp8_gpu.py -q -p no:cacheprovider \
    -k "quant_bit_exact or small_m or (ragged and triton) or (cuda_graph and triton) or (test_block_linear and triton and dtype0 and not ragged)" \
    2>&1 | tail -n 25 | tee "$OUT/fp8small_tests.txt"
tests_rc=${PIPESTATUS[0]}
echo "tests rc=$tests_rc ($(( $(date +%s) - t0 )) s)"
left=$(( 145 - ($(date +%s) - t0) ))
# the budget is checked between variants / sweep configs: keep ~20 s for the last one and the JSON
budget=${FP8SMALL_BUDGET_S:-$(( left > 40 ? left - 20 : 20 ))}
echo "== layer variants (sweep budget ${budget} s)"
timeout $(( budget + 25 )) python benchmarks/bench_fp8.py --focus layer --budget-s "$budget" --out "$OUT" \
    ${FP8SMALL_VARIANTS:+--variants $FP8SMALL_VARIANTS} 2>&1 | tee "$OUT/fp8small_layer.log"
bench_rc=${PIPESTATUS[0]}
echo "tests rc=$tests_rc bench rc=$bench_rc total $(( $(date +%s) - t0 )) s; JSON: $OUT/fp8small_layer.json"
exit $(( tests_rc != 0 || bench_rc != 0 ))
