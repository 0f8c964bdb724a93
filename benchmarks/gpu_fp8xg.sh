#!/usr/bin/env bash
# FP8 decode kernel with x quantized once per launch (Q = 2 codes, csrc/fp8_gemv.cuh kXGlobal): its GPU
# tests (the whole FP8 "cuda" test file), then bench_fp8_cuda.py's sweep (cold weights, whole op,
# alternated graph replays) on the three MLA shapes at M = 4 / 8 / 12 / 16 and the wide shapes at
# M = 16.   OUT=/some/dir bash benchmarks/gpu_fp8xg.sh   # <= ~170 s after the build
source "$(dirname "$0")/_gpu_build.sh"
export PYTHONPATH="${PYTHONPATH:-$PWD}"
gpu_build fp8xg
timeout 70 python -m pytest -q -p no:cacheprovider tests/gpu/test_fp8_cuda_gemv.py \
    --junitxml="$OUT/fp8xg_junit.xml" > "$OUT/fp8xg_tests.log" 2>&1
tests_rc=$?
grep -E "^(FAILED|ERROR)|^E  .*(rel err|wrong|differs|died|Error)" "$OUT/fp8xg_tests.log" | cut -c1-300 | head -n 30
tail -n 2 "$OUT/fp8xg_tests.log"
timeout ${T_FP8XG_MLA:-90} python benchmarks/bench_fp8_cuda.py --out "$OUT/mla" --shapes 2112x7168 1536x7168 576x7168 \
    --ms ${FP8XG_MS:-1 8 16} > "$OUT/fp8xg_bench_mla.log" 2>&1
a=$?
timeout ${T_FP8XG_WIDE:-50} python benchmarks/bench_fp8_cuda.py --out "$OUT/wide" --shapes 24576x1536 7168x16384 \
    --ms 1 16 > "$OUT/fp8xg_bench_wide.log" 2>&1
b=$?
grep -hE "BEST|merged|ceiling|Error|error" "$OUT"/fp8xg_bench_*.log | head -n 60
echo "build rc=$build_rc (${build_s} s) tests rc=$tests_rc bench rc=$a/$b total $(( $(date +%s) - t_all )) s"
gpu_cleanup
