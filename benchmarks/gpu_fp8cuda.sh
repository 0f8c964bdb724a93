#!/usr/bin/env bash
# One-launch FP8 block decode kernel (issue 4, backend "cuda", csrc/fp8_gemv.cuh): build, its GPU
# tests (-v, one line per failure at the end), then benchmarks/bench_fp8_cuda.py (auto / triton /
# the committed table vs each candidate launch config incl. pre-quantized x and deeper prefetch,
# cold weights, whole op).   OUT=/some/dir bash benchmarks/gpu_fp8cuda.sh   # <= ~170 s
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build fp8cuda
timeout 60 python -m pytest -v -p no:cacheprovider tests/gpu/test_fp8_cuda_gemv.py \
    --junitxml="$OUT/fp8cuda_junit.xml" > "$OUT/fp8cuda_tests.log" 2>&1
tests_rc=$?
grep -E "^(FAILED|ERROR)|^E  .*(rel err|wrong|differs|died|Error)" "$OUT/fp8cuda_tests.log" | cut -c1-300 | head -n 40
tail -n 3 "$OUT/fp8cuda_tests.log"
timeout 100 python benchmarks/bench_fp8_cuda.py --out "$OUT" > "$OUT/fp8cuda_bench.log" 2>&1
bench_rc=$?
grep -E "BEST|merged|SET|ceiling|Error|error" "$OUT/fp8cuda_bench.log" | head -n 80
echo "(all measurements: $OUT/fp8cuda_bench.log, $(grep -c ' us (floor' "$OUT/fp8cuda_bench.log") lines)"
echo "build rc=$build_rc (${build_s} s) tests rc=$tests_rc bench rc=$bench_rc total $(( $(date +%s) - t_all )) s"
gpu_cleanup
exit $(( build_rc != 0 || tests_rc != 0 || bench_rc != 0 ))
