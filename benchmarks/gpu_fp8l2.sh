#!/usr/bin/env bash
# FP8 decode kernel with the weight slice prefetched into L2 before the PDL wait (L = 1 codes,
# csrc/fp8_gemv.cuh L2W): the FP8 "cuda" GPU tests, then bench_fp8_cuda.py's sweep (cold weights, whole
# op, alternated graph replays) on the MLA shapes at M = 1 / 8 / 16 and the wide shapes at M = 1 / 16.
#   OUT=/some/dir bash benchmarks/gpu_fp8l2.sh   # <= ~170 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build fp8l2
timeout 60 python -m pytest -q -p no:cacheprovider tests/gpu/test_fp8_cuda_gemv.py \
    --junitxml="$OUT/fp8l2_junit.xml" > "$OUT/fp8l2_tests.log" 2>&1
tests_rc=$?
grep -E "^(FAILED|ERROR)|^E  .*(rel err|wrong|differs|died|Error)" "$OUT/fp8l2_tests.log" | cut -c1-300 | head -n 30
tail -n 2 "$OUT/fp8l2_tests.log"
timeout ${T_FP8L2_MLA:-90} python benchmarks/bench_fp8_cuda.py --out "$OUT/mla" --shapes 2112x7168 1536x7168 576x7168 \
    --ms ${FP8L2_MS:-1 8 16} > "$OUT/fp8l2_bench_mla.log" 2>&1
a=$?
timeout ${T_FP8L2_WIDE:-50} python benchmarks/bench_fp8_cuda.py --out "$OUT/wide" --shapes 24576x1536 7168x16384 \
    --ms 1 16 > "$OUT/fp8l2_bench_wide.log" 2>&1
b=$?
grep -hE "BEST|merged|ceiling|Error|error" "$OUT"/fp8l2_bench_*.log | head -n 60
grep -hE "cuda:1001|cuda:1101|auto|triton " "$OUT"/fp8l2_bench_*.log | grep -E "M=(1|16) " | cut -c1-72 | head -n 60
echo "build rc=$build_rc (${build_s} s) tests rc=$tests_rc bench rc=$a/$b total $(( $(date +%s) - t_all )) s"
gpu_cleanup
